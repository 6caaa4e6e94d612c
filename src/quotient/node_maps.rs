//! A replayed world's outputs mapped from its nodes: the host twin of the device's node-level
//! maps (`kernels/quotient_warp.cu`).
//!
//! A world whose static rows are exactly its quotient's block, every node awake
//! ([`Solved::Replayed`](super::step::Solved)), needs no walk of those rows to be mapped: a
//! node's trees share one island, its static rows' counts were taken when it was contracted
//! ([`View::node_efc`]), and the block is cut into runs of rows of one node ([`View::row_runs`]),
//! each of which takes consecutive places in its island. Only the dynamic rows, before and after
//! the block, are placed one by one. The islands are numbered from the roots: node ids ascend
//! with their smallest tree, so ranking root nodes by id is the canonical numbering. Trees and
//! dofs go through the shared maps ([`crate::maps`]) once the tree labels are known.
//!
//! The outputs are exactly those of [`crate::maps::fill_world`] over the pulled-back labels: a
//! stable counting sort by island either way, and rows keep their order inside an island since
//! the runs come in row order. Every corpus, trace and stress test compares them with the oracle
//! (and `replayed_worlds_are_mapped_from_their_nodes` in `tests/quotient.rs` checks that they are
//! what a replayed world gets).

use super::contract::View;
use crate::islands::Islands;
use crate::labels;
use crate::maps::{self, MapScratch};
use crate::rows::Input;

/// A world replayed over its quotient, its islands numbered from its nodes ([`label_trees`]).
#[derive(Debug, Clone, Copy)]
pub struct Replayed<'a> {
    /// Its quotient.
    pub view: View<'a>,
    /// The global row its block of static rows starts at ([`super::step::Solved::Replayed`]).
    pub start: usize,
    /// Each node's island (−1: none).
    pub island: &'a [i32],
    /// Its number of islands.
    pub nisland: usize,
}

/// Numbers a world's islands from its nodes: `roots` holds each node's resolved root after
/// [`super::step::solve_nodes`] (−1: in no island) and is overwritten with each node's island
/// (roots ranked by id). Writes each tree's island into `tree_island` (the world's) and returns
/// the number of islands.
pub fn label_trees(view: &View<'_>, roots: &mut [i32], tree_island: &mut [i32]) -> usize {
    // A node's root is never larger than the node, as a tree's min-root label: the same ranking.
    let nisland = labels::rank_min_roots(roots) as usize;
    for (label, &node) in tree_island.iter_mut().zip(view.tree_node) {
        *label = roots[node as usize];
    }
    nisland
}

/// Fills every output of world `w` of `input` but `tree_island` ([`label_trees`]'s).
pub fn fill_world(
    world: &Replayed<'_>,
    input: &Input<'_>,
    w: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let (ntree, n) = (world.view.ntree, world.nisland);
    let trees = w * ntree..(w + 1) * ntree;
    out.nisland[w] = n as i32;
    maps::pad_islands(out, trees.start + n..trees.end);
    let by_runs = maps::long_runs(&out.tree_island[trees]);
    maps::fill_trees_and_dofs(input, w, n, out, scratch, by_runs);
    fill_rows(world, input, w, out, scratch);
}

/// The row-level outputs alone (fields from `efc_island` on), the others already in `out`: for a
/// world whose partition of trees is that of an earlier step ([`crate::maps::fill_world_rows`]'s
/// twin).
pub fn fill_world_rows(
    world: &Replayed<'_>,
    input: &Input<'_>,
    w: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let ntree = world.view.ntree;
    maps::pad_row_islands(out, w * ntree + world.nisland..(w + 1) * ntree);
    fill_rows(world, input, w, out, scratch);
}

/// Row maps: per island the static rows' counts by node, the dynamic rows' one by one; then in
/// row order the dynamic rows before the block, the block run by run, the dynamic rows after it.
fn fill_rows(
    world: &Replayed<'_>,
    input: &Input<'_>,
    w: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let (view, island) = (&world.view, world.island);
    let batch = input.batch();
    let ntree = view.ntree;
    let isl = w * ntree..w * ntree + world.nisland;
    let tree_island = &out.tree_island[w * ntree..(w + 1) * ntree];
    let rows = batch.rows_of(w);
    // World-local: the block, and the dynamic rows around it.
    let block = world.start - rows.start..world.start - rows.start + view.stream_rows;
    let efc_island = &mut out.efc_island[rows.clone()];
    let mut counts = maps::RowCounts::zeroed(
        &mut out.island_nefc[isl.clone()],
        &mut out.island_ne[isl.clone()],
        &mut out.island_nf[isl.clone()],
    );
    for (&i, &count) in island.iter().zip(view.node_efc) {
        // A node with static rows is in an island.
        if count[0] > 0 {
            counts.add(i, count.map(|c| c as i32));
        }
    }
    for k in (0..block.start).chain(block.end..rows.len()) {
        efc_island[k] = counts.add_row(batch, rows.start + k, tree_island);
    }
    let iefcadr = &mut out.island_iefcadr[isl];
    let nrow = maps::exclusive_scan(counts.nefc, iefcadr);
    let iefc2efc = &mut out.map_iefc2efc[rows.clone()];
    let efc2iefc = &mut out.map_efc2iefc[rows];
    let cursor = maps::cursors(&mut scratch.cursor, iefcadr, nrow);
    for k in 0..block.start {
        let at = maps::next_slots(cursor, efc_island[k], 1);
        efc2iefc[k] = at as i32;
        iefc2efc[at] = k as i32;
    }
    let mut k = block.start;
    for &[node, len] in view.row_runs {
        let (i, len) = (island[node as usize], len as usize);
        let at = maps::next_slots(cursor, i, len);
        efc_island[k..k + len].fill(i);
        maps::count_from(&mut efc2iefc[k..k + len], at);
        maps::count_from(&mut iefc2efc[at..at + len], k);
        k += len;
    }
    for k in block.end..efc_island.len() {
        let at = maps::next_slots(cursor, efc_island[k], 1);
        efc2iefc[k] = at as i32;
        iefc2efc[at] = k as i32;
    }
}
