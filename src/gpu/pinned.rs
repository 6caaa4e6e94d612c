//! [`PinnedIslands`]: outputs whose buffers are page-locked, so that a step's downloads run at
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
use crate::rows::{Capacity, Input};

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
pub struct PinnedIslands {
    out: Islands,
    /// The context the registrations are made in; `None`: plain buffers, never registered.
    ctx: Option<Arc<CudaContext>>,
    /// Per field of [`Islands::fields_mut`]: its buffer when last registered (address, bytes of
    /// its capacity), and whether the driver took the registration.
    seen: [(usize, usize); 19],
    pinned: [bool; 19],
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
            ctx: None,
            seen: [(0, 0); 19],
            pinned: [false; 19],
        }
    }

    /// Registers the buffers with `gpu`'s driver (from now on, every [`fill`](Self::fill)
    /// keeps them registered).
    pub(crate) fn pin_to(&mut self, gpu: &Gpu) {
        self.unpin();
        self.ctx = Some(gpu.ctx().clone());
        self.pin();
    }

    /// Runs `f`, a download of `input`'s outputs (a solver's `download`, `solve` or `step`), on
    /// the outputs. They are first sized for `input`, so that `f` moves no buffer; should that
    /// take more room than they have, the registrations follow the moved buffers before `f`
    /// copies anything, and again after `f`, so that a copy never lands in a stale one.
    pub fn fill<T>(&mut self, input: &Input<'_>, f: impl FnOnce(&mut Islands) -> T) -> T {
        if self.ctx.is_none() {
            return f(&mut self.out);
        }
        let model = input.model();
        self.out.resize(model.ntree(), model.nv(), input.batch());
        self.follow_moves();
        let r = f(&mut self.out);
        self.follow_moves();
        r
    }

    /// Re-registers every buffer if any moved since the last registration.
    fn follow_moves(&mut self) {
        if self.buffers() != self.seen {
            // Every old registration first: a moved buffer may overlap another's old range.
            self.unpin();
            self.pin();
        }
    }

    /// Bytes of the buffers now registered.
    pub fn pinned_bytes(&self) -> usize {
        (self.seen.iter().zip(&self.pinned))
            .filter(|(_, p)| **p)
            .map(|(&(_, bytes), _)| bytes)
            .sum()
    }

    /// The outputs, giving up the registrations.
    pub fn into_inner(mut self) -> Islands {
        self.unpin();
        std::mem::take(&mut self.out)
    }

    /// Each field's buffer now: (address, bytes of its capacity).
    fn buffers(&mut self) -> [(usize, usize); 19] {
        let mut b = [(0, 0); 19];
        for (i, (field, _)) in self.out.fields_mut().into_iter().enumerate() {
            b[i] = (field.as_mut_ptr() as usize, field.capacity() * 4);
        }
        b
    }

    fn pin(&mut self) {
        self.seen = self.buffers();
        self.pinned = [false; 19];
        let Some(ctx) = &self.ctx else { return };
        if ctx.bind_to_thread().is_err() {
            return;
        }
        for (i, &(ptr, bytes)) in self.seen.iter().enumerate() {
            if bytes == 0 {
                continue;
            }
            // SAFETY: the range is this field's allocation. It is freed or moved only by a
            // reallocation inside `fill`, which ends the registration right after, before any
            // other copy, or after `Drop` ended it.
            let r = unsafe { sys::cuMemHostRegister_v2(ptr as *mut c_void, bytes, 0) };
            self.pinned[i] = r == sys::cudaError_enum::CUDA_SUCCESS;
        }
    }

    fn unpin(&mut self) {
        let Some(ctx) = self.ctx.as_ref().filter(|_| self.pinned.contains(&true)) else {
            return;
        };
        let _ = ctx.bind_to_thread();
        for (i, &(ptr, _)) in self.seen.iter().enumerate() {
            if std::mem::take(&mut self.pinned[i]) {
                // SAFETY: ends a registration this value made; errors leave nothing to undo.
                let _ = unsafe { sys::cuMemHostUnregister(ptr as *mut c_void) };
            }
        }
    }
}

impl std::ops::Deref for PinnedIslands {
    type Target = Islands;
    fn deref(&self) -> &Islands {
        &self.out
    }
}

impl Drop for PinnedIslands {
    fn drop(&mut self) {
        // Before the buffers are freed (the fields drop after this).
        self.unpin();
    }
}

impl std::fmt::Debug for PinnedIslands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedIslands")
            .field("pinned_bytes", &self.pinned_bytes())
            .field("out", &self.out)
            .finish()
    }
}
