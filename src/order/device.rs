//! The canonical order on the GPU: `kernels/order.cu` compiled by NVRTC, every device buffer
//! allocated once from a [`Capacity`], and a per-step sequence of launches that reads nothing
//! back, so it can be captured in a CUDA graph.
//!
//! Two strategies ([`Strategy`]): one block per world doing keys, sort and gather in a single
//! launch, or one device-wide sort with the world as the leading digit. Both run the stable
//! 8-bit LSD radix sort of [`super::sort`] and give the same order as [`super::Canonicalizer`].
//!
//! ```no_run
//! use archipelago::order::device::{self, DeviceOrder, Strategy};
//! use archipelago::order::{KeyLayout, RowKeys};
//! use archipelago::{Batch, Capacity, Input, Model, RowType};
//! let model = Model::from_dofnum(&[1, 1]).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::ContactPyramidal, 0, &[0, 1]).end_world();
//! let batch = b.finish();
//! let keys = RowKeys { geom: vec![[2, 3]], colid: vec![0] };
//! let input = Input::new(&model, &batch).unwrap();
//! match device::open() {
//!     Ok(dev) => {
//!         let cap = Capacity::fit(&model, &batch);
//!         let layout = KeyLayout::fit(&batch, &keys);
//!         let mut order = DeviceOrder::new(&dev, &cap, layout, Strategy::Segmented).unwrap();
//!         let (sorted, perm) = order.canonicalize(&input, &keys).unwrap();
//!         assert_eq!(perm, [0]);
//!     }
//!     Err(e) => println!("skipped: {e}"),
//! }
//! ```

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg, result,
};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

use super::keys::{Bounds, KeyLayout, KeyWidth, RowKeys};
use crate::error::{Error, Result};
use crate::rows::{Batch, Capacity, Input, RowType};

/// The kernel source.
pub const SOURCE: &str = include_str!("../../kernels/order.cu");

const THREADS: u32 = 256;
/// Rows per block of the global strategy's histogram and scatter.
const CHUNK: usize = 2048;

/// How the device sorts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One block per world: keys, every digit pass and the gather in one launch.
    Segmented,
    /// One device-wide sort of 64-bit keys whose leading digits are the world.
    Global,
}

/// An open device: context and stream.
#[derive(Debug, Clone)]
pub struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl Device {
    /// A device from an existing context and stream (for example the GPU backend's).
    pub fn from_parts(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Device {
        Device { ctx, stream }
    }

    /// The stream every launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

/// Opens device 0, or [`Error::NoDevice`] when there is no driver, no NVRTC or no device.
pub fn open() -> Result<Device> {
    if std::env::var_os("ARCHIPELAGO_NO_GPU").is_some() {
        return Err(Error::NoDevice("disabled by ARCHIPELAGO_NO_GPU".into()));
    }
    // SAFETY: these only try to load the libraries.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoDevice(
            "the CUDA driver library is not installed".into(),
        ));
    }
    if !nvrtc_present() {
        return Err(Error::NoDevice("the NVRTC library is not installed".into()));
    }
    let opened = std::panic::catch_unwind(|| -> Result<Device> {
        result::init().map_err(|e| Error::NoDevice(describe(e)))?;
        let count = result::device::get_count().map_err(|e| Error::NoDevice(describe(e)))?;
        if count < 1 {
            return Err(Error::NoDevice("the driver reports no CUDA device".into()));
        }
        let ctx = CudaContext::new(0).map_err(|e| Error::NoDevice(describe(e)))?;
        // SAFETY: before any allocation; buffers are used on one stream only.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        Ok(Device { ctx, stream })
    });
    opened.unwrap_or_else(|_| {
        Err(Error::NoDevice(
            "the CUDA driver lacks an entry point".into(),
        ))
    })
}

