//! [`Solver`]: one GPU mode over batches within a capacity.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaStream;

use super::graph::KeptGraphs;
use super::maps::BlockShape;
use super::module::Kernels;
use super::order::{DeviceOrder, Plan, Sort};
use super::workspace::{Needs, Workspace};
use super::{Gpu, block, cuda, dense, dsu, labelprop, regcap, tiled, warp};
use crate::cpu::Stats;
use crate::error::{Error, Result};
use crate::islands::Islands;
use crate::model::Model;
use crate::order::{KeyBounds, RowKeys};
use crate::rows::{Capacity, Input};

/// The GPU full-rebuild modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// MuJoCo Warp's former dense kernel (tree_tree matrix + DFS per world).
    Dense,
    /// Row-parallel min-root CAS union-find in global memory.
    Dsu,
    /// Min-label propagation with pointer jumping (block per world).
    Labelprop,
    /// Propagation with 32-lane tiles and warp min reductions (block per world).
    Tiled,
    /// Block per world, `parent[]` in shared memory, one launch per step.
    Block,
    /// Warp per world, `parent[]` in shared memory, one launch per step (for small worlds).
    Warp,
}

impl Mode {
    /// Every mode, in the order the tools list them.
    pub const ALL: [Mode; 6] = [
        Mode::Dense,
        Mode::Dsu,
        Mode::Labelprop,
        Mode::Tiled,
        Mode::Block,
        Mode::Warp,
    ];

    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Dense => "dense",
            Mode::Dsu => "dsu",
            Mode::Labelprop => "labelprop",
            Mode::Tiled => "tiled",
            Mode::Block => "block",
            Mode::Warp => "warp",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| Error::UnknownMode {
                name: s.to_string(),
                known: Mode::ALL.map(|m| m.name()).join(", "),
            })
    }
}

/// Construction options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Most bytes `dense` may take for its matrix and stack (besides the free memory).
    pub dense_limit: Option<usize>,
    /// Deterministic mode: each world's rows are put into canonical order on the device
    /// before discovery, in the same captured step ([`super::order`]). Outputs are then in
    /// canonical row order and bitwise identical across runs and input permutations; steps
    /// are uploaded with [`Solver::upload_keyed`] and the permutation read with
    /// [`Solver::download_order`].
    pub deterministic: bool,
    /// Fixed bounds of the canonical key's fields (deterministic mode); `None` fits the key to
    /// each step's rows.
    pub key_bounds: Option<KeyBounds>,
    /// The sort of worlds that fit one block (deterministic mode).
    pub sort: Sort,
    /// When the fused modes' kernel may start before the sort ends (deterministic mode).
    pub overlap: Overlap,
}

/// Deterministic mode: whether a fused mode's kernel (`block`, `labelprop`, `tiled`, `warp`)
/// is launched as a programmatic dependent of the sort, so that its discovery (which never
/// reads the order) runs while the worlds are being sorted and only its maps wait for the
/// sort. Needs compute capability 9.0; elsewhere the launches are always in sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Overlap {
    /// Overlap when the sort leaves room for it: the bitonic sort of small tiles (light blocks
    /// that share a multiprocessor with the fused kernel's), or fewer worlds than
    /// multiprocessors. The shared-memory radix sort of many big worlds fills every
    /// multiprocessor, and overlapping it measured slower on the H200 (the fused blocks then
    /// start unevenly as sort blocks retire; benches/results/gpu-h200-notes.md, session 5).
    #[default]
    Auto,
    /// Never overlap (for measurements).
    Never,
    /// Always overlap (for measurements).
    Always,
}

/// A stage of a step that [`Solver::time_part`] can time alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The canonical order (the sort) of deterministic mode.
    Order,
    /// The maps from the labels in the workspace: the share of a step every mode pays.
    Maps,
}

