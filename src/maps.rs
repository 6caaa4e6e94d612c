//! The island maps, computed once from `tree_island` and shared by every CPU mode.
//!
//! Each map is a counting sort keyed by island: count per island, exclusive scan for the start
//! addresses, then a stable scatter. Stability is what keeps trees, dofs and rows in ascending
//! order inside an island; members of no island go after all islands, also in ascending order.
//! Two ways to place, chosen per world by the mean run length of its tree labels:
//! - in runs of neighbours with the same island (consecutive trees, the dofs of consecutive
//!   trees, consecutive rows): a run takes consecutive slots, so it is counted and placed at
//!   once. For worlds of a few large islands (a cloth, a robot) that is a few vectorised writes
//!   per island, where one member at a time would add to the same cursor in memory again and
//!   again, each add waiting on the last one's store;
//! - one member at a time, with no branch on the labels: for worlds of many small islands and
//!   scattered contacts, whose short runs would each cost a mispredicted branch and a loop.
//!
//! Both give the same outputs (a stable counting sort either way; the test below checks it).

use std::ops::Range;

use crate::islands::Islands;
use crate::model::Model;
use crate::rows::{Batch, Input};

/// Reusable per-island cursors and dof runs, so that filling maps allocates nothing once warm.
#[derive(Debug, Default, Clone)]
pub struct MapScratch {
    pub(crate) cursor: Vec<i32>,
    dof_runs: Vec<(i32, Range<usize>)>,
}

impl MapScratch {
    /// Scratch for worlds of up to `ntree` trees, so that even the first fill allocates nothing.
    pub fn with_capacity(ntree: usize) -> MapScratch {
        MapScratch {
            cursor: Vec::with_capacity(ntree + 1),
            dof_runs: Vec::with_capacity(ntree),
        }
    }

    /// Room for worlds of up to `ntree` trees: a mode calls it at each solve so that its first
    /// batch of a model sizes the scratch by the model, and no later batch of it allocates
    /// (however many more islands it has).
    pub fn reserve(&mut self, ntree: usize) {
        reserve_total(&mut self.cursor, ntree + 1);
        reserve_total(&mut self.dof_runs, ntree);
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.cursor.capacity() * 4 + self.dof_runs.capacity() * size_of::<(i32, Range<usize>)>()
    }
}

/// Grows `v`'s capacity to at least `total` entries (`Vec::reserve` counts from its length).
fn reserve_total<T>(v: &mut Vec<T>, total: usize) {
    v.reserve(total.saturating_sub(v.len()));
}

/// Fills every output of world `w` from its canonical `tree_island` (already in `out`) and its
/// island count `nisland`.
pub fn fill_world(
    input: &Input<'_>,
    w: usize,
    nisland: i32,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let ntree = input.model().ntree();
    if ntree == 0 {
        treeless_world(out, w);
        return;
    }
    // Long runs of trees mean few islands, hence long runs of rows too.
    let by_runs = long_runs(&out.tree_island[w * ntree..(w + 1) * ntree]);
    fill_world_by(input, w, nisland, out, scratch, by_runs);
}

/// World `w` of a model without trees: no rows (a support names a tree), no islands, and every
/// per-world range empty. Filling those empty ranges one by one cost 1.5 µs a world on an
/// AVX-512 machine (each `fill` of an empty slice of an empty `Vec` stores at its dangling
/// pointer under an all-zero mask, a fault-suppression assist), against 0.05 with one tree.
fn treeless_world(out: &mut Islands, w: usize) {
    out.nisland[w] = 0;
    out.nidof[w] = 0;
}

/// The row-level outputs of world `w` alone (fields from `efc_island` on: see
/// [`PARTITION_FIELDS`](crate::islands::PARTITION_FIELDS)), its partition-level ones already in
/// `out`: for a world whose partition of trees is that of an earlier step.
pub fn fill_world_rows(
    input: &Input<'_>,
    w: usize,
    nisland: i32,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let ntree = input.model().ntree();
    if ntree == 0 {
        treeless_world(out, w);
        return;
    }
    let tree = w * ntree..(w + 1) * ntree;
    let n = nisland as usize;
    let by_runs = long_runs(&out.tree_island[tree.clone()]);
    pad_row_islands(out, tree.start + n..tree.end);
    fill_rows(input, w, n, out, scratch, by_runs);
}

