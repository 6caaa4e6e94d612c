//! The per-step sequence (memsets and launches) captured once as a CUDA graph and replayed.
//!
//! Kernel arguments are captured by value, so a graph is tied to the workspace's buffers and to
//! the number of worlds it was captured for; [`StepGraph`] recaptures when that changes. Inputs
//! are uploaded before a replay and outputs downloaded after it, outside the graph.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaGraph, CudaStream, sys};

use super::cuda;
use crate::error::{Error, Result};

/// A captured step and the world count it was captured for.
#[derive(Default)]
pub struct StepGraph {
    graph: Option<(usize, CudaGraph)>,
}

impl std::fmt::Debug for StepGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nworld = self.graph.as_ref().map(|(n, _)| n);
        f.debug_struct("StepGraph")
            .field("nworld", &nworld)
            .finish()
    }
}

impl StepGraph {
    /// Replays the graph for `nworld` worlds, capturing `enqueue` first if there is none yet
    /// for that count.
    pub fn replay(
        &mut self,
        stream: &Arc<CudaStream>,
        nworld: usize,
        enqueue: impl FnOnce(&CudaStream) -> Result<()>,
    ) -> Result<()> {
        if !self.holds(nworld) {
            self.capture(stream, nworld, enqueue)?;
        }
        match &self.graph {
            Some((_, g)) => g.launch().map_err(cuda("cuGraphLaunch")),
            None => Ok(()),
        }
    }

    /// Captures `enqueue` for `nworld` worlds without launching it, in place of any graph held.
    pub fn capture(
        &mut self,
        stream: &Arc<CudaStream>,
        nworld: usize,
        enqueue: impl FnOnce(&CudaStream) -> Result<()>,
    ) -> Result<()> {
        self.graph = None;
        self.graph = Some((nworld, capture(stream, enqueue)?));
        Ok(())
    }

    /// Whether a graph has been captured.
    pub fn is_captured(&self) -> bool {
        self.graph.is_some()
    }

    /// Whether the graph held was captured for `nworld` worlds.
    pub fn holds(&self, nworld: usize) -> bool {
        matches!(&self.graph, Some((n, _)) if *n == nworld)
    }
}

/// The step graphs a solver keeps: up to `MOST`, one a key of the scalars a launch was captured
/// with (`()` where there is one), the least recently replayed dropped first. A step whose key
/// and world count no kept graph holds is launched directly, and its graph captured while the
/// device runs it: by [`capture_pending`](Self::capture_pending), which a solver calls after
/// enqueueing the step's downloads and before its wait, or at the next replay of the same key
/// and count, whichever comes first. A capture (its instantiation and upload, 100–300 µs on the
/// H200) then never holds the device up; a direct launch costs a few µs more than a replay.
pub struct KeptGraphs<K, const MOST: usize> {
    /// The latest replayed first.
    kept: Vec<(K, StepGraph)>,
    /// The key and world count of the last step launched directly, not yet captured.
    pending: Option<(K, usize)>,
    captures: u64,
}

impl<K: std::fmt::Debug, const MOST: usize> std::fmt::Debug for KeptGraphs<K, MOST> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptGraphs")
            .field("kept", &self.kept)
            .field("pending", &self.pending)
            .field("captures", &self.captures)
            .finish()
    }
}

impl<K, const MOST: usize> Default for KeptGraphs<K, MOST> {
    fn default() -> Self {
        KeptGraphs {
            kept: Vec::with_capacity(MOST),
            pending: None,
            captures: 0,
        }
    }
}

impl<K: Copy + PartialEq, const MOST: usize> KeptGraphs<K, MOST> {
    /// Runs the step of `key` for `nworld` worlds, which `launch` enqueues on a stream: replays
    /// its graph where one is kept; else launches it directly on `stream` the first time, and
    /// captures its graph and replays that at a second replay before any
    /// [`capture_pending`](Self::capture_pending). A graph whose capture or launch failed is
    /// dropped.
    pub fn replay(
        &mut self,
        stream: &Arc<CudaStream>,
        key: K,
        nworld: usize,
        mut launch: impl FnMut(&CudaStream) -> Result<()>,
    ) -> Result<()> {
        if !self.holds(key, nworld) && self.pending != Some((key, nworld)) {
            self.pending = Some((key, nworld));
            return launch(stream);
        }
        self.pending = None;
        to_front(&mut self.kept, key, MOST);
        let mut captured = false;
        let r = self.kept[0].1.replay(stream, nworld, |s| {
            captured = true;
            launch(s)
        });
        self.captures += u64::from(captured && r.is_ok());
        if r.is_err() {
            self.kept.remove(0);
        }
        r
    }

