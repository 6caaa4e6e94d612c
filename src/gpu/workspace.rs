//! Device memory: every buffer a solver needs, allocated once from a [`Capacity`] and never per
//! step, plus the host staging vectors that pack a batch for upload (also sized once).

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, result, sys};

use super::cuda;
use super::pinned::PinnedVec;
use crate::error::{Error, Result};
use crate::islands::{EXTENTS, Extent, FIELDS, Islands};
use crate::model::Model;
use crate::rows::{Capacity, Input};

/// One device allocation (plain `cuMemAlloc`), freed on drop.
pub struct DevBuf {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    name: &'static str,
    ctx: Arc<CudaContext>,
}

impl std::fmt::Debug for DevBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevBuf")
            .field("name", &self.name)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl DevBuf {
    /// Allocates `bytes` (at least 4, so every buffer has an address). Out of memory becomes
    /// [`Error::OutOfMemory`] with the bytes asked and the bytes free.
    pub fn new(ctx: &Arc<CudaContext>, name: &'static str, bytes: usize) -> Result<DevBuf> {
        ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let asked = bytes.max(4);
        // SAFETY: a plain allocation on the bound context.
        match unsafe { result::malloc_sync(asked) } {
            Ok(ptr) => Ok(DevBuf {
                ptr,
                bytes: asked,
                name,
                ctx: ctx.clone(),
            }),
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                let free = ctx.mem_get_info().map(|(f, _)| f).unwrap_or(0);
                Err(Error::OutOfMemory { asked, free })
            }
            Err(e) => Err(cuda("cuMemAlloc")(e)),
        }
    }

    /// Device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes allocated.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Buffer name (for the byte report).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Copies `src` to the start of the buffer on `stream` (asynchronous; `src` must stay
    /// alive and unchanged until the stream is synchronized).
    pub(crate) fn upload<T: Copy>(&self, src: &[T], stream: &CudaStream) -> Result<()> {
        self.upload_at(0, src, stream)
    }

    /// Copies `src` into the buffer from element `offset` on (in elements of `T`; asynchronous,
    /// as [`upload`](Self::upload)).
    pub(crate) fn upload_at<T: Copy>(
        &self,
        offset: usize,
        src: &[T],
        stream: &CudaStream,
    ) -> Result<()> {
        let (at, n) = (
            offset * std::mem::size_of::<T>(),
            std::mem::size_of_val(src),
        );
        if at + n > self.bytes {
            return Err(Error::Cuda {
                call: "upload".into(),
                detail: format!(
                    "{n} bytes at {at} into `{}` of {} bytes",
                    self.name, self.bytes
                ),
            });
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: bounds checked above; the caller keeps `src` alive until synchronization.
        unsafe { result::memcpy_htod_async(self.ptr + at as u64, src, stream.cu_stream()) }
            .map_err(cuda("cuMemcpyHtoDAsync"))
    }

    /// Copies the start of the buffer into `dst` on `stream` (asynchronous; synchronize
    /// before reading `dst`).
    pub(crate) fn download<T: Copy>(&self, dst: &mut [T], stream: &CudaStream) -> Result<()> {
        let n = std::mem::size_of_val(dst);
        if n > self.bytes {
            return Err(Error::Cuda {
                call: "download".into(),
                detail: format!("{n} bytes from `{}` of {} bytes", self.name, self.bytes),
            });
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: bounds checked above; the caller synchronizes before reading `dst`.
        unsafe { result::memcpy_dtoh_async(dst, self.ptr, stream.cu_stream()) }
            .map_err(cuda("cuMemcpyDtoHAsync"))
    }

    /// Fills the first `bytes` bytes with `byte` on `stream` (capturable into a graph).
    pub(crate) fn fill(&self, byte: u8, bytes: usize, stream: &CudaStream) -> Result<()> {
        let n = bytes.min(self.bytes);
        if n == 0 {
            return Ok(());
        }
        // SAFETY: within the allocation.
        unsafe { result::memset_d8_async(self.ptr, byte, n, stream.cu_stream()) }
            .map_err(cuda("cuMemsetD8Async"))
    }

    /// Copies the first `bytes` bytes of `src` (at most either buffer's size) to the start of
    /// this buffer on `stream` (asynchronous). A buffer copied onto itself is an error (the
    /// copy's ranges would overlap).
    pub(crate) fn copy_from(&self, src: &DevBuf, bytes: usize, stream: &CudaStream) -> Result<()> {
        if self.ptr == src.ptr {
            return Err(Error::Cuda {
                call: "copy".into(),
                detail: format!("`{}` onto itself", self.name),
            });
        }
        let n = bytes.min(self.bytes).min(src.bytes);
        if n == 0 {
            return Ok(());
        }
        // SAFETY: within both allocations, which are distinct (checked above) and so do not
        // overlap.
        unsafe { result::memcpy_dtod_async(self.ptr, src.ptr, n, stream.cu_stream()) }
            .map_err(cuda("cuMemcpyDtoDAsync"))
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; the context records them.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_sync and freed once.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// The argument block every kernel takes by value; field order and types match `struct Args`
/// in `kernels/common.cu` exactly (device pointers, then seven ints).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Args {
    /// Inputs: per world, its first global row (`nworld + 1`).
    pub world_rowadr: u64,
    /// Per world, its first rowless hyperedge (`nworld + 1`).
    pub world_edgeadr: u64,
    /// Support offsets: the rows', then the rowless hyperedges'.
    pub supadr: u64,
    /// Supports (tree ids): the rows', then the rowless hyperedges'.
    pub support: u64,
    /// Per global row, its type code.
    pub row_type: u64,
    /// Deterministic mode's canonical place of each row (input row → canonical row), or 0.
    pub rank: u64,
    /// The model: per dof, its tree.
    pub dof_treeid: u64,
    /// Per tree, its first dof.
    pub tree_dofadr: u64,
    /// Per tree, its dof count.
    pub tree_dofnum: u64,
    /// Scratch: per world and tree, its min-root or -1.
    pub labels: u64,
    /// Per-world scratch where shared memory is too small.
    pub fallback: u64,
    /// Per world, propagation rounds.
    pub rounds: u64,
    /// `dense`'s per-world tree × tree matrix.
    pub dense_mat: u64,
    /// `dense`'s per-world stack.
    pub dense_stack: u64,
    /// Output `nisland` (MuJoCo's name).
    pub nisland: u64,
    /// Output `nidof` (MuJoCo's name).
    pub nidof: u64,
    /// Output `tree_island` (MuJoCo's name).
    pub tree_island: u64,
    /// Output `island_ntree` (MuJoCo's name).
    pub island_ntree: u64,
    /// Output `island_itreeadr` (MuJoCo's name).
    pub island_itreeadr: u64,
    /// Output `map_itree2tree` (MuJoCo's name).
    pub map_itree2tree: u64,
    /// Output `dof_island` (MuJoCo's name).
    pub dof_island: u64,
    /// Output `island_nv` (MuJoCo's name).
    pub island_nv: u64,
    /// Output `island_idofadr` (MuJoCo's name).
    pub island_idofadr: u64,
    /// Output `island_dofadr` (MuJoCo's name).
    pub island_dofadr: u64,
    /// Output `map_dof2idof` (MuJoCo's name).
    pub map_dof2idof: u64,
    /// Output `map_idof2dof` (MuJoCo's name).
    pub map_idof2dof: u64,
    /// Output `efc_island` (MuJoCo's name).
    pub efc_island: u64,
    /// Output `island_ne` (MuJoCo's name).
    pub island_ne: u64,
    /// Output `island_nf` (MuJoCo's name).
    pub island_nf: u64,
    /// Output `island_nefc` (MuJoCo's name).
    pub island_nefc: u64,
    /// Output `island_iefcadr` (MuJoCo's name).
    pub island_iefcadr: u64,
    /// Output `map_efc2iefc` (MuJoCo's name).
    pub map_efc2iefc: u64,
    /// Output `map_iefc2efc` (MuJoCo's name).
    pub map_iefc2efc: u64,
    /// Per world `3 * mirror_rows` ints that receive a copy of its row-level outputs
    /// (world-local), or 0: the quotient's reuse cache.
    pub row_mirror: u64,
    /// Worlds in the batch.
    pub nworld: i32,
    /// Trees per world.
    pub ntree: i32,
    /// Dofs per world.
    pub nv: i32,
    /// 1: per-world scratch in dynamic shared memory.
    pub use_smem: i32,
    /// 1: trees own consecutive dof blocks in tree order.
    pub dof_blocks: i32,
    /// Rows per world of `row_mirror`.
    pub mirror_rows: i32,
    /// 1: a world without rows still has islands ([`Model::islands_without_rows`]).
    pub rowless_islands: i32,
}

/// What a mode needs besides the common buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Per-world scratch (labels + six per-island arrays) lives in global memory because
    /// it does not fit in shared memory.
    pub fallback: bool,
    /// The dense tree_tree matrix and stack (`nworld * ntree^2` ints each).
    pub dense: bool,
}

/// From this many dofs on, the device builds the dof maps from the tree order in parallel
/// (when [`dof_blocks`] holds); below it one warp's stable scatter, running alongside the tree
/// and row scatters. H200, 2026-11-30 (benches/results/logs, session 7 run 7), 1024 against 256:
/// flex_trampoline ×64 (762 dofs) quotient 17.1 → 16.4 µs, `tiled` 27.8 → 27.1; 384 dofs ×4096
/// `block` 64.6 → 62.7; 576 dofs ×1024 within ±1.5% (`tiled` 55.4 → 56.2, `dsu` 45.0 → 44.5).
pub const PARALLEL_DOF_MAPS_MIN_NV: usize = 256;

/// Whether every tree owns the dofs right after the previous tree's (tree 0 from dof 0, all
/// dofs covered): then the dof maps follow from the tree order in parallel on the device.
pub fn dof_blocks(model: &Model) -> bool {
    let (adr, num) = (model.tree_dofadr(), model.tree_dofnum());
    let mut next = 0i64;
    for t in 0..model.ntree() {
        if adr[t] as i64 != next {
            return false;
        }
        next += num[t] as i64;
    }
    next == model.nv() as i64
}

/// Host-side packing of one batch: what the device needs besides the batch's own arrays (the
/// rowless hyperedges' offsets and supports, which follow the rows' on the device, and per
/// world the first of them).
#[derive(Debug, Default)]
struct Staging {
    edgeadr: Vec<u32>,
    supadr: Vec<u32>,
    support: Vec<i32>,
}

const _: () = assert!(std::mem::size_of::<crate::rows::RowType>() == 1);

/// Every device buffer of a solver, allocated once.
pub struct Workspace {
    cap: Capacity,
    ctx: Arc<CudaContext>,
    bufs: Vec<DevBuf>,
    staging: Staging,
    /// Worlds and rows of the batch now on the device.
    nworld: usize,
    nrow: usize,
    /// Support entries of the rows of the batch now on the device.
    nsup: usize,
    /// The model whose dof layout is on the device (uploaded once, here): a batch of another
    /// model is refused, even of as many trees and dofs, since its dof-level outputs would
    /// follow this layout.
    model: Model,
    args: Args,
    /// Whether the next fused launch may start while the order kernel before it still runs
    /// (set per step by the deterministic solver).
    overlap_order: std::cell::Cell<bool>,
    /// Host copy of the per-world round counts, reused by every step.
    rounds_host: std::cell::RefCell<PinnedVec<i32>>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("capacity", &self.cap)
            .field("buffers", &self.bufs)
            .field("nworld", &self.nworld)
            .field("nrow", &self.nrow)
            .finish_non_exhaustive()
    }
}