/// [`fill_world`], placing by runs or one member at a time.
fn fill_world_by(
    input: &Input<'_>,
    w: usize,
    nisland: i32,
    out: &mut Islands,
    scratch: &mut MapScratch,
    by_runs: bool,
) {
    let ntree = input.model().ntree();
    let tree = w * ntree..(w + 1) * ntree;
    let n = nisland as usize;
    out.nisland[w] = nisland;
    pad_islands(out, tree.start + n..tree.end);
    fill_trees_and_dofs(input, w, n, out, scratch, by_runs);
    fill_rows(input, w, n, out, scratch, by_runs);
}

/// Whether `keys` come in runs of [`LONG_RUN`] or more on average (one branch-free pass).
pub(crate) fn long_runs(keys: &[i32]) -> bool {
    let next = keys.get(1..).unwrap_or_default();
    let changes: u32 = keys.iter().zip(next).map(|(a, b)| u32::from(a != b)).sum();
    keys.len() >= LONG_RUN * (changes as usize + 1)
}

/// The mean run of trees from which placing by runs pays. On generated realistic batches one
/// member at a time takes up to 2.4× less time; on a cloth of 400 trees in one island it took
/// 2.2× more (`benches/results/cpu_maps_2026-11-30.md`).
const LONG_RUN: usize = 4;

/// Island entries past `nisland` are −1 (the first `nisland` are all written by the fills).
pub(crate) fn pad_islands(out: &mut Islands, padding: Range<usize>) {
    for field in out.island_fields_mut() {
        field[padding.clone()].fill(-1);
    }
}

/// The row-level island fields' entries past `nisland` are −1 ([`pad_islands`]' share of
/// them, for a world whose other fields are in place).
pub(crate) fn pad_row_islands(out: &mut Islands, padding: Range<usize>) {
    for field in [
        &mut out.island_ne,
        &mut out.island_nf,
        &mut out.island_nefc,
        &mut out.island_iefcadr,
    ] {
        field[padding.clone()].fill(-1);
    }
}

/// Tree and dof maps. A dof belongs to its tree's island and a tree's dofs are one contiguous
/// range placed at consecutive idofs. By runs, the dofs of a run of trees are one range
/// ([`dof_runs`]): counted, filled and placed at once; one member at a time, a tree's. Either
/// way in dof order (not tree order), which keeps dofs ascending inside an island for any tree
/// numbering.
pub(crate) fn fill_trees_and_dofs(
    input: &Input<'_>,
    w: usize,
    n: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
    by_runs: bool,
) {
    let model = input.model();
    let (ntree, nv) = (model.ntree(), model.nv());
    let isl = w * ntree..w * ntree + n;
    let tree_island = &out.tree_island[w * ntree..(w + 1) * ntree];
    let (dofadr, dofnum) = (model.tree_dofadr(), model.tree_dofnum());
    let ntree_of = &mut out.island_ntree[isl.clone()];
    let nv_of = &mut out.island_nv[isl.clone()];
    let dof_island = &mut out.dof_island[w * nv..(w + 1) * nv];
    ntree_of.fill(0);
    nv_of.fill(0);
    if by_runs {
        for (i, trees) in runs(tree_island).filter(|r| r.0 >= 0) {
            ntree_of[i as usize] += trees.len() as i32;
        }
        dof_runs(model, tree_island, &mut scratch.dof_runs);
        for (i, dofs) in scratch.dof_runs.iter().cloned() {
            if i >= 0 {
                nv_of[i as usize] += dofs.len() as i32;
            }
            dof_island[dofs].fill(i);
        }
    } else {
        for (&i, &dn) in tree_island.iter().zip(dofnum).filter(|p| *p.0 >= 0) {
            ntree_of[i as usize] += 1;
            nv_of[i as usize] += dn;
        }
    }

    // Trees, in tree id order inside each island.
    let itreeadr = &mut out.island_itreeadr[isl.clone()];
    let constrained_trees = exclusive_scan(ntree_of, itreeadr);
    let itree2tree = &mut out.map_itree2tree[w * ntree..(w + 1) * ntree];
    let cursor = cursors(&mut scratch.cursor, itreeadr, constrained_trees);
    if by_runs {
        place_runs(runs(tree_island), cursor, |trees, itrees| {
            count_from(&mut itree2tree[itrees], trees.start)
        });
    } else {
        for (t, &i) in tree_island.iter().enumerate() {
            itree2tree[next_slots(cursor, i, 1)] = t as i32;
        }
    }

    // Dofs.
    let idofadr = &mut out.island_idofadr[isl.clone()];
    let nidof = exclusive_scan(nv_of, idofadr);
    out.nidof[w] = nidof;
    let dof2idof = &mut out.map_dof2idof[w * nv..(w + 1) * nv];
    let idof2dof = &mut out.map_idof2dof[w * nv..(w + 1) * nv];
    let cursor = cursors(&mut scratch.cursor, idofadr, nidof);
    let mut place = |dofs: Range<usize>, idofs: Range<usize>| {
        count_from(&mut dof2idof[dofs.clone()], idofs.start);
        count_from(&mut idof2dof[idofs], dofs.start);
    };
    if by_runs {
        place_runs(scratch.dof_runs.iter().cloned(), cursor, place);
    } else {
        let mut tree = |t: usize| {
            let (i, d0, dn) = (tree_island[t], dofadr[t] as usize, dofnum[t] as usize);
            let first = next_slots(cursor, i, dn);
            dof_island[d0..d0 + dn].fill(i);
            place(d0..d0 + dn, first..first + dn);
        };
        if model.trees_in_dof_order() {
            (0..ntree).for_each(&mut tree);
        } else {
            model.trees_by_dof().for_each(|(t, _)| tree(t));
        }
    }
    for (dofadr, &adr) in out.island_dofadr[isl].iter_mut().zip(idofadr.iter()) {
        *dofadr = idof2dof[adr as usize];
    }
}