    /// Captures the graph of the step [`replay`](Self::replay) last launched directly, if the
    /// solver's key and world count are still that step's (no upload since has moved them).
    pub fn capture_pending(
        &mut self,
        stream: &Arc<CudaStream>,
        key: K,
        nworld: usize,
        launch: impl FnOnce(&CudaStream) -> Result<()>,
    ) -> Result<()> {
        if self.pending.take() != Some((key, nworld)) {
            return Ok(());
        }
        to_front(&mut self.kept, key, MOST);
        let r = self.kept[0].1.capture(stream, nworld, launch);
        match r {
            Ok(()) => self.captures += 1,
            Err(_) => drop(self.kept.remove(0)),
        }
        r
    }

    /// Whether a step launched directly awaits its capture.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether a graph of `key` for `nworld` worlds is kept.
    pub fn holds(&self, key: K, nworld: usize) -> bool {
        self.kept.iter().any(|(k, g)| *k == key && g.holds(nworld))
    }

    /// Graphs captured so far.
    pub fn captures(&self) -> u64 {
        self.captures
    }

    /// Drops every graph and the pending capture (what they launch changed).
    pub fn clear(&mut self) {
        self.kept.clear();
        self.pending = None;
    }
}

/// Moves the entry of `key` to the front of `kept` (the latest first), or puts a new one there
/// (its value the default), the last dropped where `kept` then holds more than `most`.
fn to_front<K: PartialEq, V: Default>(kept: &mut Vec<(K, V)>, key: K, most: usize) {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(i) => kept[..=i].rotate_right(1),
        None => {
            kept.insert(0, (key, V::default()));
            kept.truncate(most);
        }
    }
}

/// Captures what `enqueue` puts on `stream` and instantiates it.
pub fn capture(
    stream: &Arc<CudaStream>,
    enqueue: impl FnOnce(&CudaStream) -> Result<()>,
) -> Result<CudaGraph> {
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(cuda("cuStreamBeginCapture"))?;
    let enqueued = enqueue(stream);
    // Always end the capture, so that the stream is usable again after a failure.
    let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
    enqueued?;
    let graph = ended.map_err(cuda("cuStreamEndCapture"))?;
    let graph = graph.ok_or_else(|| crate::error::Error::Cuda {
        call: "cuStreamEndCapture".into(),
        detail: "the capture produced no graph".into(),
    })?;
    graph.upload().map_err(cuda("cuGraphUpload"))?;
    Ok(graph)
}

/// Two CUDA events that time what is enqueued between them.
struct EventPair {
    start: CudaEvent,
    end: CudaEvent,
}

impl EventPair {
    fn new(ctx: &Arc<CudaContext>) -> Result<EventPair> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(EventPair {
            start: ctx.new_event(flags).map_err(cuda("cuEventCreate"))?,
            end: ctx.new_event(flags).map_err(cuda("cuEventCreate"))?,
        })
    }

    /// Device time of what `enqueue` puts on `stream`, in microseconds (waits for it).
    fn time_us(&self, stream: &CudaStream, enqueue: impl FnOnce() -> Result<()>) -> Result<f64> {
        self.start.record(stream).map_err(cuda("cuEventRecord"))?;
        enqueue()?;
        self.end.record(stream).map_err(cuda("cuEventRecord"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(cuda("cuEventElapsedTime"))?;
        Ok(ms as f64 * 1000.0)
    }

    /// Device time of each of `n` calls of `replay`, in microseconds, each timed after a call
    /// of `before` (enqueued first, not timed).
    fn time_each_after(
        &self,
        stream: &CudaStream,
        n: usize,
        mut before: impl FnMut() -> Result<()>,
        mut replay: impl FnMut() -> Result<()>,
    ) -> Result<Vec<f64>> {
        (0..n)
            .map(|_| {
                before()?;
                self.time_us(stream, &mut replay)
            })
            .collect()
    }
}

/// A graph of one empty kernel.
fn empty_graph(gpu: &super::Gpu) -> Result<CudaGraph> {
    let args = super::workspace::Args::default();
    let k = gpu.kernels().clone();
    capture(gpu.stream(), |s| {
        super::maps::launch(&k.noop, (1, 1, 1), 32, 0, &args, s)
    })
}

/// The median of `times`: the middle value, or the mean of the middle two (NaN when empty),
/// as the Engine's trial takes it. Every figure of the bench is one.
pub fn median_us(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => times[n / 2],
        _ => (times[n / 2 - 1] + times[n / 2]) / 2.0,
    }
}