// Buffer indices in `bufs`.
const WORLD_ROWADR: usize = 0;
const WORLD_EDGEADR: usize = 1;
const SUPADR: usize = 2;
const SUPPORT: usize = 3;
const ROW_TYPE: usize = 4;
const DOF_TREEID: usize = 5;
const TREE_DOFADR: usize = 6;
const TREE_DOFNUM: usize = 7;
const LABELS: usize = 8;
const FALLBACK: usize = 9;
const ROUNDS: usize = 10;
const DENSE_MAT: usize = 11;
const DENSE_STACK: usize = 12;
const OUT0: usize = 13;

/// Most rows and rowless hyperedges, and most support entries, of one world on a device: the
/// kernels count a world's in 32-bit ints, with room for a block's stride past the end, and the
/// quotient's reuse cache addresses twice its rows.
pub const WORLD_ITEMS_MAX: usize = 1 << 30;

/// Refuses a capacity whose sizes the kernels' 32-bit arithmetic cannot hold: tree and dof ids;
/// a world's rows, hyperedges and support entries ([`WORLD_ITEMS_MAX`]); a batch's support
/// entries, whose offsets the row maps read as signed ints; a batch's rows, whose index the
/// deterministic order's bounds check reports in a signed int beside a sentinel.
pub fn device_sizes(cap: &Capacity) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::Refused {
            mode: "gpu",
            reason,
        })
    };
    if cap.ntree > i32::MAX as usize / 8 || cap.nv > i32::MAX as usize {
        return refuse("ntree or nv too large for 32-bit tree ids".into());
    }
    let world = [
        (
            "rows and rowless hyperedges",
            cap.njmax.saturating_add(cap.nedge),
        ),
        ("support entries", cap.nsupport),
    ];
    for (what, n) in world {
        if n > WORLD_ITEMS_MAX {
            return refuse(format!("{n} {what} a world: more than {WORLD_ITEMS_MAX}"));
        }
    }
    let batch = [
        ("support entries", cap.nsupport, i32::MAX as usize),
        ("rows", cap.njmax, i32::MAX as usize - 2),
    ];
    for (what, per_world, max) in batch {
        if cap.nworld.checked_mul(per_world).is_none_or(|n| n > max) {
            return refuse(format!(
                "{} worlds of {per_world} {what}: more than {max} in a batch",
                cap.nworld
            ));
        }
    }
    Ok(())
}