/// Maximal dof ranges whose trees share one island, in dof order, with that island: neighbouring
/// trees of one island (the common case) take consecutive idofs, so they are placed together.
fn dof_runs(model: &Model, tree_island: &[i32], out: &mut Vec<(i32, Range<usize>)>) {
    out.clear();
    if model.trees_in_dof_order() {
        // A run of consecutive trees is a run of consecutive dofs.
        let (dofadr, nv) = (model.tree_dofadr(), model.nv());
        for (i, trees) in runs(tree_island) {
            let end = dofadr.get(trees.end).map_or(nv, |&adr| adr as usize);
            out.push((i, dofadr[trees.start] as usize..end));
        }
        return;
    }
    for (t, dofs) in model.trees_by_dof() {
        let i = tree_island[t];
        match out.last_mut() {
            Some((last, run)) if *last == i => run.end = dofs.end,
            _ => out.push((i, dofs)),
        }
    }
}

/// `dst[k] = start + k`.
pub(crate) fn count_from(dst: &mut [i32], start: usize) {
    for (k, slot) in dst.iter_mut().enumerate() {
        *slot = (start + k) as i32;
    }
}

/// Row maps. Every tree of a support is in the same island, so the first one decides; a world
/// with rows has every row's trees in an island.
fn fill_rows(
    input: &Input<'_>,
    w: usize,
    n: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
    by_runs: bool,
) {
    let batch = input.batch();
    let ntree = input.model().ntree();
    let isl = w * ntree..w * ntree + n;
    let tree_island = &out.tree_island[w * ntree..(w + 1) * ntree];
    let rows = batch.rows_of(w);
    let efc_island = &mut out.efc_island[rows.clone()];
    let mut counts = RowCounts::zeroed(
        &mut out.island_nefc[isl.clone()],
        &mut out.island_ne[isl.clone()],
        &mut out.island_nf[isl.clone()],
    );
    for (slot, r) in efc_island.iter_mut().zip(rows.clone()) {
        *slot = counts.add_row(batch, r, tree_island);
    }
    let iefcadr = &mut out.island_iefcadr[isl];
    let nrow = exclusive_scan(counts.nefc, iefcadr);
    let iefc2efc = &mut out.map_iefc2efc[rows.clone()];
    let efc2iefc = &mut out.map_efc2iefc[rows];
    let cursor = cursors(&mut scratch.cursor, iefcadr, nrow);
    if by_runs {
        place_runs(runs(efc_island), cursor, |efcs, iefcs| {
            count_from(&mut efc2iefc[efcs.clone()], iefcs.start);
            count_from(&mut iefc2efc[iefcs], efcs.start);
        });
    } else {
        for (k, (&i, to)) in efc_island.iter().zip(efc2iefc.iter_mut()).enumerate() {
            let at = next_slots(cursor, i, 1);
            *to = at as i32;
            iefc2efc[at] = k as i32;
        }
    }
}

/// One world's rows per island (`island_nefc`), and of them equalities (`island_ne`) and
/// friction-loss rows (`island_nf`).
pub(crate) struct RowCounts<'a> {
    pub(crate) nefc: &'a mut [i32],
    ne: &'a mut [i32],
    nf: &'a mut [i32],
}

