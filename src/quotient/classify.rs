//! Which rows are static (contracted once into the quotient) and which are dynamic (solved every
//! step), and the source each static row comes from.
//!
//! Contacts and joint/tendon limits are always dynamic. Equalities, friction-loss rows and
//! rowless couplings (flexes, and the discrete integrator's tendons, actuators and passive flex
//! contacts) are static by default; each class can be made dynamic, and so can
//! chosen equalities — those whose `eq_active` toggles at run time, so a toggle costs no rebuild.
//! By default an equality turns dynamic once it has been reported switched twice, in any worlds
//! ([`EqPolicy::Learn`]): where nothing toggles that is the all-static quotient, and where worlds
//! toggle it spares a host rebuild per switch (on the H200, about 2x less wall time per step
//! with 10% of the worlds switching an equality every step, 9-11x with all of them:
//! `benches/results/quotient-h200-session17-2026-11-30.md`).

use std::ops::Range;

use invalidation::SourceId;

use crate::rows::{Batch, Input, RowType};

/// The kind code hashed for a rowless hyperedge (MuJoCo's row codes are 0..=7).
pub const ROWLESS_KIND: u8 = 8;

/// How equality rows are classified; the default is [`EqPolicy::Learn`] after
/// [`LEARN_AFTER`] switches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EqPolicy {
    /// Every equality is static (a toggle of `eq_active` rebuilds that world).
    Static,
    /// Every equality is dynamic (solved each step like a contact).
    Dynamic,
    /// The listed equality ids are dynamic, the others static, except that the static ones
    /// must be one run of ids: of the runs the listed ids leave between them, the one whose rows
    /// weigh most in the batch stays static and the equalities outside it are dynamic too
    /// ([`Classifier::static_eqs`]).
    DynamicIds(Vec<i32>),
    /// Static until an equality's `eq_active` has been reported toggled `after` times, counted
    /// over all worlds (an equality that one world switches off and on, or two worlds switch,
    /// is one that toggles at run time); from then on that equality is dynamic in every world
    /// (one rebuild of all worlds when it switches). Up to [`LEARN_MAX`] equalities are learned.
    Learn {
        /// Reported toggles before an equality turns dynamic.
        after: u32,
    },
}

/// Most equalities [`EqPolicy::Learn`] tracks and turns dynamic.
pub const LEARN_MAX: usize = 256;

/// Reported switches after which the default policy makes an equality dynamic: a switch off and
/// back on, the pattern of a toggle-heavy world (a grasp's weld, a latch).
pub const LEARN_AFTER: u32 = 2;

impl Default for EqPolicy {
    fn default() -> Self {
        EqPolicy::Learn { after: LEARN_AFTER }
    }
}

/// The classification policy.
///
/// ```
/// use archipelago::quotient::{EqPolicy, Policy};
/// let policy = Policy { eq: EqPolicy::DynamicIds(vec![1, 0]), ..Policy::default() };
/// let c = policy.classifier();
/// assert!(c.is_static(archipelago::invalidation::SourceId::Eq(2)));
/// assert!(!c.is_static(archipelago::invalidation::SourceId::Eq(1)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    /// Equality rows.
    pub eq: EqPolicy,
    /// Dof and tendon friction-loss rows are static.
    pub friction_static: bool,
    /// Rowless couplings are static: a flex's, and the discrete integrator's of tendons,
    /// actuators and passive flex contacts (every [`crate::EdgeKind`]; a passive contact changes
    /// as contacts do, and the guard rebuilds the worlds where it does).
    pub flex_static: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            eq: EqPolicy::default(),
            friction_static: true,
            flex_static: true,
        }
    }
}

impl Policy {
    /// Nothing static: the quotient degenerates to a full rebuild over singleton nodes.
    pub fn all_dynamic() -> Policy {
        Policy {
            eq: EqPolicy::Dynamic,
            friction_static: false,
            flex_static: false,
        }
    }

    /// The default policy but for equalities: the listed ids dynamic, the others static
    /// ([`EqPolicy::DynamicIds`]).
    pub fn dynamic_ids(ids: Vec<i32>) -> Policy {
        Policy {
            eq: EqPolicy::DynamicIds(ids),
            ..Policy::default()
        }
    }