/// Whether libnvrtc can be loaded (the kernels compile without a device).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles [`SOURCE`] for `sm_{cc}` (for example "90") to PTX.
pub fn compile(arch: &str) -> Result<String> {
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture=sm_{arch}"), "-std=c++17".into()],
        name: Some("order.cu".into()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(SOURCE, opts).map_err(|e| Error::Compile {
        source_name: "kernels/order.cu".into(),
        log: match &e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        },
    })?;
    Ok(ptx.to_src())
}

fn describe(e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned());
    name.unwrap_or_else(|_| format!("{:?}", e.0))
}

fn cuda(call: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        call: call.to_string(),
        detail: describe(e),
    }
}

/// `OrderLayout` of order.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct LayoutArg {
    id_min: i32,
    id_max: i32,
    geom_min: i32,
    geom_max: i32,
    colid_min: i32,
    colid_max: i32,
    id_bits: u32,
    geom_bits: u32,
    colid_bits: u32,
    payload_bits: u32,
}

// SAFETY: plain `repr(C)` integers, the same layout as the CUDA struct.
unsafe impl DeviceRepr for LayoutArg {}

impl LayoutArg {
    fn new(layout: &KeyLayout) -> LayoutArg {
        // An empty range (min > max) for a field without rows: any row needing it is flagged.
        let range = |b: Option<Bounds>| b.map_or((1, 0), |b| (b.min, b.max));
        let bounds = layout.bounds();
        let (id, geom, colid) = (range(bounds.id), range(bounds.geom), range(bounds.colid));
        let (id_bits, geom_bits, colid_bits) = layout.field_bits();
        LayoutArg {
            id_min: id.0,
            id_max: id.1,
            geom_min: geom.0,
            geom_max: geom.1,
            colid_min: colid.0,
            colid_max: colid.1,
            id_bits,
            geom_bits,
            colid_bits,
            payload_bits: layout.payload_bits(),
        }
    }
}

struct Functions {
    segmented_u32: CudaFunction,
    segmented_u64: CudaFunction,
    global_keys: CudaFunction,
    global_hist: CudaFunction,
    global_scan: CudaFunction,
    global_scatter: CudaFunction,
    global_gather: CudaFunction,
}

/// Device buffers of one step's rows (inputs or the canonical outputs).
struct Rows {
    world_rowadr: CudaSlice<u32>,
    row_type: CudaSlice<u8>,
    row_id: CudaSlice<i32>,
    row_supadr: CudaSlice<u32>,
    row_support: CudaSlice<i32>,
}

impl Rows {
    fn new(stream: &Arc<CudaStream>, cap: &Capacity) -> Result<Rows> {
        let rows = cap.nworld * cap.njmax;
        Ok(Rows {
            world_rowadr: alloc(stream, cap.nworld + 1)?,
            row_type: alloc(stream, rows)?,
            row_id: alloc(stream, rows)?,
            row_supadr: alloc(stream, rows + 1)?,
            row_support: alloc(stream, cap.nworld * cap.nsupport)?,
        })
    }

    fn bytes(&self) -> usize {
        self.world_rowadr.len() * 4
            + self.row_type.len()
            + self.row_id.len() * 4
            + self.row_supadr.len() * 4
            + self.row_support.len() * 4
    }
}

fn alloc<T: DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    n: usize,
) -> Result<CudaSlice<T>> {
    stream.alloc_zeros::<T>(n.max(1)).map_err(|e| {
        if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            let free = result::mem_get_info().map(|(f, _)| f).unwrap_or(0);
            Error::OutOfMemory {
                asked: n * std::mem::size_of::<T>(),
                free,
            }
        } else {
            cuda("cuMemAlloc")(e)
        }
    })
}

/// The GPU canonical order: inputs, outputs and scratch on the device, allocated once.
pub struct DeviceOrder {
    device: Device,
    capacity: Capacity,
    layout: KeyLayout,
    strategy: Strategy,
    narrow: bool,
    functions: Functions,
    input: Rows,
    geom: CudaSlice<i32>,
    colid: CudaSlice<i32>,
    output: Rows,
    order: CudaSlice<u32>,
    keys32: [CudaSlice<u32>; 2],
    keys64: [CudaSlice<u64>; 2],
    vals: [CudaSlice<u32>; 2],
    counts: CudaSlice<u32>,
    status: CudaSlice<i32>,
    nworld: usize,
    staged_type: Vec<u8>,
    host: Batch,
    host_order: Vec<u32>,
    host_type: Vec<u8>,
}

