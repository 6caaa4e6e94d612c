//! Page-locked host buffers for a step's copies: [`PinnedIslands`] (the outputs, downloaded
//! every step) and [`PinnedBatch`] (the rows, uploaded every step), so that the copies run at
//! the full speed of the host link instead of through the driver's pageable staging.
//!
//! A device-to-host copy into ordinary (pageable) memory is staged by the driver chunk by chunk
//! and waits for each; into page-locked memory it is one DMA. On the H200 the 19 output copies
//! of a step took 4.5–5.7× less time into page-locked buffers (64×253 trees 265 → 58 µs,
//! 4096×64 trees 2,296 → 406 µs; benches/results/logs/h200-2026-11-30-session14-walls-probe.md).
//!
//! The buffers stay ordinary `Vec`s, sized once to the capacity and registered with the driver
//! (`cuMemHostRegister`). A registration must never outlive its buffer or miss a buffer that
//! moved, so the only mutable use is [`PinnedIslands::fill`], which sizes the buffers for the
//! batch before any copy and re-registers whatever that moved; the registrations end before
//! the buffers are freed.
//! Where the driver refuses a registration (a buffer sharing a page with another one, say) that
//! field is copied the ordinary way: the outputs are the same either way.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, sys};

use super::Gpu;
use crate::islands::{Extent, Islands};
use crate::rows::{Batch, BatchBuilder, Capacity, Input};

/// Every output of a batch, in buffers registered with the device's driver for fast copies.
///
/// Read it as an [`Islands`] (it dereferences to one); fill it with [`fill`](Self::fill):
///
/// ```no_run
/// use archipelago::{gpu, Batch, Capacity, Input, Model, RowType};
/// let model = Model::from_dofnum(&[1, 1]).unwrap();
/// let mut b = Batch::builder();
/// b.row(RowType::ContactPyramidal, 0, &[0, 1]).end_world();
/// let batch = b.finish();
/// let input = Input::new(&model, &batch).unwrap();
/// let gpu = gpu::Gpu::open().unwrap();
/// let cap = Capacity::fit(&model, &batch);
/// let mut solver = gpu::Solver::new(&gpu, gpu::Mode::Block, cap, &model).unwrap();
/// let mut out = gpu::PinnedIslands::new(&gpu, &cap);
/// out.fill(&input, |o| solver.solve(&input, o)).unwrap();
/// assert_eq!(out.nisland[0], 1);
/// ```
#[derive(Debug)]
pub struct PinnedIslands {
    // Before `out`: fields drop in declaration order, so the registrations end first.
    pins: HostPins<19>,
    out: Islands,
}

impl PinnedIslands {
    /// Outputs with room for `cap` (its worlds, trees, dofs and `nworld * njmax` rows), every
    /// buffer registered with `gpu`'s driver where it allows.
    pub fn new(gpu: &Gpu, cap: &Capacity) -> PinnedIslands {
        PinnedIslands::with(gpu, Islands::default(), cap)
    }

    /// `out`'s buffers, grown to hold `cap` and registered with `gpu`'s driver.
    pub fn with(gpu: &Gpu, out: Islands, cap: &Capacity) -> PinnedIslands {
        let mut p = PinnedIslands::unpinned(out, cap);
        p.pin_to(gpu);
        p
    }

    /// `out`'s buffers, grown to hold `cap`, not registered (a CPU engine's outputs, which no
    /// device copies into).
    pub(crate) fn unpinned(mut out: Islands, cap: &Capacity) -> PinnedIslands {
        let len = Extent::lengths(cap.nworld, cap.ntree, cap.nv, cap.nworld * cap.njmax);
        out.world_rowadr.reserve(cap.nworld + 1);
        for (field, extent) in out.fields_mut() {
            field.reserve(len(extent).saturating_sub(field.len()));
        }
        PinnedIslands {
            out,
            pins: HostPins::default(),
        }
    }

    /// Registers the buffers with `gpu`'s driver (from now on, every [`fill`](Self::fill)
    /// keeps them registered).
    pub(crate) fn pin_to(&mut self, gpu: &Gpu) {
        self.pins.attach(gpu.ctx());
        self.pins.follow(buffers(&mut self.out));
    }

    /// Runs `f`, a download of `input`'s outputs (a solver's `download`, `solve` or `step`), on
    /// the outputs. They are first sized for `input`, so that `f` moves no buffer; should that
    /// take more room than they have, the registrations follow the moved buffers before `f`
    /// copies anything, and again after `f`, so that a copy never lands in a stale one.
    pub fn fill<T>(&mut self, input: &Input<'_>, f: impl FnOnce(&mut Islands) -> T) -> T {
        if !self.pins.attached() {
            return f(&mut self.out);
        }
        let model = input.model();
        self.out.resize(model.ntree(), model.nv(), input.batch());
        self.pins.follow(buffers(&mut self.out));
        let r = f(&mut self.out);
        self.pins.follow(buffers(&mut self.out));
        r
    }

    /// Bytes of the buffers now registered.
    pub fn pinned_bytes(&self) -> usize {
        self.pins.bytes()
    }