/// One mode, its workspace and its captured step.
pub struct Solver {
    mode: Mode,
    kernels: Arc<Kernels>,
    /// The kernel `shape` is for (the maps' for `dense` and `dsu`, the warp kernel's for
    /// `warp`). `block` launches it: in many waves its register-capped copy (regcap), the one
    /// mode whose kernel is not always the main module's.
    kernel: cudarc::driver::CudaFunction,
    register_cap: Option<u32>,
    stream: Arc<CudaStream>,
    ws: Workspace,
    shape: BlockShape,
    /// The step's graph, and the capture of a step launched without one
    /// ([`replay`](Self::replay)).
    graph: KeptGraphs<(), 1>,
    order: Option<DeviceOrder>,
    /// Whether the device holds the whole of the last upload (its keys too): after one that
    /// failed or was refused past its keys' check (the batch copied, the keys not, say), no
    /// launch or download reads them until an upload succeeds; keys refused leave the last
    /// upload whole.
    uploaded: bool,
    overlap: Overlap,
    /// The device's compute capability (major) and multiprocessors ([`Overlap`]).
    capability: i32,
    sm_count: usize,
    setup_s: f64,
}

impl std::fmt::Debug for Solver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver")
            .field("mode", &self.mode)
            .field("capacity", &self.ws.capacity())
            .field("register_cap", &self.register_cap)
            .field("deterministic", &self.order.is_some())
            .finish_non_exhaustive()
    }
}

impl Solver {
    /// Builds `mode` for batches within `cap` on `model`: allocates the whole workspace.
    pub fn new(gpu: &Gpu, mode: Mode, cap: Capacity, model: &Model) -> Result<Solver> {
        Solver::with_options(gpu, mode, cap, model, Options::default())
    }