    /// The fast per-row classifier for this policy, before it has weighed a batch: where the
    /// dynamic ids leave several runs of static ones, the first run stays static until
    /// [`Classifier::weigh`] (the quotient weighs each batch it rebuilds every world of).
    pub fn classifier(&self) -> Classifier {
        let (eq_static, mut dynamic_eqs) = match &self.eq {
            EqPolicy::Static => (true, Vec::new()),
            EqPolicy::Dynamic => (false, Vec::new()),
            EqPolicy::DynamicIds(ids) => (true, ids.clone()),
            EqPolicy::Learn { .. } => (true, Vec::with_capacity(LEARN_MAX)),
        };
        // No equality has a negative id: such an entry would only end the static run at 0.
        dynamic_eqs.retain(|&id| id >= 0);
        dynamic_eqs.sort_unstable();
        dynamic_eqs.dedup();
        let runs = dynamic_eqs.capacity() + 1;
        let mut c = Classifier {
            eq_static,
            dynamic_eqs,
            weights: Vec::with_capacity(runs),
            friction_policy: self.friction_static,
            static_eqs: 0..i32::MAX,
            friction_static: self.friction_static,
            flex_static: self.flex_static,
        };
        c.settle();
        c
    }

    /// The classifier for this policy with `batch` weighed ([`Classifier::weigh`]): the one a
    /// quotient uses on that batch.
    pub fn classifier_for(&self, batch: &Batch) -> Classifier {
        let mut c = self.classifier();
        c.weigh(batch);
        c
    }
}

/// Classifies rows and sources under a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    eq_static: bool,
    dynamic_eqs: Vec<i32>,
    /// The support entries of each run's rows in the batch last weighed: run `i` lies between
    /// dynamic ids `i - 1` and `i`, and the last one also holds friction loss. Empty when not
    /// weighed for the present dynamic ids ([`Classifier::weigh`]).
    weights: Vec<u64>,
    /// The equality ids that are static when `eq_static` ([`Classifier::static_eqs`]).
    static_eqs: Range<i32>,
    /// The policy's choice for friction-loss rows, and the one in effect
    /// ([`Classifier::friction_static`]).
    friction_policy: bool,
    friction_static: bool,
    flex_static: bool,
}

impl Classifier {
    /// The source of a row, if the row is static.
    #[inline]
    pub fn row_source(&self, kind: RowType, id: i32) -> Option<SourceId> {
        let source = match kind {
            RowType::Equality => SourceId::Eq(id),
            RowType::FrictionDof => SourceId::Dof(id),
            RowType::FrictionTendon => SourceId::Tendon(id),
            _ => return None,
        };
        self.is_static(source).then_some(source)
    }

    /// Whether a row is static.
    #[inline]
    pub fn row_is_static(&self, kind: RowType, id: i32) -> bool {
        self.row_source(kind, id).is_some()
    }

    /// Whether rowless hyperedges (of every [`crate::EdgeKind`]) are static.
    #[inline]
    pub fn rowless_is_static(&self) -> bool {
        self.flex_static
    }

    /// Makes equality `eq` dynamic from now on (used by [`EqPolicy::Learn`]); false when it
    /// already was, or when the learned set is full.
    pub fn make_dynamic(&mut self, eq: i32) -> bool {
        if !self.is_static(SourceId::Eq(eq)) || self.dynamic_eqs.len() >= LEARN_MAX {
            return false;
        }
        if let Err(at) = self.dynamic_eqs.binary_search(&eq) {
            self.dynamic_eqs.insert(at, eq);
        }
        // The run that held `eq` is now two, whose weights are unknown until the next weighing.
        self.weights.clear();
        self.settle();
        true
    }

