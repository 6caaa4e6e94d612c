//! One world's step over its quotient: guard the static rows, mask sleeping nodes, union the
//! dynamic supports over nodes, pull labels back to trees.
//!
//! Each phase maps 1:1 onto a device kernel: (1) per static row, compare it with the contracted
//! stream (the common case: all equal, every node with rows awake), or else check its trees
//! share a node and add its hash to the node's signature; (2) per node, compare with the
//! contracted signature and initialise `parent` from the awake mask; (3) per dynamic row, map
//! its trees to nodes via `tree_node` and min-root union them (a run of trees of one node joins
//! it once); (4) per node, resolve roots (ascending, since a parent is never larger than its
//! child); (5) per tree, `label = node_mintree[root(tree_node[t])]`.
//! The labels are min-root tree ids, so the shared canonical numbering and maps follow unchanged.
//! A world that replayed its block of static rows skips (5): its outputs are mapped from its
//! nodes' roots ([`super::node_maps`]).

use invalidation::signature::GuardFinding;

use super::classify::Classifier;
use super::contract::View;
use super::guard::{self, ACTIVE, ASLEEP, IDLE, Scan};
use super::walk;
use crate::rows::{Batch, couples};
use crate::union_find;

/// Per-world scratch for a step (reused across worlds and steps).
#[derive(Debug, Clone, Default)]
pub struct StepScratch {
    /// Guard accumulators and the awake mask.
    pub scan: Scan,
    parent: Vec<i32>,
}

impl StepScratch {
    /// Scratch for worlds of `ntree` trees.
    pub fn new(ntree: usize) -> StepScratch {
        StepScratch {
            scan: Scan::new(ntree),
            parent: vec![-1; ntree],
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.scan.bytes() + self.parent.capacity() * 4
    }

    /// Each of the first `nnode` nodes' root after [`solve_nodes`] (−1: in no island), or its
    /// island once [`super::node_maps::label_trees`] has numbered them in place.
    pub fn nodes(&self, nnode: usize) -> &[i32] {
        &self.parent[..nnode]
    }

    /// The same, for [`super::node_maps::label_trees`] to number in place.
    pub fn nodes_mut(&mut self, nnode: usize) -> &mut [i32] {
        &mut self.parent[..nnode]
    }
}

/// How [`solve_nodes`] solved a world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solved {
    /// Its static rows were exactly its quotient's block, starting at this global row, and
    /// every node with rows was awake: its outputs can be mapped from its nodes
    /// ([`super::node_maps`]).
    Replayed {
        /// The global row its block of static rows starts at.
        start: usize,
    },
    /// Its static rows were checked one by one (the guard's scan), with this many nodes masked
    /// as asleep.
    Scanned {
        /// Nodes masked as asleep.
        asleep: usize,
    },
}

/// Unions world `w`'s dynamic supports over its quotient's nodes and leaves each node's root
/// in `scratch` ([`StepScratch::nodes`]: the smallest node of its component, −1 for a node in no
/// island), or reports why the quotient does not fit this step's static rows.
pub fn solve_nodes(
    view: &View<'_>,
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    scratch: &mut StepScratch,
) -> Result<Solved, GuardFinding> {
    let start = view.replayed_block(batch, w, classifier);
    if let Some(start) = start.filter(|&s| solve_replayed(view, batch, w, s, classifier, scratch)) {
        resolve(&mut scratch.parent[..view.nnode]);
        return Ok(Solved::Replayed { start });
    }
    let nnode = view.nnode;
    if view.replays(batch, w, classifier) {
        // Every contracted row is there, in order: nothing sleeps, nothing changed.
        awake_all(view, &mut scratch.scan.state);
    } else {
        guard::scan(view, batch, w, classifier, &mut scratch.scan)?;
    }
    let state = &scratch.scan.state[..nnode];
    let parent = &mut scratch.parent[..nnode];
    let mut asleep = 0;
    for (n, p) in parent.iter_mut().enumerate() {
        *p = if state[n] == ACTIVE { n as i32 } else { -1 };
        asleep += (state[n] == ASLEEP) as usize;
    }
    let (tree_node, adr) = (view.tree_node, view.node_treeadr);
    walk::each_dynamic(batch, w, classifier, |support| {
        union_find::join_by(parent, support, |t| {
            let node = tree_node[t as usize];
            let n = node as usize;
            // A sleeping component's trees are not bound together this step.
            if state[n] == ASLEEP && adr[n + 1] - adr[n] > 1 {
                return Err(GuardFinding::AsleepTouched { tree: t });
            }
            Ok(node)
        })
    })?;
    resolve(parent);
    Ok(Solved::Scanned { asleep })
}