    /// [`Solver::new`] with options.
    pub fn with_options(
        gpu: &Gpu,
        mode: Mode,
        cap: Capacity,
        model: &Model,
        opts: Options,
    ) -> Result<Solver> {
        let start = Instant::now();
        let info = gpu.info();
        if mode == Mode::Dense {
            let (free, _) = gpu.mem_info()?;
            dense::check_fits(&cap, free, opts.dense_limit)?;
        }
        let kernels = gpu.kernels().clone();
        let f = match mode {
            Mode::Dense | Mode::Dsu => &kernels.maps,
            Mode::Labelprop => &kernels.block_labelprop,
            Mode::Tiled => &kernels.block_tiled,
            Mode::Block => &kernels.block_dsu,
            Mode::Warp => &kernels.warp_dsu,
        };
        let shape = match mode {
            Mode::Warp => warp::shape(&cap, info.smem_optin),
            _ => BlockShape::choose(f, &cap, info)?,
        };
        // `block` in many waves: its copy with fewer registers, shaped anew (regcap).
        let (kernel, shape, register_cap) =
            if mode == Mode::Block && regcap::pays(f, shape, cap.nworld, info)? {
                let capped = block::capped(gpu)?;
                let shape = BlockShape::choose(&capped, &cap, info)?;
                (capped, shape, Some(regcap::BLOCK))
            } else {
                (f.clone(), shape, None)
            };
        shape.prepare(&kernel)?;
        let needs = Needs {
            fallback: shape.smem == 0 && cap.ntree > 0,
            dense: mode == Mode::Dense,
        };
        let mut ws = Workspace::new(gpu.ctx(), cap, model, needs)?;
        let order = if opts.deterministic {
            let order = DeviceOrder::new(gpu, &cap, &ws, opts.key_bounds, opts.sort)?;
            ws.follow_order(order.rank_ptr());
            Some(order)
        } else {
            None
        };
        Ok(Solver {
            mode,
            kernels,
            kernel,
            register_cap,
            stream: gpu.stream().clone(),
            ws,
            shape,
            graph: KeptGraphs::default(),
            order,
            uploaded: false,
            overlap: opts.overlap,
            capability: info.capability.0,
            sm_count: info.sm_count.max(0) as usize,
            setup_s: start.elapsed().as_secs_f64(),
        })
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The workspace (its byte report, its capacity).
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    /// The block-per-world launch shape.
    pub fn shape(&self) -> BlockShape {
        self.shape
    }

    /// Registers a thread of the launched kernel when it is a capped copy (`block` in many
    /// waves: [`regcap`]); `None` for the main module's kernels.
    pub fn register_cap(&self) -> Option<u32> {
        self.register_cap
    }

    /// Seconds spent constructing (workspace allocation and kernel set-up).
    pub fn setup_seconds(&self) -> f64 {
        self.setup_s
    }

    /// Copies `input` to the device. A deterministic solver needs the row keys: use
    /// [`upload_keyed`](Self::upload_keyed).
    pub fn upload(&mut self, input: &Input<'_>) -> Result<()> {
        if self.order.is_some() {
            return Err(Error::Refused {
                mode: "deterministic",
                reason: "the canonical order needs row keys: use upload_keyed".into(),
            });
        }
        self.uploaded = false;
        self.ws.upload(input, &self.stream)?;
        self.uploaded = true;
        Ok(())
    }

    /// Copies `input` and its row keys to the device (the keys are only read in deterministic
    /// mode). Keys the order refuses are refused before anything is copied.
    pub fn upload_keyed(&mut self, input: &Input<'_>, keys: &RowKeys) -> Result<()> {
        // The keys' layout (a pass over every row) once, refused before anything is copied.
        let layout = match &self.order {
            Some(order) => Some(order.layout_for(input, keys)?),
            None => None,
        };
        // Refused before this, the last upload is still whole; from here it may be overwritten.
        self.uploaded = false;
        let enqueued = self.ws.enqueue_upload(input, &self.stream);
        let changed = match (&enqueued, &mut self.order, layout) {
            (Ok(()), Some(order), Some(layout)) => {
                order.enqueue_upload(input, keys, layout, &self.stream)
            }
            _ => Ok(false),
        };
        // Another sort kernel: the captured step no longer applies (cleared before any error
        // below returns, so that no later replay takes it).
        if matches!(changed, Ok(true)) {
            self.graph.clear();
        }
        // One wait for the batch's and the keys' copies (also when a copy failed).
        super::wait_after(&self.stream, enqueued)?;
        changed?;
        self.uploaded = true;
        Ok(())
    }

    /// Refuses a launch or a download after an upload that did not complete.
    fn check_uploaded(&self) -> Result<()> {
        super::uploaded_whole(self.uploaded, "gpu")
    }

    /// Whether the solver runs deterministic mode.
    pub fn deterministic(&self) -> bool {
        self.order.is_some()
    }

    /// Deterministic mode's order step (its plan, layout and bytes).
    pub fn order(&self) -> Option<&DeviceOrder> {
        self.order.as_ref()
    }

    /// The permutation of the last deterministic step: `order[k]` = input row of canonical
    /// row `k`, `rank[r]` = canonical row of input row `r` (global rows), so that
    /// `dst[k] = src[order[k]]` puts per-row data of the caller's into the outputs' order.
    /// Refused when the solver is not deterministic.
    pub fn download_order(&self, order: &mut Vec<u32>, rank: &mut Vec<u32>) -> Result<()> {
        self.check_uploaded()?;
        match &self.order {
            Some(o) => o.download(order, rank, &self.stream),
            None => Err(Error::Refused {
                mode: "gpu",
                reason: "the solver was not built with deterministic: true".into(),
            }),
        }
    }

    fn enqueue(&self, stream: &CudaStream) -> Result<()> {
        if let Some(order) = &self.order {
            order.enqueue(stream)?;
            self.ws.overlap_order(self.overlaps(order));
        }
        let (k, s, ws) = (&*self.kernels, self.shape, &self.ws);
        match self.mode {
            Mode::Dense => dense::enqueue(k, s, ws, stream),
            Mode::Dsu => dsu::enqueue(k, s, ws, stream),
            Mode::Labelprop => labelprop::enqueue(k, s, ws, stream),
            Mode::Tiled => tiled::enqueue(k, s, ws, stream),
            Mode::Block => block::enqueue(&self.kernel, s, ws, stream),
            Mode::Warp => warp::enqueue(k, s, ws, stream),
        }
    }

    /// Whether this step's fused kernel starts while `order` still sorts ([`Overlap`]).
    fn overlaps(&self, order: &DeviceOrder) -> bool {
        let light = matches!(order.plan(), Some(Plan::Small { .. }));
        let few = self.ws.nworld() <= self.sm_count;
        self.capability >= 9
            && match self.overlap {
                Overlap::Auto => light || few,
                Overlap::Never => false,
                Overlap::Always => true,
            }
    }

    /// Runs the step on the uploaded batch with direct launches (no graph).
    pub fn launch_direct(&mut self) -> Result<()> {
        self.check_uploaded()?;
        self.enqueue(&self.stream)
    }

    /// Runs the step on the uploaded batch by replaying its graph. At a world count the graph
    /// was not captured for (the first step, or a resized batch) the step is launched directly
    /// instead, and its graph captured while the device runs it: at the
    /// [`download`](Self::download) that follows, before its wait, or at the next replay,
    /// whichever comes first. As in the quotient's
    /// [`replay`](super::quotient::QuotientSolver::replay), a capture (its instantiation and
    /// upload, 100-300 µs on the H200) then no longer holds the device up.
    pub fn replay(&mut self) -> Result<()> {
        self.check_uploaded()?;
        let stream = self.stream.clone();
        let mut graph = std::mem::take(&mut self.graph);
        let r = graph.replay(&stream, (), self.ws.nworld(), |s| self.enqueue(s));
        self.graph = graph;
        r
    }

    /// Whether the graph of the uploaded batch's world count is captured: false from a
    /// direct launch of [`replay`](Self::replay) until its download.
    pub fn is_captured(&self) -> bool {
        self.graph.holds((), self.ws.nworld())
    }

    /// Captures the graph of the step [`replay`](Self::replay) launched directly, unless an
    /// upload since changed the world count. Called while the device runs that step.
    fn capture_pending(&mut self) -> Result<()> {
        if !self.graph.is_pending() {
            return Ok(()); // the common step: its graph was replayed
        }
        let stream = self.stream.clone();
        let mut graph = std::mem::take(&mut self.graph);
        let r = graph.capture_pending(&stream, (), self.ws.nworld(), |s| self.enqueue(s));
        self.graph = graph;
        r
    }

    /// Waits for the device and copies every output into `out`: one copy for each of its 19
    /// outputs. Before its wait it captures the graph of a step [`replay`](Self::replay)
    /// launched directly. Into pageable memory each copy goes through the driver's staging and
    /// costs several µs; fill a [`PinnedIslands`](super::PinnedIslands) with it instead, as a
    /// GPU `Engine` does (H200, the hammock trace's three worlds: 206 µs a whole `dsu` step into pageable
    /// outputs, 78 into page-locked ones; benches/results/logs/h200-2026-12-03-session54-calls.md).
    pub fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.download_while(input, out, || ())
    }