    /// Weighs the runs of static equalities that the dynamic ids leave by the support entries
    /// of their rows in `batch` (friction loss counts for the last run, whose rows it follows),
    /// and keeps the heaviest static; returns whether the classification changed. Linear in the
    /// batch's rows and free of allocation; only a policy with dynamic ids has runs to choose
    /// from.
    ///
    /// ```
    /// use archipelago::quotient::Policy;
    /// use archipelago::{Batch, RowType};
    /// // Equality 1 toggles; 2 and 3 hold more than 0 does.
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]);
    /// b.row(RowType::Equality, 2, &[1, 2]).row(RowType::Equality, 3, &[2, 3]);
    /// b.end_world();
    /// let batch = b.finish();
    /// let mut c = Policy::dynamic_ids(vec![1]).classifier();
    /// assert_eq!(c.static_eqs(), 0..1);
    /// assert!(c.weigh(&batch));
    /// assert_eq!(c.static_eqs(), 2..i32::MAX);
    /// ```
    pub fn weigh(&mut self, batch: &Batch) -> bool {
        let before = (self.static_eqs.clone(), self.friction_static);
        self.weights.clear();
        if self.eq_static && !self.dynamic_eqs.is_empty() {
            let last = self.dynamic_eqs.len();
            self.weights.resize(last + 1, 0);
            for r in 0..batch.nrow() {
                let run = match batch.row_type[r] {
                    RowType::Equality => match self.dynamic_eqs.binary_search(&batch.row_id[r]) {
                        Ok(_) => continue,
                        Err(run) => run,
                    },
                    kind if kind.is_friction() && self.friction_policy => last,
                    _ => continue,
                };
                self.weights[run] += batch.row_support_of(r).len() as u64;
            }
        }
        self.settle();
        before != (self.static_eqs.clone(), self.friction_static)
    }

    /// Whether the runs of static equalities are weighed for the present dynamic ids (or there
    /// is one run, or none, to choose).
    pub fn weighed(&self) -> bool {
        !self.eq_static
            || self.dynamic_eqs.is_empty()
            || self.weights.len() == self.dynamic_eqs.len() + 1
    }

    /// The static equalities are one run of ids, `static_eqs`: of the runs between the dynamic
    /// ids (whose rows then lie below or above it), the heaviest by [`Classifier::weigh`], or the
    /// first non-empty one before a weighing; every equality outside it is dynamic too, and so
    /// is friction loss unless the run reaches the top. MuJoCo orders a world's rows by kind,
    /// equalities by id, and friction loss after them: a dynamic equality with static ones on
    /// both sides would put its rows inside the static ones, and a world whose static rows are
    /// not one block is solved by the guard's slower path every step (on the device, by a block
    /// a world: about 2x `warp`, benches/results/gpu-h200-notes.md, session 54). Solving the
    /// equalities outside the run each step keeps the block whole and costs no rebuild when
    /// they toggle; weighing keeps the most support entries contracted, wherever the toggled
    /// equality sits among the static ones.
    fn settle(&mut self) {
        let ids = &self.dynamic_eqs;
        let runs = (0..=ids.len()).map(|i| {
            // Saturating: a dynamic id of i32::MAX leaves an empty run above it.
            let start = if i == 0 {
                0
            } else {
                ids[i - 1].saturating_add(1)
            };
            (start..ids.get(i).copied().unwrap_or(i32::MAX), i)
        });
        let weight = |i: usize| self.weights.get(i).copied().unwrap_or(0);
        // The heaviest non-empty run, the first of equals: before a weighing, the first.
        let mut best: Option<(Range<i32>, usize)> = None;
        for (run, i) in runs.filter(|(run, _)| !run.is_empty()) {
            if best.as_ref().is_none_or(|(_, b)| weight(i) > weight(*b)) {
                best = Some((run, i));
            }
        }
        let run = best.map_or(0..0, |(run, _)| run);
        self.friction_static = self.friction_policy && (!self.eq_static || run.end == i32::MAX);
        self.static_eqs = if self.eq_static { run } else { 0..0 };
    }

    /// Whether some equalities are static (those of [`Classifier::static_eqs`]).
    pub fn eq_static(&self) -> bool {
        self.eq_static
    }

    /// The equality ids listed or learned dynamic (sorted) when equalities are otherwise
    /// static. Those above the first one that has a static one below it are dynamic whether
    /// listed or not: see [`Classifier::static_eqs`].
    pub fn dynamic_eqs(&self) -> &[i32] {
        &self.dynamic_eqs
    }

    /// The static equality ids: one run, so that a world's static rows are one block (empty
    /// when every equality is dynamic).
    ///
    /// ```
    /// use archipelago::quotient::{EqPolicy, Policy};
    /// let static_eqs = |ids: Vec<i32>| {
    ///     let p = Policy { eq: EqPolicy::DynamicIds(ids), ..Policy::default() };
    ///     p.classifier().static_eqs()
    /// };
    /// assert_eq!(static_eqs(vec![]), 0..i32::MAX);
    /// assert_eq!(static_eqs(vec![0, 1]), 2..i32::MAX); // their rows come first
    /// assert_eq!(static_eqs(vec![0, 4, 9]), 1..4); // 5..=8 are solved each step too
    /// ```
    pub fn static_eqs(&self) -> Range<i32> {
        self.static_eqs.clone()
    }

    /// Whether equality rows are static by id: some are, and some are not (then the device
    /// quotient reads the rows' ids).
    pub fn eqs_by_id(&self) -> bool {
        self.eq_static && self.static_eqs != (0..i32::MAX)
    }

    /// Whether friction-loss rows are static: as the policy says, unless some equality above
    /// the static ones is dynamic (see [`Classifier::static_eqs`]).
    pub fn friction_static(&self) -> bool {
        self.friction_static
    }

    /// Whether rows from `source` are static.
    #[inline]
    pub fn is_static(&self, source: SourceId) -> bool {
        match source {
            SourceId::Eq(eq) => self.static_eqs.contains(&eq),
            SourceId::Dof(_) | SourceId::Tendon(_) => self.friction_static,
            SourceId::Flex(_) | SourceId::TendonCoupling(_) | SourceId::ActuatorCoupling(_) => {
                self.flex_static
            }
        }
    }
}

