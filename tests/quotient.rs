//! The quotient mode source by source: every invalidation source toggled, reported and not,
//! checked against a full rebuild and the oracle, with the decision and its cause.

#[path = "support/quotient_scenes.rs"]
mod scenes;
#[path = "support/traces.rs"]
mod traces;

use archipelago::cpu::{CpuMode, dsu::Dsu};
use archipelago::quotient::{EqPolicy, Policy};
use archipelago::{
    Batch, Capacity, EdgeKind, Engine, Error, Input, Islands, Mode, Model, Options, RowType,
};
use archipelago::{cpu, oracle};
use invalidation::{Cause, Edit, Event, Events, GuardFinding, Verdict};

/// Eight one-dof trees. Static: equality 0 on {0,1} (3 rows), equality 1 on {1,2}, dof friction
/// on tree 4, tendon 0 friction on {5,6}, flex 0 on {6,7}. Dynamic: a contact {2,3}, a limit on 4.
#[derive(Debug, Clone)]
struct Spec {
    eq: [bool; 2],
    eq1: Vec<i32>,
    /// Equality 1's rows' id (1 unless a test renumbers them).
    eq1_id: i32,
    extra_eq: Option<Vec<i32>>,
    friction: bool,
    tendon: bool,
    flex: Option<Vec<i32>>,
    /// A rowless coupling of another kind (the discrete integrator's), if any.
    coupling: Option<(EdgeKind, i32, Vec<i32>)>,
    asleep: Vec<i32>,
    contacts: Vec<Vec<i32>>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            eq: [true; 2],
            eq1: vec![1, 2],
            eq1_id: 1,
            extra_eq: None,
            friction: true,
            tendon: true,
            flex: Some(vec![6, 7]),
            coupling: None,
            asleep: vec![],
            contacts: vec![vec![2, 3]],
        }
    }
}

fn model() -> Model {
    Model::from_dofnum(&[1; 8]).unwrap()
}

fn capacity(nworld: usize) -> Capacity {
    Capacity {
        nworld,
        ntree: 8,
        nv: 8,
        njmax: 32,
        nsupport: 96,
        nedge: 2,
    }
}

fn build(specs: &[Spec]) -> Batch {
    let mut b = Batch::builder();
    for s in specs {
        let awake = |sup: &[i32]| sup.iter().all(|t| !s.asleep.contains(t));
        if s.eq[0] && awake(&[0, 1]) {
            for _ in 0..3 {
                b.row(RowType::Equality, 0, &[0, 1]);
            }
        }
        if s.eq[1] && awake(&s.eq1) {
            b.row(RowType::Equality, s.eq1_id, &s.eq1);
        }
        if let Some(sup) = s.extra_eq.as_ref().filter(|sup| awake(sup)) {
            b.row(RowType::Equality, 2, sup);
        }
        if s.friction && awake(&[4]) {
            b.row(RowType::FrictionDof, 4, &[4]);
        }
        if s.tendon && awake(&[5, 6]) {
            b.row(RowType::FrictionTendon, 0, &[5, 6]);
        }
        if awake(&[4]) {
            b.row(RowType::LimitJoint, 4, &[4]);
        }
        for (c, sup) in s.contacts.iter().enumerate() {
            b.row(RowType::ContactPyramidal, c as i32, sup);
        }
        if let Some(flex) = &s.flex {
            let live: Vec<i32> = flex.iter().copied().filter(|t| awake(&[*t])).collect();
            if !live.is_empty() {
                b.rowless(0, &live);
            }
        }
        if let Some((kind, id, trees)) = &s.coupling {
            let live: Vec<i32> = trees.iter().copied().filter(|t| awake(&[*t])).collect();
            b.rowless_of(*kind, *id, &live);
        }
        b.end_world();
    }
    b.finish()
}

fn engine(nworld: usize, policy: Policy) -> Engine {
    let options = Options {
        mode: Mode::Quotient,
        policy,
        ..Options::default()
    };
    Engine::new(&model(), capacity(nworld), options).unwrap()
}

/// Steps `engine` and checks every output against the oracle and `dsu`.
fn step(engine: &mut Engine, specs: &[Spec], events: &Events) -> Islands {
    let model = model();
    let batch = build(specs);
    let input = Input::new(&model, &batch).unwrap();
    let want = oracle::solve(&input);
    let mut full = Islands::default();
    Dsu::default().solve(&input, &mut full).unwrap();
    assert_eq!(full.first_mismatch(&want), None);
    let got = engine.step(&batch, events).unwrap().clone();
    assert_eq!(got.first_mismatch(&want), None, "{specs:?}");
    got
}

/// An engine over `nworld` worlds of the default spec without contacts, after a first step with
/// every tree awake.
fn awake_without_contacts(nworld: usize) -> (Engine, Vec<Spec>) {
    let mut e = engine(nworld, Policy::default());
    let mut specs = vec![Spec::default(); nworld];
    for s in &mut specs {
        s.contacts.clear();
    }
    step(&mut e, &specs, &Events::new());
    (e, specs)
}

fn causes(engine: &Engine) -> Vec<(u32, Cause)> {
    engine.decision().worlds().collect()
}

#[test]
fn unchanged_worlds_reuse_one_shared_quotient() {
    let mut e = engine(4, Policy::default());
    let specs = vec![Spec::default(); 4];
    step(&mut e, &specs, &Events::new());
    assert_eq!(
        causes(&e),
        (0..4).map(|w| (w, Cause::Initial)).collect::<Vec<_>>()
    );
    let c = e.quotient().counters();
    assert_eq!((c.contracted, c.shared), (1, 3));
    assert_eq!(e.quotient().cache().live_slots(), 1);
    for _ in 0..3 {
        step(&mut e, &specs, &Events::new());
        assert_eq!(e.decision().verdict(), Verdict::Reuse);
    }
    assert_eq!(e.quotient().counters().contracted, 1);
}

