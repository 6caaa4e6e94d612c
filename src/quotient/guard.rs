//! The per-step guard: compares the static rows present in a world with its quotient, node by
//! node, and yields the per-node awake mask.
//!
//! A node is *active* when all its contracted static rows are present, *asleep* when none is
//! (MuJoCo sleeps whole islands, so a sleeping component loses all its rows at once), *idle*
//! when it never had static rows. Anything else — a static row spanning two nodes, a node with
//! some but not all of its rows, rows that were never contracted — is a [`GuardFinding`] and the
//! world is rebuilt.

use invalidation::Signature;
use invalidation::signature::{self, GuardFinding, NodeState};

use super::classify::Classifier;
use super::contract::View;
use super::walk;
use crate::rows::Batch;

/// Node without static rows: a tree on its own, touched only by dynamic rows.
pub const IDLE: u8 = 0;
/// Node whose static rows are all present: its trees form (part of) one island.
pub const ACTIVE: u8 = 1;
/// Node whose static rows are all absent: it sleeps, its trees are not bound together.
pub const ASLEEP: u8 = 2;

/// Per-node accumulators and the resulting awake mask, sized for `ntree` nodes.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    rows: Vec<u32>,
    sum: Vec<u64>,
    /// [`IDLE`], [`ACTIVE`] or [`ASLEEP`] per node, valid after a successful [`scan`].
    pub state: Vec<u8>,
}

impl Scan {
    /// Scratch for worlds of `ntree` trees.
    pub fn new(ntree: usize) -> Scan {
        Scan {
            rows: vec![0; ntree],
            sum: vec![0; ntree],
            state: vec![IDLE; ntree],
        }
    }

    /// After a successful scan: no node with static rows is asleep (the world's static incidence
    /// is exactly the quotient's).
    pub fn all_present(&self, view: &View<'_>) -> bool {
        self.state[..view.nnode].iter().all(|&s| s != ASLEEP)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.rows.capacity() * 4 + self.sum.capacity() * 8 + self.state.capacity()
    }
}

/// Checks world `w`'s static rows against `view` and fills `scan.state`.
pub fn scan(
    view: &View<'_>,
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    scan: &mut Scan,
) -> Result<(), GuardFinding> {
    scan_keyed(view, batch, w, classifier, scan, &mut Signature::default())
}

/// [`scan`], adding each static row's hash to `key` as it goes: the world's signature, as a
/// build keys its slot, from the same pass. `key` is whole unless the scan stopped at a row
/// spanning two nodes ([`GuardFinding::Spans`]).
pub fn scan_keyed(
    view: &View<'_>,
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    scan: &mut Scan,
    key: &mut Signature,
) -> Result<(), GuardFinding> {
    let nnode = view.nnode;
    let (rows, sum) = (&mut scan.rows[..nnode], &mut scan.sum[..nnode]);
    rows.fill(0);
    sum.fill(0);
    let tree_node = view.tree_node;
    walk::each_static(batch, w, classifier, |kind, support, local| {
        let node = tree_node[support[0] as usize];
        if support[1..].iter().any(|&t| tree_node[t as usize] != node) {
            return Err(GuardFinding::Spans { row: local });
        }
        let hash = walk::hash(kind, support);
        key.add(hash);
        rows[node as usize] += 1;
        sum[node as usize] = sum[node as usize].wrapping_add(hash);
        Ok(())
    })?;
    for n in 0..nnode {
        let present = invalidation::Signature {
            rows: rows[n],
            sum: sum[n],
        };
        let expected = view.expected(n);
        scan.state[n] = match signature::compare(expected, present, view.node_mintree[n]) {
            NodeState::Present if expected.is_empty() => IDLE,
            NodeState::Present => ACTIVE,
            NodeState::Absent => ASLEEP,
            NodeState::Mismatch(finding) => return Err(finding),
        };
    }
    Ok(())
}