/// Median device time (µs, CUDA events) of replaying a graph of one empty kernel: the launch
/// floor under every mode's figure.
pub fn empty_graph_us(gpu: &super::Gpu, reps: usize) -> Result<f64> {
    let graph = empty_graph(gpu)?;
    let times = time_replays_us(gpu.ctx(), gpu.stream(), 3, reps, || {
        graph.launch().map_err(cuda("cuGraphLaunch"))
    })?;
    Ok(median_us(times))
}

/// The device's memory bandwidth as a device-to-device copy of `bytes` bytes (at least 1 MiB)
/// reaches it: bytes read and written per second over `reps` copies enqueued back to back (so
/// that no launch's latency counts), the best of three such runs after one untimed copy (an H200
/// reaches about 4.3e12). `bytes` should far exceed the L2 cache, so that the copy runs from
/// device memory; two buffers of that size are allocated for the measurement and freed after.
/// The floor of a step (its bytes read and written once, at this rate) is what the benches
/// compare every mode with.
pub fn copy_bandwidth(gpu: &super::Gpu, bytes: usize, reps: usize) -> Result<f64> {
    use super::workspace::DevBuf;
    let bytes = bytes.max(1 << 20);
    let src = DevBuf::new(gpu.ctx(), "bandwidth source", bytes)?;
    let dst = DevBuf::new(gpu.ctx(), "bandwidth target", bytes)?;
    src.fill(1, bytes, gpu.stream())?;
    let mut best_us = f64::INFINITY;
    for warmup in [1, 0, 0] {
        let us = time_back_to_back_us(gpu.ctx(), gpu.stream(), warmup, reps.max(1), || {
            dst.copy_from(&src, bytes, gpu.stream())
        })?;
        best_us = best_us.min(us);
    }
    Ok(2.0 * bytes as f64 / (best_us * 1e-6))
}

/// The device memory's peak rate in bytes per second, from the driver's attributes: memory
/// clock × 2 (double data rate) × bus width; `None` where the driver does not report both (an
/// H200: about 4.8e12, of which a copy reaches about nine tenths).
pub fn peak_bandwidth(gpu: &super::Gpu) -> Option<f64> {
    use sys::CUdevice_attribute::{
        CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH as BUS,
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE as CLOCK,
    };
    let attr = |a| gpu.ctx().attribute(a).ok().filter(|&v| v > 0);
    let (khz, bits) = (attr(CLOCK)?, attr(BUS)?);
    Some(khz as f64 * 1e3 * 2.0 * bits as f64 / 8.0)
}

/// Bytes of the device's L2 cache.
pub fn l2_bytes(gpu: &super::Gpu) -> Result<usize> {
    let l2 = gpu
        .ctx()
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .map_err(cuda("cuDeviceGetAttribute"))?;
    Ok(l2.max(0) as usize)
}

/// Device time of `n` calls of `replay` on `stream`, each between two CUDA events, in
/// microseconds, after `warmup` untimed calls.
pub fn time_replays_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    warmup: usize,
    n: usize,
    mut replay: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    for _ in 0..warmup {
        replay()?;
    }
    let events = EventPair::new(ctx)?;
    (0..n)
        .map(|_| events.time_us(stream, &mut replay))
        .collect()
}

/// Device time of one launch within a whole step, read after the step's own wait: events are
/// recorded around the launch and nothing waits for them, so the step's copies that follow are
/// enqueued while the device runs it, as in a step that is not timed (an [`Engine`]'s). Where
/// [`time_replays_us`] waits for its launch, a step timed by it waits twice.
///
/// [`Engine`]: crate::Engine
pub struct LaunchTimer {
    events: EventPair,
    stream: Arc<CudaStream>,
}

impl std::fmt::Debug for LaunchTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchTimer").finish_non_exhaustive()
    }
}

