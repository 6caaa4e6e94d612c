//! The device half of a GPU engine ([`Device`]): the device quotient and, for `auto` or a full
//! rebuild mode, a full-rebuild solver, stepped on whichever thread owns the engine.

use invalidation::Events;

use crate::error::{Error, Result};
use crate::gpu::{self, Gpu, quotient::QuotientSolver};
use crate::islands::Islands;
use crate::order::RowKeys;
use crate::quotient::Quotient;
use crate::rows::Input;

/// The device half of an engine built with [`Engine::with_gpu`](super::Engine::with_gpu).
///
/// Every step binds its context to the calling thread first ([`Device::bind`]), so that an
/// engine moved to another thread steps there as on the one that built it.
pub(super) struct Device {
    pub(super) gpu: Gpu,
    /// The full-rebuild solver (for `auto`, chosen on the first batch).
    pub(super) full: Option<gpu::Solver>,
    /// For `auto`: why no full-rebuild mode could be built on the device (its memory taken, for
    /// one), after which the quotient solves every step rather than every other step failing.
    pub(super) full_refused: Option<String>,
    /// The device quotient (its host half tracks every event).
    pub(super) quotient: QuotientSolver,
}

/// A full rebuild's step on the device, with `keys` for deterministic mode: its events are
/// recorded into `quotient` (so that its next step rebuilds what they invalidate) in the
/// download's wait, while the device runs the step. The tracker takes about 3 ns an event, and
/// a cloth of 400 trees falling asleep in 256 worlds reports 102,400: recorded before the solve,
/// they took `auto` to 1.039-1.087x the median wall of the full rebuild it ran, in the wait
/// 0.966-0.974x (session 65, calls 1, 2 and 5). The engine checked the events first
/// ([`Quotient::check`]), so recording them cannot fail here; a solve that fails before its
/// wait still records them.
pub(super) fn solve_recording(
    full: &mut gpu::Solver,
    quotient: &mut Quotient,
    events: &Events,
    (input, keys): (&Input<'_>, Option<&RowKeys>),
    out: &mut Islands,
) -> Result<()> {
    let mut recorded = None;
    let solved = match keys {
        Some(keys) => full.upload_keyed(input, keys),
        None => full.upload(input),
    }
    .and_then(|()| full.replay())
    .and_then(|()| full.download_while(input, out, || recorded = Some(quotient.record(events))));
    let recorded = recorded.unwrap_or_else(|| quotient.record(events));
    solved.and(recorded)
}

// SAFETY: the members that are not `Send` are cudarc's CUDA graphs, driver handles that any
// thread may launch (cudarc binds the context first) or destroy (which needs no current
// context); the engine's own raw launches run only after `Device::bind` made the context current
// on the stepping thread.
unsafe impl Send for Device {}

impl Device {
    /// Makes the device's context current on the calling thread, as a step's raw launches need.
    pub(super) fn bind(&self) -> Result<()> {
        self.gpu
            .ctx()
            .bind_to_thread()
            .map_err(gpu::cuda("cuCtxSetCurrent"))
    }

    /// One step on the device: the quotient, or the full rebuild (choosing it first for `auto`)
    /// while the quotient's tracker records the events. Says whether the quotient solved it.
    pub(super) fn step(
        &mut self,
        input: &Input<'_>,
        events: &Events,
        use_quotient: bool,
        out: &mut Islands,
    ) -> Result<bool> {
        if use_quotient || self.full_refused.is_some() {
            self.quotient.step(input, events, out)?;
            return Ok(true);
        }
        let cap = self.quotient.workspace().capacity();
        let Device {
            gpu,
            full,
            full_refused,
            quotient,
        } = self;
        let full = match full {
            Some(s) => s,
            None => {
                let opts = gpu::solver::Options::default();
                match gpu::auto::choose(gpu, cap, input.model(), input, opts) {
                    Ok((solver, _)) => full.insert(solver),
                    // Every mode refused (or short of device memory): the quotient is the one left.
                    Err(Error::Refused { reason, .. }) => {
                        *full_refused = Some(reason);
                        quotient.step(input, events, out)?;
                        return Ok(true);
                    }
                    // Nothing solved, nothing lost: the events are still recorded.
                    Err(e) => return quotient.quotient_mut().record(events).and(Err(e)),
                }
            }
        };
        let quotient = quotient.quotient_mut();
        solve_recording(full, quotient, events, (input, None), out).map(|()| false)
    }
}