/// How much of a batch is static: rows and support entries (rowless hyperedges count as
/// entries, not rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Share {
    /// Static rows.
    pub static_rows: usize,
    /// All rows.
    pub rows: usize,
    /// Support entries of static rows and static rowless hyperedges.
    pub static_entries: usize,
    /// All support entries.
    pub entries: usize,
}

impl Share {
    /// Static fraction of the rows (0 when there are none).
    pub fn row_fraction(&self) -> f64 {
        self.static_rows as f64 / self.rows.max(1) as f64
    }

    /// Static fraction of the support entries (0 when there are none).
    pub fn entry_fraction(&self) -> f64 {
        self.static_entries as f64 / self.entries.max(1) as f64
    }
}

/// Measures the static share of `input` under `classifier`.
pub fn share(input: &Input<'_>, classifier: &Classifier) -> Share {
    let batch = input.batch();
    let mut s = Share::default();
    for r in 0..batch.nrow() {
        let n = batch.row_support_of(r).len();
        s.rows += 1;
        s.entries += n;
        if classifier.row_is_static(batch.row_type[r], batch.row_id[r]) {
            s.static_rows += 1;
            s.static_entries += n;
        }
    }
    for e in 0..batch.nedge() {
        let n = batch.edge_support_of(e).len();
        s.entries += n;
        if classifier.rowless_is_static() {
            s.static_entries += n;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classifier(eq: EqPolicy) -> Classifier {
        Policy {
            eq,
            ..Policy::default()
        }
        .classifier()
    }

    #[test]
    fn the_static_equalities_are_one_run_of_ids() {
        // Below every static equality: its rows come first, before the static block.
        let c = classifier(EqPolicy::DynamicIds(vec![1, 0]));
        assert_eq!((c.static_eqs(), c.friction_static()), (2..i32::MAX, true));
        let c = classifier(EqPolicy::Static);
        assert_eq!((c.static_eqs(), c.friction_static()), (0..i32::MAX, true));
        // Every equality dynamic: none static to split.
        let c = classifier(EqPolicy::Dynamic);
        assert_eq!((c.static_eqs(), c.friction_static()), (0..0, true));
        assert!(!c.is_static(SourceId::Eq(0)) && c.is_static(SourceId::Dof(0)));
        // Above a static one: the equalities above it and friction loss would follow it.
        let c = classifier(EqPolicy::DynamicIds(vec![0, 5]));
        assert_eq!((c.static_eqs(), c.friction_static()), (1..5, false));
        assert_eq!(
            classifier(EqPolicy::DynamicIds(vec![-1, 1])).static_eqs(),
            0..1
        );
        // The largest id leaves nothing above it (no overflow); the run below it reads as every
        // id, which no model's equalities reach.
        let c = classifier(EqPolicy::DynamicIds(vec![i32::MAX]));
        assert_eq!(c.static_eqs(), 0..i32::MAX);
        let c = classifier(EqPolicy::DynamicIds(vec![3, 7]));
        assert_eq!(c.static_eqs(), 0..3);
        assert!(c.is_static(SourceId::Eq(2)));
        assert!(!c.is_static(SourceId::Eq(4)) && !c.is_static(SourceId::Eq(8)));
        // Learned one at a time; one above the run is dynamic already.
        let mut c = Policy::default().classifier();
        assert!(c.make_dynamic(0) && c.friction_static());
        assert!(c.make_dynamic(4) && !c.friction_static());
        assert!(!c.make_dynamic(6));
        assert_eq!((c.static_eqs(), c.dynamic_eqs()), (1..4, &[0, 4][..]));
        assert!(c.is_static(SourceId::Eq(1)) && !c.is_static(SourceId::Dof(0)));
        assert!(!c.is_static(SourceId::Tendon(2)));
        assert!(!c.row_is_static(RowType::FrictionDof, 0));
        assert!(c.row_is_static(RowType::Equality, 3));
        assert!(!c.row_is_static(RowType::Equality, 5));
        // Before a weighing, the first run stays static.
        assert!(!c.weighed() && Policy::default().classifier().weighed());
        // A policy without static friction keeps it so.
        let p = Policy {
            friction_static: false,
            ..Policy::default()
        };
        assert!(!p.classifier().friction_static());
    }

    /// One world: equalities 0, 1, .. with the given support sizes, then dof friction loss on
    /// `friction` trees.
    fn batch(eq_sizes: &[usize], friction: usize) -> Batch {
        let mut b = Batch::builder();
        for (id, &n) in eq_sizes.iter().enumerate() {
            b.row(
                RowType::Equality,
                id as i32,
                &(0..n as i32).collect::<Vec<_>>(),
            );
        }
        for t in 0..friction as i32 {
            b.row(RowType::FrictionDof, t, &[t]);
        }
        b.end_world();
        b.finish()
    }

    #[test]
    fn the_heaviest_run_of_static_equalities_stays_static() {
        let weighed = |ids: Vec<i32>, b: &Batch| {
            let mut c = classifier(EqPolicy::DynamicIds(ids));
            let changed = c.weigh(b);
            assert!(c.weighed());
            (c.static_eqs(), c.friction_static(), changed)
        };
        // Equality 1 dynamic: 0 (2 entries) against 2..6 and the friction loss.
        let b = batch(&[2, 2, 2, 2, 2, 2], 0);
        assert_eq!(weighed(vec![1], &b), (2..i32::MAX, true, true));
        let b = batch(&[9, 2, 2, 2, 2, 2], 0);
        assert_eq!(weighed(vec![1], &b), (0..1, false, false));
        // Friction loss tips it, and only where the policy makes it static.
        let b = batch(&[8, 2, 2, 2, 2, 2], 1);
        assert_eq!(weighed(vec![1], &b), (2..i32::MAX, true, true));
        let mut c = Policy {
            friction_static: false,
            ..Policy::dynamic_ids(vec![1])
        }
        .classifier();
        assert!(!c.weigh(&b) && c.static_eqs() == (0..1));
        // Equals: the first run. A middle run ends where the next dynamic id starts.
        let b = batch(&[2, 2, 1, 1, 2, 2], 0);
        assert_eq!(weighed(vec![1, 4], &b), (0..1, false, false));
        let b = batch(&[2, 2, 3, 3, 2, 2], 0);
        assert_eq!(weighed(vec![1, 4], &b), (2..4, false, true));
        // Dynamic ids first: the runs between them are empty and never chosen.
        let b = batch(&[5, 5, 1], 0);
        assert_eq!(weighed(vec![0, 1], &b), (2..i32::MAX, true, false));
        // Learning splits a run: its weights are unknown until the next weighing.
        let mut c = Policy::default().classifier();
        let b = batch(&[2, 2, 2, 2], 3);
        assert!(!c.weigh(&b) && c.weighed());
        assert!(c.make_dynamic(1) && !c.weighed());
        assert_eq!(c.static_eqs(), 0..1);
        assert!(c.weigh(&b));
        assert_eq!((c.static_eqs(), c.friction_static()), (2..i32::MAX, true));
        assert_eq!(Policy::dynamic_ids(vec![1]).classifier_for(&b), c.clone());
    }
}
