//! `quotient` as a CPU mode by name: the static quotient ([`crate::quotient::Quotient`]) sized
//! from the first input it sees, for tools that pick modes by name (`replay`, `demo`, `bench`).
//!
//! It reports no events, so the guard alone keeps every quotient exact. Worlds unchanged since
//! their last solved step reuse its outputs ([`Quotient::set_reuse`]) unless
//! [`CpuMode::set_reuse`] turns that off. A batch that outgrows
//! the capacity, or a model of another size, rebuilds it with room for both (the only
//! allocations; a steady sequence of batches allocates nothing per step).

use crate::cpu::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::Islands;
use crate::quotient::{Policy, Quotient};
use crate::rows::{Capacity, Input};

/// The quotient mode with a capacity that grows to fit its inputs.
#[derive(Debug, Clone)]
pub struct QuotientMode {
    policy: Policy,
    reuse: bool,
    inner: Option<(Capacity, Quotient)>,
}

impl Default for QuotientMode {
    fn default() -> QuotientMode {
        QuotientMode::new(Policy::default())
    }
}

impl QuotientMode {
    /// A quotient mode classifying rows by `policy`, with reuse on.
    pub fn new(policy: Policy) -> QuotientMode {
        QuotientMode {
            policy,
            reuse: true,
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
    (cap.ntree, cap.nv) == (fit.ntree, fit.nv) && fit.within(cap)
}

impl CpuMode for QuotientMode {
    fn name(&self) -> &'static str {
        "quotient"
    }

    /// Whether worlds unchanged since their last solved step keep its outputs (on by default;
    /// see [`Quotient::set_reuse`]). Off, every step solves every world over its quotient: what
    /// a timing of one batch solved again and again should measure.
    ///
    /// ```
    /// use archipelago::cpu::{CpuMode, quotient::QuotientMode};
    /// use archipelago::{Batch, Input, Islands, Model, RowType};
    /// let model = Model::from_dofnum(&[1, 1]).unwrap();
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]).end_world();
    /// let batch = b.finish();
    /// let input = Input::new(&model, &batch).unwrap();
    /// let mut mode = QuotientMode::default();
    /// mode.set_reuse(false);
    /// let mut out = Islands::default();
    /// mode.solve(&input, &mut out).unwrap();
    /// mode.solve(&input, &mut out).unwrap();
    /// assert_eq!(mode.quotient().unwrap().counters().reused, 0);
    /// ```
    fn set_reuse(&mut self, on: bool) {
        self.reuse = on;
        if let Some((_, q)) = &mut self.inner {
            q.set_reuse(on);
        }
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        let fit = Capacity::fit(input.model(), input.batch());
        let cap = match &self.inner {
            Some((cap, _)) if covers(cap, &fit) => *cap,
            Some((old, _)) if old.ntree == fit.ntree && old.nv == fit.nv => old.union(&fit),
            _ => fit,
        };
        if self.inner.as_ref().is_some_and(|(c, _)| *c != cap) {
            self.inner = None;
        }
        let (policy, reuse) = (&self.policy, self.reuse);
        let (_, q) = self.inner.get_or_insert_with(|| {
            let mut q = Quotient::new(&cap, policy.clone());
            q.set_reuse(reuse);
            (cap, q)
        });
        q.solve(input, out)
    }
}