/// A build scans a world against the slot the build before gave (worlds built in a row tend to
/// be alike) and keys it in the same pass: a world that matches it shares it, one whose rows
/// span its nodes (B after A, A after B) is keyed in a pass of its own; one scanned whole that
/// does not match (C after A: a node without its rows; A after C: rows where a node has none)
/// keeps the key of that scan. Either way it shares the slot of its own incidence or contracts
/// a new one.
#[test]
fn worlds_built_in_a_row_share_the_slot_of_their_own_incidence() {
    let a = Spec::default();
    let b = Spec {
        eq1: vec![1, 3],
        ..Spec::default()
    };
    let c = Spec {
        friction: false,
        ..Spec::default()
    };
    let specs = [&a, &b, &a, &a, &c, &a, &b].map(Spec::clone);
    let mut e = engine(specs.len(), Policy::default());
    step(&mut e, &specs, &Events::new());
    let counters = e.quotient().counters();
    assert_eq!((counters.contracted, counters.shared), (3, 4));
    let cache = e.quotient().cache();
    assert_eq!(cache.live_slots(), 3);
    let slot: Vec<u32> = (0..specs.len())
        .map(|w| cache.slot_of(w).unwrap())
        .collect();
    assert_eq!([slot[2], slot[3], slot[5]], [slot[0]; 3], "{slot:?}");
    assert_eq!(slot[6], slot[1], "{slot:?}");
    assert!(slot[4] != slot[0] && slot[4] != slot[1], "{slot:?}");
    assert_ne!(slot[0], slot[1]);
}

#[test]
fn unchanged_worlds_reuse_their_outputs_exactly() {
    let mut e = engine(4, Policy::default());
    let reused = |e: &Engine| e.quotient().counters().reused;
    let base = vec![Spec::default(); 4];
    // A contact more in world 0 moves every later world's rows; world 2's contact moves to
    // other trees; world 3 gains a second contact on the same trees (same partition).
    let mut moved = base.clone();
    moved[0].contacts.push(vec![4, 5]);
    moved[2].contacts = vec![vec![2, 5]];
    moved[3].contacts.push(vec![2, 3]);
    // (batch, worlds reused at that step)
    let plan: [(&[Spec], u64); 7] = [
        (&base, 0), // nothing cached yet
        (&base, 4),
        (&moved, 1),      // only world 1 unchanged, at moved rows
        (&moved[..2], 2), // fewer worlds
        (&moved, 4),      // worlds 2 and 3 come back unchanged since their last solve
        (&base, 1),
        (&base, 4),
    ];
    for (k, (specs, want)) in plan.into_iter().enumerate() {
        let before = reused(&e);
        step(&mut e, specs, &Events::new());
        assert_eq!(reused(&e) - before, want, "step {k}");
    }
    // A reported event changes nothing the outputs depend on while the rows stay: still reused.
    let mut events = Events::new();
    events.edit(Some(0), Edit::EqRetargeted { eq: 1 });
    let before = reused(&e);
    step(&mut e, &base, &events);
    assert_eq!(reused(&e) - before, 4);
    // Without reuse every world is solved.
    let mut off = Engine::new(
        &model(),
        capacity(4),
        Options {
            mode: Mode::Quotient,
            reuse: false,
            ..Options::default()
        },
    )
    .unwrap();
    for _ in 0..3 {
        step(&mut off, &base, &Events::new());
    }
    assert_eq!(reused(&off), 0);
}

/// One world of three one-dof trees per entry, each with equality 0 on trees {0, 1}.
fn eq0_worlds(nworld: usize) -> Batch {
    let mut b = Batch::builder();
    for _ in 0..nworld {
        b.row(RowType::Equality, 0, &[0, 1]).end_world();
    }
    b.finish()
}

/// One world of [`eq0_worlds`] stepped by a CPU quotient under the default policy (equalities
/// learned: dynamic once switched twice).
struct OneEq {
    model: Model,
    batch: Batch,
    q: archipelago::quotient::Quotient,
    out: Islands,
}

impl OneEq {
    fn new() -> OneEq {
        let (model, batch) = (Model::from_dofnum(&[1, 1, 1]).unwrap(), eq0_worlds(1));
        let cap = Capacity::fit(&model, &batch);
        OneEq {
            q: archipelago::quotient::Quotient::new(&cap, Policy::default()),
            model,
            batch,
            out: Islands::default(),
        }
    }

    fn step(&mut self, events: &Events) -> archipelago::Result<()> {
        let input = Input::new(&self.model, &self.batch).unwrap();
        self.q.step(&input, events, &mut self.out)
    }
}

#[test]
fn refused_events_teach_the_learning_policy_nothing() {
    // Two switches of the static equality would turn it dynamic; beside an event out of range,
    // the quotient refuses them all and learns nothing.
    let mut one = OneEq::new();
    one.step(&Events::new()).unwrap();
    let mut events = Events::new();
    events
        .eq_active(0, 0, false)
        .eq_active(0, 0, true)
        .sleep(0, 7);
    assert!(one.step(&events).is_err());
    assert_eq!(one.q.learned().count(), 0);
    one.step(&Events::new()).unwrap();
    assert_eq!(
        one.q.decision().verdict(),
        Verdict::Reuse,
        "{:?}",
        one.q.decision()
    );
}

#[test]
fn a_new_policy_counts_switches_afresh() {
    let mut one = OneEq::new();
    let mut switch = Events::new();
    switch.eq_active(0, 0, false);
    one.step(&switch).unwrap();
    // Static and back: the one switch counted before is forgotten, so one more is not two.
    one.q.set_policy(Policy {
        eq: EqPolicy::Static,
        ..Policy::default()
    });
    one.q.set_policy(Policy::default());
    one.step(&Events::new()).unwrap();
    one.step(&switch).unwrap();
    assert_eq!(one.q.learned().count(), 0);
    one.step(&switch).unwrap();
    assert_eq!(one.q.learned().collect::<Vec<_>>(), [0]);
}

#[test]
fn sleep_recorded_between_steps_reaches_the_next_step() {
    // `auto` records the events of the steps a full rebuild solves (`Quotient::record`) and
    // steps the quotient later: a sleep among them that leaves equality 0's two trees half
    // asleep still rebuilds the world, for that cause, at the quotient's next step.
    let mut one = OneEq::new();
    one.step(&Events::new()).unwrap();
    let mut sleep = Events::new();
    sleep.sleep(0, 0);
    one.q.record(&sleep).unwrap();
    one.q.record(&Events::new()).unwrap();
    one.step(&Events::new()).unwrap();
    assert_eq!(
        one.q.decision().worlds().collect::<Vec<_>>(),
        [(0, Cause::PartialSleep { tree: 0 })]
    );
    // Taken by that step: the next one has none.
    one.step(&Events::new()).unwrap();
    assert_eq!(one.q.decision().verdict(), Verdict::Reuse);
}