    /// [`download`](Self::download) that runs `meanwhile` on the host once every copy is
    /// enqueued, before the wait: host work that then overlaps the step's kernels and copies
    /// (the engine's `auto` records a step's events for the quotient there).
    pub fn download_while(
        &mut self,
        input: &Input<'_>,
        out: &mut Islands,
        meanwhile: impl FnOnce(),
    ) -> Result<Stats> {
        self.check_uploaded()?;
        let batch = input.batch();
        if (batch.nworld(), batch.nrow()) != (self.ws.nworld(), self.ws.nrow()) {
            return Err(Error::Refused {
                mode: "gpu",
                reason: format!(
                    "download of {} worlds and {} rows after an upload of {} and {}",
                    batch.nworld(),
                    batch.nrow(),
                    self.ws.nworld(),
                    self.ws.nrow()
                ),
            });
        }
        // Every copy first, then one wait for all of them.
        let propagates = matches!(self.mode, Mode::Labelprop | Mode::Tiled);
        let enqueued = self.enqueue_downloads(input, out, propagates);
        // A failed capture is reported only once the copies into `out` are done.
        let captured = if enqueued.is_ok() {
            self.capture_pending()
        } else {
            Ok(())
        };
        meanwhile();
        super::wait_after(&self.stream, enqueued)?;
        captured?;
        if let Some(order) = &self.order {
            order.status()?;
        }
        let rounds = if propagates { self.ws.max_rounds() } else { 0 };
        Ok(Stats {
            rounds,
            scratch_bytes: self.scratch_bytes(),
        })
    }