    /// The outputs, giving up the registrations.
    pub fn into_inner(self) -> Islands {
        let PinnedIslands { pins, out } = self;
        drop(pins);
        out
    }
}

/// Each output field's buffer: (address, bytes of its capacity).
fn buffers(out: &mut Islands) -> [(usize, usize); 19] {
    out.fields_mut().map(|(field, _)| span(field))
}

/// A vector's buffer: (address, bytes of its capacity).
fn span<T>(v: &mut Vec<T>) -> (usize, usize) {
    (
        v.as_mut_ptr() as usize,
        v.capacity() * std::mem::size_of::<T>(),
    )
}

/// Empty outputs, never registered: what a caller without a device passes where a device
/// caller passes [`PinnedIslands::new`]'s ([`fill`](PinnedIslands::fill) then runs its download
/// as it is).
impl Default for PinnedIslands {
    fn default() -> PinnedIslands {
        PinnedIslands {
            out: Islands::default(),
            pins: HostPins::default(),
        }
    }
}

impl std::ops::Deref for PinnedIslands {
    type Target = Islands;
    fn deref(&self) -> &Islands {
        &self.out
    }
}

/// Deterministic mode's permutation as a GPU engine reads it back each step (`order[k]` = input
/// row of canonical row `k`, `rank[r]` = canonical row of input row `r`), in page-locked
/// buffers like the outputs.
#[derive(Debug, Default)]
pub(crate) struct PinnedOrder {
    // Before the arrays: fields drop in declaration order, so the registrations end first.
    pins: HostPins<2>,
    order: Vec<u32>,
    rank: Vec<u32>,
}

impl PinnedOrder {
    /// Room for `rows` rows, registered with `gpu`'s driver.
    pub(crate) fn new(gpu: &Gpu, rows: usize) -> PinnedOrder {
        let mut p = PinnedOrder {
            order: Vec::with_capacity(rows),
            rank: Vec::with_capacity(rows),
            pins: HostPins::default(),
        };
        p.pins.attach(gpu.ctx());
        p.follow();
        p
    }

    /// The permutation read back last.
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// Runs `f`, which reads back a permutation of `rows` rows into (order, rank); as
    /// [`PinnedIslands::fill`], sized first so that `f` moves no buffer.
    pub(crate) fn fill<T>(
        &mut self,
        rows: usize,
        f: impl FnOnce(&mut Vec<u32>, &mut Vec<u32>) -> T,
    ) -> T {
        self.order.resize(rows, 0);
        self.rank.resize(rows, 0);
        self.follow();
        let r = f(&mut self.order, &mut self.rank);
        self.follow();
        r
    }

    fn follow(&mut self) {
        let bufs = [span(&mut self.order), span(&mut self.rank)];
        self.pins.follow(bufs);
    }
}

/// A batch whose arrays are page-locked, rebuilt in place step after step: the step's uploads
/// from it then run at the link's speed too (on the H200, the five copies of a 2.7 MB batch
/// took 69 µs from page-locked memory against 211 µs from pageable memory;
/// benches/results/logs/h200-2026-11-30-session14-walls-probe.md).
///
/// Build each step's rows with [`build`](Self::build) and pass the batch on as a [`Batch`] (it
/// dereferences to one):
///
/// ```no_run
/// use archipelago::{gpu, Capacity, Engine, Model, Options, RowType};
/// let model = Model::from_dofnum(&[1, 1]).unwrap();
/// let cap = Capacity { nworld: 1, ntree: 2, nv: 2, njmax: 4, nsupport: 8, nedge: 0 };
/// let gpu = gpu::Gpu::open().unwrap();
/// let mut engine = Engine::with_gpu(&gpu, &model, cap, Options::default()).unwrap();
/// let mut batch = gpu::PinnedBatch::new(&gpu, &cap);
/// for step in 0..3 {
///     batch.build(|b| {
///         b.row(RowType::ContactPyramidal, step, &[0, 1]).end_world();
///     });
///     let islands = engine.step(&batch, &Default::default()).unwrap();
///     assert_eq!(islands.nisland[0], 1);
/// }
/// ```
#[derive(Debug)]
pub struct PinnedBatch {
    // Before `batch`: fields drop in declaration order, so the registrations end first.
    pins: HostPins<10>,
    batch: Batch,
}

impl PinnedBatch {
    /// An empty batch with room for `cap` (its worlds, `njmax` rows, `nsupport` entries and
    /// `nedge` rowless hyperedges per world), registered with `gpu`'s driver where it allows.
    pub fn new(gpu: &Gpu, cap: &Capacity) -> PinnedBatch {
        let batch = Batch::with_capacity(cap);
        let mut p = PinnedBatch {
            batch: batch.into_builder().finish(),
            pins: HostPins::default(),
        };
        p.pins.attach(gpu.ctx());
        p.follow();
        p
    }