fn checked(parts: &[usize]) -> Result<usize> {
    parts
        .iter()
        .try_fold(1usize, |acc, &p| acc.checked_mul(p))
        .ok_or_else(|| Error::Refused {
            mode: "gpu",
            reason: "capacity overflows the address space".into(),
        })
}

/// Every buffer's name and bytes, in the order of the buffer indices: the inputs, the model's
/// tables, the solvers' scratch (the fallback's and `dense`'s only where `needs` says), then the
/// outputs.
fn buffer_sizes(cap: &Capacity, needs: Needs) -> Result<Vec<(&'static str, usize)>> {
    let (w, t, v) = (cap.nworld, cap.ntree, cap.nv);
    let rows = checked(&[w, cap.njmax])?;
    let hyper = checked(&[w, cap.njmax + cap.nedge])? + 1;
    let entries = checked(&[w, cap.nsupport])?;
    let dense = if needs.dense {
        checked(&[w, t, t, 4])?
    } else {
        0
    };
    let mut sizes: Vec<(&'static str, usize)> = vec![
        ("world_rowadr", (w + 1) * 4),
        ("world_edgeadr", (w + 1) * 4),
        ("supadr", hyper * 4),
        ("support", entries * 4),
        ("row_type", rows),
        ("dof_treeid", v * 4),
        ("tree_dofadr", t * 4),
        ("tree_dofnum", t * 4),
        ("labels", checked(&[w, t, 4])?),
        (
            "fallback",
            if needs.fallback {
                checked(&[w, t, 7, 4])?
            } else {
                0
            },
        ),
        ("rounds", w * 4),
        ("dense_mat", dense),
        ("dense_stack", dense),
    ];
    // The outputs, in the order of `Args` after `dense_stack` (MuJoCo's, as `FIELDS`).
    for (name, extent) in FIELDS.into_iter().zip(EXTENTS) {
        let n = match extent {
            Extent::World => w,
            Extent::Tree | Extent::Island => checked(&[w, t])?,
            Extent::Dof => checked(&[w, v])?,
            Extent::Row => rows,
        };
        sizes.push((name, checked(&[n, 4])?));
    }
    Ok(sizes)
}

