//! The island maps, computed once from `tree_island` and shared by every CPU mode.
//!
//! Each map is a counting sort keyed by island: count per island, exclusive scan for the start
//! addresses, then a stable scatter. Stability is what keeps trees, dofs and rows in ascending
//! order inside an island; members of no island go after all islands, also in ascending order.
//! Members are handled in runs of neighbours with the same island (consecutive trees, a tree's
//! dofs, consecutive rows): a run takes consecutive slots, so it is counted and placed at once.

use std::ops::Range;

use crate::islands::Islands;
use crate::model::Model;
use crate::rows::Input;

/// Reusable per-island cursors and dof runs, so that filling maps allocates nothing once warm.
#[derive(Debug, Default, Clone)]
pub struct MapScratch {
    cursor: Vec<i32>,
    dof_runs: Vec<(i32, Range<usize>)>,
}

impl MapScratch {
    /// Scratch for worlds of up to `ntree` trees, so that even the first fill allocates nothing.
    pub fn with_capacity(ntree: usize) -> MapScratch {
        MapScratch {
            cursor: Vec::with_capacity(ntree),
            dof_runs: Vec::with_capacity(ntree),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.cursor.capacity() * 4 + self.dof_runs.capacity() * size_of::<(i32, Range<usize>)>()
    }
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
    let tree = w * ntree..(w + 1) * ntree;
    let n = nisland as usize;
    out.nisland[w] = nisland;
    pad_islands(out, tree.start + n..tree.end);
    fill_trees_and_dofs(input, w, n, out, scratch);
    fill_rows(input, w, n, out, scratch);
}

/// Island entries past `nisland` are −1 (the first `nisland` are all written by the fills).
fn pad_islands(out: &mut Islands, padding: Range<usize>) {
    for field in out.island_fields_mut() {
        field[padding.clone()].fill(-1);
    }
}

/// Tree and dof maps. A dof belongs to its tree's island and a tree's dofs are one contiguous
/// range, so the dofs are handled in runs ([`dof_runs`]): whole ranges counted, filled and
/// placed at once. Runs come in dof order (not tree order), which keeps dofs ascending inside an
/// island for any tree numbering.
fn fill_trees_and_dofs(
    input: &Input<'_>,
    w: usize,
    n: usize,
    out: &mut Islands,
    scratch: &mut MapScratch,
) {
    let model = input.model();
    let (ntree, nv) = (model.ntree(), model.nv());
    let isl = w * ntree..w * ntree + n;
    let tree_island = &out.tree_island[w * ntree..(w + 1) * ntree];
    let ntree_of = &mut out.island_ntree[isl.clone()];
    ntree_of.fill(0);
    for (i, trees) in runs(tree_island) {
        if i >= 0 {
            ntree_of[i as usize] += trees.len() as i32;
        }
    }
    let dof_island = &mut out.dof_island[w * nv..(w + 1) * nv];
    let nv_of = &mut out.island_nv[isl.clone()];
    nv_of.fill(0);
    dof_runs(model, tree_island, &mut scratch.dof_runs);
    for (i, dofs) in scratch.dof_runs.iter().cloned() {
        if i >= 0 {
            nv_of[i as usize] += dofs.len() as i32;
        }
        dof_island[dofs].fill(i);
    }

    // Trees, in tree id order inside each island.
    let itreeadr = &mut out.island_itreeadr[isl.clone()];
    let constrained_trees = exclusive_scan(ntree_of, itreeadr);
    let itree2tree = &mut out.map_itree2tree[w * ntree..(w + 1) * ntree];
    place_runs(
        runs(tree_island),
        itreeadr,
        constrained_trees,
        &mut scratch.cursor,
        |trees, itrees| count_from(&mut itree2tree[itrees], trees.start),
    );

    // Dofs, one run at a time.
    let idofadr = &mut out.island_idofadr[isl.clone()];
    let nidof = exclusive_scan(nv_of, idofadr);
    out.nidof[w] = nidof;
    let dof2idof = &mut out.map_dof2idof[w * nv..(w + 1) * nv];
    let idof2dof = &mut out.map_idof2dof[w * nv..(w + 1) * nv];
    place_runs(
        scratch.dof_runs.iter().cloned(),
        idofadr,
        nidof,
        &mut scratch.cursor,
        |dofs, idofs| {
            count_from(&mut dof2idof[dofs.clone()], idofs.start);
            count_from(&mut idof2dof[idofs], dofs.start);
        },
    );
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
fn count_from(dst: &mut [i32], start: usize) {
    for (k, slot) in dst.iter_mut().enumerate() {
        *slot = (start + k) as i32;
    }
}

/// Row maps. Every tree of a support is in the same island, so the first one decides; a world
/// with rows has every row's trees in an island.
fn fill_rows(input: &Input<'_>, w: usize, n: usize, out: &mut Islands, scratch: &mut MapScratch) {
    let batch = input.batch();
    let ntree = input.model().ntree();
    let isl = w * ntree..w * ntree + n;
    let tree_island = &out.tree_island[w * ntree..(w + 1) * ntree];
    let rows = batch.rows_of(w);
    let efc_island = &mut out.efc_island[rows.clone()];
    let ne = &mut out.island_ne[isl.clone()];
    let nf = &mut out.island_nf[isl.clone()];
    let nefc = &mut out.island_nefc[isl.clone()];
    ne.fill(0);
    nf.fill(0);
    nefc.fill(0);
    for (slot, r) in efc_island.iter_mut().zip(rows.clone()) {
        let i = tree_island[batch.row_support[batch.row_supadr[r] as usize] as usize];
        *slot = i;
        let kind = batch.row_type[r];
        nefc[i as usize] += 1;
        ne[i as usize] += kind.is_equality() as i32;
        nf[i as usize] += kind.is_friction() as i32;
    }
    let iefcadr = &mut out.island_iefcadr[isl];
    let nrow = exclusive_scan(nefc, iefcadr);
    let iefc2efc = &mut out.map_iefc2efc[rows.clone()];
    let efc2iefc = &mut out.map_efc2iefc[rows];
    place_runs(
        runs(efc_island),
        iefcadr,
        nrow,
        &mut scratch.cursor,
        |efcs, iefcs| {
            count_from(&mut efc2iefc[efcs.clone()], iefcs.start);
            count_from(&mut iefc2efc[iefcs], efcs.start);
        },
    );
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
fn exclusive_scan(count: &[i32], adr: &mut [i32]) -> i32 {
    let mut total = 0;
    for (a, &c) in adr.iter_mut().zip(count) {
        *a = total;
        total += c;
    }
    total
}

/// Stable counting-sort placement, a run at a time: each run of members with key `k` takes the
/// next slots of island `k` (starting at `adr[k]`), or of the unconstrained rest (starting at
/// `rest`) when `k` is −1, and `place(members, slots)` records it. Runs come in member order,
/// so members stay ascending inside each island.
fn place_runs(
    runs: impl Iterator<Item = (i32, Range<usize>)>,
    adr: &[i32],
    rest: i32,
    cursor: &mut Vec<i32>,
    mut place: impl FnMut(Range<usize>, Range<usize>),
) {
    cursor.clear();
    cursor.extend_from_slice(adr);
    let mut next_rest = rest;
    for (k, members) in runs {
        let next = if k >= 0 {
            &mut cursor[k as usize]
        } else {
            &mut next_rest
        };
        let slots = *next as usize..*next as usize + members.len();
        *next = slots.end as i32;
        place(members, slots);
    }
}