impl std::fmt::Debug for DeviceOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceOrder")
            .field("capacity", &self.capacity)
            .field("layout", &self.layout)
            .field("strategy", &self.strategy)
            .finish()
    }
}

impl DeviceOrder {
    /// Compiles the kernels for the device and allocates every buffer for `capacity`, with key
    /// `layout` fixed (a fixed layout keeps the launches' arguments the same every step, so
    /// the sequence can be captured once). Refuses a layout the strategy cannot sort: wider
    /// than 64 bits, or for [`Strategy::Global`] wider than 64 bits with the world digits.
    pub fn new(
        device: &Device,
        capacity: &Capacity,
        layout: KeyLayout,
        strategy: Strategy,
    ) -> Result<DeviceOrder> {
        let refuse = |reason: String| Error::Refused {
            mode: "deterministic",
            reason,
        };
        if layout.width() == KeyWidth::Split {
            return Err(refuse(format!(
                "a {}-bit key needs the CPU's two-pass sort",
                layout.bits()
            )));
        }
        if strategy == Strategy::Global && layout.bits() + world_bits(capacity.nworld) > 64 {
            return Err(refuse(format!(
                "{} key bits and {} world bits exceed 64",
                layout.bits(),
                world_bits(capacity.nworld)
            )));
        }
        let ctx = &device.ctx;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(cuda("cuDeviceGetAttribute"))?;
        let ptx = compile(&format!("{major}{minor}"))?;
        let module = ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(cuda("cuModuleLoadData"))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(cuda("cuModuleGetFunction"))
        };
        let functions = Functions {
            segmented_u32: f("order_segmented_u32")?,
            segmented_u64: f("order_segmented_u64")?,
            global_keys: f("order_global_keys")?,
            global_hist: f("order_global_hist")?,
            global_scan: f("order_global_scan")?,
            global_scatter: f("order_global_scatter")?,
            global_gather: f("order_global_gather")?,
        };
        let s = &device.stream;
        let rows = capacity.nworld * capacity.njmax;
        let narrow = layout.width() == KeyWidth::Narrow && strategy == Strategy::Segmented;
        let (n32, n64) = if narrow { (rows, 0) } else { (0, rows) };
        Ok(DeviceOrder {
            device: device.clone(),
            capacity: *capacity,
            layout,
            strategy,
            narrow,
            functions,
            input: Rows::new(s, capacity)?,
            geom: alloc(s, 2 * rows)?,
            colid: alloc(s, rows)?,
            output: Rows::new(s, capacity)?,
            order: alloc(s, rows)?,
            keys32: [alloc(s, n32)?, alloc(s, n32)?],
            keys64: [alloc(s, n64)?, alloc(s, n64)?],
            vals: [alloc(s, rows)?, alloc(s, rows)?],
            counts: alloc(s, 256 * rows.div_ceil(CHUNK).max(1))?,
            status: alloc(s, 1)?,
            nworld: 0,
            staged_type: Vec::with_capacity(rows),
            host: Batch::default(),
            host_order: Vec::with_capacity(rows),
            host_type: Vec::with_capacity(rows),
        })
    }

    /// The key layout.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// Device buffers of the canonical rows after [`enqueue`](Self::enqueue), for a GPU mode to
    /// read directly: `(row_type as u8 codes, row_id, row_supadr, row_support)`, with the input's
    /// `world_rowadr` (unchanged by the order). Valid for the uploaded batch's rows.
    pub fn canonical_rows(
        &self,
    ) -> (
        &CudaSlice<u8>,
        &CudaSlice<i32>,
        &CudaSlice<u32>,
        &CudaSlice<i32>,
    ) {
        let o = &self.output;
        (&o.row_type, &o.row_id, &o.row_supadr, &o.row_support)
    }

    /// Device buffer of the gather order (`order[k]` = input row of canonical row `k`) and of
    /// the uploaded `world_rowadr`.
    pub fn order_buffer(&self) -> (&CudaSlice<u32>, &CudaSlice<u32>) {
        (&self.order, &self.input.world_rowadr)
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Device bytes held.
    pub fn device_bytes(&self) -> usize {
        self.input.bytes()
            + self.output.bytes()
            + (self.geom.len() + self.colid.len() + self.order.len()) * 4
            + (self.keys32[0].len() + self.keys32[1].len()) * 4
            + (self.keys64[0].len() + self.keys64[1].len()) * 8
            + (self.vals[0].len() + self.vals[1].len() + self.counts.len() + 1) * 4
    }

    /// Copies a step's rows and keys to the device (asynchronous on the stream) and clears the
    /// bounds flag. Checks capacity and key lengths first.
    pub fn upload(&mut self, input: &Input<'_>, keys: &RowKeys) -> Result<()> {
        let batch = input.batch();
        self.capacity.check(input.model(), batch)?;
        keys.check(batch)?;
        let s = self.device.stream.clone();
        self.staged_type.clear();
        self.staged_type
            .extend(batch.row_type.iter().map(|&t| t as u8));
        let i = &mut self.input;
        htod(&s, &batch.world_rowadr, &mut i.world_rowadr)?;
        htod(&s, &self.staged_type, &mut i.row_type)?;
        htod(&s, &batch.row_id, &mut i.row_id)?;
        htod(&s, &batch.row_supadr, &mut i.row_supadr)?;
        htod(&s, &batch.row_support, &mut i.row_support)?;
        htod(&s, keys.geom.as_flattened(), &mut self.geom)?;
        htod(&s, &keys.colid, &mut self.colid)?;
        self.nworld = batch.nworld();
        Ok(())
    }

    /// Enqueues the whole canonical-order step for the uploaded rows on the stream: no
    /// allocation, no host read-back; capturable in a CUDA graph for a fixed world count.
    pub fn enqueue(&mut self) -> Result<()> {
        let s = self.device.stream.clone();
        s.memset_zeros(&mut self.status)
            .map_err(cuda("cuMemsetD8"))?;
        if self.nworld == 0 {
            return Ok(());
        }
        match self.strategy {
            Strategy::Segmented => self.enqueue_segmented(&s),
            Strategy::Global => self.enqueue_global(&s),
        }
    }

    fn enqueue_segmented(&mut self, s: &Arc<CudaStream>) -> Result<()> {
        let l = LayoutArg::new(&self.layout);
        let bits = self.layout.bits();
        let nworld = self.nworld as i32;
        let cfg = LaunchConfig {
            grid_dim: (self.nworld as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (i, o) = (&self.input, &mut self.output);
        let narrow = self.narrow;
        let (f, [ka32, kb32], [ka64, kb64]) = (
            if narrow {
                &self.functions.segmented_u32
            } else {
                &self.functions.segmented_u64
            },
            &mut self.keys32,
            &mut self.keys64,
        );
        let mut b = s.launch_builder(f);
        b.arg(&l).arg(&bits).arg(&i.world_rowadr).arg(&i.row_type);
        b.arg(&i.row_id).arg(&self.geom).arg(&self.colid);
        b.arg(&i.row_supadr).arg(&i.row_support);
        if narrow {
            b.arg(ka32).arg(kb32);
        } else {
            b.arg(ka64).arg(kb64);
        }
        let [va, vb] = &mut self.vals;
        b.arg(va).arg(vb).arg(&mut self.order);
        b.arg(&mut o.row_type)
            .arg(&mut o.row_id)
            .arg(&mut o.row_supadr);
        b.arg(&mut o.row_support).arg(&mut self.status).arg(&nworld);
        // SAFETY: the argument list matches order_segmented_*; every buffer holds the capacity.
        unsafe { b.launch(cfg) }.map_err(cuda("cuLaunchKernel"))?;
        Ok(())
    }

    fn enqueue_global(&mut self, s: &Arc<CudaStream>) -> Result<()> {
        let l = LayoutArg::new(&self.layout);
        let bits = self.layout.bits();
        let total = bits + world_bits(self.nworld);
        let nworld = self.nworld as i32;
        let rows = self.capacity.nworld * self.capacity.njmax;
        let nchunk = rows.div_ceil(CHUNK).max(1) as u32;
        let chunk = CHUNK as u32;
        let i = &self.input;
        let fns = &self.functions;
        let [ka, kb] = &mut self.keys64;
        let [va, vb] = &mut self.vals;
        let grid = |n: u32| LaunchConfig {
            grid_dim: (n.max(1), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = s.launch_builder(&fns.global_keys);
        b.arg(&l)
            .arg(&bits)
            .arg(&i.world_rowadr)
            .arg(&nworld)
            .arg(&i.row_type);
        b.arg(&i.row_id)
            .arg(&self.geom)
            .arg(&self.colid)
            .arg(&mut *ka)
            .arg(&mut *va);
        b.arg(&mut self.status);
        // SAFETY: matches order_global_keys; one thread per row of the capacity.
        unsafe { b.launch(grid((rows as u32).div_ceil(THREADS))) }
            .map_err(cuda("cuLaunchKernel"))?;
        let mut flip = false;
        for pass in 0..total.div_ceil(8) {
            let shift = 8 * pass;
            let (sk, sv, dk, dv) = if flip {
                (&*kb, &*vb, &mut *ka, &mut *va)
            } else {
                (&*ka, &*va, &mut *kb, &mut *vb)
            };
            let mut b = s.launch_builder(&fns.global_hist);
            b.arg(sk)
                .arg(&i.world_rowadr)
                .arg(&nworld)
                .arg(&shift)
                .arg(&chunk);
            b.arg(&nchunk).arg(&mut self.counts);
            // SAFETY: matches order_global_hist.
            unsafe { b.launch(grid(nchunk)) }.map_err(cuda("cuLaunchKernel"))?;
            let mut b = s.launch_builder(&fns.global_scan);
            b.arg(&mut self.counts).arg(&nchunk);
            // SAFETY: matches order_global_scan.
            unsafe { b.launch(grid(1)) }.map_err(cuda("cuLaunchKernel"))?;
            let mut b = s.launch_builder(&fns.global_scatter);
            b.arg(sk)
                .arg(sv)
                .arg(dk)
                .arg(dv)
                .arg(&i.world_rowadr)
                .arg(&nworld);
            b.arg(&shift).arg(&chunk).arg(&nchunk).arg(&self.counts);
            // SAFETY: matches order_global_scatter.
            unsafe { b.launch(grid(nchunk)) }.map_err(cuda("cuLaunchKernel"))?;
            flip = !flip;
        }
        let vals = if flip { &*vb } else { &*va };
        let o = &mut self.output;
        let mut b = s.launch_builder(&fns.global_gather);
        b.arg(&i.world_rowadr)
            .arg(&nworld)
            .arg(vals)
            .arg(&i.row_type)
            .arg(&i.row_id);
        b.arg(&i.row_supadr)
            .arg(&i.row_support)
            .arg(&mut self.order);
        b.arg(&mut o.row_type)
            .arg(&mut o.row_id)
            .arg(&mut o.row_supadr);
        b.arg(&mut o.row_support);
        // SAFETY: matches order_global_gather; one block per world.
        unsafe { b.launch(grid(self.nworld as u32)) }.map_err(cuda("cuLaunchKernel"))?;
        Ok(())
    }

    /// Captures [`enqueue`](Self::enqueue) for the uploaded world count as a CUDA graph: replay it
    /// after each [`upload`](Self::upload) of a batch with the same number of worlds.
    pub fn capture(&mut self) -> Result<cudarc::driver::CudaGraph> {
        use cudarc::driver::sys;
        let s = self.device.stream.clone();
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda("cuStreamBeginCapture"))?;
        let enqueued = self.enqueue();
        // Always end the capture so the stream stays usable after a failure.
        let ended = s.end_capture(sys::CUgraphInstantiate_flags(0));
        enqueued?;
        ended
            .map_err(cuda("cuStreamEndCapture"))?
            .ok_or_else(|| Error::Cuda {
                call: "cuStreamEndCapture".into(),
                detail: "the capture produced no graph".into(),
            })
    }

    /// Waits for the stream, checks the bounds flag, and copies the canonical batch and the
    /// gather order back (`order[k]` = input row of canonical row `k`). The rowless hyperedges
    /// and world offsets are taken from `input` (the order does not touch them).
    pub fn download(&mut self, input: &Input<'_>) -> Result<(&Batch, &[u32])> {
        let s = self.device.stream.clone();
        let batch = input.batch();
        let (nrow, nsup) = (batch.nrow(), batch.row_support.len());
        let mut status = [0i32];
        s.memcpy_dtoh(&self.status, &mut status)
            .map_err(cuda("cuMemcpyDtoH"))?;
        s.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        if status[0] > 0 {
            let row = status[0] as usize - 1;
            return Err(Error::KeyBounds {
                row,
                detail: format!("{:?}", self.layout.bounds()),
            });
        }
        let h = &mut self.host;
        h.world_rowadr.clone_from(&batch.world_rowadr);
        h.world_edgeadr.clone_from(&batch.world_edgeadr);
        h.edge_id.clone_from(&batch.edge_id);
        h.edge_supadr.clone_from(&batch.edge_supadr);
        h.edge_support.clone_from(&batch.edge_support);
        let o = &self.output;
        dtoh(&s, &self.order, &mut self.host_order, nrow)?;
        dtoh(&s, &o.row_type, &mut self.host_type, nrow)?;
        dtoh(&s, &o.row_id, &mut h.row_id, nrow)?;
        dtoh(&s, &o.row_supadr, &mut h.row_supadr, nrow + 1)?;
        dtoh(&s, &o.row_support, &mut h.row_support, nsup)?;
        s.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        if nrow == 0 {
            h.row_supadr[0] = 0;
        }
        h.row_type.clear();
        for &t in &self.host_type {
            let kind = RowType::from_code(i32::from(t)).ok_or(Error::RowType {
                row: h.row_type.len(),
                code: i32::from(t),
            })?;
            h.row_type.push(kind);
        }
        Ok((&self.host, &self.host_order))
    }

    /// Upload, enqueue and download: the canonical batch and gather order, as
    /// [`super::Canonicalizer::canonicalize`] returns them.
    pub fn canonicalize(&mut self, input: &Input<'_>, keys: &RowKeys) -> Result<(&Batch, &[u32])> {
        self.upload(input, keys)?;
        self.enqueue()?;
        self.download(input)
    }
}

/// Bits of a world index below `nworld`.
pub fn world_bits(nworld: usize) -> u32 {
    usize::BITS - nworld.saturating_sub(1).leading_zeros()
}

fn htod<T: DeviceRepr>(s: &Arc<CudaStream>, src: &[T], dst: &mut CudaSlice<T>) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    if src.len() > dst.len() {
        return Err(Error::OverCapacity {
            world: 0,
            what: "device buffer entries",
            got: src.len(),
            cap: dst.len(),
        });
    }
    let mut view = dst.slice_mut(..src.len());
    s.memcpy_htod(src, &mut view).map_err(cuda("cuMemcpyHtoD"))
}

fn dtoh<T: DeviceRepr + Default + Clone>(
    s: &Arc<CudaStream>,
    src: &CudaSlice<T>,
    dst: &mut Vec<T>,
    n: usize,
) -> Result<()> {
    dst.clear();
    dst.resize(n, T::default());
    if n == 0 {
        return Ok(());
    }
    s.memcpy_dtoh(&src.slice(..n), dst.as_mut_slice())
        .map_err(cuda("cuMemcpyDtoH"))
}