impl LaunchTimer {
    /// Events on `gpu`'s stream, which every solver launches on.
    pub fn new(gpu: &super::Gpu) -> Result<LaunchTimer> {
        Ok(LaunchTimer {
            events: EventPair::new(gpu.ctx())?,
            stream: gpu.stream().clone(),
        })
    }

    /// Enqueues `launch` between the two events, waiting for nothing.
    pub fn around(&self, launch: impl FnOnce() -> Result<()>) -> Result<()> {
        let record = |e: &CudaEvent| e.record(&self.stream).map_err(cuda("cuEventRecord"));
        record(&self.events.start)?;
        launch()?;
        record(&self.events.end)
    }

    /// Device µs of the last [`around`](Self::around) launch (once the caller has waited for
    /// the stream, at once).
    pub fn elapsed_us(&self) -> Result<f64> {
        let ms = self
            .events
            .start
            .elapsed_ms(&self.events.end)
            .map_err(cuda("cuEventElapsedTime"))?;
        Ok(ms as f64 * 1000.0)
    }
}

/// A device buffer twice the size of the L2 cache, written over to evict whatever a step left
/// in L2 (its rows, its tables, its outputs) before a cold step is timed
/// ([`time_replays`](Self::time_replays)). The writes keep the device busy until the step
/// starts, so a cold step's time is its data's, not that of a device woken from idle.
pub struct L2Flush {
    buf: super::workspace::DevBuf,
    events: EventPair,
    stream: Arc<CudaStream>,
}

impl std::fmt::Debug for L2Flush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("L2Flush").finish_non_exhaustive()
    }
}

impl L2Flush {
    /// Allocates the buffer: twice the device's L2 cache (at least 8 MiB).
    pub fn new(gpu: &super::Gpu) -> Result<L2Flush> {
        let bytes = (2 * l2_bytes(gpu)?).max(8 << 20);
        Ok(L2Flush {
            buf: super::workspace::DevBuf::new(gpu.ctx(), "l2 flush", bytes)?,
            events: EventPair::new(gpu.ctx())?,
            stream: gpu.stream().clone(),
        })
    }

    /// Bytes written by each flush.
    pub fn bytes(&self) -> usize {
        self.buf.bytes()
    }

    /// Device time of `n` calls of `replay`, each between two CUDA events after a flush
    /// (enqueued before the first event, so not timed), in microseconds: a step with none of its
    /// data in L2. `replay` enqueues on the device's one stream, as every solver's `replay` does.
    pub fn time_replays(&self, n: usize, replay: impl FnMut() -> Result<()>) -> Result<Vec<f64>> {
        let flush = || self.buf.fill(0, self.buf.bytes(), &self.stream);
        self.events.time_each_after(&self.stream, n, flush, replay)
    }
}

/// Keeps the device busy before each timed replay ([`time_replays`](Self::time_replays)): a
/// kernel that spins on the device's clock, touching no memory, for far longer than the host
/// takes to enqueue a replay. When the device reaches the replay it is already queued, so the
/// time between its events is the device's alone, as in a simulation loop whose host runs
/// ahead: without whatever of the host's launch latency an idle device waits out inside a
/// [`time_replays_us`] figure, and with whatever of the step the replay before left in L2.
/// (On the H200 an empty replay took 2.6 µs so, against 2.8–3.1 µs from an idle device.)
pub struct Busy {
    spin: cudarc::driver::CudaFunction,
    events: EventPair,
    stream: Arc<CudaStream>,
}

impl std::fmt::Debug for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Busy").finish_non_exhaustive()
    }
}

impl Busy {
    /// How long the device spins before each replay (a replay's host side takes a few µs).
    const SPIN_NS: u64 = 100_000;

    /// The spin kernel of `gpu`'s program, and a pair of events.
    pub fn new(gpu: &super::Gpu) -> Result<Busy> {
        Ok(Busy {
            spin: gpu.kernels().spin.clone(),
            events: EventPair::new(gpu.ctx())?,
            stream: gpu.stream().clone(),
        })
    }

    /// Device time of `n` calls of `replay`, each between two CUDA events after the device
    /// was kept busy (not timed), in microseconds. `replay` enqueues on the device's one
    /// stream, as every solver's `replay` does.
    pub fn time_replays(&self, n: usize, replay: impl FnMut() -> Result<()>) -> Result<Vec<f64>> {
        self.events
            .time_each_after(&self.stream, n, || self.spin(), replay)
    }

