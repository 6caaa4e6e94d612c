//! Every validation error, each from a minimal bad input; and no input, however malformed, makes
//! validation or any mode panic.

use archipelago::synth::{self, Rng, Spec};
use archipelago::{
    Batch, Capacity, EdgeKind, Engine, Error, Input, Islands, Mode, Model, Options, RowType, cpu,
    oracle,
};
use proptest::prelude::*;

fn ones(n: usize) -> Model {
    Model::from_dofnum(&vec![1; n]).unwrap()
}

/// A valid two-world batch on [`ones`]`(4)` to break one field at a time.
fn good() -> Batch {
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[0, 1])
        .row(RowType::ContactPyramidal, 3, &[2])
        .rowless(0, &[2, 3])
        .end_world();
    b.row(RowType::LimitJoint, 1, &[3]).end_world();
    b.finish()
}

fn check(batch: &Batch) -> Result<(), Error> {
    Input::new(&ones(4), batch).map(|_| ())
}

#[test]
fn the_reference_batch_is_valid() {
    assert_eq!(check(&good()), Ok(()));
}

#[test]
fn a_tree_out_of_range_is_refused() {
    let mut b = good();
    b.row_support[1] = 4;
    assert_eq!(
        check(&b),
        Err(Error::TreeOutOfRange {
            world: 0,
            kind: "row",
            index: 0,
            tree: 4,
            ntree: 4
        })
    );
    let mut b = good();
    b.row_support[2] = -7;
    assert!(matches!(
        check(&b),
        Err(Error::TreeOutOfRange { tree: -7, .. })
    ));
    let mut b = good();
    b.edge_support[0] = 9;
    assert!(matches!(
        check(&b),
        Err(Error::TreeOutOfRange {
            kind: "rowless hyperedge",
            index: 0,
            ..
        })
    ));
}

#[test]
fn a_static_tree_in_a_support_is_refused() {
    let mut b = good();
    b.row_support[3] = -1;
    assert_eq!(
        check(&b),
        Err(Error::StaticInSupport {
            world: 1,
            kind: "row",
            index: 2
        })
    );
    let mut b = good();
    b.edge_support[1] = -1;
    assert!(matches!(
        check(&b),
        Err(Error::StaticInSupport {
            kind: "rowless hyperedge",
            ..
        })
    ));
}

#[test]
fn a_row_with_an_empty_support_is_refused() {
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[0]).end_world();
    b.row(RowType::ContactPyramidal, 0, &[]).end_world();
    assert_eq!(
        check(&b.finish()),
        Err(Error::EmptySupport { world: 1, row: 1 })
    );
}

#[test]
fn an_empty_rowless_hyperedge_is_legal() {
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[0])
        .rowless(0, &[])
        .end_world();
    assert_eq!(check(&b.finish()), Ok(()));
}

