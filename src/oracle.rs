//! The reference: breadth-first search over the bipartite graph of trees and hyperedges, then
//! every map written out directly. It is deliberately plain and shares no code with the modes
//! beyond the types, so that agreeing with it means something.

use std::collections::VecDeque;

use crate::islands::Islands;
use crate::rows::Input;

/// Computes every output of every world of `input`.
///
/// ```
/// use archipelago::{oracle, Batch, Input, Model, RowType};
/// let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
/// let mut b = Batch::builder();
/// b.row(RowType::ContactPyramidal, 0, &[2, 1]).end_world();
/// let batch = b.finish();
/// let out = oracle::solve(&Input::new(&model, &batch).unwrap());
/// assert_eq!(out.world(0).tree_island, &[-1, 0, 0]);
/// assert_eq!(out.world(0).map_itree2tree, &[1, 2, 0]);
/// ```
#[must_use]
pub fn solve(input: &Input<'_>) -> Islands {
    let model = input.model();
    let batch = input.batch();
    let (ntree, nv) = (model.ntree(), model.nv());
    let mut out = Islands::for_batch(ntree, nv, batch);
    for w in 0..batch.nworld() {
        let tree_island = discover(input, w);
        write_world(input, w, &tree_island, &mut out);
    }
    out
}

/// Island of each tree of world `w`, numbered by ascending smallest tree.
fn discover(input: &Input<'_>, w: usize) -> Vec<i32> {
    let batch = input.batch();
    let ntree = input.model().ntree();
    let mut island = vec![-1i32; ntree];
    if !input.discovers(w) {
        // MuJoCo returns before discovery when there are no rows (unless the model says).
        return island;
    }
    // Every row makes its trees an island; a rowless hyperedge (a flex's awake trees) only
    // couples, so one with fewer than two distinct trees adds nothing (native 4.0.0 stars the trees
    // around the first one). Spelled out here rather than taken from `Batch::hyperedges_of`.
    let rows = batch.rows_of(w).map(|r| batch.row_support_of(r));
    let rowless = batch
        .edges_of(w)
        .map(|e| batch.edge_support_of(e))
        .filter(|s| {
            let mut distinct = s.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            distinct.len() >= 2
        });
    let edges: Vec<&[i32]> = rows.chain(rowless).collect();
    let mut edges_of_tree: Vec<Vec<usize>> = vec![Vec::new(); ntree];
    for (e, support) in edges.iter().enumerate() {
        for &t in support.iter() {
            edges_of_tree[t as usize].push(e);
        }
    }
    let mut edge_seen = vec![false; edges.len()];
    let mut nisland = 0;
    // Scanning trees in ascending order numbers islands by their smallest tree.
    for start in 0..ntree {
        if island[start] != -1 || edges_of_tree[start].is_empty() {
            continue;
        }
        island[start] = nisland;
        let mut queue = VecDeque::from([start]);
        while let Some(t) = queue.pop_front() {
            for &e in &edges_of_tree[t] {
                if edge_seen[e] {
                    continue;
                }
                edge_seen[e] = true;
                for &u in edges[e] {
                    if island[u as usize] == -1 {
                        island[u as usize] = nisland;
                        queue.push_back(u as usize);
                    }
                }
            }
        }
        nisland += 1;
    }
    island
}

fn write_world(input: &Input<'_>, w: usize, tree_island: &[i32], out: &mut Islands) {
    let model = input.model();
    let batch = input.batch();
    let (ntree, nv) = (model.ntree(), model.nv());
    let nisland = tree_island.iter().map(|&i| i + 1).max().unwrap_or(0) as usize;
    let rows: Vec<usize> = batch.rows_of(w).collect();
    let dof_island: Vec<i32> = model
        .dof_treeid()
        .iter()
        .map(|&t| tree_island[t as usize])
        .collect();
    let efc_island: Vec<i32> = rows
        .iter()
        .map(|&r| tree_island[batch.row_support_of(r)[0] as usize])
        .collect();

    // Members of each island in ascending order, then the members of no island.
    let order = |key: &[i32]| -> Vec<i32> {
        let mut list = Vec::new();
        for i in 0..nisland as i32 {
            list.extend((0..key.len()).filter(|&m| key[m] == i).map(|m| m as i32));
        }
        list.extend((0..key.len()).filter(|&m| key[m] < 0).map(|m| m as i32));
        list
    };
    let count = |key: &[i32], i: usize| key.iter().filter(|&&k| k == i as i32).count() as i32;
    let start =
        |key: &[i32], i: usize| key.iter().filter(|&&k| k >= 0 && (k as usize) < i).count() as i32;
    let inverse = |list: &[i32]| {
        let mut inv = vec![0; list.len()];
        for (k, &m) in list.iter().enumerate() {
            inv[m as usize] = k as i32;
        }
        inv
    };

    let itree2tree = order(tree_island);
    let idof2dof = order(&dof_island);
    let iefc2efc = order(&efc_island);
    let dof2idof = inverse(&idof2dof);
    let efc2iefc = inverse(&iefc2efc);

    let t0 = w * ntree;
    let d0 = w * nv;
    out.nisland[w] = nisland as i32;
    out.nidof[w] = dof_island.iter().filter(|&&i| i >= 0).count() as i32;
    out.tree_island[t0..t0 + ntree].copy_from_slice(tree_island);
    out.map_itree2tree[t0..t0 + ntree].copy_from_slice(&itree2tree);
    out.dof_island[d0..d0 + nv].copy_from_slice(&dof_island);
    out.map_dof2idof[d0..d0 + nv].copy_from_slice(&dof2idof);
    out.map_idof2dof[d0..d0 + nv].copy_from_slice(&idof2dof);
    for (k, &r) in rows.iter().enumerate() {
        out.efc_island[r] = efc_island[k];
        out.map_efc2iefc[r] = efc2iefc[k];
        out.map_iefc2efc[r] = iefc2efc[k];
    }
    for i in 0..ntree {
        let slot = t0 + i;
        if i >= nisland {
            for field in out.island_fields_mut() {
                field[slot] = -1;
            }
            continue;
        }
        out.island_ntree[slot] = count(tree_island, i);
        out.island_itreeadr[slot] = start(tree_island, i);
        out.island_nv[slot] = count(&dof_island, i);
        out.island_idofadr[slot] = start(&dof_island, i);
        out.island_dofadr[slot] = (0..nv)
            .find(|&d| dof_island[d] == i as i32)
            .map_or(-1, |d| d as i32);
        out.island_nefc[slot] = count(&efc_island, i);
        out.island_iefcadr[slot] = start(&efc_island, i);
        let of_kind = |pred: fn(crate::RowType) -> bool| {
            rows.iter()
                .enumerate()
                .filter(|&(k, &r)| efc_island[k] == i as i32 && pred(batch.row_type[r]))
                .count() as i32
        };
        out.island_ne[slot] = of_kind(crate::RowType::is_equality);
        out.island_nf[slot] = of_kind(crate::RowType::is_friction);
    }
}