#[test]
fn a_world_half_asleep_while_past_the_batch_is_rebuilt_for_it_when_it_comes_back() {
    // Tree 0 of world 1 falls asleep, leaving equality 0's trees half asleep, at a step that has
    // only world 0: the step that has world 1 again rebuilds it for that.
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let mut e = Engine::new(
        &model,
        Capacity::fit(&model, &eq0_worlds(2)),
        Options {
            mode: Mode::Quotient,
            ..Options::default()
        },
    )
    .unwrap();
    e.step(&eq0_worlds(2), &Events::new()).unwrap();
    e.step(&eq0_worlds(1), Events::new().sleep(1, 0)).unwrap();
    assert_eq!(e.decision().verdict(), Verdict::Reuse, "{:?}", e.decision());
    e.step(&eq0_worlds(2), &Events::new()).unwrap();
    assert_eq!(
        e.decision().worlds().collect::<Vec<_>>(),
        [(1, Cause::PartialSleep { tree: 0 })]
    );
}

#[test]
fn a_world_past_a_rebuild_of_every_world_is_rebuilt_for_its_cause_when_it_comes_back() {
    // A model-wide edit at a step of world 0 alone: world 1's quotient is dropped with every
    // other, and the step that has it again builds it for that edit, not as a first build.
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let options = Options {
        mode: Mode::Quotient,
        ..Options::default()
    };
    let mut e = Engine::new(&model, Capacity::fit(&model, &eq0_worlds(2)), options).unwrap();
    e.step(&eq0_worlds(2), &Events::new()).unwrap();
    let edit = Edit::FlexStiffness { flex: 0 };
    e.step(&eq0_worlds(1), Events::new().edit(None, edit))
        .unwrap();
    assert_eq!(e.decision().all_cause(), Some(Cause::Edit(edit)));
    e.step(&eq0_worlds(2), &Events::new()).unwrap();
    assert_eq!(
        e.decision().worlds().collect::<Vec<_>>(),
        [(1, Cause::Edit(edit))]
    );
}

#[test]
fn a_resize_too_small_for_the_model_changes_nothing() {
    let mut e = engine(2, Policy::default());
    let specs = vec![Spec::default(); 2];
    let before = step(&mut e, &specs, &Events::new());
    let contracted = e.quotient().counters().contracted;
    let small = Capacity {
        nv: 7,
        ..capacity(2)
    };
    assert!(matches!(
        e.resize(small),
        Err(Error::OverCapacity { what: "nv", .. })
    ));
    assert_eq!(e.capacity(), capacity(2));
    assert_eq!(e.islands().first_mismatch(&before), None);
    // The quotients are kept: the next step contracts nothing.
    step(&mut e, &specs, &Events::new());
    assert_eq!(e.quotient().counters().contracted, contracted);
}

#[test]
fn a_world_past_the_batch_is_rebuilt_for_its_cause_when_it_comes_back() {
    // World 1's equality switches while a step has only world 0: that step lists no rebuild of
    // world 1, and the step that has it again rebuilds it for that switch.
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let batch = |n| eq0_worlds(n);
    let options = Options {
        mode: Mode::Quotient,
        policy: Policy {
            eq: EqPolicy::Static,
            ..Policy::default()
        },
        ..Options::default()
    };
    let mut e = Engine::new(&model, Capacity::fit(&model, &batch(2)), options).unwrap();
    e.step(&batch(2), &Events::new()).unwrap();
    let mut events = Events::new();
    events.eq_active(1, 0, false);
    e.step(&batch(1), &events).unwrap();
    assert_eq!(e.decision().verdict(), Verdict::Reuse, "{:?}", e.decision());
    let out = e.step(&batch(2), &Events::new()).unwrap().clone();
    assert_eq!(
        out.first_mismatch(&oracle::solve(&Input::new(&model, &batch(2)).unwrap())),
        None
    );
    let cause = Cause::EqActive {
        eq: 0,
        active: false,
    };
    assert_eq!(e.decision().worlds().collect::<Vec<_>>(), [(1, cause)]);
}

#[test]
fn reuse_forgets_worlds_solved_under_another_model() {
    // The same rows under models of as many trees and dofs but other dof layouts: the
    // dof-level outputs differ, so no world may take its last step's outputs. Through the
    // quotient itself and through the CPU mode, which keeps its quotient while the model's
    // sizes fit.
    let models = [
        Model::from_dofnum(&[1, 2, 1]).unwrap(),
        Model::from_dofnum(&[2, 1, 1]).unwrap(),
        Model::from_dofnum(&[1, 1, 2]).unwrap(),
    ];
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[0, 1])
        .row(RowType::ContactPyramidal, 0, &[1])
        .end_world();
    b.row(RowType::ContactPyramidal, 0, &[2]).end_world();
    let batch = b.finish();
    let cap = Capacity::fit(&models[0], &batch);
    let mut q = archipelago::quotient::Quotient::new(&cap, Policy::default());
    q.set_reuse(true);
    let mut mode = cpu::by_name("quotient").unwrap();
    let (mut got, mut by_mode) = (Islands::default(), Islands::default());
    // Each model twice in a row: the second step reuses every world, the first none.
    for (k, model) in models.iter().chain(&models).enumerate() {
        let input = Input::new(model, &batch).unwrap();
        let want = oracle::solve(&input);
        for _ in 0..2 {
            q.step(&input, &Events::new(), &mut got).unwrap();
            assert_eq!(got.first_mismatch(&want), None, "quotient, model {k}");
            mode.solve(&input, &mut by_mode).unwrap();
            assert_eq!(by_mode.first_mismatch(&want), None, "cpu mode, model {k}");
        }
    }
    assert_eq!(q.counters().reused, 2 * models.len() as u64 * 2);
}

#[test]
fn worlds_that_keep_changing_pause_reuse_and_resume_at_rest() {
    use archipelago::quotient::reuse::{BACKOFF_AFTER, BACKOFF_MAX};
    let mut e = engine(2, Policy::default());
    let reused = |e: &Engine| e.quotient().counters().reused;
    // World 0 rests throughout; world 1 alternates between two contact sets (every step differs
    // from the one before, and equals the one two steps back).
    let rest = Spec::default();
    let a = Spec {
        contacts: vec![vec![4, 5]],
        ..Spec::default()
    };
    let b = Spec {
        contacts: vec![vec![5, 6]],
        ..Spec::default()
    };
    let moving = 64;
    let mut world1_reused = 0;
    for k in 0..moving {
        let before = reused(&e);
        let w1 = if k % 2 == 0 { a.clone() } else { b.clone() };
        step(&mut e, &[rest.clone(), w1], &Events::new());
        let n = reused(&e) - before;
        if k > 0 {
            assert!(n >= 1, "step {k}: the resting world is reused");
            world1_reused += n - 1;
        }
    }
    // World 1 pauses most of those steps; a pause ends with a probe against the entry stored
    // before it (here the other contact set's, which matches one probe in two).
    let paused = e.quotient().counters().paused;
    assert!(
        paused >= moving / 2,
        "the moving world paused on {paused} of {moving} steps"
    );
    assert!(
        world1_reused < moving / 4,
        "reused {world1_reused} times while moving"
    );
    // Once world 1 comes to rest it is reused again within the longest pause and a probe.
    let mut back = None;
    for k in 0..(BACKOFF_MAX as usize + 2 * BACKOFF_AFTER as usize + 4) {
        let before = reused(&e);
        step(&mut e, &[rest.clone(), a.clone()], &Events::new());
        if reused(&e) - before == 2 {
            back = Some(k);
            break;
        }
    }
    let k = back.expect("a world at rest is reused again");
    assert!(
        k <= BACKOFF_MAX as usize + 2,
        "reused again after {k} steps at rest"
    );
}