impl Args {
    /// The kernels' arguments over `bufs` ([`buffer_sizes`]) for `model`; no world uploaded.
    fn over(bufs: &[DevBuf], model: &Model, needs: Needs) -> Args {
        let p = |i: usize| bufs[i].ptr();
        Args {
            world_rowadr: p(WORLD_ROWADR),
            world_edgeadr: p(WORLD_EDGEADR),
            supadr: p(SUPADR),
            support: p(SUPPORT),
            row_type: p(ROW_TYPE),
            rank: 0,
            dof_treeid: p(DOF_TREEID),
            tree_dofadr: p(TREE_DOFADR),
            tree_dofnum: p(TREE_DOFNUM),
            labels: p(LABELS),
            fallback: p(FALLBACK),
            rounds: p(ROUNDS),
            dense_mat: p(DENSE_MAT),
            dense_stack: p(DENSE_STACK),
            nisland: p(OUT0),
            nidof: p(OUT0 + 1),
            tree_island: p(OUT0 + 2),
            island_ntree: p(OUT0 + 3),
            island_itreeadr: p(OUT0 + 4),
            map_itree2tree: p(OUT0 + 5),
            dof_island: p(OUT0 + 6),
            island_nv: p(OUT0 + 7),
            island_idofadr: p(OUT0 + 8),
            island_dofadr: p(OUT0 + 9),
            map_dof2idof: p(OUT0 + 10),
            map_idof2dof: p(OUT0 + 11),
            efc_island: p(OUT0 + 12),
            island_ne: p(OUT0 + 13),
            island_nf: p(OUT0 + 14),
            island_nefc: p(OUT0 + 15),
            island_iefcadr: p(OUT0 + 16),
            map_efc2iefc: p(OUT0 + 17),
            map_iefc2efc: p(OUT0 + 18),
            row_mirror: 0,
            nworld: 0,
            ntree: model.ntree() as i32,
            nv: model.nv() as i32,
            use_smem: (!needs.fallback) as i32,
            dof_blocks: (dof_blocks(model) && model.nv() >= PARALLEL_DOF_MAPS_MIN_NV) as i32,
            mirror_rows: 0,
            rowless_islands: model.islands_without_rows() as i32,
        }
    }
}

