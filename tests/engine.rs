//! Random sequences of `Engine` calls on the CPU — steps with events, batches of fewer worlds
//! than the capacity, rows in shuffled order, resizes, policy changes, and refused calls in
//! between — in every mode, reuse on and off, deterministic or not: every step's outputs equal
//! the oracle on the same rows (deterministic: on the rows in the order the engine reports), and
//! a refused call changes nothing the engine reports.

#[path = "support/options.rs"]
mod options;
#[path = "support/quotient_scenes.rs"]
mod scenes;

use archipelago::order::{RowKeys, gather};
use archipelago::quotient::{EqPolicy, Policy};
use archipelago::{Batch, Capacity, Engine, Input, Islands, Mode, Model, Options, RowType, oracle};
use invalidation::{Decision, Events};
use scenes::{Rng, Scene, Tally, World};

/// What a refused call must leave as it was.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    islands: Islands,
    order: Vec<u32>,
    last_mode: Mode,
    decision: Decision,
    capacity: Capacity,
    options: Options,
}

fn seen(e: &Engine) -> Seen {
    Seen {
        islands: e.islands().clone(),
        order: e.order().to_vec(),
        last_mode: e.last_mode(),
        decision: e.decision().clone(),
        capacity: e.capacity(),
        options: e.options().clone(),
    }
}

/// Each world's rows shuffled, with keys that travel with them (contacts named by their row in
/// the unshuffled batch, so the canonical order is the same whatever the shuffle).
fn shuffled(batch: &Batch, rng: &mut Rng) -> (Batch, RowKeys) {
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    for w in 0..batch.nworld() {
        let mut rows: Vec<usize> = batch.rows_of(w).collect();
        rng.shuffle(&mut rows);
        for r in rows {
            b.row(batch.row_type[r], batch.row_id[r], batch.row_support_of(r));
            if batch.row_type[r].is_contact() {
                keys.push_contact([r as i32, 0], 0);
            } else {
                keys.push_other();
            }
        }
        b.edges_from(batch, w);
        b.end_world();
    }
    (b.finish(), keys)
}

fn random_policy(rng: &mut Rng, neq: usize) -> Policy {
    let eq = match rng.below(5) {
        0 => EqPolicy::Static,
        1 => EqPolicy::Dynamic,
        2 => EqPolicy::Learn {
            after: 1 + rng.below(3) as u32,
        },
        3 => EqPolicy::DynamicIds(
            (0..neq as i32)
                .filter(|_| rng.chance(0.3))
                .collect::<Vec<_>>(),
        ),
        _ => EqPolicy::default(),
    };
    Policy {
        eq,
        friction_static: rng.chance(0.8),
        flex_static: rng.chance(0.8),
    }
}

