//! The guard: a cheap signature of the static rows present, per quotient node.
//!
//! Each static row (or rowless hyperedge) hashes to 64 bits from its type and support *multiset*
//! (order-insensitive, since reordering a support never changes the partition): what every output
//! depends on. The row's source id is left out on purpose: no output depends on it, so a row
//! whose id changed but whose type and support did not leaves the quotient exact, and a device
//! running the guard need not be sent the ids at all. A node's
//! signature is the row count and the wrapping sum of its rows' hashes, so it does not depend on
//! row order and can be accumulated with atomic adds on a device.
//!
//! Comparing the signature present this step with the one contracted tells, per node, whether
//! its static rows are all there ([`NodeState::Present`]), all gone — the node sleeps —
//! ([`NodeState::Absent`]), or something else happened ([`NodeState::Mismatch`]), which forces a
//! rebuild. Count differences are detected exactly; a same-count change of supports is detected
//! unless two 64-bit sums collide (probability about 2⁻⁶⁴ per change). Rows spanning two nodes are
//! detected exactly by the caller ([`GuardFinding::Spans`]).

/// splitmix64's finalizer: a fast, well-mixed 64-bit permutation.
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Hash of one static row or rowless hyperedge: `kind` (MuJoCo's constraint code, or 8 for a
/// rowless hyperedge) and its support (as a multiset).
///
/// ```
/// use invalidation::signature::row_hash;
/// assert_eq!(row_hash(0, &[1, 4]), row_hash(0, &[4, 1]));
/// assert_ne!(row_hash(0, &[1, 4]), row_hash(0, &[1, 5]));
/// ```
#[inline]
pub fn row_hash(kind: u8, support: &[i32]) -> u64 {
    let mut set = 0u64;
    for &t in support {
        set = set.wrapping_add(mix(t as u32 as u64 ^ 0x5851_f42d_4c95_7f2d));
    }
    let head = ((kind as u64) << 56) ^ ((support.len() as u64) << 32);
    mix(mix(head) ^ set)
}

/// The static rows of a node (or a world): how many, and the wrapping sum of their hashes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Number of rows.
    pub rows: u32,
    /// Wrapping sum of their [`row_hash`]es.
    pub sum: u64,
}

impl Signature {
    /// Adds one row's hash.
    #[inline]
    pub fn add(&mut self, hash: u64) {
        self.rows = self.rows.wrapping_add(1);
        self.sum = self.sum.wrapping_add(hash);
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

/// What the guard found wrong with a world's static rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardFinding {
    /// Static rows that were not contracted appeared on a node.
    Appeared {
        /// Node (min tree of the contracted component).
        node_tree: i32,
    },
    /// Some, not all, of a node's static rows vanished (part of it asleep or switched off).
    Vanished {
        /// Node (min tree of the contracted component).
        node_tree: i32,
    },
    /// As many static rows as contracted, but not the same ones.
    Changed {
        /// Node (min tree of the contracted component).
        node_tree: i32,
    },
    /// A static row couples two contracted nodes.
    Spans {
        /// World-local row index, or −1 − e for the e-th rowless hyperedge of the world.
        row: i32,
    },
    /// A device found the world's static rows differ from the contracted stream (it does not say
    /// how: the world was solved directly on the device and is rebuilt on the host).
    Unmatched,
    /// A dynamic row touches a tree of a node whose static rows are absent, so the tree is not
    /// bound to its node this step.
    AsleepTouched {
        /// Tree.
        tree: i32,
    },
}

/// The guard's verdict for one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeState {
    /// Every contracted static row is present (or the node has none and none appeared).
    Present,
    /// The node has static rows and none is present: it sleeps this step.
    Absent,
    /// Anything else: the quotient is stale for this world.
    Mismatch(GuardFinding),
}

/// Compares the signature `present` this step with the one `expected` at contraction, for the
/// node whose smallest tree is `node_tree`.
///
/// ```
/// use invalidation::{NodeState, Signature};
/// use invalidation::signature::{compare, row_hash};
/// let mut s = Signature::default();
/// s.add(row_hash(0, &[2, 3]));
/// assert_eq!(compare(s, s, 2), NodeState::Present);
/// assert_eq!(compare(s, Signature::default(), 2), NodeState::Absent);
/// ```
#[inline]
pub fn compare(expected: Signature, present: Signature, node_tree: i32) -> NodeState {
    if present == expected {
        return NodeState::Present;
    }
    if present.rows == 0 {
        return NodeState::Absent;
    }
    NodeState::Mismatch(if present.rows > expected.rows {
        GuardFinding::Appeared { node_tree }
    } else if present.rows < expected.rows {
        GuardFinding::Vanished { node_tree }
    } else {
        GuardFinding::Changed { node_tree }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_separates_kind_support_and_multiplicity() {
        let base = row_hash(0, &[2, 3]);
        assert_ne!(base, row_hash(1, &[2, 3]));
        assert_ne!(base, row_hash(0, &[2, 4]));
        assert_ne!(base, row_hash(0, &[2, 3, 3]));
        assert_ne!(row_hash(8, &[1]), row_hash(8, &[1, 1]));
    }

    #[test]
    fn compare_reports_each_case() {
        let (a, b) = (row_hash(0, &[2]), row_hash(0, &[3]));
        let mut one = Signature::default();
        one.add(a);
        let mut two = one;
        two.add(b);
        let mut other = Signature::default();
        other.add(b);
        assert_eq!(compare(two, two, 2), NodeState::Present);
        assert_eq!(
            compare(one, two, 2),
            NodeState::Mismatch(GuardFinding::Appeared { node_tree: 2 })
        );
        assert_eq!(
            compare(two, one, 2),
            NodeState::Mismatch(GuardFinding::Vanished { node_tree: 2 })
        );
        assert_eq!(
            compare(one, other, 2),
            NodeState::Mismatch(GuardFinding::Changed { node_tree: 2 })
        );
        assert_eq!(
            compare(Signature::default(), one, 2),
            NodeState::Mismatch(GuardFinding::Appeared { node_tree: 2 })
        );
        assert_eq!(
            compare(Signature::default(), Signature::default(), 2),
            NodeState::Present
        );
    }
}