impl<'a> RowCounts<'a> {
    /// The counts, zeroed.
    pub(crate) fn zeroed(
        nefc: &'a mut [i32],
        ne: &'a mut [i32],
        nf: &'a mut [i32],
    ) -> RowCounts<'a> {
        for count in [&mut *nefc, &mut *ne, &mut *nf] {
            count.fill(0);
        }
        RowCounts { nefc, ne, nf }
    }

    /// Adds `[rows, equalities, friction rows]` to island `i`.
    pub(crate) fn add(&mut self, i: i32, [rows, eqs, frictions]: [i32; 3]) {
        let i = i as usize;
        self.nefc[i] += rows;
        self.ne[i] += eqs;
        self.nf[i] += frictions;
    }

    /// Counts global row `r` of `batch` in its island, its first tree's in `tree_island` (the
    /// world's), and returns that island: every tree of a support is in one island.
    pub(crate) fn add_row(&mut self, batch: &Batch, r: usize, tree_island: &[i32]) -> i32 {
        let i = tree_island[batch.row_support[batch.row_supadr[r] as usize] as usize];
        let kind = batch.row_type[r];
        self.add(i, [1, kind.is_equality() as i32, kind.is_friction() as i32]);
        i
    }
}

/// `cursor` set to the cursors of islands starting at `adr`, then the rest's starting at `rest`
/// (the last: [`next_slots`]).
pub(crate) fn cursors<'a>(cursor: &'a mut Vec<i32>, adr: &[i32], rest: i32) -> &'a mut [i32] {
    cursor.clear();
    cursor.extend_from_slice(adr);
    cursor.push(rest);
    cursor
}

/// The first of the next `len` slots of key `i` (−1: the rest, the last cursor), which they
/// then leave.
pub(crate) fn next_slots(cursor: &mut [i32], i: i32, len: usize) -> usize {
    let k = if i >= 0 { i as usize } else { cursor.len() - 1 };
    let at = cursor[k] as usize;
    cursor[k] += len as i32;
    at
}

/// Maximal ranges of equal keys, in order, with their key.
fn runs(keys: &[i32]) -> impl Iterator<Item = (i32, Range<usize>)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        let &key = keys.get(start)?;
        let len = keys[start..].iter().take_while(|&&k| k == key).count();
        let run = start..start + len;
        start = run.end;
        Some((key, run))
    })
}

/// Writes the exclusive prefix sum of `count` into `adr` and returns the total.
pub(crate) fn exclusive_scan(count: &[i32], adr: &mut [i32]) -> i32 {
    let mut total = 0;
    for (a, &c) in adr.iter_mut().zip(count) {
        *a = total;
        total += c;
    }
    total
}

/// Stable placement, a run at a time: each run of members with key `k` takes the next slots of
/// its cursor ([`next_slots`]) and `place(members, slots)` records it. Runs come in member
/// order, so members stay ascending inside each island.
fn place_runs(
    runs: impl Iterator<Item = (i32, Range<usize>)>,
    cursor: &mut [i32],
    mut place: impl FnMut(Range<usize>, Range<usize>),
) {
    for (k, members) in runs {
        let first = next_slots(cursor, k, members.len());
        let slots = first..first + members.len();
        place(members, slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle;
    use crate::synth::{self, Spec, Topology};

    /// Every world of generated batches of every topology, both ways: the oracle's outputs.
    #[test]
    fn placing_by_runs_and_one_member_at_a_time_agree() {
        let topologies = Topology::PURE
            .into_iter()
            .chain([Topology::Mixed, Topology::Scene]);
        for (k, topology) in topologies.enumerate() {
            for (ntree, rows) in [(7, 20), (40, 120), (300, 900)] {
                let spec = Spec {
                    topology,
                    ..Spec::realistic(24, ntree, rows)
                };
                let (model, batch) = synth::batch(&spec, 100 + k as u64);
                let input = Input::new(&model, &batch).unwrap();
                let want = oracle::solve(&input);
                let mut scratch = MapScratch::with_capacity(ntree);
                for by_runs in [true, false] {
                    // Every output poisoned but the labels the maps start from.
                    let mut got = want.clone();
                    for (field, _) in got.fields_mut() {
                        field.fill(i32::MIN);
                    }
                    got.tree_island.copy_from_slice(&want.tree_island);
                    for w in 0..batch.nworld() {
                        let nisland = want.nisland[w];
                        fill_world_by(&input, w, nisland, &mut got, &mut scratch, by_runs);
                    }
                    let case = format!("{topology:?} {ntree} trees, by runs {by_runs}");
                    assert_eq!(got.first_mismatch(&want), None, "{case}");
                }
            }
        }
    }
}
