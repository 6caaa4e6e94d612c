//! Metamorphic properties: the partition depends only on the set of supports (DESIGN.md §2).
//!
//! Row permutation, row duplication, reversing or repeating trees inside a support and the choice
//! of star or chain expansion of a hyperedge leave every tree-level output unchanged; row-level
//! maps follow the rows consistently. Each transformed batch is also checked against every mode.

use archipelago::cpu::{self, CpuMode};
use archipelago::synth::{self, Rng, Spec, Topology};
use archipelago::{Batch, EdgeKind, Input, Islands, Model, RowType, oracle};
use proptest::prelude::*;

/// One world's rows and rowless hyperedges, in an editable form.
#[derive(Debug, Clone)]
struct World {
    rows: Vec<(RowType, i32, Vec<i32>)>,
    edges: Vec<(EdgeKind, i32, Vec<i32>)>,
}

fn worlds(batch: &Batch) -> Vec<World> {
    (0..batch.nworld())
        .map(|w| World {
            rows: batch
                .rows_of(w)
                .map(|r| {
                    let s = batch.row_support_of(r).to_vec();
                    (batch.row_type[r], batch.row_id[r], s)
                })
                .collect(),
            edges: batch
                .edges_of(w)
                .map(|e| {
                    let s = batch.edge_support_of(e).to_vec();
                    (batch.edge_kind[e], batch.edge_id[e], s)
                })
                .collect(),
        })
        .collect()
}

fn build(worlds: &[World]) -> Batch {
    let mut b = Batch::builder();
    for w in worlds {
        for (kind, id, s) in &w.rows {
            b.row(*kind, *id, s);
        }
        for (kind, id, s) in &w.edges {
            b.rowless_of(*kind, *id, s);
        }
        b.end_world();
    }
    b.finish()
}

/// Oracle outputs, after checking that every mode agrees with them.
fn solve(model: &Model, batch: &Batch) -> Islands {
    let input = Input::new(model, batch).unwrap();
    let want = oracle::solve(&input);
    let mut out = Islands::default();
    for name in cpu::NAMES {
        let mut mode: Box<dyn CpuMode> = cpu::by_name(name).unwrap();
        mode.solve(&input, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&want), None, "{name}");
    }
    want
}

/// Every output that depends only on the partition of the trees (not on rows).
fn tree_level(out: &Islands) -> Vec<(&'static str, Vec<i32>)> {
    let mut fields = Vec::new();
    for w in 0..out.nworld {
        let v = out.world(w);
        fields.push(("nisland", vec![v.nisland, v.nidof]));
        for (name, values) in &v.arrays()[..10] {
            fields.push((*name, values.to_vec()));
        }
    }
    fields
}

fn base(seed: u64, ntree: usize, rows: usize, topology: usize) -> (Model, Batch) {
    let spec = Spec {
        nworld: 3,
        ntree,
        rows,
        topology: *Topology::PURE.get(topology).unwrap_or(&Topology::Mixed),
        ..Spec::default()
    };
    synth::batch(&spec, seed)
}