    /// Empties the batch and runs `f` to append this step's worlds (into the same arrays:
    /// nothing is allocated while they have room). Registrations then follow any array that
    /// had to grow. Every upload from the batch has ended by the time a solver's or an
    /// engine's step returns, so nothing reads the arrays while `f` writes them.
    pub fn build<T>(&mut self, f: impl FnOnce(&mut BatchBuilder) -> T) -> T {
        let mut b = std::mem::take(&mut self.batch).into_builder();
        let r = f(&mut b);
        self.batch = b.finish();
        self.follow();
        r
    }

    /// Bytes of the arrays now registered.
    pub fn pinned_bytes(&self) -> usize {
        self.pins.bytes()
    }

    fn follow(&mut self) {
        let b = &mut self.batch;
        let bufs = [
            span(&mut b.world_rowadr),
            span(&mut b.row_type),
            span(&mut b.row_id),
            span(&mut b.row_supadr),
            span(&mut b.row_support),
            span(&mut b.world_edgeadr),
            span(&mut b.edge_kind),
            span(&mut b.edge_id),
            span(&mut b.edge_supadr),
            span(&mut b.edge_support),
        ];
        self.pins.follow(bufs);
    }
}

impl std::ops::Deref for PinnedBatch {
    type Target = Batch;
    fn deref(&self) -> &Batch {
        &self.batch
    }
}

/// A host array of fixed length registered with a device's driver, for the small copies a step
/// makes every time (per-world flags and counts): each is then one DMA instead of a pass
/// through the driver's pageable staging. Its length never changes (it dereferences to a slice).
pub(crate) struct PinnedVec<T> {
    // Before `v`: fields drop in declaration order, so the registration ends first.
    pins: HostPins<1>,
    v: Vec<T>,
}

impl<T: Copy + Default> PinnedVec<T> {
    /// `len` default values, registered with `ctx` where the driver allows.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> PinnedVec<T> {
        let mut p = PinnedVec {
            v: vec![T::default(); len],
            pins: HostPins::default(),
        };
        p.pins.attach(ctx);
        let buf = span(&mut p.v);
        p.pins.follow([buf]);
        p
    }
}

impl<T> std::ops::Deref for PinnedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.v
    }
}

impl<T> std::ops::DerefMut for PinnedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.v
    }
}

/// Registrations of `N` host buffers with a device's driver, kept in step with the buffers:
/// when any of them moved, every old registration ends before the new ones are made (a moved
/// buffer may overlap another's old range). Dropping it ends them: an owner declares it before
/// the buffers, so that it drops first.
#[derive(Debug)]
struct HostPins<const N: usize> {
    /// The context the registrations are made in; `None`: nothing is ever registered.
    ctx: Option<Arc<CudaContext>>,
    /// The buffers last registered (address, bytes) and whether the driver took each.
    seen: [(usize, usize); N],
    pinned: [bool; N],
}

impl<const N: usize> Default for HostPins<N> {
    fn default() -> Self {
        HostPins {
            ctx: None,
            seen: [(0, 0); N],
            pinned: [false; N],
        }
    }
}

impl<const N: usize> HostPins<N> {
    fn attach(&mut self, ctx: &Arc<CudaContext>) {
        self.release();
        self.seen = [(0, 0); N];
        self.ctx = Some(ctx.clone());
    }

    fn attached(&self) -> bool {
        self.ctx.is_some()
    }

    fn bytes(&self) -> usize {
        (self.seen.iter().zip(&self.pinned))
            .filter(|(_, p)| **p)
            .map(|(&(_, bytes), _)| bytes)
            .sum()
    }

    /// Registers `bufs` (address, bytes) unless they are the buffers registered last. Where the
    /// driver refuses one (a buffer sharing a page with another, say) it stays unregistered:
    /// copies into it then go the ordinary way.
    fn follow(&mut self, bufs: [(usize, usize); N]) {
        if bufs == self.seen {
            return;
        }
        self.release();
        self.seen = bufs;
        let Some(ctx) = &self.ctx else { return };
        if ctx.bind_to_thread().is_err() {
            return;
        }
        for (pinned, &(ptr, bytes)) in self.pinned.iter_mut().zip(&self.seen) {
            // SAFETY: the range is one of the owner's live buffers. The owner lets it be freed
            // or moved only where `follow` runs next, before any copy into it, or after
            // `release` ended the registration.
            *pinned = bytes > 0
                && unsafe { sys::cuMemHostRegister_v2(ptr as *mut c_void, bytes, 0) }
                    == sys::cudaError_enum::CUDA_SUCCESS;
        }
    }

    /// Ends every registration.
    fn release(&mut self) {
        let Some(ctx) = self.ctx.as_ref().filter(|_| self.pinned.contains(&true)) else {
            return;
        };
        let _ = ctx.bind_to_thread();
        for (pinned, &(ptr, _)) in self.pinned.iter_mut().zip(&self.seen) {
            if std::mem::take(pinned) {
                // SAFETY: ends a registration made by `follow`; errors leave nothing to undo.
                let _ = unsafe { sys::cuMemHostUnregister(ptr as *mut c_void) };
            }
        }
    }
}

impl<const N: usize> Drop for HostPins<N> {
    fn drop(&mut self) {
        self.release();
    }
}