#[test]
fn counts_over_capacity_are_refused() {
    let (model, batch) = (ones(4), good());
    let fit = Capacity::fit(&model, &batch);
    assert_eq!(
        (
            fit.nworld,
            fit.ntree,
            fit.nv,
            fit.njmax,
            fit.nsupport,
            fit.nedge
        ),
        (2, 4, 4, 2, 5, 1)
    );
    assert!(Input::with_capacity(&model, &batch, &fit).is_ok());
    type Shrink = fn(&mut Capacity);
    let cases: [(Shrink, &str, Option<usize>); 6] = [
        (|c| c.nworld -= 1, "nworld", None),
        (|c| c.ntree -= 1, "ntree", None),
        (|c| c.nv -= 1, "nv", None),
        (|c| c.njmax -= 1, "rows", Some(0)),
        (|c| c.nsupport -= 1, "support entries", Some(0)),
        (|c| c.nedge -= 1, "rowless hyperedges", Some(0)),
    ];
    for (shrink, what, world) in cases {
        let mut cap = fit;
        shrink(&mut cap);
        match Input::with_capacity(&model, &batch, &cap) {
            Err(
                e @ Error::OverCapacity {
                    what: w,
                    world: at,
                    got,
                    cap: c,
                },
            ) => {
                assert_eq!((w, at), (what, world));
                assert!(got > c);
                // A world is named only for a count of its own.
                let named = at.map_or(String::new(), |w| format!("world {w}: "));
                assert_eq!(
                    e.to_string(),
                    format!("{named}{what} {got} exceeds capacity {c}")
                );
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn inconsistent_offsets_are_refused() {
    type Edit = fn(&mut Batch);
    let cases: [(&str, Edit); 11] = [
        ("world_rowadr", |b| b.world_rowadr.clear()),
        ("world_rowadr", |b| b.world_rowadr[0] = 1),
        ("world_rowadr", |b| b.world_rowadr[1] = 4),
        ("world_rowadr", |b| b.world_rowadr.push(4)),
        ("world_edgeadr", |b| b.world_edgeadr[2] = 0),
        ("row_id", |b| {
            b.row_id.pop();
        }),
        ("row_supadr", |b| b.row_supadr[1] = 5),
        ("row_supadr", |b| {
            b.row_supadr.pop();
            b.row_support.pop();
        }),
        ("edge_supadr", |b| b.edge_supadr[1] = 1),
        ("edge_kind", |b| b.edge_kind.push(EdgeKind::Tendon)),
        ("edge_id", |b| b.edge_id.push(7)),
    ];
    for (array, edit) in cases {
        let mut b = good();
        edit(&mut b);
        match check(&b) {
            Err(Error::Offsets { array: a, .. }) => assert_eq!(a, array),
            other => panic!("{array}: {other:?}"),
        }
    }
}

#[test]
fn mismatched_world_counts_are_refused() {
    let mut b = good();
    b.world_edgeadr.push(1);
    b.world_rowadr.push(3);
    b.world_edgeadr.push(1);
    assert_eq!(
        check(&b),
        Err(Error::WorldCount {
            what: "world_edgeadr",
            got: 4,
            expected: 3
        })
    );
}

#[test]
fn a_bad_model_is_refused() {
    let bad = |r: Result<Model, Error>| matches!(r, Err(Error::Model(_)));
    assert!(bad(Model::from_dofnum(&[1, 0, 2])));
    assert!(bad(Model::from_dofnum(&[-3])));
    // Array lengths disagree.
    assert!(bad(Model::from_parts(vec![0, 1], vec![1], vec![0, 1])));
    // A range past nv, and one before 0.
    assert!(bad(Model::from_parts(vec![0, 1], vec![1, 2], vec![0, 1])));
    assert!(bad(Model::from_parts(vec![-1], vec![1], vec![0])));
    // Overlapping ranges.
    assert!(bad(Model::from_parts(vec![0, 0], vec![1, 1], vec![0])));
    // dof_treeid disagrees with the ranges.
    assert!(bad(Model::from_parts(vec![0, 1], vec![1, 1], vec![1, 0])));
    assert!(Model::from_parts(vec![1, 0], vec![1, 1], vec![1, 0]).is_ok());
    // A dof in no tree's range (dof_treeid −1 would agree with "no owner").
    assert!(bad(Model::from_parts(vec![0], vec![1], vec![0, -1])));
}

#[test]
fn unknown_row_type_codes_have_no_row_type() {
    // `Batch` stores typed rows, so an unknown code can only arise where codes are decoded.
    assert_eq!(RowType::from_code(8), None);
    assert_eq!(RowType::from_code(-1), None);
    for (code, kind) in RowType::ALL.into_iter().enumerate() {
        assert_eq!(RowType::from_code(code as i32), Some(kind));
    }
}

#[test]
fn a_refused_batch_reaches_no_mode() {
    // Modes only take a validated `Input`, so a bad batch stops at `Input::new`.
    let mut b = good();
    b.row_support[0] = 100;
    assert!(Input::new(&ones(4), &b).is_err());
}

/// Validates `batch`; when valid, every mode must run and agree with the oracle.
fn run_everything(model: &Model, batch: &Batch, cap: &Capacity) {
    // Capacities are checked on validated batches only (`with_capacity` validates first).
    let _ = Input::with_capacity(model, batch, cap);
    let Ok(input) = Input::new(model, batch) else {
        return;
    };
    let fit = Capacity::fit(model, batch);
    assert!(Input::with_capacity(model, batch, &fit).is_ok());
    let want = oracle::solve(&input);
    for name in cpu::NAMES {
        let mut out = Islands::default();
        match cpu::by_name(name).unwrap().solve(&input, &mut out) {
            Ok(_) => assert_eq!(out.first_mismatch(&want), None, "{name}"),
            Err(e) => assert!(matches!(e, Error::Refused { .. }), "{name}: {e}"),
        }
    }
}

fn small_u32s() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(0u32..12, 0..8)
}

fn small_i32s() -> impl Strategy<Value = Vec<i32>> {
    prop::collection::vec(-3i32..10, 0..16)
}

fn row_types() -> impl Strategy<Value = Vec<RowType>> {
    prop::collection::vec(prop::sample::select(RowType::ALL.to_vec()), 0..8)
}

fn edge_kinds() -> impl Strategy<Value = Vec<EdgeKind>> {
    prop::collection::vec(prop::sample::select(EdgeKind::ALL.to_vec()), 0..8)
}

prop_compose! {
    fn garbage_batch()(
        world_rowadr in small_u32s(), row_type in row_types(), row_id in small_i32s(),
        row_supadr in small_u32s(), row_support in small_i32s(), world_edgeadr in small_u32s(),
        edge_kind in edge_kinds(), edge_id in small_i32s(), edge_supadr in small_u32s(),
        edge_support in small_i32s(),
    ) -> Batch {
        Batch {
            world_rowadr, row_type, row_id, row_supadr, row_support,
            world_edgeadr, edge_kind, edge_id, edge_supadr, edge_support,
        }
    }
}

prop_compose! {
    fn garbage_capacity()(v in prop::collection::vec(0usize..12, 6)) -> Capacity {
        Capacity { nworld: v[0], ntree: v[1], nv: v[2], njmax: v[3], nsupport: v[4], nedge: v[5] }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn garbage_never_panics(
        batch in garbage_batch(),
        dofnum in prop::collection::vec(-1i32..4, 0..10),
        cap in garbage_capacity(),
    ) {
        if let Ok(model) = Model::from_dofnum(&dofnum) {
            run_everything(&model, &batch, &cap);
        }
    }

    #[test]
    fn garbage_models_never_panic(
        adr in prop::collection::vec(-2i32..8, 0..6),
        num in prop::collection::vec(-2i32..8, 0..6),
        tree in prop::collection::vec(-2i32..6, 0..10),
    ) {
        if let Ok(model) = Model::from_parts(adr, num, tree) {
            run_everything(&model, &good(), &Capacity::fit(&ones(4), &good()));
        }
    }

    #[test]
    fn one_corrupted_entry_never_panics(seed: u64, field in 0usize..9, at: usize, value in -2i64..40) {
        // A valid batch with one entry overwritten reaches deeper checks than pure garbage.
        let spec = Spec { nworld: 3, ntree: 12, rows: 6, ..Spec::default() };
        let (model, mut b) = synth::batch(&spec, seed);
        let (u, i) = (value.max(0) as u32, value as i32);
        let mut rng = Rng::new(at as u64);
        macro_rules! poke {
            ($v:expr, $x:expr) => {
                if !$v.is_empty() {
                    let k = rng.below($v.len());
                    $v[k] = $x;
                }
            };
        }
        match field {
            0 => poke!(b.world_rowadr, u),
            1 => poke!(b.row_supadr, u),
            2 => poke!(b.row_support, i),
            3 => poke!(b.world_edgeadr, u),
            4 => poke!(b.edge_supadr, u),
            5 => poke!(b.edge_support, i),
            6 => { b.row_support.push(i); }
            7 => { b.row_id.pop(); }
            _ => { b.world_rowadr.pop(); }
        }
        let cap = Capacity::fit(&model, &synth::batch(&spec, seed).1);
        run_everything(&model, &b, &cap);
    }

    #[test]
    fn a_bad_tree_anywhere_is_reported_at_its_row(seed: u64, pick: usize, bad in prop::sample::select(vec![-1i32, -5, 12, 99])) {
        // Validation checks the whole batch in flat passes first; a failure must still name
        // the first bad row exactly.
        let spec = Spec { nworld: 40, ntree: 12, rows: 8, rowless: 0, ..Spec::default() };
        let (model, mut b) = synth::batch(&spec, seed);
        prop_assume!(!b.row_support.is_empty());
        let k = pick % b.row_support.len();
        b.row_support[k] = bad;
        let row = b.row_supadr.partition_point(|&a| a as usize <= k) - 1;
        let world = b.world_rowadr.partition_point(|&a| a as usize <= row) - 1;
        let err = Input::new(&model, &b).map(|_| ()).unwrap_err();
        let want = if bad == -1 {
            Error::StaticInSupport { world, kind: "row", index: row }
        } else {
            Error::TreeOutOfRange { world, kind: "row", index: row, tree: bad, ntree: 12 }
        };
        prop_assert_eq!(err, want);
    }
}

#[test]
fn an_input_fitted_once_is_still_refused_by_a_smaller_capacity() {
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::ContactPyramidal, 0, &[0, 1])
        .row(RowType::Equality, 1, &[1, 2])
        .end_world();
    let batch = b.finish();
    let cap = Capacity::fit(&model, &batch);
    let input = Input::new(&model, &batch).unwrap().fitted(&cap).unwrap();
    let larger = Capacity {
        njmax: cap.njmax + 1,
        ..cap
    };
    assert!(larger.fits(&input).is_ok());
    let smaller = Capacity {
        njmax: cap.njmax - 1,
        ..cap
    };
    let err = smaller.fits(&input).unwrap_err();
    assert!(
        matches!(err, Error::OverCapacity { what: "rows", .. }),
        "{err}"
    );
    assert!(matches!(
        input.fitted(&smaller),
        Err(Error::OverCapacity { .. })
    ));
}

#[test]
fn a_capacity_no_batch_could_fill_is_refused_before_anything_is_allocated() {
    let model = ones(2);
    let fit = Capacity::fit(&model, &good());
    // The last: a model of no trees, so that only the world count is too large.
    let none = Model::from_dofnum(&[]).unwrap();
    let huge = [
        Capacity {
            nworld: usize::MAX / 2,
            ..fit
        },
        Capacity {
            njmax: usize::MAX,
            ..fit
        },
        Capacity {
            nsupport: 1 << 40,
            ..fit
        },
        Capacity {
            nedge: usize::MAX,
            ..fit
        },
        Capacity {
            nworld: 1 << 20,
            nv: 1 << 60,
            ..fit
        },
        Capacity {
            nworld: usize::MAX,
            ntree: 0,
            nv: 0,
            njmax: 0,
            nsupport: 0,
            nedge: 0,
        },
    ];
    for cap in huge {
        for deterministic in [false, true] {
            let options = Options {
                mode: Mode::Dsu,
                deterministic,
                ..Options::default()
            };
            let model = if cap.ntree == 0 { &none } else { &model };
            let err = Engine::new(model, cap, options).map(|_| ()).unwrap_err();
            assert!(matches!(err, Error::Capacity(_)), "{cap:?}: {err}");
        }
    }
    assert!(Engine::new(&model, fit, Options::default()).is_ok());
}

/// 2³¹ dofs, calloc'd (pages untouched unless written): heavy for small machines, so ignored by
/// default (`cargo test --release --test validation -- --ignored`).
#[test]
#[ignore]
fn a_model_of_more_dofs_than_i32_is_refused() {
    let nv = i32::MAX as usize + 1;
    let err = Model::from_parts(vec![i32::MAX], vec![1], vec![0; nv]).unwrap_err();
    assert!(matches!(err, Error::Model(_)), "{err}");
}