    /// Median device time of replaying a graph of one empty kernel with the device kept busy
    /// before each replay: the launch's own cost on the device.
    pub fn empty_graph_us(&self, gpu: &super::Gpu, reps: usize) -> Result<f64> {
        let graph = empty_graph(gpu)?;
        let times = self.time_replays(reps, || graph.launch().map_err(cuda("cuGraphLaunch")))?;
        Ok(median_us(times))
    }

    fn spin(&self) -> Result<()> {
        let mut ns = Self::SPIN_NS;
        let mut params = [&mut ns as *mut u64 as *mut std::ffi::c_void];
        // SAFETY: spin_kernel takes one 64-bit integer by value, and reads no memory.
        unsafe {
            super::maps::launch_with(
                &self.spin,
                (1, 1, 1),
                (32, 0),
                &self.stream,
                &mut params,
                false,
            )
        }
    }
}

/// Reads a solver's outputs right after each timed replay ([`time_replays`](Self::time_replays)),
/// as a simulation's constraint solver reading the islands next would: one kernel that reads
/// every int of every output once. The step's stores decide where the reader finds them (the
/// full rebuilds' maps store evict-first, the quotient's plainly), so the reader's share of a
/// replay-then-read time is the cost a step's stores leave to the kernel after it.
pub struct OutputReader {
    read: cudarc::driver::CudaFunction,
    spans: super::workspace::DevBuf,
    nspan: i32,
    /// Blocks of every span together.
    blocks: u32,
    /// Bytes each read covers.
    bytes: usize,
    sink: super::workspace::DevBuf,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl std::fmt::Debug for OutputReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputReader")
            .field("spans", &self.nspan)
            .field("blocks", &self.blocks)
            .finish_non_exhaustive()
    }
}

/// Most spans the reader's kernel takes: it stages every span's first block in shared memory,
/// one a thread (the kernel's READ_SPANS_MAX).
const READ_SPANS_MAX: usize = 64;
const _: () = assert!(
    crate::islands::EXTENTS.len() <= READ_SPANS_MAX
        && READ_SPANS_MAX <= OutputReader::THREADS as usize
);

impl OutputReader {
    /// Threads a block of the reader.
    const THREADS: u64 = 256;
    /// 16-byte loads a thread: the kernel's `READ_LOADS`, which reads no more than that, so the
    /// two must agree for every int to be read.
    const LOADS: u64 = 4;

    /// A reader of `workspace`'s outputs as the batch now on the device fills them
    /// ([`Workspace::output_spans`](super::workspace::Workspace::output_spans)). It holds their
    /// addresses, not the workspace: use it while the workspace lives and holds that batch
    /// (make another after an upload of another batch size), or it reads memory it no longer
    /// owns.
    pub fn new(gpu: &super::Gpu, workspace: &super::workspace::Workspace) -> Result<OutputReader> {
        Self::over(gpu, &workspace.output_spans())
    }

    /// A reader of `spans`: each a device address, 16-byte aligned, and the bytes from it (a
    /// multiple of 4) that the reader reads as ints, all inside allocations of `gpu`'s context
    /// that the caller keeps while the reader is used. Refuses ([`Error::Refused`]) no spans,
    /// more than `READ_SPANS_MAX`, and a span not aligned or not of whole ints.
    pub(crate) fn over(gpu: &super::Gpu, spans: &[(u64, usize)]) -> Result<OutputReader> {
        use super::workspace::DevBuf;
        let refuse = |reason: String| Error::Refused {
            mode: "gpu",
            reason,
        };
        if spans.is_empty() || spans.len() > READ_SPANS_MAX {
            return Err(refuse(format!(
                "{} spans to read (1 to {READ_SPANS_MAX})",
                spans.len()
            )));
        }
        if let Some((ptr, bytes)) = spans.iter().find(|(p, b)| p % 16 != 0 || b % 4 != 0) {
            return Err(refuse(format!(
                "a span of {bytes} bytes at {ptr:#x} (16-byte aligned ints only)"
            )));
        }
        // Per span: address, ints, first block, blocks (the kernel's IntSpan).
        let mut table: Vec<[u64; 4]> = Vec::new();
        let mut first = 0;
        for &(ptr, bytes) in spans {
            let n = (bytes / 4) as u64;
            let blocks = (n / 4).div_ceil(Self::THREADS * Self::LOADS).max(1);
            table.push([ptr, n, first, blocks]);
            first += blocks;
        }
        let buf = DevBuf::new(gpu.ctx(), "output spans", std::mem::size_of_val(&table[..]))?;
        buf.upload(&table, gpu.stream())?;
        gpu.stream()
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        Ok(OutputReader {
            read: gpu.kernels().read_outputs.clone(),
            nspan: table.len() as i32,
            // A grid holds at most 2^31 - 1 blocks.
            blocks: i32::try_from(first)
                .map_err(|_| refuse(format!("{first} blocks to read the outputs")))?
                as u32,
            bytes: spans.iter().map(|s| s.1).sum(),
            spans: buf,
            sink: DevBuf::new(gpu.ctx(), "reader sink", 4)?,
            ctx: gpu.ctx().clone(),
            stream: gpu.stream().clone(),
        })
    }