#[test]
fn worlds_that_keep_their_partition_map_only_their_rows() {
    let mut e = engine(3, Policy::default());
    let kept = |e: &Engine| e.quotient().counters().kept_partition;
    // The default world's islands: {0, 1, 2, 3} (equalities 0 and 1, contact {2, 3}), {4}
    // (friction and limit), {5, 6, 7} (tendon friction, flex).
    let base = Spec::default();
    // One more contact inside {0, 1, 2, 3}: more rows, the same partition.
    let inside = Spec {
        contacts: vec![vec![2, 3], vec![0, 3]],
        ..Spec::default()
    };
    // A contact joining {0, 1, 2, 3} and {4}: another partition.
    let joined = Spec {
        contacts: vec![vec![2, 3], vec![3, 4]],
        ..Spec::default()
    };
    step(
        &mut e,
        &[base.clone(), base.clone(), base.clone()],
        &Events::new(),
    );
    assert_eq!(kept(&e), 0, "nothing cached yet");
    // World 0 keeps its partition (its rows, and so world 1's, move), world 1 is reused whole,
    // world 2 changes its partition.
    step(
        &mut e,
        &[inside.clone(), base.clone(), joined],
        &Events::new(),
    );
    assert_eq!(kept(&e), 1);
    // Worlds 0 and 1 keep their cached partitions; world 2's cached step is the joined one.
    step(&mut e, &[base.clone(), inside, base], &Events::new());
    assert_eq!(kept(&e), 3);
    assert_eq!(e.quotient().counters().reused, 1);
}

#[test]
fn device_mirror_sees_each_contracted_slot_once() {
    use archipelago::quotient::Quotient;
    let model = model();
    let mut specs = vec![Spec::default(); 3];
    let mut q = Quotient::new(&capacity(3), Policy::default());
    let mut out = Islands::default();
    let mut drained = Vec::new();
    for round in 0..3 {
        if round == 2 {
            specs[2].eq[1] = false;
        }
        let batch = build(&specs);
        q.step(
            &Input::new(&model, &batch).unwrap(),
            &Events::new(),
            &mut out,
        )
        .unwrap();
        drained.clear();
        q.drain_contracted(|s| drained.push(s));
        let t = q.cache().tables();
        let slots: Vec<u32> = t.world_slot.to_vec();
        match round {
            0 => assert_eq!(
                (drained.len(), slots[0] == slots[1] && slots[1] == slots[2]),
                (1, true)
            ),
            1 => assert!(drained.is_empty()),
            _ => assert_eq!(drained, [slots[2]]),
        }
        let s = slots[0] as usize;
        // Trees 0, 1 and 2 share a node whose smallest tree is 0.
        let node = t.tree_node[s * t.ntree + 2] as usize;
        assert_eq!(t.node_mintree[s * t.ntree + node], 0);
        assert_eq!(
            t.nstatic_rows[s],
            if round < 2 || s != slots[2] as usize {
                6
            } else {
                5
            }
        );
    }
}

#[test]
fn eq_active_reported_rebuilds_only_that_world() {
    let mut e = engine(3, Policy::default());
    let mut specs = vec![Spec::default(); 3];
    step(&mut e, &specs, &Events::new());
    specs[1].eq[0] = false;
    let mut ev = Events::new();
    ev.eq_active(1, 0, false);
    let out = step(&mut e, &specs, &ev);
    let cause = Cause::EqActive {
        eq: 0,
        active: false,
    };
    assert_eq!(causes(&e), [(1, cause)]);
    assert_eq!(out.world(1).tree_island[..4], [-1, 0, 0, 0]);
    assert_eq!(e.quotient().cache().live_slots(), 2);
    // Switched back on: world 1 finds the shared quotient again.
    specs[1].eq[0] = true;
    ev.clear();
    ev.eq_active(1, 0, true);
    step(&mut e, &specs, &ev);
    assert_eq!(e.quotient().cache().live_slots(), 1);
}

