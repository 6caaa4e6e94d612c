//! Which rows are static (contracted once into the quotient) and which are dynamic (solved every
//! step), and the source each static row comes from.
//!
//! Contacts and joint/tendon limits are always dynamic. Equalities, friction-loss rows and
//! rowless flex couplings are static by default; each class can be made dynamic, and so can
//! chosen equalities — those whose `eq_active` toggles at run time, so a toggle costs no rebuild.
//! By default an equality turns dynamic once it has been reported switched twice, in any worlds
//! ([`EqPolicy::Learn`]): where nothing toggles that is the all-static quotient, and where worlds
//! toggle it spares a host rebuild per switch (on the H200, about 2x less wall time per step
//! with 10% of the worlds switching an equality every step, 9-11x with all of them:
//! `benches/results/quotient-h200-session17-2026-11-30.md`).

use std::ops::Range;

use invalidation::SourceId;

use crate::rows::{Input, RowType};

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
    /// must be one run of ids: those above the first listed id that has an unlisted one below
    /// it are dynamic too ([`Classifier::static_eqs`]).
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
/// assert!(c.is_static(invalidation::SourceId::Eq(2)));
/// assert!(!c.is_static(invalidation::SourceId::Eq(1)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    /// Equality rows.
    pub eq: EqPolicy,
    /// Dof and tendon friction-loss rows are static.
    pub friction_static: bool,
    /// Rowless flex couplings are static.
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

    /// The fast per-row classifier for this policy.
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
        let mut c = Classifier {
            eq_static,
            dynamic_eqs,
            friction_policy: self.friction_static,
            static_eqs: 0..i32::MAX,
            friction_static: self.friction_static,
            flex_static: self.flex_static,
        };
        c.settle();
        c
    }
}

/// Classifies rows and sources under a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    eq_static: bool,
    dynamic_eqs: Vec<i32>,
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

    /// Whether rowless hyperedges (flex couplings) are static.
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
        self.settle();
        true
    }

    /// The static equalities are one run of ids, `static_eqs`: from the first id above the
    /// dynamic ones that are a prefix 0, 1, .. (whose rows come first, before the static ones)
    /// up to the first dynamic id after that; every equality above it is dynamic too, and so are
    /// friction-loss rows. MuJoCo orders a world's rows by kind, equalities by id, and friction
    /// loss after them: a dynamic equality with static ones on both sides would put its rows
    /// inside the static ones, and a world whose static rows are not one block is solved by the
    /// guard's slower path every step (on the device, by a block a world: about 2x `warp`,
    /// benches/results/gpu-h200-notes.md, session 54). Solving the equalities above it each step
    /// keeps the block whole and costs no rebuild when they toggle. Friction-loss rows of one
    /// tree contract nothing, so the quotient loses little there; a user who would rather keep
    /// the equalities above lists the ones below as dynamic ([`EqPolicy::DynamicIds`]).
    fn settle(&mut self) {
        let ids = &self.dynamic_eqs;
        let lo = ids.iter().zip(0..).take_while(|&(&eq, i)| eq == i).count();
        let hi = ids.get(lo).copied().unwrap_or(i32::MAX);
        self.static_eqs = if self.eq_static { lo as i32..hi } else { 0..0 };
        self.friction_static = self.friction_policy && (!self.eq_static || hi == i32::MAX);
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
            SourceId::Flex(_) => self.flex_static,
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
        // A policy without static friction keeps it so.
        let p = Policy {
            friction_static: false,
            ..Policy::default()
        };
        assert!(!p.classifier().friction_static());
    }
}