    /// Bytes each read covers.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Device time of `n` calls of `replay`, each followed by the read and both between two
    /// CUDA events, in microseconds, after one untimed pair ([`time_replays_us`]). `replay`
    /// enqueues on the device's one stream, as every solver's `replay` does.
    pub fn time_replays(
        &self,
        n: usize,
        mut replay: impl FnMut() -> Result<()>,
    ) -> Result<Vec<f64>> {
        time_replays_us(&self.ctx, &self.stream, 1, n, || {
            replay()?;
            self.read(false)
        })
    }

    /// The XOR of every int the reader reads, by the timed kernel in its checking form (each
    /// thread XORs what it read into one int): what a test compares with the host's XOR of the
    /// same ints, so that an int missed or read an even number of times shows. Runs on the
    /// device's one stream, after what is enqueued there, and waits for it.
    ///
    /// ```no_run
    /// # fn main() -> archipelago::Result<()> {
    /// # use archipelago::gpu::{Gpu, Mode, Solver, graph::OutputReader};
    /// # use archipelago::{Batch, Capacity, Input, Islands, Model, RowType};
    /// let gpu = Gpu::open()?;
    /// let model = Model::from_dofnum(&[1, 2])?;
    /// let mut b = Batch::builder();
    /// b.row(RowType::ContactPyramidal, 0, &[0, 1]);
    /// b.end_world();
    /// let batch = b.finish();
    /// let input = Input::new(&model, &batch)?;
    /// let mut solver = Solver::new(&gpu, Mode::Dsu, Capacity::fit(&model, &batch), &model)?;
    /// let mut out = Islands::default();
    /// solver.solve(&input, &mut out)?;
    /// let host = out.fields().iter().flat_map(|f| f.1.iter()).fold(0, |x, &v| x ^ v as u32);
    /// assert_eq!(OutputReader::new(&gpu, solver.workspace())?.xor()?, host);
    /// # Ok(())
    /// # }
    /// ```
    pub fn xor(&self) -> Result<u32> {
        self.sink.upload(&[0u32], &self.stream)?;
        self.read(true)?;
        let mut x = [0u32];
        self.sink.download(&mut x, &self.stream)?;
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
        Ok(x[0])
    }

    fn read(&self, check: bool) -> Result<()> {
        let (mut spans, mut nspan, mut sink) = (self.spans.ptr(), self.nspan, self.sink.ptr());
        let mut check = i32::from(check);
        let mut params = [
            &mut spans as *mut u64 as *mut std::ffi::c_void,
            &mut nspan as *mut i32 as *mut std::ffi::c_void,
            &mut sink as *mut u64 as *mut std::ffi::c_void,
            &mut check as *mut i32 as *mut std::ffi::c_void,
        ];
        // SAFETY: read_outputs_kernel takes a device pointer to `nspan` spans (address, ints,
        // first block, blocks), each inside an allocation the caller keeps while the reader
        // is used (`new`'s and `over`'s documented contract; aligned whole ints, checked), their
        // count, a device pointer to one int and the check flag, the table and the int
        // allocated here; `blocks` is the spans' sum.
        unsafe {
            super::maps::launch_with(
                &self.read,
                (self.blocks, 1, 1),
                (Self::THREADS as u32, 0),
                &self.stream,
                &mut params,
                false,
            )
        }
    }
}

