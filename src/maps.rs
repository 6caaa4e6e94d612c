//! The island maps, computed once from `tree_island` and shared by every CPU mode.
//!
//! Each map is a counting sort keyed by island: count per island, exclusive scan for the start
//! addresses, then a stable scatter. Stability is what keeps trees, dofs and rows in ascending
//! order inside an island; members of no island go after all islands, also in ascending order.

use crate::islands::Islands;
use crate::rows::Input;

/// Reusable per-island cursors, so that filling maps allocates nothing once warm.
#[derive(Debug, Default, Clone)]
pub struct MapScratch {
    cursor: Vec<i32>,
}

impl MapScratch {
    /// Scratch for worlds of up to `ntree` trees, so that even the first fill allocates nothing.
    pub fn with_capacity(ntree: usize) -> MapScratch {
        MapScratch {
            cursor: Vec::with_capacity(ntree),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.cursor.capacity() * 4
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
    let model = input.model();
    let batch = input.batch();
    let (ntree, nv) = (model.ntree(), model.nv());
    let n = nisland as usize;
    let tree = w * ntree..(w + 1) * ntree;
    let dof = w * nv..(w + 1) * nv;
    let rows = batch.rows_of(w);
    out.nisland[w] = nisland;

    let tree_island = &out.tree_island[tree.clone()];
    let cursor = &mut scratch.cursor;

    // Padding first: island entries past `nisland` are −1.
    for field in [
        &mut out.island_ntree,
        &mut out.island_itreeadr,
        &mut out.island_nv,
        &mut out.island_idofadr,
        &mut out.island_dofadr,
        &mut out.island_ne,
        &mut out.island_nf,
        &mut out.island_nefc,
        &mut out.island_iefcadr,
    ] {
        field[tree.clone()].fill(-1);
    }

    // Trees.
    let ntree_of = &mut out.island_ntree[tree.start..tree.start + n];
    ntree_of.fill(0);
    for &i in tree_island {
        if i >= 0 {
            ntree_of[i as usize] += 1;
        }
    }
    let itreeadr = &mut out.island_itreeadr[tree.start..tree.start + n];
    let constrained_trees = exclusive_scan(ntree_of, itreeadr);
    scatter(
        tree_island,
        itreeadr,
        constrained_trees,
        cursor,
        &mut out.map_itree2tree[tree.clone()],
    );

    // Dofs: a dof belongs to its tree's island.
    let dof_treeid = model.dof_treeid();
    for (d, slot) in out.dof_island[dof.clone()].iter_mut().enumerate() {
        *slot = tree_island[dof_treeid[d] as usize];
    }
    let nv_of = &mut out.island_nv[tree.start..tree.start + n];
    nv_of.fill(0);
    for &i in &out.dof_island[dof.clone()] {
        if i >= 0 {
            nv_of[i as usize] += 1;
        }
    }
    let idofadr = &mut out.island_idofadr[tree.start..tree.start + n];
    let nidof = exclusive_scan(nv_of, idofadr);
    out.nidof[w] = nidof;
    let idof2dof = &mut out.map_idof2dof[dof.clone()];
    scatter(
        &out.dof_island[dof.clone()],
        idofadr,
        nidof,
        cursor,
        idof2dof,
    );
    for (idof, &d) in idof2dof.iter().enumerate() {
        out.map_dof2idof[dof.start + d as usize] = idof as i32;
    }
    for (i, &adr) in idofadr.iter().enumerate() {
        out.island_dofadr[tree.start + i] = idof2dof[adr as usize];
    }

    // Rows: every tree of a support is in the same island, so the first one decides.
    for r in rows.clone() {
        let first = batch.row_support_of(r)[0];
        out.efc_island[r] = tree_island[first as usize];
    }
    let isl = tree.start..tree.start + n;
    out.island_ne[isl.clone()].fill(0);
    out.island_nf[isl.clone()].fill(0);
    out.island_nefc[isl.clone()].fill(0);
    for r in rows.clone() {
        let i = tree.start + out.efc_island[r] as usize;
        out.island_nefc[i] += 1;
        let kind = batch.row_type[r];
        out.island_ne[i] += kind.is_equality() as i32;
        out.island_nf[i] += kind.is_friction() as i32;
    }
    let iefcadr = &mut out.island_iefcadr[isl.clone()];
    let nrow = exclusive_scan(&out.island_nefc[isl], iefcadr);
    let iefc2efc = &mut out.map_iefc2efc[rows.clone()];
    scatter(
        &out.efc_island[rows.clone()],
        iefcadr,
        nrow,
        cursor,
        iefc2efc,
    );
    for (iefc, &e) in iefc2efc.iter().enumerate() {
        out.map_efc2iefc[rows.start + e as usize] = iefc as i32;
    }
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

/// Stable counting-sort scatter: `dst[k]` = the index of the k-th member in island order, with
/// members of no island (key −1) from `rest` on.
fn scatter(key: &[i32], adr: &[i32], rest: i32, cursor: &mut Vec<i32>, dst: &mut [i32]) {
    cursor.clear();
    cursor.extend_from_slice(adr);
    let mut next_rest = rest;
    for (member, &k) in key.iter().enumerate() {
        let slot = if k >= 0 {
            let c = &mut cursor[k as usize];
            *c += 1;
            *c - 1
        } else {
            next_rest += 1;
            next_rest - 1
        };
        dst[slot as usize] = member as i32;
    }
}
