//! Every CPU mode equals the oracle, field for field, on a generated corpus of varied shapes;
//! the generators are reproducible and cover what the corpus claims to cover.

use archipelago::cpu::{self, CpuMode, dense::Dense};
use archipelago::synth::{self, Case, Spec, Topology};
use archipelago::{Batch, Error, Input, Islands, Model, RowType, oracle};

fn modes() -> Vec<Box<dyn CpuMode>> {
    cpu::NAMES
        .iter()
        .map(|n| cpu::by_name(n).unwrap())
        .collect()
}

fn describe(case: &Case) -> String {
    format!(
        "spec {:?}, seed {:#x} (rebuild with synth::batch)",
        case.spec, case.seed
    )
}

#[test]
fn every_mode_equals_the_oracle_on_the_corpus() {
    // One instance of each mode and one output buffer for the whole corpus: stale scratch or
    // outputs left from an earlier case would show up as mismatches.
    let mut modes = modes();
    let mut outs: Vec<Islands> = modes.iter().map(|_| Islands::default()).collect();
    let mut checked = 0;
    for case in synth::conformance() {
        let input = Input::new(&case.model, &case.batch)
            .unwrap_or_else(|e| panic!("generated an invalid batch ({e}): {}", describe(&case)));
        let want = oracle::solve(&input);
        for (mode, out) in modes.iter_mut().zip(&mut outs) {
            mode.solve(&input, out)
                .unwrap_or_else(|e| panic!("{} failed ({e}): {}", mode.name(), describe(&case)));
            if let Some(m) = out.first_mismatch(&want) {
                panic!(
                    "{} differs from the oracle at {m}: {}",
                    mode.name(),
                    describe(&case)
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, synth::CONFORMANCE_CASES);
}

#[test]
fn every_mode_equals_the_oracle_on_each_topology_at_scale() {
    let mut modes = modes();
    let mut out = Islands::default();
    let all = Topology::PURE
        .into_iter()
        .chain([Topology::Scene, Topology::Mixed]);
    for (k, topology) in all.enumerate() {
        for ntree in [22, 257] {
            let spec = Spec {
                nworld: 6,
                ntree,
                rows: ntree * 2,
                topology,
                ..Spec::default()
            };
            let (model, batch) = synth::batch(&spec, k as u64);
            let input = Input::new(&model, &batch).unwrap();
            let want = oracle::solve(&input);
            for mode in &mut modes {
                mode.solve(&input, &mut out).unwrap();
                assert_eq!(
                    out.first_mismatch(&want),
                    None,
                    "{} on {topology:?}, ntree {ntree}",
                    mode.name()
                );
            }
        }
    }
}

#[test]
fn generators_are_reproducible_and_seed_dependent() {
    let spec = Spec::realistic(16, 40, 60);
    assert_eq!(synth::batch(&spec, 3), synth::batch(&spec, 3));
    assert_ne!(synth::batch(&spec, 3).1, synth::batch(&spec, 4).1);
    let a: Vec<_> = synth::corpus(9).take(50).map(|c| c.batch).collect();
    let b: Vec<_> = synth::corpus(9).take(50).map(|c| c.batch).collect();
    assert_eq!(a, b);
}

#[test]
fn scene_worlds_keep_mujoco_efc_order() {
    let (_, batch) = synth::batch(&Spec::realistic(50, 64, 100), 11);
    let mut kinds = std::collections::BTreeSet::new();
    for w in 0..batch.nworld() {
        let types = &batch.row_type[batch.rows_of(w)];
        assert!(
            types.windows(2).all(|p| p[0] <= p[1]),
            "world {w}: {types:?}"
        );
        kinds.extend(types.iter().copied());
    }
    assert_eq!(kinds.len(), 8, "every row type appears: {kinds:?}");
}

/// What the corpus is claimed to contain, counted over the cases the conformance test runs.
#[derive(Default, Debug)]
struct Coverage {
    ntree0: usize,
    ntree1: usize,
    nworld0: usize,
    wide_over_32: usize,
    widest: usize,
    one_tree_rows: usize,
    duplicated_trees: usize,
    reversed: usize,
    duplicated_rows: usize,
    empty_worlds: usize,
    rowless_only_worlds: usize,
    empty_rowless: usize,
    inactive_trees: usize,
    varied_row_counts: usize,
    varied_dofs: usize,
    row_types: [usize; 8],
    large: usize,
}

fn count(case: &Case, c: &mut Coverage) {
    let (model, batch) = (&case.model, &case.batch);
    c.ntree0 += (model.ntree() == 0) as usize;
    c.ntree1 += (model.ntree() == 1) as usize;
    c.nworld0 += (batch.nworld() == 0) as usize;
    c.large += (model.ntree() > 200) as usize;
    c.varied_dofs += model.tree_dofnum().iter().any(|&n| n > 1) as usize;
    let mut counts = Vec::new();
    for w in 0..batch.nworld() {
        let rows = batch.rows_of(w);
        counts.push(rows.len());
        let edges = batch.edges_of(w);
        c.empty_worlds += (rows.is_empty() && edges.is_empty()) as usize;
        c.rowless_only_worlds += (rows.is_empty() && !edges.is_empty()) as usize;
        let mut touched = vec![false; model.ntree()];
        for s in batch.hyperedges_of(w) {
            for &t in s {
                touched[t as usize] = true;
            }
        }
        c.inactive_trees += touched.iter().any(|&t| !t) as usize;
        for e in edges {
            c.empty_rowless += batch.edge_support_of(e).is_empty() as usize;
        }
        let mut prev: Option<&[i32]> = None;
        for r in rows {
            let s = batch.row_support_of(r);
            c.row_types[batch.row_type[r] as usize] += 1;
            c.widest = c.widest.max(s.len());
            c.wide_over_32 += (s.len() > 32) as usize;
            c.one_tree_rows += (s.len() == 1) as usize;
            let mut sorted = s.to_vec();
            sorted.sort();
            sorted.dedup();
            c.duplicated_trees += (sorted.len() < s.len()) as usize;
            c.reversed += s.windows(2).all(|p| p[0] > p[1]) as usize * (s.len() > 1) as usize;
            c.duplicated_rows += (prev == Some(s)) as usize;
            prev = Some(s);
        }
    }
    counts.sort();
    counts.dedup();
    c.varied_row_counts += (counts.len() > 1) as usize;
}

#[test]
fn corpus_covers_the_claimed_shapes() {
    let mut c = Coverage::default();
    for case in synth::conformance() {
        count(&case, &mut c);
    }
    let at_least = |what: &str, got: usize, want: usize| {
        assert!(got >= want, "only {got} {what} (want ≥ {want}): {c:?}");
    };
    at_least("ntree 0 cases", c.ntree0, 100);
    at_least("ntree 1 cases", c.ntree1, 100);
    at_least("nworld 0 cases", c.nworld0, 10);
    at_least("rows wider than 32", c.wide_over_32, 1000);
    at_least("rows 200+ trees wide", c.widest, 200);
    at_least("one-tree rows", c.one_tree_rows, 10_000);
    at_least("supports with a repeated tree", c.duplicated_trees, 1000);
    at_least("reversed supports", c.reversed, 1000);
    at_least("duplicated consecutive rows", c.duplicated_rows, 1000);
    at_least("empty worlds", c.empty_worlds, 1000);
    at_least("rowless-only worlds", c.rowless_only_worlds, 100);
    at_least("empty rowless hyperedges", c.empty_rowless, 100);
    at_least("worlds with inactive trees", c.inactive_trees, 10_000);
    at_least("batches with varied row counts", c.varied_row_counts, 5000);
    at_least("models with multi-dof trees", c.varied_dofs, 5000);
    at_least("cases with 200+ trees", c.large, 200);
    for (code, &n) in c.row_types.iter().enumerate() {
        at_least(&format!("rows of type {code}"), n, 1000);
    }
}

#[test]
fn dense_reports_the_kernel_footprint_and_refuses_above_its_cap() {
    let spec = Spec {
        nworld: 3,
        ntree: 40,
        ..Spec::default()
    };
    let (model, batch) = synth::batch(&spec, 1);
    let input = Input::new(&model, &batch).unwrap();
    let mut out = Islands::default();
    let need = 8 * 3 * 40 * 40;
    let stats = Dense::new(need).solve(&input, &mut out).unwrap();
    assert_eq!(stats.scratch_bytes, need);
    assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
    let err = Dense::new(need - 1).solve(&input, &mut out).unwrap_err();
    assert!(matches!(err, Error::Refused { mode: "dense", .. }), "{err}");
    // 1024 worlds × 4096 trees would need 128 GiB: refused by the default cap, not allocated.
    assert_eq!(Dense::scratch_bytes(1024, 4096), Some(128 << 30));
    assert_eq!(Dense::scratch_bytes(usize::MAX, 2), None);
}

#[test]
fn dense_refusal_of_a_huge_batch_allocates_nothing() {
    let model = Model::from_dofnum(&vec![1; 4096]).unwrap();
    let mut b = Batch::builder();
    for _ in 0..1024 {
        b.row(RowType::Equality, 0, &[0, 4095]).end_world();
    }
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let err = Dense::default()
        .solve(&input, &mut Islands::default())
        .unwrap_err();
    assert!(matches!(err, Error::Refused { mode: "dense", .. }), "{err}");
}

#[test]
fn labelprop_counts_rounds_that_grow_with_the_diameter() {
    let rounds = |topology, ntree| {
        let spec = Spec {
            nworld: 2,
            ntree,
            rows: ntree,
            topology,
            inactive: 0.0,
            empty_worlds: 0.0,
            rowless: 0,
            vary_rows: false,
            noise: false,
            ..Spec::default()
        };
        let (model, batch) = synth::batch(&spec, 5);
        let input = Input::new(&model, &batch).unwrap();
        cpu::by_name("labelprop")
            .unwrap()
            .solve(&input, &mut Islands::default())
            .unwrap()
            .rounds
    };
    let (star, chain) = (rounds(Topology::Star, 200), rounds(Topology::Chain, 200));
    assert!((1..=4).contains(&star), "star took {star} rounds");
    assert!(chain > star, "chain {chain} rounds vs star {star}");
    // No hyperedges: one round that changes nothing.
    assert_eq!(rounds(Topology::Chain, 0), 1);
}

/// `model`'s trees with their dof blocks laid out in a shuffled tree order: valid for MuJoCo's
/// arrays, but tree ids no longer ascend with dofs, so the maps take their general path.
fn shuffled_dofs(model: &Model, seed: u64) -> Model {
    let num = model.tree_dofnum().to_vec();
    let mut layout: Vec<usize> = (0..num.len()).collect();
    synth::Rng::new(seed).shuffle(&mut layout);
    let mut adr = vec![0; num.len()];
    let mut owner = Vec::new();
    for t in layout {
        adr[t] = owner.len() as i32;
        owner.extend(std::iter::repeat_n(t as i32, num[t] as usize));
    }
    Model::from_parts(adr, num, owner).unwrap()
}

#[test]
fn every_mode_equals_the_oracle_with_trees_out_of_dof_order() {
    let mut modes = modes();
    let mut out = Islands::default();
    for case in synth::corpus(7).take(400) {
        let model = shuffled_dofs(&case.model, case.seed);
        let input = Input::new(&model, &case.batch).unwrap();
        let want = oracle::solve(&input);
        for mode in modes.iter_mut() {
            mode.solve(&input, &mut out).unwrap();
            if let Some(m) = out.first_mismatch(&want) {
                panic!("{} differs at {m}: {}", mode.name(), describe(&case));
            }
        }
    }
}
