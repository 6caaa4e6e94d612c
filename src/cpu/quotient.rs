//! `quotient` as a CPU mode by name: the static quotient ([`crate::quotient::Quotient`]) sized
//! from the first input it sees, for tools that pick modes by name (`replay`, `demo`, `bench`).
//!
//! It reports no events, so the guard alone keeps every quotient exact. Worlds unchanged since
//! their last solved step reuse its outputs ([`Quotient::set_reuse`]). A batch that outgrows
//! the capacity, or a model of another size, rebuilds it with room for both (the only
//! allocations; a steady sequence of batches allocates nothing per step).

use crate::cpu::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::Islands;
use crate::quotient::{Policy, Quotient};
use crate::rows::{Capacity, Input};

/// The quotient mode with a capacity that grows to fit its inputs.
#[derive(Debug, Clone, Default)]
pub struct QuotientMode {
    policy: Policy,
    inner: Option<(Capacity, Quotient)>,
}

impl QuotientMode {
    /// A quotient mode classifying rows by `policy`.
    pub fn new(policy: Policy) -> QuotientMode {
        QuotientMode {
            policy,
            inner: None,
        }
    }

    /// The quotient engine, once a batch has been solved.
    pub fn quotient(&self) -> Option<&Quotient> {
        self.inner.as_ref().map(|(_, q)| q)
    }
}

/// Whether `cap` holds everything `fit` needs, for the same model size.
fn covers(cap: &Capacity, fit: &Capacity) -> bool {
    cap.ntree == fit.ntree
        && cap.nv == fit.nv
        && cap.nworld >= fit.nworld
        && cap.njmax >= fit.njmax
        && cap.nsupport >= fit.nsupport
        && cap.nedge >= fit.nedge
}

impl CpuMode for QuotientMode {
    fn name(&self) -> &'static str {
        "quotient"
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        let fit = Capacity::fit(input.model(), input.batch());
        let cap = match &self.inner {
            Some((cap, _)) if covers(cap, &fit) => *cap,
            Some((old, _)) if old.ntree == fit.ntree && old.nv == fit.nv => Capacity {
                nworld: old.nworld.max(fit.nworld),
                njmax: old.njmax.max(fit.njmax),
                nsupport: old.nsupport.max(fit.nsupport),
                nedge: old.nedge.max(fit.nedge),
                ..fit
            },
            _ => fit,
        };
        if self.inner.as_ref().is_some_and(|(c, _)| *c != cap) {
            self.inner = None;
        }
        let policy = &self.policy;
        let (_, q) = self.inner.get_or_insert_with(|| {
            let mut q = Quotient::new(&cap, policy.clone());
            q.set_reuse(true);
            (cap, q)
        });
        q.solve(input, out)
    }
}