/// A call the engine must refuse, leaving everything as it was.
fn refused_call(
    e: &mut Engine,
    rng: &mut Rng,
    scene: &Scene,
    batch: &Batch,
    keys: &RowKeys,
) -> String {
    let cap = e.capacity();
    let ntree = scene.ntree();
    let deterministic = e.options().deterministic;
    let step = |e: &mut Engine, b: &Batch, k: &RowKeys, ev: &Events| match deterministic {
        true => e.step_keyed(b, k, ev).map(|_| ()),
        false => e.step(b, ev).map(|_| ()),
    };
    let mut events = Events::new();
    let (what, result) = match rng.below(7) {
        0 => {
            events.sleep(cap.nworld as u32 + rng.below(3) as u32, 0);
            ("an event past the worlds", step(e, batch, keys, &events))
        }
        1 => {
            // A valid event first: nothing of it may stay recorded either.
            events.eq_active(0, 0, false);
            events.wake(0, (ntree + rng.below(3)) as i32);
            ("an event past the trees", step(e, batch, keys, &events))
        }
        2 => {
            let mut b = Batch::builder();
            b.worlds_from(batch);
            for _ in batch.nworld()..=cap.nworld {
                b.end_world();
            }
            let k = RowKeys::non_contact(batch.nrow());
            let over = b.finish();
            let k = if deterministic { keys } else { &k };
            ("a batch over capacity", step(e, &over, k, &events))
        }
        3 => {
            let mut b = Batch::builder();
            b.row(RowType::ContactPyramidal, 0, &[ntree as i32])
                .end_world();
            let bad = b.finish();
            let k = RowKeys::non_contact(1);
            ("a tree out of range", step(e, &bad, &k, &events))
        }
        4 => {
            let other = Model::from_dofnum(&vec![1; ntree]).unwrap();
            let result = match other == *e.model() {
                true => Err(archipelago::Error::Model("same".into())),
                false => Input::new(&other, &Batch::default())
                    .and_then(|i| e.step_input(&i, &events).map(|_| ())),
            };
            ("another model", result)
        }
        5 if deterministic => (
            "a plain step of a deterministic engine",
            e.step(batch, &events).map(|_| ()),
        ),
        5 | 6 if deterministic && batch.nrow() > 0 => {
            let short = RowKeys::non_contact(batch.nrow() - 1);
            (
                "keys of too few rows",
                e.step_keyed(batch, &short, &events).map(|_| ()),
            )
        }
        _ => {
            let small = Capacity {
                ntree: ntree - 1,
                ..cap
            };
            ("a resize too small", e.resize(small))
        }
    };
    assert!(result.is_err(), "{what} was not refused");
    what.to_string()
}

struct Sequence {
    steps: u64,
    refused: u64,
}

/// One engine through a random sequence of calls, checked against the oracle at every step.
fn sequence(seed: u64, options: &Options, ncall: usize, resizes: bool) -> Sequence {
    let mut rng = Rng::new(seed);
    let ntree = match rng.chance(0.2) {
        true => 20 + rng.below(40),
        false => 3 + rng.below(14),
    };
    let mut scene = Scene::random(&mut rng, ntree, ntree / 2, ntree / 4);
    scene.sleeps = rng.chance(0.7);
    let mut nworld = 1 + rng.below(5);
    let mut e = Engine::new(&scene.model, scene.capacity(nworld), options.clone()).unwrap();
    let mut worlds = vec![World::new(&scene); 8];
    let mut last: Vec<Vec<i32>> = vec![vec![-1; ntree]; 8];
    let mut prev = Batch::default();
    let mut tally = Tally::default();
    let (mut steps, mut refused) = (0, 0);
    let mut carried = Events::new();
    for call in 0..ncall {
        let label = format!("seed {seed} {options:?} call {call}");
        match rng.below(20) {
            0 if resizes => {
                nworld = 1 + rng.below(6);
                e.resize(scene.capacity(nworld)).unwrap();
                // A resize drops every quotient: events not yet told no longer matter.
                carried.clear();
                continue;
            }
            1 => {
                e.set_policy(random_policy(&mut rng, scene.eqs.len()));
                continue;
            }
            _ => {}
        }
        // Mostly the whole capacity, sometimes fewer worlds (none at all now and then).
        let k = match rng.below(4) {
            0 => rng.below(nworld + 1),
            _ => nworld,
        };
        let mut events = std::mem::take(&mut carried);
        let report = if rng.chance(0.5) { 1.0 } else { 0.8 };
        for w in 0..nworld {
            if rng.chance(0.3) {
                scenes::mutate(
                    &scene,
                    &mut worlds[w],
                    w as u32,
                    &last[w],
                    &mut rng,
                    report,
                    &mut events,
                    &mut tally,
                );
            }
        }
        if rng.chance(0.01) {
            events.capacity_changed(); // every world rebuilt
        }
        let repeat: Vec<bool> = (0..k).map(|_| rng.chance(0.5)).collect();
        let batch = scenes::batch_repeating(&scene, &worlds[..k], &prev, &repeat, &mut rng);
        let (batch, keys) = shuffled(&batch, &mut rng);
        if rng.chance(0.15) {
            let before = seen(&e);
            let what = refused_call(&mut e, &mut rng, &scene, &batch, &keys);
            let after = seen(&e);
            assert_eq!(
                after.order, before.order,
                "{label}: {what} changed the order"
            );
            assert!(after == before, "{label}: {what} changed the engine");
            refused += 1;
            // The events of the changes are still to be told (or not, at random).
            if rng.chance(0.7) {
                carried = events;
            }
            continue;
        }
        let got = match options.deterministic {
            true => e.step_keyed(&batch, &keys, &events),
            false => e.step(&batch, &events),
        }
        .unwrap_or_else(|err| panic!("{label}: {err}"))
        .clone();
        // Deterministic: the outputs refer to the rows in the order the engine reports.
        let mut canonical = Batch::default();
        let rows = match options.deterministic {
            true => {
                gather::gather(&batch, e.order(), &mut canonical).unwrap();
                &canonical
            }
            false => &batch,
        };
        let want = oracle::solve(&Input::new(&scene.model, rows).unwrap());
        if let Some(m) = got.first_mismatch(&want) {
            panic!(
                "{label}: {m} (mode {:?}, {} of {nworld} worlds)",
                e.last_mode(),
                batch.nworld()
            );
        }
        for (w, l) in last.iter_mut().enumerate().take(k) {
            l.copy_from_slice(want.world(w).tree_island);
        }
        steps += 1;
        prev = batch;
    }
    Sequence { steps, refused }
}

