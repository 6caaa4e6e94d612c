//! Parity on real MuJoCo 4.0.0 traces: every committed trace, every CPU mode, the oracle and the
//! CPU engine told of the events, every output field at every step and world, against native.
//! Plus the reader's robustness: truncated or corrupted files are typed errors, never panics.

#[path = "support/traces.rs"]
mod traces;

use archipelago::trace::{self, Jacobian, Oracle, Trace};
use archipelago::{Batch, Error, Input, Islands, cpu};

fn open(name: &str) -> Trace {
    Trace::open(traces::dir().join(name)).unwrap()
}

#[test]
fn every_trace_every_cpu_mode_matches_native() {
    let paths = traces::paths();
    assert!(
        paths.len() >= 30,
        "expected the committed trace set, found {}",
        paths.len()
    );
    let mut failures = Vec::new();
    for path in &paths {
        let trace = Trace::open(path).unwrap();
        let mut modes: Vec<Box<dyn cpu::CpuMode>> = cpu::NAMES
            .iter()
            .map(|n| cpu::by_name(n).unwrap())
            .collect();
        modes.push(Box::new(Oracle));
        for mut mode in modes {
            let report = trace::replay(&trace, mode.as_mut()).unwrap();
            assert_eq!(report.steps, trace.nstep());
            if let Some(first) = report.first {
                failures.push(format!(
                    "{} {}: {} mismatching worlds, first at step {}: {}",
                    path.display(),
                    report.mode,
                    report.mismatches,
                    first.step,
                    first.mismatch
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every committed trace through the CPU `Engine` told of the trace's events (equalities
/// switched, trees put to sleep or woken) as a simulation tells it: `auto`, whose trials switch
/// between the quotient and the full rebuild, and the quotient without reuse (with reuse, and
/// under other policies, in `tests/quotient.rs`), as `replay`'s `engine-…` modes run them.
#[test]
fn every_trace_matches_native_through_the_cpu_engine_told_of_its_events() {
    use archipelago::{Engine, Mode, Options};
    let mut failures = Vec::new();
    for path in &traces::paths() {
        let t = Trace::open(path).unwrap();
        for (mode, reuse) in [
            (Mode::Auto, true),
            (Mode::Auto, false),
            (Mode::Quotient, false),
        ] {
            let options = Options {
                mode,
                reuse,
                ..Options::default()
            };
            let mut engine = Engine::new(t.model(), t.capacity(), options).unwrap();
            let report = trace::replay_with(&t, mode.name(), |input, events, out| {
                out.clone_from(engine.step_input(input, events)?);
                Ok(())
            })
            .unwrap();
            if let Some(first) = report.first {
                failures.push(format!(
                    "{} {} reuse {reuse}: step {}: {}",
                    path.display(),
                    report.mode,
                    first.step,
                    first.mismatch
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn traces_cover_what_they_claim() {
    let all: Vec<Trace> = traces::paths()
        .iter()
        .map(|p| Trace::open(p).unwrap())
        .collect();
    let any = |f: &dyn Fn(&Trace, usize, usize) -> bool| {
        all.iter()
            .any(|t| (0..t.nstep()).any(|s| (0..t.nworld()).any(|w| f(t, s, w))))
    };
    // Worlds without rows (nisland 0) and with islands both occur.
    assert!(any(&|t, s, w| t.native_nisland(s, w) == 0));
    assert!(any(&|t, s, w| t.native_nisland(s, w) > 1));
    // Sleeping trees and toggled equalities occur.
    assert!(any(&|t, s, w| t.tree_awake(s, w).contains(&0)));
    assert!(any(&|t, s, w| t.eq_active(s, w).contains(&0)));
    // Rowless flex hyperedges occur, also in worlds that have rows.
    let mut batch = Batch::default();
    let with_edges = all.iter().any(|t| {
        (0..t.nstep()).any(|s| {
            t.batch(s, &mut batch);
            (0..t.nworld()).any(|w| !batch.edges_of(w).is_empty() && !batch.rows_of(w).is_empty())
        })
    });
    assert!(with_edges);
    // Every kind of rowless coupling occurs, and islands in worlds without rows.
    for kind in archipelago::EdgeKind::ALL {
        let found = all.iter().any(|t| {
            (0..t.nstep()).any(|s| {
                t.batch(s, &mut batch);
                batch.edge_kind.contains(&kind)
            })
        });
        assert!(found, "no rowless coupling of kind {kind:?}");
    }
    let rowless_islands = all.iter().any(|t| {
        (0..t.nstep()).any(|s| {
            t.batch(s, &mut batch);
            (0..t.nworld()).any(|w| batch.rows_of(w).is_empty() && t.native_nisland(s, w) > 0)
        })
    });
    assert!(rowless_islands);
    // Both Jacobian settings are present.
    assert_eq!(
        open("island_tendon_wrap_dense.npz").jacobian(),
        Jacobian::Dense
    );
    assert_eq!(
        open("island_tendon_wrap_sparse.npz").jacobian(),
        Jacobian::Sparse
    );
}

#[test]
fn row_extras_describe_contacts() {
    let trace = open("replicate_bowl.npz");
    let mut batch = Batch::default();
    let mut contacts = 0;
    for step in 0..trace.nstep() {
        trace.batch(step, &mut batch);
        let extra = trace.row_extra(step);
        assert_eq!(extra.geom.len(), batch.nrow());
        for r in 0..batch.nrow() {
            let contact = batch.row_type[r].is_contact();
            contacts += contact as usize;
            assert_eq!(extra.colid[r] >= 0, contact);
            let t = batch.row_type[r];
            assert_eq!(extra.source[r] >= 0, t.is_equality() || t.is_friction());
            if contact {
                assert!(
                    extra.geom[r].iter().any(|&g| g >= 0) || extra.flex[r].iter().any(|&f| f >= 0)
                );
            }
        }
    }
    assert!(contacts > 0);
}

#[test]
fn a_step_converts_into_a_valid_input() {
    let trace = open("sleep_dominos.npz");
    let (mut batch, mut native, mut got) =
        (Batch::default(), Islands::default(), Islands::default());
    let mut dsu = cpu::by_name("dsu").unwrap();
    for step in [0, trace.nstep() / 2, trace.nstep() - 1] {
        trace.batch(step, &mut batch);
        trace.native(step, &mut native);
        assert_eq!(batch.nworld(), trace.nworld());
        assert_eq!(batch.nrow(), trace.nrow(step));
        let input = Input::new(trace.model(), &batch).unwrap();
        dsu.solve(&input, &mut got).unwrap();
        assert_eq!(trace::compare(&got, &native), None);
    }
}

#[test]
fn a_step_or_world_out_of_range_panics_naming_both() {
    let trace = open("sleep_dominos.npz");
    let (nstep, nworld) = (trace.nstep(), trace.nworld());
    let message = |f: &dyn Fn()| {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        err.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let world = message(&|| {
        trace.tree_awake(0, nworld);
    });
    assert_eq!(
        world,
        format!("world {nworld} of a trace of {nworld} worlds")
    );
    let step = message(&|| {
        trace.native_nisland(nstep, 0);
    });
    assert_eq!(step, format!("step {nstep} of a trace of {nstep} steps"));
    let step = message(&|| {
        trace.batch(nstep, &mut Batch::default());
    });
    assert_eq!(step, format!("step {nstep} of a trace of {nstep} steps"));
}

#[test]
fn compare_reports_a_planted_difference() {
    let trace = open("island_island_efc.npz");
    let (mut batch, mut native, mut got) =
        (Batch::default(), Islands::default(), Islands::default());
    let step = trace.nstep() - 1;
    trace.batch(step, &mut batch);
    trace.native(step, &mut native);
    cpu::by_name("dsu")
        .unwrap()
        .solve(&Input::new(trace.model(), &batch).unwrap(), &mut got)
        .unwrap();
    assert_eq!(trace::compare(&got, &native), None);
    let r = batch.world_rowadr[1] as usize;
    got.map_efc2iefc[r] += 1;
    let m = trace::compare(&got, &native).expect("planted mismatch found");
    assert_eq!((m.world, m.field, m.index), (1, "map_efc2iefc", 0));
    assert_eq!(m.got, m.expected + 1);
}

fn expect_trace_error(bytes: &[u8]) -> String {
    match Trace::from_bytes(bytes, "corrupt.npz") {
        Err(Error::Trace { path, detail }) => {
            assert_eq!(path, "corrupt.npz");
            detail
        }
        Err(e) => panic!("expected Error::Trace, got {e}"),
        Ok(_) => panic!("a corrupted trace was accepted"),
    }
}

#[test]
fn truncated_traces_are_typed_errors() {
    let path = traces::dir().join("island_island_efc.npz");
    let bytes = std::fs::read(path).unwrap();
    for len in [
        0,
        1,
        4,
        30,
        100,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 22,
        bytes.len() - 1,
    ] {
        expect_trace_error(&bytes[..len]);
    }
    assert!(Trace::open("/nonexistent/trace.npz").is_err());
}

#[test]
fn flipped_bytes_are_typed_errors_or_detected() {
    let path = traces::dir().join("island_tendon_wrap_dense.npz");
    let bytes = std::fs::read(path).unwrap();
    // Every flip is caught: by the zip layer (CRC, deflate, directory) or by validation. A flip
    // the archive cannot notice (its unused padding) may leave a valid trace, which must then
    // equal the original.
    let reference = Trace::from_bytes(&bytes, "ok").unwrap();
    let step = bytes.len() / 997 + 1;
    for at in (0..bytes.len()).step_by(step) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        if let Ok(t) = Trace::from_bytes(&bad, "corrupt.npz") {
            assert_eq!(
                t.nstep(),
                reference.nstep(),
                "flip at {at} changed the trace silently"
            );
            assert_eq!(t.nrow_total(), reference.nrow_total());
        }
    }
}

/// Rewrites one array of a real trace (through a fresh zip) and checks it is rejected.
mod planted {
    use std::io::{Read, Write};

    pub fn with_array(bytes: &[u8], name: &str, edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut zin = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for i in 0..zin.len() {
            let mut f = zin.by_index(i).unwrap();
            let entry = f.name().to_string();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            if entry == format!("{name}.npy") {
                edit(&mut data);
            }
            out.start_file(entry, zip::write::SimpleFileOptions::default())
                .unwrap();
            out.write_all(&data).unwrap();
        }
        out.finish().unwrap().into_inner()
    }
}

#[test]
fn invalid_contents_are_typed_errors() {
    let path = traces::dir().join("island_island_efc.npz");
    let bytes = std::fs::read(path).unwrap();
    // Byte `back` positions from the end of the array's data (little-endian int32: 4 is the
    // last element's low byte, 1 its high byte).
    fn poke(d: &mut [u8], back: usize, v: u8) {
        let i = d.len() - back;
        d[i] = v;
    }
    fn flip(d: &mut [u8], back: usize) {
        let i = d.len() - back;
        d[i] ^= 1;
    }
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "schema_version",
            Box::new(|d| poke(d, 4, 9)),
            "schema version 9",
        ),
        ("row_support", Box::new(|d| poke(d, 1, 0x7f)), "support"),
        ("slot_rowadr", Box::new(|d| flip(d, 4)), "has shape"),
        ("row_type", Box::new(|d| poke(d, 1, 8)), "type code"),
        ("row_id", Box::new(|d| poke(d, 1, 0x80)), "id"),
        ("row_source", Box::new(|d| poke(d, 1, 0)), "source"),
        ("row_colid", Box::new(|d| poke(d, 1, 0x80)), "contact data"),
        ("tree_awake", Box::new(|d| poke(d, 1, 2)), "tree_awake"),
        (
            "map_iefc2efc",
            Box::new(|d| poke(d, 1, 0x40)),
            "map_iefc2efc",
        ),
        ("dof_treeid", Box::new(|d| flip(d, 4)), "model"),
        ("nisland", Box::new(|d| d.truncate(d.len() - 4)), "nisland"),
    ];
    for (array, edit, needle) in cases {
        let detail = expect_trace_error(&planted::with_array(&bytes, array, edit));
        assert!(
            detail.contains(needle),
            "editing `{array}`: `{detail}` does not mention `{needle}`"
        );
    }
    // A rowless hyperedge's flex id past the model's flexes.
    let flex = std::fs::read(traces::dir().join("flex_trampoline.npz")).unwrap();
    let edit = planted::with_array(
        &flex,
        "edge_id",
        Box::new(|d: &mut Vec<u8>| poke(d, 1, 0x40)),
    );
    let detail = expect_trace_error(&edit);
    assert!(
        detail.contains("rowless hyperedge") && detail.contains("outside"),
        "{detail}"
    );
}

/// Native 4.0.0 (`tools/probe_native_rules.py`: a stiff flex with one free vertex and another
/// with two, next to a box resting on the floor): the two-tree flex forms an island without any
/// row, the one-tree flex forms none, unlike a one-tree row. Every CPU mode and the oracle agree.
#[test]
fn rowless_hyperedges_couple_but_do_not_make_islands_alone() {
    let model = archipelago::Model::from_dofnum(&[6, 3, 3, 3, 3]).unwrap();
    let mut b = Batch::builder();
    b.row(archipelago::RowType::ContactPyramidal, 0, &[0])
        .rowless(0, &[1])
        .rowless(1, &[2, 3])
        .rowless(2, &[])
        .rowless(3, &[4, 4])
        .end_world();
    // Without rows nothing is an island, whatever the rowless hyperedges.
    b.rowless(1, &[2, 3]).rowless(0, &[4]).end_world();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let expected = archipelago::oracle::solve(&input);
    assert_eq!(expected.world(0).tree_island, &[0, -1, 1, 1, -1]);
    assert_eq!(expected.world(0).nisland, 2);
    assert_eq!(expected.world(1).nisland, 0);
    assert_eq!(expected.world(1).tree_island, &[-1; 5]);
    for name in cpu::NAMES {
        let mut got = Islands::default();
        cpu::by_name(name).unwrap().solve(&input, &mut got).unwrap();
        assert_eq!(got.first_mismatch(&expected), None, "mode {name}");
    }
}

/// Native 4.0.0 with sleep on, the discrete integrator and a coupling flex
/// (`tools/probe_native_rules.py`): `mj_island` does not return in a world without rows, and the
/// rowless hyperedges alone make islands there, one-tree ones still none. Every CPU mode, the
/// engine's modes and the oracle agree.
#[test]
fn a_model_may_find_islands_without_rows() {
    let model = archipelago::Model::from_dofnum(&[6, 3, 3, 3, 3])
        .unwrap()
        .with_islands_without_rows(true);
    let mut b = Batch::builder();
    b.rowless_of(archipelago::EdgeKind::Tendon, 0, &[2, 3])
        .rowless(0, &[4])
        .rowless_of(archipelago::EdgeKind::PassiveContact, 5, &[0, 1])
        .end_world();
    b.end_world();
    b.row(archipelago::RowType::ContactPyramidal, 0, &[0])
        .rowless_of(archipelago::EdgeKind::Actuator, 1, &[1, 3])
        .end_world();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let expected = archipelago::oracle::solve(&input);
    assert_eq!(expected.world(0).tree_island, &[0, 0, 1, 1, -1]);
    assert_eq!(expected.world(1).nisland, 0);
    assert_eq!(expected.world(2).tree_island, &[0, 1, -1, 1, -1]);
    for name in cpu::NAMES {
        let mut got = Islands::default();
        cpu::by_name(name).unwrap().solve(&input, &mut got).unwrap();
        assert_eq!(got.first_mismatch(&expected), None, "mode {name}");
    }
    for mode in [archipelago::Mode::Quotient, archipelago::Mode::Auto] {
        let cap = archipelago::Capacity::fit(&model, &batch);
        let options = archipelago::Options {
            mode,
            ..Default::default()
        };
        let mut engine = archipelago::Engine::new(&model, cap, options).unwrap();
        for _ in 0..3 {
            let got = engine.step(&batch, &invalidation::Events::new()).unwrap();
            assert_eq!(got.first_mismatch(&expected), None, "{mode:?}");
        }
    }
}

#[path = "support/mini_trace.rs"]
mod mini;

/// A slot without rows whose tendon coupling makes an island: read only under
/// `islands_without_rows`, and then replayed exactly; an unknown kind and an id past its kind's
/// count are refused.
#[test]
fn a_trace_may_have_islands_without_rows() {
    let set = |arrays: &mut mini::Arrays, name: &str, shape: Vec<usize>, v: &[i32]| match arrays
        .iter_mut()
        .find(|a| a.0 == name)
    {
        Some(a) => {
            a.1 = shape;
            a.3 = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        }
        None => arrays.push((
            name.into(),
            shape,
            "<i4",
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )),
    };
    // One step, two trees, no row; tendon 0 couples both.
    let mut arrays = mini::arrays_of(1, 2);
    set(&mut arrays, "slot_rowadr", vec![2], &[0, 0]);
    set(&mut arrays, "row_supadr", vec![1], &[0]);
    for name in ["row_id", "row_source", "row_support", "row_colid"] {
        set(&mut arrays, name, vec![0], &[]);
    }
    set(&mut arrays, "row_geom", vec![0, 2], &[]);
    set(&mut arrays, "row_flex", vec![0, 2], &[]);
    let a = arrays.iter_mut().find(|a| a.0 == "row_type").unwrap();
    (a.1, a.3) = (vec![0], vec![]);
    for name in ["efc_island", "map_efc2iefc", "map_iefc2efc"] {
        set(&mut arrays, name, vec![0], &[]);
    }
    set(&mut arrays, "ntendon", vec![], &[1]);
    set(&mut arrays, "slot_edgeadr", vec![2], &[0, 1]);
    set(&mut arrays, "edge_id", vec![1], &[0]);
    arrays.push(("edge_kind".into(), vec![1], "|u1", vec![1]));
    set(&mut arrays, "edge_supadr", vec![2], &[0, 2]);
    set(&mut arrays, "edge_support", vec![2], &[0, 1]);
    set(&mut arrays, "nidof", vec![1], &[2]);
    for (name, v) in [
        ("island_ntree", 2),
        ("island_nv", 2),
        ("island_nf", 0),
        ("island_nefc", 0),
    ] {
        set(&mut arrays, name, vec![1], &[v]);
    }
    for name in ["tree_island", "dof_island"] {
        set(&mut arrays, name, vec![1, 2], &[0, 0]);
    }
    // Without the flag, an island in a slot without rows is a corrupted file.
    let detail = expect_trace_error(&mini::npz(&arrays));
    assert!(detail.contains("islands_without_rows"), "{detail}");
    set(&mut arrays, "islands_without_rows", vec![], &[1]);
    let t = Trace::from_bytes(&mini::npz(&arrays), "mini.npz").unwrap();
    assert!(t.model().islands_without_rows());
    assert_eq!(trace::replay(&t, &mut Oracle).unwrap().mismatches, 0);
    for name in cpu::NAMES {
        let report = trace::replay(&t, cpu::by_name(name).unwrap().as_mut()).unwrap();
        assert_eq!((report.steps, report.mismatches), (1, 0), "mode {name}");
    }
    let mut bad = arrays.clone();
    bad.iter_mut().find(|a| a.0 == "edge_kind").unwrap().3 = vec![4];
    let detail = expect_trace_error(&mini::npz(&bad));
    assert!(detail.contains("edge_kind"), "{detail}");
    let mut bad = arrays.clone();
    set(&mut bad, "edge_id", vec![1], &[1]);
    let detail = expect_trace_error(&mini::npz(&bad));
    assert!(detail.contains("Tendon"), "{detail}");
    set(&mut arrays, "islands_without_rows", vec![], &[2]);
    let detail = expect_trace_error(&mini::npz(&arrays));
    assert!(detail.contains("islands_without_rows"), "{detail}");
}

#[test]
fn a_trace_written_from_scratch_replays() {
    let t = Trace::from_bytes(&mini::npz(&mini::arrays(3)), "mini.npz").unwrap();
    let report = trace::replay(&t, cpu::by_name("dsu").unwrap().as_mut()).unwrap();
    assert_eq!((report.steps, report.mismatches), (3, 0));
    // Trees without rows, in no island, after the island's.
    let t = Trace::from_bytes(&mini::npz(&mini::arrays_of(2, 5)), "mini.npz").unwrap();
    assert_eq!(trace::replay(&t, &mut Oracle).unwrap().mismatches, 0);
    for name in cpu::NAMES {
        let report = trace::replay(&t, cpu::by_name(name).unwrap().as_mut()).unwrap();
        assert_eq!((report.steps, report.mismatches), (2, 0), "mode {name}");
    }
}

/// A trace without a step checks nothing, and every step-indexed accessor (a bench's busiest
/// step, `Trace::step(0)`) would index past its arrays.
#[test]
fn a_trace_without_steps_is_refused() {
    let detail = expect_trace_error(&mini::npz(&mini::arrays(0)));
    assert!(detail.contains("nstep"), "{detail}");
}

/// Each side of a contact is a geom or a flex (the other −1), as MuJoCo's `contact.geom` and
/// `contact.flex` are: a side that is neither (or both) would be keyed as flex 0.
#[test]
fn a_contact_side_is_a_geom_or_a_flex() {
    let path = traces::dir().join("replicate_bowl.npz");
    let bytes = std::fs::read(path).unwrap();
    let t = Trace::from_bytes(&bytes, "ok").unwrap();
    // The first contact row of the whole trace (rows are step-major).
    let first = (0..t.nstep())
        .flat_map(|s| t.row_extra(s).colid.to_vec())
        .position(|c| c >= 0)
        .unwrap();
    // The contact's geom at side 0 (int32 at byte 8·row of the data) set to −1, flex kept −1.
    for geom in [-1, 3] {
        let edited = planted::with_array(&bytes, "row_geom", |d| {
            let at = d.len() - 8 * t.nrow_total() + 8 * first;
            d[at..at + 4].copy_from_slice(&i32::to_le_bytes(geom));
        });
        let edited = if geom >= 0 {
            // Both a geom and a flex at side 0.
            planted::with_array(&edited, "row_flex", |d| {
                let at = d.len() - 8 * t.nrow_total() + 8 * first;
                d[at..at + 4].copy_from_slice(&i32::to_le_bytes(0));
            })
        } else {
            edited
        };
        let detail = expect_trace_error(&edited);
        assert!(detail.contains("contact"), "{detail}");
    }
}

/// Slots without rows hold archipelago's convention (−1, identity maps), not native data; any
/// other value there is a corrupted file, not something to skip silently.
#[test]
fn slots_without_islands_hold_the_convention() {
    let mut arrays = mini::arrays(2);
    // Slot 1 without its row: no islands there.
    let set = |arrays: &mut mini::Arrays, name: &str, shape: Vec<usize>, v: &[i32]| {
        let a = arrays.iter_mut().find(|a| a.0 == name).unwrap();
        a.1 = shape;
        a.3 = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    };
    set(&mut arrays, "slot_rowadr", vec![3], &[0, 1, 1]);
    set(&mut arrays, "row_supadr", vec![2], &[0, 1]);
    for name in ["row_id", "row_source", "row_support", "row_colid"] {
        let v = if name == "row_colid" { -1 } else { 0 };
        set(&mut arrays, name, vec![1], &[v]);
    }
    set(&mut arrays, "row_geom", vec![1, 2], &[-1, -1]);
    set(&mut arrays, "row_flex", vec![1, 2], &[-1, -1]);
    let a = arrays.iter_mut().find(|a| a.0 == "row_type").unwrap();
    (a.1, a.3) = (vec![1], vec![1]);
    for name in ["efc_island", "map_efc2iefc", "map_iefc2efc"] {
        set(&mut arrays, name, vec![1], &[0]);
    }
    set(&mut arrays, "nisland", vec![2], &[1, 0]);
    set(&mut arrays, "nidof", vec![2], &[1, 0]);
    set(&mut arrays, "slot_islandadr", vec![3], &[0, 1, 1]);
    for name in archipelago::trace::ISLAND_FIELDS {
        let v = arrays.iter().find(|a| a.0 == name).unwrap().3[..4].to_vec();
        let a = arrays.iter_mut().find(|a| a.0 == name).unwrap();
        (a.1, a.3) = (vec![1], v);
    }
    set(&mut arrays, "tree_island", vec![2, 1], &[0, -1]);
    set(&mut arrays, "dof_island", vec![2, 1], &[0, -1]);
    let t = Trace::from_bytes(&mini::npz(&arrays), "mini.npz").unwrap();
    let report = trace::replay(&t, cpu::by_name("dsu").unwrap().as_mut()).unwrap();
    assert_eq!((report.steps, report.mismatches), (2, 0));
    // tree_island of the slot without islands says 0: refused.
    set(&mut arrays, "tree_island", vec![2, 1], &[0, 0]);
    let detail = expect_trace_error(&mini::npz(&arrays));
    assert!(detail.contains("tree_island"), "{detail}");
}