    /// Enqueues every copy of a download: the outputs, the order's status, the rounds.
    fn enqueue_downloads(
        &self,
        input: &Input<'_>,
        out: &mut Islands,
        propagates: bool,
    ) -> Result<()> {
        self.ws.enqueue_download(input, out, &self.stream)?;
        if let Some(order) = &self.order {
            order.enqueue_status(&self.stream)?;
        }
        if propagates {
            self.ws.enqueue_rounds(&self.stream)?;
        }
        Ok(())
    }

    /// Device bytes of scratch (labels, fallback, dense matrix and stack, rounds).
    pub fn scratch_bytes(&self) -> usize {
        self.ws
            .report()
            .into_iter()
            .filter(|(n, _)| {
                matches!(
                    *n,
                    "labels" | "fallback" | "rounds" | "dense_mat" | "dense_stack"
                )
            })
            .map(|(_, b)| b)
            .sum()
    }

    /// Upload, graph replay, download: every output of `input` into `out` (best a
    /// [`PinnedIslands`](super::PinnedIslands): see [`download`](Self::download)).
    pub fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.upload(input)?;
        self.replay()?;
        self.download(input, out)
    }

    /// [`solve`](Self::solve) with row keys (deterministic mode: outputs in canonical row
    /// order; see [`download_order`](Self::download_order)).
    pub fn solve_keyed(
        &mut self,
        input: &Input<'_>,
        keys: &RowKeys,
        out: &mut Islands,
    ) -> Result<Stats> {
        self.upload_keyed(input, keys)?;
        self.replay()?;
        self.download(input, out)
    }

    /// Upload, direct launches, download.
    pub fn solve_direct(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.upload(input)?;
        self.launch_direct()?;
        self.download(input, out)
    }

    /// Waits for the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// Device time of `n` replays of a graph holding only `part` of the step, each between two
    /// CUDA events, in microseconds (after `warmup` untimed replays): where a step's time goes.
    /// Run a whole step first, so that the part's inputs are on the device. Refused where the
    /// part is not a separate stage of this solver: [`Part::Order`] needs a deterministic
    /// solver, [`Part::Maps`] a mode that leaves its labels in the workspace (`dense`, `dsu`).
    pub fn time_part(&mut self, part: Part, warmup: usize, n: usize) -> Result<Vec<f64>> {
        let refuse = |reason: &str| Error::Refused {
            mode: "gpu",
            reason: format!("{reason} ({} solver)", self.mode),
        };
        self.check_uploaded()?;
        let (k, shape, ws) = (&*self.kernels, self.shape, &self.ws);
        let graph = match part {
            Part::Order => {
                let order = self
                    .order
                    .as_ref()
                    .ok_or_else(|| refuse("no order stage"))?;
                super::graph::capture(&self.stream, |s| order.enqueue(s))?
            }
            Part::Maps => {
                if !matches!(self.mode, Mode::Dense | Mode::Dsu) {
                    return Err(refuse("maps fused into the mode kernel"));
                }
                super::graph::capture(&self.stream, |s| super::maps::enqueue(k, shape, ws, s))?
            }
        };
        let (ctx, stream) = (self.ws.ctx().clone(), self.stream.clone());
        super::graph::time_replays_us(&ctx, &stream, warmup, n, || {
            graph.launch().map_err(cuda("cuGraphLaunch"))
        })
    }

    /// Device time of `n` graph replays of the uploaded batch, each between two CUDA events, in
    /// microseconds (after `warmup` untimed replays).
    pub fn time_replays(&mut self, warmup: usize, n: usize) -> Result<Vec<f64>> {
        let (ctx, stream) = (self.ws.ctx().clone(), self.stream.clone());
        super::graph::time_replays_us(&ctx, &stream, warmup, n, || self.replay())
    }

    /// Device time per replay of `n` graph replays of the uploaded batch enqueued back to back
    /// between one pair of CUDA events, in microseconds (after `warmup` untimed replays).
    pub fn time_back_to_back(&mut self, warmup: usize, n: usize) -> Result<f64> {
        let (ctx, stream) = (self.ws.ctx().clone(), self.stream.clone());
        super::graph::time_back_to_back_us(&ctx, &stream, warmup, n, || self.replay())
    }
}