fn seeds() -> u64 {
    std::env::var("ARCHIPELAGO_ENGINE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

#[test]
fn random_call_sequences_match_the_oracle_and_refusals_change_nothing() {
    let (mut steps, mut refused) = (0, 0);
    for options in options::every() {
        for seed in 0..seeds() {
            let s = sequence(seed, &options, 80, true);
            steps += s.steps;
            refused += s.refused;
        }
    }
    eprintln!("{steps} steps checked, {refused} refused calls");
    assert!(refused > 0 && steps > 0);
}

#[test]
fn auto_stays_exact_through_its_trials_and_retrials() {
    // Without resizes (each starts `auto` afresh), past the first retrial at step 1,024.
    for reuse in [true, false] {
        let options = Options {
            reuse,
            ..Options::default()
        };
        for seed in 0..3 {
            let s = sequence(seed, &options, 3000, false);
            assert!(s.steps > 2048, "{} steps", s.steps);
        }
    }
}

/// A deterministic engine with one world of three one-dof trees.
fn deterministic_engine(mode: Mode) -> Engine {
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let capacity = Capacity {
        nworld: 1,
        ntree: 3,
        nv: 3,
        njmax: 4,
        nsupport: 8,
        nedge: 0,
    };
    let options = Options {
        mode,
        deterministic: true,
        ..Options::default()
    };
    Engine::new(&model, capacity, options).unwrap()
}

/// Two contacts whose keys put them in canonical order `first_last` or reversed.
fn two_contacts(reversed: bool) -> (Batch, RowKeys) {
    let (mut b, mut keys) = (Batch::builder(), RowKeys::default());
    let geoms = if reversed {
        [[5, 6], [1, 2]]
    } else {
        [[1, 2], [5, 6]]
    };
    b.row(RowType::ContactPyramidal, 0, &[0, 1]);
    keys.push_contact(geoms[0], 0);
    b.row(RowType::ContactPyramidal, 1, &[2]);
    keys.push_contact(geoms[1], 0);
    b.end_world();
    (b.finish(), keys)
}

#[test]
fn a_keyed_step_refused_for_its_events_keeps_the_last_steps_order() {
    for mode in Mode::ALL {
        let mut e = deterministic_engine(mode);
        let (batch, keys) = two_contacts(false);
        e.step_keyed(&batch, &keys, &Events::new()).unwrap();
        let before = seen(&e);
        assert_eq!(before.order, [0, 1]);
        let (batch, keys) = two_contacts(true);
        let mut events = Events::new();
        events.sleep(7, 0); // no world 7
        assert!(e.step_keyed(&batch, &keys, &events).is_err());
        assert_eq!(
            e.order(),
            before.order,
            "{mode:?}: the order of the refused step"
        );
        assert!(seen(&e) == before, "{mode:?}");
    }
}

#[test]
fn a_dense_engine_too_large_for_its_cap_is_refused_when_built() {
    // 8·3·8192² bytes = 1.5 GiB, over the 1 GiB cap: every step of three worlds would be
    // refused, after its events were recorded.
    let model = Model::from_dofnum(&vec![1; 8192]).unwrap();
    let mut capacity = Capacity::fit(&model, &Batch::default());
    capacity.nworld = 3;
    let options = |mode| Options {
        mode,
        ..Options::default()
    };
    let err = Engine::new(&model, capacity, options(Mode::Dense)).unwrap_err();
    assert!(
        matches!(err, archipelago::Error::Refused { mode: "dense", .. }),
        "{err}"
    );
    // Two worlds fit (1 GiB), and every other mode takes three.
    capacity.nworld = 2;
    let mut e = Engine::new(&model, capacity, options(Mode::Dense)).unwrap();
    let err = e
        .resize(Capacity {
            nworld: 3,
            ..capacity
        })
        .unwrap_err();
    assert!(matches!(err, archipelago::Error::Refused { .. }), "{err}");
    assert_eq!(
        e.capacity(),
        capacity,
        "a refused resize changed the capacity"
    );
    capacity.nworld = 3;
    for mode in [Mode::Dsu, Mode::Labelprop, Mode::Quotient, Mode::Auto] {
        Engine::new(&model, capacity, options(mode)).unwrap();
    }
}

#[test]
fn before_its_first_step_an_engine_names_the_mode_that_will_solve_it() {
    let model = Model::from_dofnum(&[1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::ContactPyramidal, 0, &[0, 1]).end_world();
    let batch = b.finish();
    for mode in Mode::ALL {
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut e = Engine::new(&model, Capacity::fit(&model, &batch), options).unwrap();
        let before = e.last_mode();
        e.step(&batch, &Events::new()).unwrap();
        assert_eq!(before, e.last_mode(), "{}", mode.name());
    }
}

#[test]
fn an_engine_steps_on_the_thread_it_is_moved_to() {
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[0, 1]).end_world();
    b.row(RowType::ContactPyramidal, 0, &[1, 2]).end_world();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let want = oracle::solve(&input);
    for mode in [
        Mode::Auto,
        Mode::Quotient,
        Mode::Dsu,
        Mode::Dense,
        Mode::Labelprop,
    ] {
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut engine = Engine::new(&model, Capacity::fit(&model, &batch), options).unwrap();
        let (batch, want) = (batch.clone(), want.clone());
        // A simulation's worker thread owns the engine from here on.
        let got = std::thread::spawn(move || engine.step(&batch, &Events::new()).unwrap().clone())
            .join()
            .unwrap();
        assert_eq!(got.first_mismatch(&want), None, "{mode:?}");
    }
}

/// An engine of no world (what a GPU engine's resize stands on while it frees the device's
/// buffers) builds in every mode and steps an empty batch.
#[test]
fn an_engine_of_no_world_builds_and_steps() {
    let model = Model::from_dofnum(&[1, 2, 3]).unwrap();
    let capacity = Capacity {
        nworld: 0,
        ntree: 3,
        nv: 6,
        njmax: 8,
        nsupport: 16,
        nedge: 1,
    };
    for options in options::every() {
        let deterministic = options.deterministic;
        let mut e = Engine::new(&model, capacity, options.clone()).unwrap();
        let empty = Batch::builder().finish();
        let out = match deterministic {
            false => e.step(&empty, &Events::new()),
            true => e.step_keyed(&empty, &RowKeys::default(), &Events::new()),
        };
        assert_eq!(out.unwrap().nworld, 0, "{options:?}");
    }
}