/// Writes world `w`'s min-root labels (−1 = untouched) into `labels` using its quotient and
/// returns how many nodes were masked as asleep, or reports why the quotient does not fit this
/// step's static rows.
pub fn solve_world(
    view: &View<'_>,
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    scratch: &mut StepScratch,
    labels: &mut [i32],
) -> Result<usize, GuardFinding> {
    let solved = solve_nodes(view, batch, w, classifier, scratch)?;
    pull_back(view, scratch.nodes(view.nnode), labels);
    Ok(match solved {
        Solved::Replayed { .. } => 0,
        Solved::Scanned { asleep } => asleep,
    })
}

/// Every node with contracted rows is awake.
fn awake_all(view: &View<'_>, state: &mut [u8]) {
    for (n, s) in state[..view.nnode].iter_mut().enumerate() {
        *s = if view.node_rows[n] > 0 { ACTIVE } else { IDLE };
    }
}

/// The common case: the static rows are the contracted block starting at global row `start`,
/// so every node with rows is awake and only the rows around it (and dynamic rowless
/// hyperedges) are unioned. Returns false, with nothing decided, when a static row turns up
/// after the block.
fn solve_replayed(
    view: &View<'_>,
    batch: &Batch,
    w: usize,
    start: usize,
    classifier: &Classifier,
    scratch: &mut StepScratch,
) -> bool {
    let parent = &mut scratch.parent[..view.nnode];
    for (n, p) in parent.iter_mut().enumerate() {
        *p = if view.node_rows[n] > 0 { n as i32 } else { -1 };
    }
    let tree_node = view.tree_node;
    let mut union = |support: &[i32]| {
        union_find::join_map(parent, support, |t| tree_node[t as usize]);
    };
    let rows = batch.rows_of(w);
    // Rows before the block were found dynamic by `replayed_block`.
    for r in rows.start..start {
        union(batch.row_support_of(r));
    }
    for r in start + view.stream_rows..rows.end {
        if classifier.row_is_static(batch.row_type[r], batch.row_id[r]) {
            return false;
        }
        union(batch.row_support_of(r));
    }
    if !classifier.rowless_is_static() {
        for e in batch.edges_of(w) {
            let support = batch.edge_support_of(e);
            if couples(support) {
                union(support);
            }
        }
    }
    true
}

/// Resolves node roots in place (ascending: a parent is never larger than its child).
fn resolve(parent: &mut [i32]) {
    for n in 0..parent.len() {
        let p = parent[n];
        if p >= 0 {
            parent[n] = parent[p as usize];
        }
    }
}

/// Writes each tree's label from its node's resolved `root`: the smallest tree of the root.
pub fn pull_back(view: &View<'_>, roots: &[i32], labels: &mut [i32]) {
    for (t, label) in labels.iter_mut().enumerate() {
        let root = roots[view.tree_node[t] as usize];
        *label = if root < 0 {
            -1
        } else {
            view.node_mintree[root as usize]
        };
    }
}

/// World `w`'s min-root labels by a plain tree-level union over every hyperedge: the fallback
/// when a freshly built quotient still does not fit (which a correct build never causes).
pub fn solve_direct(batch: &Batch, w: usize, scratch: &mut StepScratch, labels: &mut [i32]) {
    let parent = &mut scratch.parent[..labels.len()];
    parent.fill(-1);
    for support in batch.hyperedges_of(w) {
        union_find::join(parent, support);
    }
    for t in 0..labels.len() {
        labels[t] = if parent[t] < 0 {
            -1
        } else {
            union_find::find(parent, t as i32)
        };
    }
}