impl Workspace {
    /// Allocates every buffer for `cap` and uploads `model`'s dof→tree map. `needs` adds the
    /// mode-specific scratch.
    pub fn new(
        ctx: &Arc<CudaContext>,
        cap: Capacity,
        model: &Model,
        needs: Needs,
    ) -> Result<Workspace> {
        cap.holds(model)?;
        device_sizes(&cap)?;
        let bufs = buffer_sizes(&cap, needs)?
            .into_iter()
            .map(|(name, bytes)| DevBuf::new(ctx, name, bytes))
            .collect::<Result<Vec<_>>>()?;
        let args = Args::over(&bufs, model, needs);
        let w = cap.nworld;
        let staging = Staging {
            edgeadr: Vec::with_capacity(w + 1),
            supadr: Vec::with_capacity(checked(&[w, cap.nedge])?),
            support: Vec::with_capacity(checked(&[w, cap.nsupport])?),
        };
        let ws = Workspace {
            cap,
            ctx: ctx.clone(),
            bufs,
            staging,
            nworld: 0,
            nrow: 0,
            nsup: 0,
            model: model.clone(),
            args,
            overlap_order: std::cell::Cell::new(false),
            rounds_host: std::cell::RefCell::new(PinnedVec::new(ctx, w)),
        };
        ws.upload_model()?;
        Ok(ws)
    }

