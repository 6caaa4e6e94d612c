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
    /// The listed equality ids are dynamic, the others static.
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
/// let policy = Policy { eq: EqPolicy::DynamicIds(vec![3, 1]), ..Policy::default() };
/// let c = policy.classifier();
/// assert!(c.is_static(invalidation::SourceId::Eq(2)));
/// assert!(!c.is_static(invalidation::SourceId::Eq(3)));
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

    /// The fast per-row classifier for this policy.
    pub fn classifier(&self) -> Classifier {
        let (eq_static, mut dynamic_eqs) = match &self.eq {
            EqPolicy::Static => (true, Vec::new()),
            EqPolicy::Dynamic => (false, Vec::new()),
            EqPolicy::DynamicIds(ids) => (true, ids.clone()),
            EqPolicy::Learn { .. } => (true, Vec::with_capacity(LEARN_MAX)),
        };
        dynamic_eqs.sort_unstable();
        dynamic_eqs.dedup();
        let mut c = Classifier {
            eq_static,
            dynamic_eqs,
            friction_policy: self.friction_static,
            friction_static: self.friction_static,
            flex_static: self.flex_static,
        };
        c.settle_friction();
        c
    }
}

/// Classifies rows and sources under a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    eq_static: bool,
    dynamic_eqs: Vec<i32>,
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
        self.settle_friction();
        true
    }

    /// Friction-loss rows are static as the policy says, unless some dynamic equality has a
    /// static one below it. MuJoCo orders a world's rows by kind, equalities by id, and friction
    /// loss after them: such an equality's rows then lie between static rows, and a world whose
    /// static rows are not one block is solved by the guard's slower path every step (on the
    /// device, by its block after the warps: benches/results/gpu-h200-notes.md, session 54).
    /// With friction loss dynamic too, a dynamic equality above every static one ends the
    /// block; friction-loss rows of one tree contract nothing, so the quotient loses little.
    /// Dynamic equalities below every static one were never in the way.
    fn settle_friction(&mut self) {
        let inside = self.eq_static
            && (self.dynamic_eqs.iter())
                .enumerate()
                .any(|(i, &eq)| eq != i as i32);
        self.friction_static = self.friction_policy && !inside;
    }

    /// Whether equalities are static unless listed in [`Classifier::dynamic_eqs`].
    pub fn eq_static(&self) -> bool {
        self.eq_static
    }

    /// The dynamic equality ids (sorted) when equalities are otherwise static.
    pub fn dynamic_eqs(&self) -> &[i32] {
        &self.dynamic_eqs
    }

    /// Whether friction-loss rows are static: as the policy says, unless a dynamic equality has
    /// a static one below it (see `settle_friction`).
    pub fn friction_static(&self) -> bool {
        self.friction_static
    }

    /// Whether rows from `source` are static.
    #[inline]
    pub fn is_static(&self, source: SourceId) -> bool {
        match source {
            SourceId::Eq(eq) => self.eq_static && self.dynamic_eqs.binary_search(&eq).is_err(),
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

    fn friction_with(eq: EqPolicy) -> bool {
        Policy {
            eq,
            ..Policy::default()
        }
        .classifier()
        .friction_static()
    }

    #[test]
    fn friction_turns_dynamic_where_a_dynamic_equality_has_a_static_one_below() {
        // Below every static equality: its rows come first, before the static block.
        assert!(friction_with(EqPolicy::DynamicIds(vec![1, 0])));
        assert!(friction_with(EqPolicy::Static));
        // Every equality dynamic: none static to split.
        assert!(friction_with(EqPolicy::Dynamic));
        // Above a static one: friction loss would follow it.
        assert!(!friction_with(EqPolicy::DynamicIds(vec![0, 5])));
        assert!(!friction_with(EqPolicy::DynamicIds(vec![3])));
        // Learned one at a time.
        let mut c = Policy::default().classifier();
        assert!(c.make_dynamic(0) && c.friction_static());
        assert!(c.make_dynamic(4) && !c.friction_static());
        assert!(c.is_static(SourceId::Eq(1)) && !c.is_static(SourceId::Dof(0)));
        assert!(!c.is_static(SourceId::Tendon(2)));
        assert!(!c.row_is_static(RowType::FrictionDof, 0));
        // A policy without static friction keeps it so.
        let p = Policy {
            friction_static: false,
            ..Policy::default()
        };
        assert!(!p.classifier().friction_static());
    }
}