/// Distinct trees of a support in first-seen order.
fn distinct(support: &[i32]) -> Vec<i32> {
    let mut seen = Vec::new();
    for &t in support {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen
}

/// Replaces every hyperedge by two-tree pieces: a star through its first tree or a chain.
fn expand(worlds: &[World], star: bool) -> Vec<World> {
    let pieces = |s: &[i32]| -> Vec<Vec<i32>> {
        let d = distinct(s);
        if d.len() < 2 {
            return vec![d];
        }
        (1..d.len())
            .map(|i| vec![if star { d[0] } else { d[i - 1] }, d[i]])
            .collect()
    };
    worlds
        .iter()
        .map(|w| World {
            rows: w
                .rows
                .iter()
                .flat_map(|(k, id, s)| pieces(s).into_iter().map(move |p| (*k, *id, p)))
                .collect(),
            edges: w
                .edges
                .iter()
                .flat_map(|(kind, id, s)| {
                    let parts = if s.is_empty() { vec![] } else { pieces(s) };
                    parts.into_iter().map(move |p| (*kind, *id, p))
                })
                .collect(),
        })
        .collect()
}

const TREES: std::ops::Range<usize> = 1..70;
const ROWS: std::ops::Range<usize> = 0..90;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn row_permutation_keeps_trees_and_permutes_rows(
        seed: u64, ntree in TREES, rows in ROWS, topology in 0usize..10, shuffle: u64,
    ) {
        let (model, batch) = base(seed, ntree, rows, topology);
        let mut ws = worlds(&batch);
        let mut rng = Rng::new(shuffle);
        // perm[w][k] = the original index of new row k.
        let mut perms = Vec::new();
        for w in &mut ws {
            let mut perm: Vec<usize> = (0..w.rows.len()).collect();
            rng.shuffle(&mut perm);
            w.rows = perm.iter().map(|&k| w.rows[k].clone()).collect();
            perms.push(perm);
        }
        let permuted = build(&ws);
        let (a, b) = (solve(&model, &batch), solve(&model, &permuted));
        prop_assert_eq!(tree_level(&a), tree_level(&b));
        for (w, perm) in perms.iter().enumerate() {
            let (va, vb) = (a.world(w), b.world(w));
            for (k, &old) in perm.iter().enumerate() {
                prop_assert_eq!(vb.efc_island[k], va.efc_island[old]);
            }
            prop_assert_eq!(va.island_nefc, vb.island_nefc);
            prop_assert_eq!(va.island_iefcadr, vb.island_iefcadr);
            prop_assert_eq!(va.island_ne, vb.island_ne);
            prop_assert_eq!(va.island_nf, vb.island_nf);
            for i in 0..vb.nisland as usize {
                let range = vb.island_iefcadr[i] as usize
                    ..(vb.island_iefcadr[i] + vb.island_nefc[i]) as usize;
                let new = &vb.map_iefc2efc[range.clone()];
                // Rows keep their (new) order inside an island ...
                prop_assert!(new.windows(2).all(|p| p[0] < p[1]));
                // ... and the island holds the same rows as before.
                let mut mapped: Vec<i32> = new.iter().map(|&k| perm[k as usize] as i32).collect();
                let mut old = va.map_iefc2efc[range].to_vec();
                mapped.sort();
                old.sort();
                prop_assert_eq!(mapped, old);
            }
            for (k, &iefc) in vb.map_efc2iefc.iter().enumerate() {
                prop_assert_eq!(vb.map_iefc2efc[iefc as usize], k as i32);
            }
        }
    }

    #[test]
    fn row_duplication_keeps_trees(
        seed: u64, ntree in TREES, rows in ROWS, topology in 0usize..10, pick: u64,
    ) {
        let (model, batch) = base(seed, ntree, rows, topology);
        let mut ws = worlds(&batch);
        let mut rng = Rng::new(pick);
        let mut sources = Vec::new();
        for w in &mut ws {
            let mut rows = Vec::new();
            let mut source = Vec::new();
            for (k, row) in w.rows.iter().enumerate() {
                for _ in 0..rng.between(1, 3) {
                    rows.push(row.clone());
                    source.push(k);
                }
            }
            w.rows = rows;
            sources.push(source);
        }
        let duplicated = build(&ws);
        let (a, b) = (solve(&model, &batch), solve(&model, &duplicated));
        prop_assert_eq!(tree_level(&a), tree_level(&b));
        for (w, source) in sources.iter().enumerate() {
            let (va, vb) = (a.world(w), b.world(w));
            for (k, &old) in source.iter().enumerate() {
                prop_assert_eq!(vb.efc_island[k], va.efc_island[old]);
            }
        }
    }

    #[test]
    fn support_reversal_and_repetition_change_nothing(
        seed: u64, ntree in TREES, rows in ROWS, topology in 0usize..10, pick: u64,
    ) {
        let (model, batch) = base(seed, ntree, rows, topology);
        let mut ws = worlds(&batch);
        let mut rng = Rng::new(pick);
        for w in &mut ws {
            let supports = w.rows.iter_mut().map(|r| &mut r.2).chain(w.edges.iter_mut().map(|e| &mut e.2));
            for s in supports {
                if rng.chance(0.5) {
                    s.reverse();
                }
                if !s.is_empty() && rng.chance(0.5) {
                    let t = rng.pick(s);
                    let at = rng.below(s.len() + 1);
                    s.insert(at, t);
                }
            }
        }
        let edited = build(&ws);
        let (a, b) = (solve(&model, &batch), solve(&model, &edited));
        // Same rows in the same order: every field, row-level ones included, is unchanged.
        prop_assert_eq!(b.first_mismatch(&a), None);
    }

    #[test]
    fn star_and_chain_expansion_keep_trees(
        seed: u64, ntree in TREES, rows in ROWS, topology in 0usize..10,
    ) {
        let (model, batch) = base(seed, ntree, rows, topology);
        let ws = worlds(&batch);
        let star = build(&expand(&ws, true));
        let chain = build(&expand(&ws, false));
        let (a, s, c) = (solve(&model, &batch), solve(&model, &star), solve(&model, &chain));
        prop_assert_eq!(tree_level(&a), tree_level(&s));
        prop_assert_eq!(tree_level(&a), tree_level(&c));
        // Star and chain pieces come one for one, so the rows line up too.
        prop_assert_eq!(c.first_mismatch(&s), None);
    }
}