    /// Copies the model's dof and tree tables, which no step changes, and waits for them.
    fn upload_model(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
        let model = &self.model;
        // SAFETY (each copy below): synchronous copy of a host slice into a buffer sized for it.
        for (i, src) in [
            (DOF_TREEID, model.dof_treeid()),
            (TREE_DOFADR, model.tree_dofadr()),
            (TREE_DOFNUM, model.tree_dofnum()),
        ] {
            if !src.is_empty() {
                unsafe { result::memcpy_htod_sync(self.bufs[i].ptr(), src) }
                    .map_err(cuda("cuMemcpyHtoD"))?;
            }
        }
        // From pageable memory such a copy may return once staged, before it lands, and the
        // solvers' streams (non-blocking) do not wait for the default stream: it is waited for
        // here. Not the whole context: that would also wait for, and so invalidate, a graph that
        // another solver's thread is capturing (seen on the H200 with the tests in parallel).
        // SAFETY: the legacy default stream (null) always exists.
        unsafe { result::stream::synchronize(std::ptr::null_mut()) }
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// The capacity it was sized for.
    pub fn capacity(&self) -> Capacity {
        self.cap
    }

    /// The kernels' argument block for the batch now on the device.
    pub fn args(&self) -> Args {
        self.args
    }

    /// Makes the row-level maps follow `rank` (device address of input global row →
    /// canonical global row): deterministic mode's permutation. Discovery and the maps read
    /// the rows as uploaded; each row's island is written at its canonical place.
    pub(crate) fn follow_order(&mut self, rank: u64) {
        self.args.rank = rank;
    }

    /// Whether the fused kernel enqueued next is a programmatic dependent of the order kernel
    /// before it (see [`super::maps::launch_fused`]); only with an order to follow.
    pub(crate) fn overlap_order(&self, overlap: bool) {
        self.overlap_order.set(overlap && self.args.rank != 0);
    }

    /// Whether the fused kernel enqueued next overlaps the order kernel.
    pub(crate) fn overlaps_order(&self) -> bool {
        self.overlap_order.get()
    }

    /// Worlds of the batch now on the device.
    pub fn nworld(&self) -> usize {
        self.nworld
    }

    /// Rows of the batch now on the device.
    pub fn nrow(&self) -> usize {
        self.nrow
    }

    /// Every buffer with its bytes, in allocation order.
    pub fn report(&self) -> Vec<(&'static str, usize)> {
        self.bufs.iter().map(|b| (b.name(), b.bytes())).collect()
    }

    /// Total device bytes held.
    pub fn bytes(&self) -> usize {
        self.bufs.iter().map(DevBuf::bytes).sum()
    }

    pub(crate) fn buf(&self, i: usize) -> &DevBuf {
        &self.bufs[i]
    }

    pub(crate) fn labels(&self) -> &DevBuf {
        self.buf(LABELS)
    }

    pub(crate) fn dense_mat(&self) -> &DevBuf {
        self.buf(DENSE_MAT)
    }

    /// Packs `input` (checked against the capacity) and copies it to the device on `stream`,
    /// then waits for the copy (the staging vectors are reused by the next upload).
    pub fn upload(&mut self, input: &Input<'_>, stream: &CudaStream) -> Result<()> {
        super::wait_after(stream, self.enqueue_upload(input, stream))
    }

    /// [`upload`](Self::upload) without the wait: the caller synchronizes `stream` before the
    /// next upload (the copies read this workspace's staging vectors), so that one wait can
    /// cover other copies queued with these.
    pub(crate) fn enqueue_upload(&mut self, input: &Input<'_>, stream: &CudaStream) -> Result<()> {
        let (model, batch) = (input.model(), input.batch());
        self.cap.fits(input)?;
        let (ntree, nv) = (self.model.ntree(), self.model.nv());
        if model.ntree() != ntree || model.nv() != nv {
            return Err(Error::Refused {
                mode: "gpu",
                reason: format!(
                    "the solver was built for a model of {} trees and {} dofs, not {} and {}",
                    ntree,
                    nv,
                    model.ntree(),
                    model.nv()
                ),
            });
        }
        if *model != self.model {
            return Err(Error::Refused {
                mode: "gpu",
                reason: "the solver was built for a model of as many trees and dofs but another \
                         dof layout or islands_without_rows (its outputs follow the model it was \
                         built with): build a solver for this model"
                    .into(),
            });
        }
        // Rows as they are, straight from the batch (no host copy); after them the rowless
        // hyperedges as `Batch::coupling_edges_of` yields them (after each world's rows in
        // `Batch::hyperedges_of`), so the GPU applies the same coupling rule as every CPU mode.
        let s = &mut self.staging;
        let nsup = batch.row_support.len();
        s.supadr.clear();
        s.support.clear();
        s.edgeadr.clear();
        s.edgeadr.push(0);
        for w in 0..batch.nworld() {
            for support in batch.coupling_edges_of(w) {
                s.support.extend_from_slice(support);
                s.supadr.push((nsup + s.support.len()) as u32);
            }
            s.edgeadr.push(s.supadr.len() as u32);
        }
        let supadr = &self.bufs[SUPADR];
        let support = &self.bufs[SUPPORT];
        // The staging vectors (pageable) first: a copy from pageable memory may wait for the
        // stream's copies before it, and the batch's own (page-locked in a `PinnedBatch`) are
        // then left to run beside whatever the caller does before its wait.
        self.bufs[WORLD_EDGEADR].upload(&s.edgeadr, stream)?;
        supadr.upload_at(batch.row_supadr.len(), &s.supadr, stream)?;
        support.upload_at(nsup, &s.support, stream)?;
        self.bufs[WORLD_ROWADR].upload(&batch.world_rowadr, stream)?;
        supadr.upload(&batch.row_supadr, stream)?;
        support.upload(&batch.row_support, stream)?;
        // `RowType` is one byte, MuJoCo's code (`repr(u8)`, asserted below): the kernels read
        // it as it is.
        self.bufs[ROW_TYPE].upload(&batch.row_type, stream)?;
        self.nworld = batch.nworld();
        self.nrow = batch.nrow();
        self.nsup = nsup;
        self.args.nworld = batch.nworld() as i32;
        Ok(())
    }

    /// Copies every output of the batch now on the device into `out`, then waits.
    pub fn download(
        &self,
        input: &Input<'_>,
        out: &mut Islands,
        stream: &CudaStream,
    ) -> Result<()> {
        super::wait_after(stream, self.enqueue_download(input, out, stream))
    }

    /// Enqueues the copies of every output into `out` on `stream` without waiting: the caller
    /// synchronizes the stream (once, after its own copies) before reading `out`.
    pub(crate) fn enqueue_download(
        &self,
        input: &Input<'_>,
        out: &mut Islands,
        stream: &CudaStream,
    ) -> Result<()> {
        out.resize(self.model.ntree(), self.model.nv(), input.batch());
        // The output buffers are allocated in `Islands::fields_mut` order.
        for (i, (field, _)) in out.fields_mut().into_iter().enumerate() {
            self.bufs[OUT0 + i].download(field.as_mut_slice(), stream)?;
        }
        Ok(())
    }

    /// Enqueues the copy of the per-world round counts into a host buffer the workspace keeps;
    /// read them with [`max_rounds`](Self::max_rounds) after synchronizing `stream`.
    pub(crate) fn enqueue_rounds(&self, stream: &CudaStream) -> Result<()> {
        let mut host = self.rounds_host.borrow_mut();
        self.bufs[ROUNDS].download(&mut host[..self.nworld], stream)
    }

    /// The largest propagation round count of the last `enqueue_rounds`
    /// (the stream synchronized since).
    pub fn max_rounds(&self) -> u32 {
        let host = self.rounds_host.borrow();
        host[..self.nworld]
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(0) as u32
    }

    /// Bytes the step must read (supports and their offsets, row types) and write (outputs)
    /// at the least, for the batch now on the device: the numerator of the bandwidth floor.
    pub fn floor_bytes(&self) -> usize {
        let s = &self.staging;
        let (offsets, entries) = (self.nrow + 1 + s.supadr.len(), self.nsup + s.support.len());
        let read = offsets * 4 + entries * 4 + self.nrow + 8 * (self.nworld + 1);
        read + self.output_bytes().sum::<usize>()
    }

    /// The bytes of each output that the batch now on the device fills, in [`FIELDS`] order.
    fn output_bytes(&self) -> impl Iterator<Item = usize> {
        let len = Extent::lengths(self.nworld, self.model.ntree(), self.model.nv(), self.nrow);
        EXTENTS.into_iter().map(move |extent| 4 * len(extent))
    }

    /// Each output's device address and the bytes of it the batch now on the device fills, in
    /// [`FIELDS`] order: what a reader of the step's outputs reads (`graph::OutputReader`).
    pub fn output_spans(&self) -> Vec<(u64, usize)> {
        let ptrs = self.bufs[OUT0..].iter().map(DevBuf::ptr);
        ptrs.zip(self.output_bytes()).collect()
    }

    /// The context the buffers live in.
    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer indices name the buffers they index, the outputs follow them in MuJoCo's
    /// order, and the scratch a mode does not need takes no bytes.
    #[test]
    fn every_buffer_index_names_its_buffer() {
        let cap = Capacity {
            nworld: 3,
            ntree: 5,
            nv: 7,
            njmax: 11,
            nsupport: 17,
            nedge: 2,
        };
        let sizes = buffer_sizes(&cap, Needs::default()).unwrap();
        let named = [
            (WORLD_ROWADR, "world_rowadr", 4 * 4),
            (WORLD_EDGEADR, "world_edgeadr", 4 * 4),
            (SUPADR, "supadr", (3 * (11 + 2) + 1) * 4),
            (SUPPORT, "support", 3 * 17 * 4),
            (ROW_TYPE, "row_type", 3 * 11),
            (DOF_TREEID, "dof_treeid", 7 * 4),
            (TREE_DOFADR, "tree_dofadr", 5 * 4),
            (TREE_DOFNUM, "tree_dofnum", 5 * 4),
            (LABELS, "labels", 3 * 5 * 4),
            (FALLBACK, "fallback", 0),
            (ROUNDS, "rounds", 3 * 4),
            (DENSE_MAT, "dense_mat", 0),
            (DENSE_STACK, "dense_stack", 0),
        ];
        for (i, name, bytes) in named {
            assert_eq!(sizes[i], (name, bytes), "buffer {i}");
        }
        let outputs: Vec<&str> = sizes[OUT0..].iter().map(|s| s.0).collect();
        assert_eq!(outputs, FIELDS);
        let all = Needs {
            fallback: true,
            dense: true,
        };
        let sizes = buffer_sizes(&cap, all).unwrap();
        assert_eq!(sizes[FALLBACK].1, 3 * 5 * 7 * 4);
        assert_eq!(sizes[DENSE_MAT].1, 3 * 5 * 5 * 4);
    }

    #[test]
    fn sizes_past_the_kernels_32_bit_arithmetic_are_refused() {
        let cap = Capacity {
            nworld: 4096,
            ntree: 1000,
            nv: 6000,
            njmax: 4000,
            nsupport: 9000,
            nedge: 8,
        };
        assert!(device_sizes(&cap).is_ok());
        let past = [
            Capacity {
                ntree: 1 << 28,
                ..cap
            },
            Capacity { nv: 1 << 31, ..cap },
            // A world's items.
            Capacity {
                njmax: (1 << 30) - 7,
                nworld: 1,
                ..cap
            },
            Capacity {
                nsupport: (1 << 30) + 1,
                nworld: 1,
                ..cap
            },
            // A batch's support entries at offset 2^31, and rows.
            Capacity {
                nsupport: 1 << 29,
                nworld: 4,
                ..cap
            },
            Capacity {
                njmax: 1 << 28,
                nsupport: 1 << 27,
                nworld: 8,
                ..cap
            },
            Capacity {
                nworld: usize::MAX,
                ..cap
            },
        ];
        for c in past {
            assert!(
                matches!(device_sizes(&c), Err(Error::Refused { mode: "gpu", .. })),
                "{c:?}"
            );
        }
        // At the limits.
        let at = Capacity {
            njmax: (1 << 30) - 8,
            nsupport: 1 << 30,
            nworld: 1,
            ..cap
        };
        assert!(device_sizes(&at).is_ok());
    }
}