/// Device time per call of `n` calls of `replay` enqueued back to back between one pair of CUDA
/// events, in microseconds, after `warmup` untimed calls: a step's cost in a loop that does
/// not wait for each step, where each launch's overhead overlaps the step before it (a
/// [`time_replays_us`] figure also holds the launch and the events around it).
pub fn time_back_to_back_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    warmup: usize,
    n: usize,
    mut replay: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warmup {
        replay()?;
    }
    let n = n.max(1);
    let us = EventPair::new(ctx)?.time_us(stream, || (0..n).try_for_each(|_| replay()))?;
    Ok(us / n as f64)
}

#[cfg(test)]
mod tests {
    use super::{OutputReader, READ_SPANS_MAX, to_front};
    use crate::gpu::{Gpu, workspace::DevBuf};

    /// The reader reads every int of its spans once and no other: spans shorter than a load,
    /// with ragged tails, of one block's ints (4,096) and one more, of several blocks, empty,
    /// as many as the kernel takes, filled with random ints whose XOR the host takes (an int
    /// missed, read past its span or read an even number of times changes it); and it refuses
    /// spans it cannot read.
    #[test]
    fn the_reader_reads_every_int_of_its_spans_once() {
        let gpu = match Gpu::open() {
            Ok(g) => g,
            Err(crate::Error::NoDevice(why)) => {
                println!("skipped: no CUDA device ({why})");
                return;
            }
            Err(e) => panic!("opening the device failed with {e}"),
        };
        let mut rng = crate::synth::Rng::new(100);
        let mut lens = vec![1, 3, 4, 5, 255, 4096, 4097, 3 * 4096 + 7, 100_003, 0];
        while lens.len() < READ_SPANS_MAX {
            lens.push(rng.below(20_000));
        }
        let bufs: Vec<(DevBuf, Vec<u32>)> = lens
            .iter()
            .map(|&n| {
                let data: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
                let buf = DevBuf::new(gpu.ctx(), "reader test", 4 * n).unwrap();
                buf.upload(&data, gpu.stream()).unwrap();
                (buf, data)
            })
            .collect();
        gpu.stream().synchronize().unwrap();
        let spans: Vec<(u64, usize)> = bufs.iter().map(|(b, d)| (b.ptr(), 4 * d.len())).collect();
        let xor = |data: &mut dyn Iterator<Item = &u32>| data.fold(0, |x, &v| x ^ v);
        for k in [1, 2, 7, 10, READ_SPANS_MAX] {
            let reader = OutputReader::over(&gpu, &spans[..k]).unwrap();
            let host = xor(&mut bufs[..k].iter().flat_map(|(_, d)| d));
            assert_eq!(reader.xor().unwrap(), host, "the first {k} spans");
            assert_eq!(
                reader.bytes(),
                spans[..k].iter().map(|s| s.1).sum::<usize>()
            );
        }
        // A span over part of a buffer leaves the rest unread.
        let (ptr, data) = (spans[8].0, &bufs[8].1);
        for n in [0, 1, 4097, 50_001] {
            let reader = OutputReader::over(&gpu, &[(ptr, 4 * n)]).unwrap();
            assert_eq!(
                reader.xor().unwrap(),
                xor(&mut data[..n].iter()),
                "{n} ints"
            );
        }
        let refused = |spans: &[(u64, usize)]| {
            matches!(
                OutputReader::over(&gpu, spans),
                Err(crate::Error::Refused { .. })
            )
        };
        assert!(refused(&[]));
        assert!(refused(&vec![(ptr, 4); READ_SPANS_MAX + 1]));
        assert!(refused(&[(ptr + 4, 4)]), "not 16-byte aligned");
        assert!(refused(&[(ptr, 6)]), "not whole ints");
    }

    #[test]
    fn graphs_are_kept_by_key_the_least_recently_replayed_dropped_first() {
        let mut kept: Vec<(u8, Vec<u8>)> = Vec::new();
        for key in [1, 2, 3, 1, 2, 3] {
            to_front(&mut kept, key, 3);
            kept[0].1.push(key);
        }
        // Three keys in turn, three kept: each made once, and replayed again.
        assert_eq!(kept, [(3, vec![3, 3]), (2, vec![2, 2]), (1, vec![1, 1])]);
        to_front(&mut kept, 2, 3);
        to_front(&mut kept, 4, 3);
        assert_eq!(kept, [(4, vec![]), (2, vec![2, 2]), (3, vec![3, 3])]);
    }
}