#[test]
fn eq_active_unreported_is_caught_by_the_guard() {
    let mut e = engine(1, Policy::default());
    let mut specs = vec![Spec::default()];
    step(&mut e, &specs, &Events::new());
    specs[0].eq[1] = false;
    step(&mut e, &specs, &Events::new());
    let finding = GuardFinding::Vanished { node_tree: 0 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
}

/// A world contracted without any static hyperedge (an empty block) replays only if none has
/// appeared since: one switched on unreported, before its contacts, is the guard's to find.
#[test]
fn a_static_row_in_a_world_contracted_without_any_is_caught() {
    let mut e = engine(1, Policy::default());
    let mut specs = vec![Spec {
        eq: [false; 2],
        friction: false,
        tendon: false,
        flex: None,
        ..Spec::default()
    }];
    step(&mut e, &specs, &Events::new());
    specs[0].eq[0] = true;
    step(&mut e, &specs, &Events::new());
    let finding = GuardFinding::Spans { row: 0 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
}

#[test]
fn a_static_rows_id_alone_changes_nothing_unless_it_changes_the_class() {
    // No output depends on a row's id, so the guard does not hash it: a static row renumbered
    // with the same type and support keeps the quotient. (The contact moves too, so that the
    // world is solved, not reused: reuse compares types and supports alone as well.)
    let mut e = engine(1, Policy::default());
    let mut specs = vec![Spec::default()];
    step(&mut e, &specs, &Events::new());
    specs[0].eq1_id = 3;
    specs[0].contacts = vec![vec![3, 4]];
    step(&mut e, &specs, &Events::new());
    assert_eq!(e.decision().verdict(), Verdict::Reuse);
    let c = e.quotient().counters();
    assert_eq!((c.guarded, c.reused), (0, 0), "{c:?}");
    // With equality 3 classified dynamic, the same renumbering takes the row out of its node.
    let policy = Policy {
        eq: EqPolicy::DynamicIds(vec![3]),
        ..Policy::default()
    };
    let mut e = engine(1, policy);
    specs[0] = Spec::default();
    step(&mut e, &specs, &Events::new());
    specs[0].eq1_id = 3;
    specs[0].contacts = vec![vec![3, 4]];
    step(&mut e, &specs, &Events::new());
    let finding = GuardFinding::Vanished { node_tree: 0 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
}

#[test]
fn dynamic_equalities_absorb_toggles() {
    for policy in [
        Policy {
            eq: EqPolicy::Dynamic,
            ..Policy::default()
        },
        Policy {
            eq: EqPolicy::DynamicIds(vec![1]),
            ..Policy::default()
        },
    ] {
        let mut e = engine(2, policy);
        let mut specs = vec![Spec::default(); 2];
        step(&mut e, &specs, &Events::new());
        for on in [false, true, false] {
            specs[0].eq[1] = on;
            let mut ev = Events::new();
            ev.eq_active(0, 1, on);
            step(&mut e, &specs, &ev);
            assert_eq!(e.decision().verdict(), Verdict::Reuse);
        }
        assert_eq!(e.quotient().tracker().absorbed(), 3);
    }
}

#[test]
fn learned_equalities_turn_dynamic_after_repeated_toggles() {
    let policy = Policy {
        eq: EqPolicy::Learn { after: 2 },
        ..Policy::default()
    };
    let mut e = engine(2, policy);
    let mut specs = vec![Spec::default(); 2];
    step(&mut e, &specs, &Events::new());
    let mut verdicts = Vec::new();
    for on in [false, true, false, true, false] {
        specs[1].eq[1] = on;
        let mut ev = Events::new();
        ev.eq_active(1, 1, on);
        step(&mut e, &specs, &ev);
        verdicts.push(e.decision().verdict());
    }
    // First toggle rebuilds world 1; the second teaches the policy (one rebuild of all); then
    // toggles are free.
    use Verdict::*;
    assert_eq!(verdicts, [Rebuild, RebuildAll, Reuse, Reuse, Reuse]);
    assert_eq!(e.quotient().learned().collect::<Vec<_>>(), [1]);
}

/// A learned equality low among static ones: the static run kept is the heavier one above it
/// (equality 2 across four trees and the friction loss outweigh equality 0's three rows),
/// chosen when every world is rebuilt for the new classification; its toggles then cost
/// nothing and every step equals the oracle.
#[test]
fn a_learned_equality_keeps_the_heavier_run_of_static_ones() {
    let mut e = engine(2, Policy::default());
    let mut specs = vec![
        Spec {
            extra_eq: Some(vec![2, 3, 4, 5]),
            ..Spec::default()
        };
        2
    ];
    step(&mut e, &specs, &Events::new());
    assert_eq!(e.quotient().classifier().static_eqs(), 0..i32::MAX);
    let mut verdicts = Vec::new();
    for on in [false, true, false, true] {
        specs[1].eq[1] = on;
        let mut ev = Events::new();
        ev.eq_active(1, 1, on);
        step(&mut e, &specs, &ev);
        verdicts.push(e.decision().verdict());
    }
    use Verdict::*;
    assert_eq!(verdicts, [Rebuild, RebuildAll, Reuse, Reuse]);
    let c = e.quotient().classifier();
    assert_eq!((c.static_eqs(), c.friction_static()), (2..i32::MAX, true));
    // Equality 0 is solved each step: switching it costs no rebuild either.
    specs[0].eq[0] = false;
    let mut ev = Events::new();
    ev.eq_active(0, 0, false);
    step(&mut e, &specs, &ev);
    assert_eq!(e.decision().verdict(), Reuse);
}

/// closed_loops switches equality 0 off and on and equality 5 on: both turn dynamic (learned),
/// and equality 5's rows lie after static equalities 1-4, before the dof friction loss. With
/// friction loss then dynamic too, every world's static rows stay one block, which every
/// world replays at every step (before, two thirds of them took the guard's slower path).
#[test]
fn a_learned_equality_above_static_ones_keeps_the_static_block_whole() {
    let (q, off_block) = off_block("closed_loops", Policy::default());
    let mut learned: Vec<i32> = q.learned().collect();
    learned.sort_unstable();
    assert_eq!(learned, [0, 5]);
    assert_eq!(q.classifier().static_eqs(), 1..5);
    assert!(!q.classifier().friction_static());
    assert_eq!(off_block, 0, "world-steps off the static block");
}

/// Equality 2 of closed_loops dynamic, with static equalities on both sides (1 and 3 bind
/// trees every step): the static ones are the heavier run, those above it with the friction
/// loss (63 support entries in the recorded worlds against 54 below), and the ones below are
/// solved each step, so the static rows stay one block (before session 55, equality 2's rows
/// split it in every world at every step).
#[test]
fn a_dynamic_equality_between_static_ones_keeps_the_static_block_whole() {
    let (q, off) = off_block("closed_loops", Policy::dynamic_ids(vec![2]));
    assert_eq!(q.classifier().static_eqs(), 3..i32::MAX);
    assert!(q.classifier().eqs_by_id() && q.classifier().friction_static());
    assert_eq!(off, 0, "world-steps off the static block");
    // With equality 4 dynamic too, the run below outweighs 3 alone.
    let (q, off) = off_block("closed_loops", Policy::dynamic_ids(vec![2, 4]));
    assert_eq!(q.classifier().static_eqs(), 0..2);
    assert!(!q.classifier().friction_static());
    assert_eq!(off, 0, "world-steps off the static block");
}

/// closed_loops_mid switches equality 3 (a joint equality across two trees, between the static
/// 1-2 and 4) off and on, and 5 on: both are learned dynamic, the static ones end at 2, and 4 is
/// solved each step too, so every world replays its static block at every step.
#[test]
fn a_learned_equality_between_static_ones_keeps_the_static_block_whole() {
    let (q, off_block) = off_block("closed_loops_mid", Policy::default());
    let mut learned: Vec<i32> = q.learned().collect();
    learned.sort_unstable();
    assert_eq!(learned, [3, 5]);
    assert_eq!(q.classifier().static_eqs(), 0..3);
    assert_eq!(off_block, 0, "world-steps off the static block");
}

/// A world whose static rows are its quotient's block is mapped from its nodes, with its dynamic
/// rows before the block (equalities 0 and 1, solved each step) and after it placed one by one
/// around the block's runs: every solved world-step, with reuse off and on (where a world that
/// kept its partition maps only its rows from its nodes), exact.
#[test]
fn replayed_worlds_are_mapped_from_their_nodes() {
    for reuse in [false, true] {
        let (q, off) = off_block_with("closed_loops", Policy::dynamic_ids(vec![2]), reuse);
        assert_eq!(q.classifier().static_eqs(), 3..i32::MAX);
        assert_eq!(off, 0, "world-steps off the static block");
        let c = q.counters();
        assert!(c.node_mapped > 0, "reuse {reuse}: {c:?}");
        assert_eq!(
            c.node_mapped,
            c.world_steps - c.reused,
            "reuse {reuse}: {c:?}"
        );
        assert_eq!(c.kept_partition > 0, reuse, "{c:?}");
    }
}

/// Replays trace `name` tiled to 12 copies of its worlds, 37 steps apart, each told of its own
/// events, under `policy`; checks every step against the oracle and counts the world-steps
/// whose static rows were not the block their quotient replays.
fn off_block(name: &str, policy: Policy) -> (archipelago::quotient::Quotient, usize) {
    off_block_with(name, policy, false)
}

/// [`off_block`], with the quotient's reuse of unchanged worlds on or off.
fn off_block_with(
    name: &str,
    policy: Policy,
    reuse: bool,
) -> (archipelago::quotient::Quotient, usize) {
    let path = traces::dir().join(format!("{name}.npz"));
    let t = archipelago::trace::Trace::open(path).unwrap();
    let tiled = archipelago::trace::Tiled::new(&t, 0..t.nstep(), 12 * t.nworld(), 37);
    let mut q = archipelago::quotient::Quotient::new(&tiled.capacity(), policy);
    q.set_reuse(reuse);
    let mut out = Islands::default();
    let mut off_block = 0;
    for k in 0..tiled.len() {
        let (batch, events) = tiled.step(k);
        let input = Input::new(t.model(), &batch).unwrap();
        q.step(&input, &events, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&oracle::solve(&input)), None, "step {k}");
        let c = q.classifier();
        for w in 0..batch.nworld() {
            let view = q
                .cache()
                .view(q.cache().slot_of(w).expect("every world has a quotient"));
            off_block += usize::from(view.replayed_block(&batch, w, c).is_none());
        }
    }
    (q, off_block)
}

#[test]
fn a_sleeping_component_is_masked_without_rebuild() {
    for reported in [true, false] {
        let mut e = engine(2, Policy::default());
        let mut specs = vec![Spec::default(); 2];
        specs[0].contacts.clear();
        step(&mut e, &specs, &Events::new());
        let mut ev = Events::new();
        specs[0].asleep = vec![0, 1, 2];
        if reported {
            ev.sleep(0, 0).sleep(0, 1).sleep(0, 2);
        }
        let out = step(&mut e, &specs, &ev);
        assert_eq!(e.decision().verdict(), Verdict::Reuse);
        assert_eq!(out.world(0).tree_island[..3], [-1, -1, -1]);
        assert_eq!(e.quotient().counters().masked, 1);
        specs[0].asleep.clear();
        ev.clear();
        if reported {
            ev.wake(0, 2).wake(0, 0).wake(0, 1);
        }
        step(&mut e, &specs, &ev);
        assert_eq!(e.decision().verdict(), Verdict::Reuse);
    }
}

/// What the GPU quotient takes into its launch's masked worlds at a reported sleep
/// (`Quotient::static_node`: a node of static hyperedges, every tree of it asleep) is what masks
/// a world: a component asleep whole (world 0) and a tree with a static row of its own
/// (world 2) mask theirs; a tree of no static row (world 1) and a component partly asleep
/// (world 3, rebuilt) do not.
#[test]
fn a_reported_sleep_masks_where_a_node_of_static_hyperedges_sleeps_whole() {
    let (mut e, mut specs) = awake_without_contacts(4);
    let sleepers: [&[i32]; 4] = [&[0, 1, 2], &[3], &[4], &[0]];
    let mut ev = Events::new();
    for (w, trees) in sleepers.iter().enumerate() {
        specs[w].asleep = trees.to_vec();
        for &t in *trees {
            ev.sleep(w as u32, t);
        }
    }
    let before = e.quotient().counters().masked;
    step(&mut e, &specs, &ev);
    let q = e.quotient();
    let masks = |w: usize| {
        sleepers[w].iter().any(|&t| {
            q.static_node(w, t as usize)
                .is_some_and(|trees| trees.iter().all(|&u| !q.tracker().awake(w, u as usize)))
        })
    };
    assert_eq!((0..4).filter(|&w| masks(w)).collect::<Vec<_>>(), [0, 2]);
    assert_eq!(q.counters().masked - before, 2);
    assert_eq!(q.static_node(0, 1), Some(&[0, 1, 2][..]));
    assert_eq!(q.static_node(1, 3), None);
    assert_eq!(causes(&e), [(3, Cause::PartialSleep { tree: 0 })]);
}

#[test]
fn a_partly_sleeping_component_rebuilds_that_world() {
    let mut e = engine(2, Policy::default());
    let mut specs = vec![Spec::default(); 2];
    step(&mut e, &specs, &Events::new());
    specs[1].asleep = vec![0];
    let mut ev = Events::new();
    ev.sleep(1, 0);
    step(&mut e, &specs, &ev);
    assert_eq!(causes(&e), [(1, Cause::PartialSleep { tree: 0 })]);
    // Unreported, the rows tell the same story.
    specs[0].asleep = vec![2];
    step(&mut e, &specs, &Events::new());
    let finding = GuardFinding::Vanished { node_tree: 0 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
}

#[test]
fn each_component_a_step_puts_to_sleep_is_checked_whole_once() {
    let (mut e, mut specs) = awake_without_contacts(2);
    // World 0's component {0, 1, 2} falls asleep and wakes by turns, tree by tree, so that every
    // step has events; world 1's component {5, 6, 7} (a tendon's friction and the flex) falls
    // asleep whole at the first step and tree 6 alone wakes at step 255, when the checks'
    // stamps have started over.
    for k in 0..300 {
        let mut ev = Events::new();
        let asleep = k % 2 == 0;
        specs[0].asleep = if asleep { vec![0, 1, 2] } else { vec![] };
        for t in 0..3 {
            match asleep {
                true => ev.sleep(0, t),
                false => ev.wake(0, t),
            };
        }
        match k {
            0 => {
                specs[1].asleep = vec![5, 6, 7];
                ev.sleep(1, 5).sleep(1, 6).sleep(1, 7);
            }
            255 => {
                specs[1].asleep = vec![5, 7];
                ev.wake(1, 6);
            }
            _ => {}
        }
        step(&mut e, &specs, &ev);
        let want: &[_] = match k {
            255 => &[(1, Cause::PartialSleep { tree: 6 })],
            _ => &[],
        };
        assert_eq!(causes(&e), want, "step {k}");
    }
}

#[test]
fn a_contact_on_a_sleeping_component_does_not_bind_its_trees() {
    let mut e = engine(1, Policy::default());
    let mut specs = vec![Spec::default()];
    step(&mut e, &specs, &Events::new());
    specs[0].asleep = vec![0, 1, 2];
    specs[0].contacts = vec![vec![0, 3]];
    let out = step(&mut e, &specs, &Events::new());
    let finding = GuardFinding::AsleepTouched { tree: 0 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
    assert_eq!(out.world(0).tree_island[..4], [0, -1, -1, 0]);
}

#[test]
fn every_static_edit_rebuilds_reported_or_not() {
    type EditCase = (Edit, fn(&mut Spec));
    let edits: [EditCase; 7] = [
        (Edit::EqRetargeted { eq: 1 }, |s| s.eq1 = vec![2, 3]),
        (Edit::DofFriction { dof: 4, on: false }, |s| {
            s.friction = false
        }),
        (
            Edit::TendonFriction {
                tendon: 0,
                on: false,
            },
            |s| s.tendon = false,
        ),
        (Edit::FlexStiffness { flex: 0 }, |s| s.flex = None),
        (Edit::FlexRigidity { flex: 0 }, |s| {
            s.flex = Some(vec![3, 7])
        }),
        (Edit::TendonCoupling { tendon: 1 }, |s| {
            s.coupling = Some((EdgeKind::Tendon, 1, vec![2, 5]))
        }),
        (Edit::ActuatorCoupling { actuator: 0 }, |s| {
            s.coupling = Some((EdgeKind::Actuator, 0, vec![3, 5]))
        }),
    ];
    for (edit, apply) in edits {
        for reported in [true, false] {
            let mut e = engine(2, Policy::default());
            let mut specs = vec![Spec::default(); 2];
            specs[1].contacts.clear();
            step(&mut e, &specs, &Events::new());
            apply(&mut specs[1]);
            let mut ev = Events::new();
            if reported {
                ev.edit(Some(1), edit);
            }
            step(&mut e, &specs, &ev);
            let listed = causes(&e);
            if reported {
                assert_eq!(listed, [(1, Cause::Edit(edit))]);
            } else if !matches!(edit, Edit::DofFriction { .. }) {
                assert!(matches!(listed[..], [(1, Cause::Guard(_))]), "{edit:?}");
            } else {
                // The only static row of tree 4 vanished: indistinguishable from a sleeping
                // node, and exact either way.
                assert_eq!(e.decision().verdict(), Verdict::Reuse, "{edit:?}");
            }
        }
    }
}

#[test]
fn a_static_row_spanning_two_nodes_is_caught() {
    let mut e = engine(1, Policy::default());
    let mut specs = vec![Spec::default()];
    step(&mut e, &specs, &Events::new());
    specs[0].extra_eq = Some(vec![4, 3]);
    step(&mut e, &specs, &Events::new());
    // Equality 2 comes after the 3 + 1 rows of equalities 0 and 1.
    let finding = GuardFinding::Spans { row: 4 };
    assert_eq!(causes(&e), [(0, Cause::Guard(finding))]);
}

#[test]
fn model_edits_capacity_and_policy_rebuild_all() {
    let mut e = engine(3, Policy::default());
    let mut specs = vec![Spec::default(); 3];
    step(&mut e, &specs, &Events::new());
    for s in &mut specs {
        s.flex = Some(vec![0, 7]);
    }
    let mut ev = Events::new();
    ev.edit(None, Edit::FlexRigidity { flex: 0 });
    step(&mut e, &specs, &ev);
    assert_eq!(e.decision().verdict(), Verdict::RebuildAll);
    let all = Cause::Edit(Edit::FlexRigidity { flex: 0 });
    assert_eq!(e.decision().all_cause(), Some(all));
    ev.clear();
    ev.capacity_changed();
    step(&mut e, &specs, &ev);
    assert_eq!(e.decision().all_cause(), Some(Cause::Capacity));
    e.set_policy(Policy::all_dynamic());
    step(&mut e, &specs, &Events::new());
    assert_eq!(e.decision().all_cause(), Some(Cause::Classification));
    e.resize(capacity(5)).unwrap();
    specs.push(Spec::default());
    step(&mut e, &specs, &Events::new());
    assert_eq!(e.quotient().counters().contracted, 1);
}

#[test]
fn rowless_couplings_alone_make_no_island() {
    let mut e = engine(1, Policy::default());
    let spec = Spec {
        eq: [false; 2],
        friction: false,
        tendon: false,
        asleep: vec![4],
        contacts: vec![],
        ..Spec::default()
    };
    let out = step(&mut e, &[spec], &Events::new());
    assert_eq!(out.world(0).nisland, 0);
}

#[test]
fn bad_events_and_batches_are_refused() {
    let mut e = engine(2, Policy::default());
    let batch = build(&vec![Spec::default(); 2]);
    let mut ev = Events::new();
    ev.sleep(5, 0);
    assert!(matches!(e.step(&batch, &ev), Err(Error::Event(_))));
    ev.clear();
    ev.wake(0, 8);
    assert!(matches!(e.step(&batch, &ev), Err(Error::Event(_))));
    let big = build(&vec![Spec::default(); 3]);
    assert!(matches!(
        e.step(&big, &Events::new()),
        Err(Error::OverCapacity { .. })
    ));
    assert!(e.step(&batch, &Events::new()).is_ok());
}

/// A full rebuild's step records a cloth-sized burst of events (on a GPU engine, in the
/// download's wait: tests/gpu_quotient.rs) exactly as the quotient records them itself; a
/// burst with one bad event fails before anything is solved.
#[test]
fn a_full_rebuilds_burst_of_events_is_recorded_as_in_line() {
    let nworld = 4096;
    let options = |mode| Options {
        mode,
        ..Options::default()
    };
    let new = |mode| Engine::new(&model(), capacity(nworld), options(mode)).unwrap();
    let (mut full, mut quotient) = (new(Mode::Dsu), new(Mode::Quotient));
    let mut specs = vec![Spec::default(); nworld];
    let mut ev = Events::new();
    for phase in 0..3 {
        for (w, s) in specs.iter_mut().enumerate() {
            s.contacts.clear();
            s.asleep = if phase == 1 { (0..8).collect() } else { vec![] };
            for t in (phase > 0).then_some(0..8).into_iter().flatten() {
                match phase {
                    1 => ev.sleep(w as u32, t),
                    _ => ev.wake(w as u32, t),
                };
            }
        }
        step(&mut full, &specs, &ev);
        step(&mut quotient, &specs, &ev);
        assert_eq!(full.last_mode(), Mode::Dsu);
        let (a, b) = (full.quotient().tracker(), quotient.quotient().tracker());
        for w in 0..nworld {
            let source = invalidation::Source::Sleep;
            assert_eq!(a.epoch(source, w), b.epoch(source, w), "world {w}");
            for t in 0..8 {
                assert_eq!(a.awake(w, t), b.awake(w, t), "world {w} tree {t}");
            }
        }
        assert_eq!(
            a.epoch(invalidation::Source::Sleep, 7),
            8 * (phase as u64).min(2)
        );
        ev.clear();
    }
    let before = full.islands().clone();
    for (w, t) in (0..nworld as u32).flat_map(|w| (0..8).map(move |t| (w, t))) {
        ev.sleep(w, t);
    }
    ev.wake(nworld as u32, 0);
    let batch = build(&vec![Spec::default(); nworld]);
    assert!(matches!(full.step(&batch, &ev), Err(Error::Event(_))));
    assert_eq!(full.islands().first_mismatch(&before), None);
    assert!(full.quotient().tracker().awake(0, 0));
}

#[test]
fn every_mode_agrees_with_the_oracle() {
    let mut rng = scenes::Rng::new(5);
    let scene = scenes::Scene::random(&mut rng, 20, 10, 3);
    let worlds = vec![scenes::World::new(&scene); 8];
    let cap = Capacity {
        nworld: 8,
        ntree: 20,
        nv: scene.model.nv(),
        njmax: 300,
        nsupport: 1200,
        nedge: 4,
    };
    for mode in Mode::ALL {
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut e = match Engine::new(&scene.model, cap, options) {
            Ok(e) => e,
            Err(Error::Refused { .. }) => {
                assert!(cpu::by_name(mode.name()).is_none());
                continue;
            }
            Err(err) => panic!("{mode:?}: {err}"),
        };
        for _ in 0..40 {
            let batch = scenes::batch(&scene, &worlds, &mut rng);
            let want = oracle::solve(&Input::new(&scene.model, &batch).unwrap());
            let got = e.step(&batch, &Events::new()).unwrap();
            assert_eq!(got.first_mismatch(&want), None, "{mode:?}");
        }
        if mode == Mode::Auto {
            assert!(matches!(e.last_mode(), Mode::Quotient | Mode::Dsu));
        }
    }
}

/// Every committed trace in quotient mode, zero mismatches against native MuJoCo 4.0.0: with
/// `eq_active` and sleep/wake reported as events (equalities static, then dynamic), and with no
/// events at all (the guard alone).
#[test]
fn every_trace_replays_in_quotient_mode_without_mismatch() {
    use archipelago::quotient::Quotient;
    use archipelago::trace::{self, Trace};
    let paths = traces::paths();
    assert!(!paths.is_empty());
    let (mut batch, mut native) = (Batch::default(), Islands::default());
    let mut failures = Vec::new();
    let (mut world_steps, mut toggles, mut sleeps) = (0, 0, 0);
    for path in &paths {
        let t = Trace::open(path).unwrap();
        let (model, cap) = (t.model(), t.capacity());
        let dynamic = Policy {
            eq: EqPolicy::Dynamic,
            ..Policy::default()
        };
        let mut engines = [Policy::default(), dynamic].map(|policy| {
            let options = Options {
                mode: Mode::Quotient,
                policy,
                ..Options::default()
            };
            Engine::new(model, cap, options).unwrap()
        });
        let mut events = Events::new();
        for step in 0..t.nstep() {
            t.batch(step, &mut batch);
            t.native(step, &mut native);
            t.events(step, &mut events);
            for event in events.as_slice() {
                match event {
                    Event::EqActive { .. } => toggles += 1,
                    Event::Sleep { .. } | Event::Wake { .. } => sleeps += 1,
                    _ => {}
                }
            }
            for (k, e) in engines.iter_mut().enumerate() {
                let got = e.step(&batch, &events).unwrap();
                if let Some(m) = trace::compare(got, &native) {
                    failures.push(format!("{} [{k}] step {step}: {m}", path.display()));
                }
            }
            world_steps += t.nworld();
        }
        let mut guard_only = Quotient::new(&cap, Policy::default());
        let report = trace::replay(&t, &mut guard_only).unwrap();
        if let Some(first) = report.first {
            failures.push(format!("{} guard-only: {:?}", path.display(), first));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(world_steps > 0 && toggles > 0 && sleeps > 0);
}

/// The generated corpus (every topology, noise, empty worlds, rowless couplings): the quotient
/// equals the oracle when built, when reused, and when the same rows come in another order.
#[test]
fn generated_corpus_matches_the_oracle() {
    use archipelago::quotient::Quotient;
    for case in archipelago::synth::corpus(3).take(250) {
        let cap = Capacity::fit(&case.model, &case.batch);
        let flipped = scenes::reversed(&case.batch);
        for policy in [
            Policy::default(),
            Policy {
                eq: EqPolicy::Dynamic,
                ..Policy::default()
            },
            Policy::all_dynamic(),
        ] {
            let mut q = Quotient::new(&cap, policy);
            let mut got = Islands::default();
            for batch in [&case.batch, &case.batch, &flipped, &case.batch] {
                let input = Input::new(&case.model, batch).unwrap();
                q.solve(&input, &mut got).unwrap();
                let want = oracle::solve(&input);
                assert_eq!(got.first_mismatch(&want), None, "{:?}", case.spec);
            }
            assert_eq!(q.counters().direct, 0);
        }
    }
}

/// The reuse cache forgets every world at a step of another model, also one of the same dof
/// layout that differs in whether it finds islands without rows: the world below has no rows,
/// so its outputs change with that alone.
#[test]
fn a_model_that_finds_islands_without_rows_is_another_model_to_reuse() {
    let plain = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let sleepy = plain.clone().with_islands_without_rows(true);
    let mut b = Batch::builder();
    b.rowless(0, &[0, 1]).end_world();
    let batch = b.finish();
    let mut mode = cpu::by_name("quotient").unwrap();
    let mut out = Islands::default();
    for (m, nisland) in [(&plain, 0), (&sleepy, 1), (&sleepy, 1), (&plain, 0)] {
        let input = Input::new(m, &batch).unwrap();
        mode.solve(&input, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
        assert_eq!(out.nisland[0], nisland);
    }
}
