//! The device quotient against the oracle (and native MuJoCo on the committed traces): the
//! kernel compiles for Hopper, sleeping components are masked on the device without a rebuild,
//! partial sleep and stale quotients fall back to a direct solve, graph replays equal direct
//! launches, unchanged worlds reuse their last solved step's outputs exactly (and only they),
//! the node-level maps at their edges (32 nodes, interleaved and sleeping nodes of several
//! trees, the partition check over nodes, worlds without rows, the scratch in global memory,
//! the rows by an idle warp at their edges, on batches of either kernel; the warp kernel's
//! places by runs of one node, and past the most runs; its guard at every place of its
//! comparison; a batch of one slot and of two),
//! long random invalidation sequences of every source with and without reuse and with either
//! maps (and on the warp kernel at every step; a longer device soak, opt-in), the generated
//! corpus in and out of order, the conformance corpus through every kernel family (the first
//! 600 cases; all of them with `ARCHIPELAGO_GPU_CORPUS=all`), every committed trace with its
//! events, and the GPU engine in
//! every mode, a batch of many waves on the register-capped kernels, and the bench's reader of
//! every output after every step.
//! Without a CUDA device every device test prints `skipped: no CUDA device` and passes; the
//! compile test needs only NVRTC.

#[path = "support/gpu.rs"]
mod device;
#[path = "support/quotient_scenes.rs"]
mod scenes;
#[path = "support/traces.rs"]
mod traces;

use device::open;

use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::{self, env_choice};
use archipelago::quotient::{EqPolicy, Policy};
use archipelago::trace::{self, Tiled, Trace};
use archipelago::{Batch, Capacity, Engine, Input, Islands, Mode, Model, Options, RowType};
use archipelago::{oracle, synth};
use invalidation::Events;

fn policies() -> [Policy; 6] {
    [
        Policy::default(),
        // Equality 1 dynamic with a static one below it: the static ones are 0 alone.
        Policy::dynamic_ids(vec![1]),
        Policy {
            eq: EqPolicy::Static,
            ..Policy::default()
        },
        Policy {
            eq: EqPolicy::Dynamic,
            ..Policy::default()
        },
        Policy {
            eq: EqPolicy::Learn { after: 3 },
            ..Policy::default()
        },
        Policy::all_dynamic(),
    ]
}

#[test]
fn the_quotient_kernels_compile_for_hopper() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    // Two programs: every solver's block kernels, and the warp kernels, which only a solver
    // whose batches may take them loads. Each has its own entry points only.
    let src = gpu::quotient::block_program_source();
    let warps = gpu::quotient::warp_program_source();
    let block_entries = [
        "quotient_kernel",
        "quotient_few_kernel",
        "quotient_aside_kernel",
    ];
    // Each warp kernel, its copy for the worlds beside the masked twins, and its masked twin.
    let warp_entries: Vec<String> = ["warp", "pair"]
        .iter()
        .flat_map(|f| ["", "_reuse", "_one", "_reuse_one"].map(|v| format!("quotient_{f}{v}")))
        .flat_map(|k| ["", "_rest", "_masked"].map(|p| format!("{k}{p}_kernel")))
        .collect();
    assert_eq!(warp_entries.len(), 24);
    let block_entries = block_entries.map(String::from);
    for (src, has, lacks) in [
        (&src, &block_entries[..], &warp_entries[..]),
        (&warps, &warp_entries[..], &block_entries[..]),
    ] {
        let ptx = match gpu::module::compile_cached(src, (9, 0)) {
            Ok((ptx, _)) => ptx,
            Err(e) => panic!("{e}"),
        };
        for k in has {
            assert!(ptx.contains(&format!(".entry {k}(")), "{k} missing");
        }
        for k in lacks {
            assert!(
                !ptx.contains(&format!(".entry {k}(")),
                "{k} in the other program"
            );
        }
        // The assembler, which builds the machine code that a solver loads, accepts every
        // kernel.
        if let Err(e) = gpu::module::check_assembles(src, (9, 0)) {
            panic!("{e}");
        }
    }
    // With the phase marks compiled in (ARCHIPELAGO_Q_TRACE), and only then, the block kernels
    // and the warp kernels read the clock.
    let clock = |src: &str| match gpu::module::compile_cached(src, (9, 0)) {
        Ok((ptx, _)) => ptx.contains("%clock64"),
        Err(e) => panic!("{e}"),
    };
    for program in [&src, &warps] {
        assert!(clock(&format!("{}{program}", gpu::phase_trace::DEFINE)));
        assert_eq!(clock(program), gpu::phase_trace::requested());
    }
    // The copies for many waves (gpu::regcap), the quotient's block kernels' and `block`'s:
    // capped, and every kernel assembles.
    let quotient = gpu::regcap::source(gpu::regcap::QUOTIENT, &src);
    let block = gpu::block::capped_source();
    for (src, n) in [
        (quotient, gpu::regcap::QUOTIENT),
        (block, gpu::regcap::BLOCK),
    ] {
        match gpu::module::compile_cached(&src, (9, 0)) {
            Ok((ptx, _)) => assert!(ptx.contains(&format!(".maxnreg {n}")), "no cap of {n}"),
            Err(e) => panic!("{e}"),
        }
        if let Err(e) = gpu::module::check_assembles(&src, (9, 0)) {
            panic!("{e}");
        }
    }
}

/// Eight one-dof trees; per world: equality 0 twice on {0,1}, equality 1 on {2,3}, dof friction
/// on 5, contacts {1,4} and {3,6}; trees in `asleep` produce no rows; `eq0_rows` of equality 0.
fn world(b: &mut archipelago::BatchBuilder, asleep: &[i32], eq0_rows: usize) {
    let awake = |s: &[i32]| s.iter().all(|t| !asleep.contains(t));
    if awake(&[0, 1]) {
        for _ in 0..eq0_rows {
            b.row(RowType::Equality, 0, &[0, 1]);
        }
    }
    if awake(&[2, 3]) {
        b.row(RowType::Equality, 1, &[2, 3]);
    }
    if awake(&[5]) {
        b.row(RowType::FrictionDof, 5, &[5]);
    }
    if awake(&[1, 4]) {
        b.row(RowType::ContactPyramidal, 0, &[1, 4]);
    }
    if awake(&[3, 6]) {
        b.row(RowType::ContactPyramidal, 1, &[3, 6]);
    }
    b.end_world();
}

/// Forty trees of 1, 2, 3, 1, 2, 3, ... dofs (places and idofs differ from tree ids).
fn forty() -> Model {
    let dofnum: Vec<i32> = (0..40).map(|t| t % 3 + 1).collect();
    Model::from_dofnum(&dofnum).unwrap()
}

fn eight() -> Model {
    Model::from_dofnum(&[1; 8]).unwrap()
}

/// Capacity for four worlds of [`eight`] with up to 16 rows, `nsupport` support entries and
/// `nedge` rowless hyperedges each.
fn four_of_eight(nsupport: usize, nedge: usize) -> Capacity {
    Capacity {
        nworld: 4,
        ntree: 8,
        nv: 8,
        njmax: 16,
        nsupport,
        nedge,
    }
}

/// A solver under the default policy that gives every replayed world a warp (and, with `pair`,
/// a second warp for its guard) and checks every world every step (reuse off).
fn warp_solver(gpu: &gpu::Gpu, cap: Capacity, model: &Model, pair: bool) -> QuotientSolver {
    let mut s = QuotientSolver::new(gpu, cap, model, Policy::default()).unwrap();
    s.set_reuse(false).unwrap();
    s.set_warp_worlds(Some(true)).unwrap();
    s.set_guard_warps(Some(pair));
    s
}

/// sleep_toggles (bodies falling asleep and woken, equalities switched) and a world count past
/// seven worlds a multiprocessor, where the warp kernels are the default.
fn sleep_toggles_past_a_wave(gpu: &gpu::Gpu) -> (Trace, usize) {
    let t = Trace::open(traces::dir().join("sleep_toggles.npz")).unwrap();
    (t, 8 * gpu.info().sm_count as usize + 5)
}

/// Steps the solver and checks every output against the oracle.
fn step(s: &mut QuotientSolver, model: &Model, batch: &Batch, events: &Events) {
    let input = Input::new(model, batch).unwrap();
    let mut out = Islands::default();
    s.step(&input, events, &mut out).unwrap();
    assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
}

/// [`step`], then: each of the `nworld` worlds took the node-level maps or kept its outputs,
/// none was solved directly.
fn step_by_nodes(
    s: &mut QuotientSolver,
    model: &Model,
    batch: &Batch,
    events: &Events,
    nworld: usize,
) {
    step(s, model, batch, events);
    let c = s.last_counts();
    assert_eq!((c.by_nodes + c.reused, c.direct), (nworld, 0), "{c:?}");
}

#[test]
fn the_warp_program_is_loaded_only_where_a_batch_may_take_it() {
    let Some(gpu) = open() else { return };
    let model = eight();
    let sms = gpu.info().sm_count.max(1) as usize;
    // ARCHIPELAGO_Q_WARP (for measurements) decides at construction instead of the rule.
    let forced = env_choice("ARCHIPELAGO_Q_WARP");
    // A step of every world, each through its nodes and equal to the oracle.
    let step_all = |s: &mut QuotientSolver, nworld: usize| {
        let mut b = Batch::builder();
        for _ in 0..nworld {
            world(&mut b, &[], 2);
        }
        step_by_nodes(s, &model, &b.finish(), &Events::new(), nworld);
    };
    // No more worlds than multiprocessors: the rule never gives a world a warp, so the solver
    // loads no warp program until asked for one.
    let cap = Capacity {
        nworld: sms.min(4),
        ..four_of_eight(32, 1)
    };
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    assert_eq!(s.warp_kernels_loaded(), forced == Some(true));
    s.set_reuse(false).unwrap();
    for choice in [Some(false), None] {
        s.set_warp_worlds(choice).unwrap();
        assert_eq!(s.warp_kernels_loaded(), forced == Some(true), "{choice:?}");
        step_all(&mut s, cap.nworld);
        assert!(!s.warp_worlds());
    }
    s.set_warp_worlds(Some(true)).unwrap();
    assert!(s.warp_kernels_loaded());
    step_all(&mut s, cap.nworld);
    assert!(s.warp_worlds());
    // More worlds than multiprocessors: the rule may, so the solver loads it at once.
    let cap = Capacity {
        nworld: sms + 1,
        ..cap
    };
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    assert_eq!(s.warp_kernels_loaded(), forced != Some(false));
    step_all(&mut s, cap.nworld);
    assert_eq!(s.warp_worlds(), forced != Some(false));
}

#[test]
fn sleeping_components_are_masked_on_the_device() {
    let Some(gpu) = open() else { return };
    let (model, cap) = (eight(), four_of_eight(32, 1));
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    // The quotient's own checks, every world every step (unchanged worlds would be reused).
    s.set_reuse(false).unwrap();
    let all = |asleep: [&[i32]; 4], eq0: [usize; 4]| {
        let mut b = Batch::builder();
        for w in 0..4 {
            world(&mut b, asleep[w], eq0[w]);
        }
        b.finish()
    };
    let awake = all([&[], &[], &[], &[]], [2; 4]);
    let mut events = Events::new();
    step(&mut s, &model, &awake, &events);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked, c.direct), (4, 0, 0), "{c:?}");
    // Component {2,3} (with tree 6, bound by a contact) sleeps in world 1 (reported) and in
    // world 2 (not reported): both masked on the device, nothing rebuilt.
    let island = [2, 3, 6];
    for t in island {
        events.sleep(1, t);
    }
    let asleep = all([&[], &island, &island, &[]], [2; 4]);
    // World 1, reported, joins the masked worlds at the upload (listed for the masked twins);
    // world 2 is found by its plain warp.
    s.upload(&Input::new(&model, &asleep).unwrap(), &events)
        .unwrap();
    let taken: &[u32] = match env_choice("ARCHIPELAGO_Q_FELL") {
        Some(false) => &[],
        _ => &[1],
    };
    assert_eq!(s.masked_worlds(), taken);
    step(&mut s, &model, &asleep, &events);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked, c.direct), (2, 2, 0), "{c:?}");
    assert_eq!(s.quotient().counters().guarded, 0);
    assert_eq!(s.masked_worlds(), [1, 2]);
    // Awake again: the quotients still replay. World 1, woken whole and reported, leaves the
    // masked worlds at the upload (the launch replays it as any); world 2, not reported, at
    // the download.
    events.clear();
    for t in island {
        events.wake(1, t);
    }
    s.upload(&Input::new(&model, &awake).unwrap(), &events)
        .unwrap();
    assert_eq!(s.masked_worlds(), [2]);
    step(&mut s, &model, &awake, &events);
    assert_eq!(s.masked_worlds(), [] as [u32; 0]);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked, c.direct), (4, 0, 0), "{c:?}");
    // One of equality 0's two rows gone in world 3 (nothing reported): solved directly, then
    // rebuilt, so the next identical step replays.
    events.clear();
    let partial = all([&[], &[], &[], &[]], [2, 2, 2, 1]);
    step(&mut s, &model, &partial, &events);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked, c.direct), (3, 0, 1), "{c:?}");
    step(&mut s, &model, &partial, &events);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked, c.direct), (4, 0, 0), "{c:?}");
    // A contact reaching a sleeping component of two trees: the node cannot stand for them.
    let mut b = Batch::builder();
    for w in 0..4 {
        if w == 0 {
            b.row(RowType::Equality, 1, &[2, 3]);
            b.row(RowType::FrictionDof, 5, &[5]);
            b.row(RowType::ContactPyramidal, 0, &[1, 4]);
            b.end_world();
        } else {
            world(&mut b, &[], if w == 3 { 1 } else { 2 });
        }
    }
    step(&mut s, &model, &b.finish(), &events);
    let c = s.last_counts();
    assert_eq!((c.masked, c.direct), (0, 1), "{c:?}");
}

#[test]
fn graph_replays_equal_direct_launches_and_fewer_worlds_fit() {
    let Some(gpu) = open() else { return };
    let mut rng = scenes::Rng::new(5);
    let scene = scenes::Scene::random(&mut rng, 30, 12, 5);
    let cap = Capacity {
        nworld: 16,
        ntree: 30,
        nv: scene.model.nv(),
        njmax: 300,
        nsupport: 1200,
        nedge: 4,
    };
    let mut s = QuotientSolver::new(&gpu, cap, &scene.model, Policy::default()).unwrap();
    let events = Events::new();
    for (nworld, reuse) in [
        (16, false),
        (3, false),
        (16, true),
        (1, true),
        (0, false),
        (7, true),
    ] {
        s.set_reuse(reuse).unwrap();
        let worlds = vec![scenes::World::new(&scene); nworld];
        let batch = scenes::batch(&scene, &worlds, &mut rng);
        let input = Input::new(&scene.model, &batch).unwrap();
        let want = oracle::solve(&input);
        let (mut graphed, mut direct) = (Islands::default(), Islands::default());
        s.upload(&input, &events).unwrap();
        s.replay().unwrap();
        s.download(&input, &mut graphed).unwrap();
        s.upload(&input, &events).unwrap();
        s.launch_direct().unwrap();
        s.download(&input, &mut direct).unwrap();
        assert_eq!(graphed.first_mismatch(&want), None, "{nworld} worlds");
        assert_eq!(direct.first_mismatch(&want), None, "{nworld} worlds");
    }
}

/// World `w` of the reuse test: `variant` 0 is the base; 1 adds a contact (world 0, so every
/// later world's rows move), changes one support entry (world 2) or one row type (world 3:
/// the partition stays); 2 adds a rowless coupling (world 0); 3 renumbers a contact (world 2:
/// ids do not matter); 4 adds a row inside an island (world 1: the partition stays).
fn reuse_world(b: &mut archipelago::BatchBuilder, w: usize, variant: usize) {
    b.row(RowType::Equality, 0, &[0, 1]);
    b.row(RowType::Equality, 0, &[0, 1]);
    if w == 1 && variant == 4 {
        b.row(RowType::Equality, 0, &[0, 1]);
    }
    b.row(RowType::FrictionDof, 5, &[5]);
    let other = if w == 2 && variant >= 1 { 5 } else { 4 };
    let id = if w == 2 && variant == 3 { 7 } else { 0 };
    b.row(RowType::ContactPyramidal, id, &[1, other]);
    let kind = if w == 3 && variant >= 1 {
        RowType::ContactElliptic
    } else {
        RowType::ContactPyramidal
    };
    b.row(kind, 1, &[3, 6]);
    if w == 0 && variant >= 1 {
        b.row(RowType::ContactPyramidal, 2, &[2, 7]);
    }
    if w == 0 && variant == 2 {
        b.rowless(0, &[6, 7]);
    }
    b.end_world();
}

/// Partial reuse needs a cached step, also where a world without rows may have islands: with
/// reuse off, and at a new solver's first step (its buffers most likely a freed solver's
/// outputs), no world keeps the tree- and dof-level outputs it finds in place.
#[test]
fn islands_without_rows_never_take_outputs_nothing_cached() {
    let Some(gpu) = open() else { return };
    let (model, cap) = (
        eight().with_islands_without_rows(true),
        four_of_eight(40, 2),
    );
    let mut b = Batch::builder();
    for w in 0..4 {
        reuse_world(&mut b, w, 0);
    }
    let (base, events) = (b.finish(), Events::new());
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    s.set_node_maps(false);
    s.set_reuse(false).unwrap();
    for k in 0..3 {
        step(&mut s, &model, &base, &events);
        assert_eq!(s.last_counts().rows_only, 0, "step {k}");
    }
    drop(s);
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    s.set_node_maps(false);
    step(&mut s, &model, &base, &events);
    assert_eq!(s.last_counts().rows_only, 0);
}

#[test]
fn unchanged_worlds_reuse_their_outputs_exactly() {
    let Some(gpu) = open() else { return };
    let (model, cap) = (eight(), four_of_eight(40, 2));
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    assert!(s.reuse() && s.node_maps());
    // The tree-level maps, whose partition check keeps tree- and dof-level outputs (worlds of
    // few nodes otherwise take the node-level maps, which write every output).
    s.set_node_maps(false);
    let batch = |variants: &[usize]| {
        let mut b = Batch::builder();
        for (w, &v) in variants.iter().enumerate() {
            reuse_world(&mut b, w, v);
        }
        b.finish()
    };
    let events = Events::new();
    // (variants per world, worlds expected to be reused, of them with their row-level outputs
    // in place, changed worlds whose partition stayed)
    let plan: [(&[usize], usize, usize, usize); 12] = [
        (&[0, 0, 0, 0], 0, 0, 0), // nothing cached yet
        (&[0, 0, 0, 0], 4, 4, 0),
        (&[1, 1, 1, 1], 1, 0, 1), // world 1 unchanged (its rows moved); 0, 2, 3 changed
        (&[1, 1], 2, 0, 0),       // fewer worlds: every place forgotten
        (&[1, 1, 1, 1], 4, 0, 0), // worlds 2 and 3 come back unchanged since their last solve
        (&[2, 1, 1, 1], 3, 3, 0), // a rowless coupling added to world 0 joins two islands
        (&[2, 1, 3, 1], 4, 4, 0), // only a row id changed
        (&[2, 4, 3, 1], 3, 1, 1), // a row more inside an island of world 1 (2 and 3 move)
        (&[0, 0, 0, 0], 0, 0, 2), // worlds 1 and 3 keep their partitions
        (&[0, 0, 0, 0], 4, 4, 0),
        // Fewer worlds, world 0 a row longer: world 1's rows, moved, cover world 2's first
        // row, which must not be taken for world 2's own when it comes back.
        (&[1, 0], 1, 0, 0),
        (&[0, 0, 0, 0], 3, 0, 0),
    ];
    for (k, (variants, reused, in_place, rows_only)) in plan.into_iter().enumerate() {
        step(&mut s, &model, &batch(variants), &events);
        let c = s.last_counts();
        assert_eq!(
            (c.reused, c.in_place, c.rows_only),
            (reused, in_place, rows_only),
            "step {k}: {c:?}"
        );
        assert_eq!(c.reused + c.replayed + c.masked + c.direct, variants.len());
        assert_eq!(c.by_nodes, 0, "step {k}: {c:?}");
    }
    // Off: every world solved; on again: the cache starts empty.
    let base = batch(&[0, 0, 0, 0]);
    s.set_reuse(false).unwrap();
    step(&mut s, &model, &base, &events);
    assert_eq!(s.last_counts().reused, 0);
    s.set_reuse(true).unwrap();
    for want in [0, 4] {
        step(&mut s, &model, &base, &events);
        assert_eq!(s.last_counts().reused, want);
    }
    assert_eq!(
        s.quotient().counters().reused,
        4 + 1 + 2 + 4 + 3 + 4 + 3 + 4 + 1 + 3 + 4
    );
    // A new solver most likely gets the freed buffers, outputs included: it must not take
    // them for its own cached step (nothing is cached before its first step).
    drop(s);
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    for want in [0, 4] {
        step(&mut s, &model, &base, &events);
        let c = s.last_counts();
        assert_eq!((c.reused, c.rows_only), (want, 0), "{c:?}");
        // Node-level maps (on by default) for every world not reused.
        assert_eq!(c.by_nodes, 4 - want, "{c:?}");
    }
    // The same plan with them (its first step now finds the base cached): every world solved
    // over its quotient has its outputs from its nodes; only a direct solve (a quotient that
    // no longer fits) takes the tree-level maps. The node-level partition check keeps a
    // partition only when the world's last mapping was from the same nodes: never more often
    // than the tree-level check, and here at least once.
    let mut kept = 0;
    for (k, (variants, reused, in_place, rows_only)) in plan.into_iter().enumerate().skip(1) {
        step(&mut s, &model, &batch(variants), &events);
        let c = s.last_counts();
        assert_eq!(
            (c.reused, c.in_place),
            (reused, in_place),
            "step {k}: {c:?}"
        );
        assert_eq!(c.by_nodes, c.replayed + c.masked, "step {k}: {c:?}");
        assert!(c.rows_only <= rows_only, "step {k}: {c:?}");
        kept += c.rows_only;
    }
    assert!(kept > 0);
}

#[test]
fn reuse_after_warp_steps_starts_from_an_empty_cache() {
    let Some(gpu) = open() else { return };
    let (model, cap) = (eight(), four_of_eight(40, 2));
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    let batch = |v: usize| {
        let mut b = Batch::builder();
        for w in 0..4 {
            reuse_world(&mut b, w, v);
        }
        b.finish()
    };
    let events = Events::new();
    // (variant, one warp a world, worlds expected to be reused). The warp kernel has no reuse
    // check and records nothing: after it, the base's cached step no longer describes the
    // outputs in place (world 0's islands, the rows of worlds 1-3, all moved by variant 1).
    let plan = [
        (0, false, 0),
        (0, false, 4),
        (1, true, 0),
        (0, false, 0),
        (0, false, 4),
        (0, true, 0),
    ];
    for (k, (variant, warps, reused)) in plan.into_iter().enumerate() {
        s.set_warp_worlds(Some(warps)).unwrap();
        step(&mut s, &model, &batch(variant), &events);
        assert_eq!(s.warp_worlds(), warps, "step {k}");
        assert_eq!(s.reuse_active(), !warps, "step {k}");
        assert_eq!(
            s.last_counts().reused,
            reused,
            "step {k}: {:?}",
            s.last_counts()
        );
    }
    assert!(s.reuse());
}

/// A world of the node-level maps test over 39 trees: static nodes X = {0, 5, 9} (unless
/// `split`: then {0, 5} and 9 alone), Y = {2, 3, 12} (supports reversed), Z = {20, 30} and the
/// rowless W = {33, 35, 36}, friction on 7; X's rows only when `x_awake`; then `contacts`.
fn nodes_world(b: &mut archipelago::BatchBuilder, x_awake: bool, split: bool, contacts: &[&[i32]]) {
    if x_awake {
        b.row(RowType::Equality, 0, &[0, 5]);
        if !split {
            b.row(RowType::Equality, 1, &[9, 5]);
        }
    }
    b.row(RowType::Equality, 2, &[12, 3]);
    b.row(RowType::Equality, 3, &[3, 2]);
    b.row(RowType::Equality, 4, &[20, 30]);
    b.row(RowType::FrictionDof, 7, &[7]);
    for (k, &c) in contacts.iter().enumerate() {
        b.row(RowType::ContactPyramidal, k as i32, c);
    }
    b.rowless(0, &[33, 35, 36]);
    b.end_world();
}

#[test]
fn rows_by_an_idle_warp_match_the_oracle_at_their_edges() {
    let Some(gpu) = open() else { return };
    // 40 trees in 30 nodes (a rowless coupling of trees 2k, 2k + 1 for k < 10), so every world
    // takes the node-level maps; rows per world around the most one warp maps on its own
    // (BLOCK_SCATTER_MIN = 128: kernels/common.cu), none and a few. A batch of no more worlds
    // than multiprocessors launches quotient_aside_kernel, one of more quotient_few_kernel.
    let model = forty();
    let rows = [0, 1, 17, 127, 128, 129, 130];
    let sms = gpu.info().sm_count.max(1) as usize;
    for nworld in [rows.len(), sms + 3] {
        let cap = Capacity {
            nworld,
            ntree: 40,
            nv: model.nv(),
            njmax: 130,
            nsupport: 300,
            nedge: 10,
        };
        let batch = |seed: u64| {
            let mut b = Batch::builder();
            for w in 0..nworld {
                let mut x = (w as u64 + 1) * 0x9e37_79b9 + seed * 0x85eb_ca6b;
                let mut next = |n: u64| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % n) as i32
                };
                for k in 0..rows[w % rows.len()] {
                    let (t0, t1) = (next(40), next(40));
                    b.row(RowType::ContactPyramidal, k, &[t0, t1]);
                }
                for k in 0..10 {
                    b.rowless(k, &[2 * k, 2 * k + 1]);
                }
                b.end_world();
            }
            b.finish()
        };
        let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
        // The block kernels (by default more worlds than multiprocessors take two warps each).
        s.set_warp_worlds(Some(false)).unwrap();
        let events = Events::new();
        for reuse in [true, false] {
            s.set_reuse(reuse).unwrap();
            // The third step repeats the second: with reuse, worlds keep their outputs.
            for seed in [0, 1, 1, 2] {
                step_by_nodes(&mut s, &model, &batch(seed), &events, nworld);
            }
        }
    }
}

#[test]
fn node_level_maps_match_the_oracle_at_their_edges() {
    let Some(gpu) = open() else { return };
    // 32 nodes exactly (4 of several trees, 28 of one); one world of 33 (X split) and an empty
    // one (39 one-tree nodes) take the tree-level maps. Dofs per tree vary, so places and
    // idofs differ.
    let dofnum: Vec<i32> = (0..39).map(|t| t % 3 + 1).collect();
    let model = Model::from_dofnum(&dofnum).unwrap();
    let cap = Capacity {
        nworld: 5,
        ntree: 39,
        nv: model.nv(),
        njmax: 16,
        nsupport: 64,
        nedge: 1,
    };
    let joined: &[&[i32]] = &[&[9, 12], &[7], &[1, 4], &[22, 33]];
    let batch = |w0: &[&[i32]], x_awake_in_2: bool| {
        let mut b = Batch::builder();
        nodes_world(&mut b, true, false, w0);
        nodes_world(&mut b, true, false, &[&[0, 2], &[38]]);
        // With X asleep nothing touches it: its trees join the untouched ones.
        let w2: &[&[i32]] = if x_awake_in_2 {
            &[&[12, 20], &[9]]
        } else {
            &[&[12, 20]]
        };
        nodes_world(&mut b, x_awake_in_2, false, w2);
        b.end_world();
        nodes_world(&mut b, true, true, &[&[5, 9], &[1, 2]]);
        b.finish()
    };
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    assert!(s.node_maps());
    let events = Events::new();
    let first = batch(joined, true);
    step(&mut s, &model, &first, &events);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.by_nodes, c.rows_only), (5, 3, 0), "{c:?}");
    // The same contacts in another form in world 0 (X and Y still joined, supports reversed,
    // a contact twice): its partition stays, so only its rows are mapped. X asleep in world 2:
    // masked, its trees untouched (a node of several trees among the untouched ones).
    let same: &[&[i32]] = &[&[3, 5], &[7], &[4, 1], &[4, 1], &[33, 22]];
    step(&mut s, &model, &batch(same, false), &events);
    let c = s.last_counts();
    assert_eq!(
        (c.reused, c.masked, c.by_nodes, c.rows_only),
        (3, 1, 2, 1),
        "{c:?}"
    );
    // X and Y apart in world 0: a new partition, every output mapped again.
    let apart: &[&[i32]] = &[&[7], &[4, 1], &[33, 22]];
    step(&mut s, &model, &batch(apart, false), &events);
    let c = s.last_counts();
    assert_eq!((c.reused, c.by_nodes, c.rows_only), (4, 1, 0), "{c:?}");
    // Without reuse every world is solved and mapped in full.
    s.set_reuse(false).unwrap();
    for b in [batch(same, false), first] {
        step(&mut s, &model, &b, &events);
        let c = s.last_counts();
        assert_eq!((c.reused, c.by_nodes, c.rows_only), (0, 3, 0), "{c:?}");
    }
}

#[test]
fn worlds_without_rows_take_the_node_level_maps() {
    let Some(gpu) = open() else { return };
    // A rowless coupling joins trees 1..=6 of eight: three nodes. Without rows MuJoCo makes no
    // islands, whatever couples the trees; with a contact the coupling's trees are one island.
    let model = eight();
    let batch = |rows: [bool; 4]| {
        let mut b = Batch::builder();
        for with in rows {
            if with {
                b.row(RowType::ContactPyramidal, 0, &[0, 3]);
            }
            b.rowless(0, &[1, 2, 3, 4, 5, 6]);
            b.end_world();
        }
        b.finish()
    };
    // With reuse, then one warp a world (reuse off).
    for warps in [false, true] {
        let cap = four_of_eight(16, 1);
        let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
        assert!(s.node_maps());
        if warps {
            s.set_reuse(false).unwrap();
            s.set_warp_worlds(Some(true)).unwrap();
        }
        let events = Events::new();
        for rows in [
            [false, true, false, true],
            [true, false, true, false],
            [false; 4],
        ] {
            step_by_nodes(&mut s, &model, &batch(rows), &events, 4);
            assert_eq!(s.warp_worlds(), warps);
        }
    }
}

/// One world of the run maps test: `pairs` equalities, each coupling trees t and t + 20 when
/// `far` (nodes apart in tree order) or 2t and 2t + 1 (nodes of consecutive trees), each
/// `twice` (the second pass after the first: two runs of rows per node), a joint limit before
/// them, then `contacts`.
fn paired_world(
    b: &mut archipelago::BatchBuilder,
    (pairs, far, twice): (i32, bool, bool),
    contacts: &[[i32; 2]],
) {
    b.row(RowType::LimitJoint, 0, &[39]);
    for pass in 0..1 + i32::from(twice) {
        for t in 0..pairs {
            let pair = if far { [t, t + 20] } else { [2 * t, 2 * t + 1] };
            b.row(RowType::Equality, t + 20 * pass, &pair);
        }
    }
    contacts_then_end(b, contacts);
}

/// Appends `contacts` (pyramidal, numbered from 0) and ends the world.
fn contacts_then_end(b: &mut archipelago::BatchBuilder, contacts: &[[i32; 2]]) {
    for (k, c) in contacts.iter().enumerate() {
        b.row(RowType::ContactPyramidal, k as i32, c);
    }
    b.end_world();
}

#[test]
fn the_warp_kernel_places_runs_of_one_node_and_scatters_past_the_most() {
    let Some(gpu) = open() else { return };
    // The warp kernel places a slot's trees, and its static rows, by runs of one node where
    // they form at most 32 (RUNS_MAX), else one by one. 40 trees of 1-3 dofs; per world
    // (pairs, far, twice), so runs of rows / of trees: 40 / 40, 20 / 40, 20 / 20, 40 / 20, and
    // 12 / 28 (28 nodes); every world has at most 32 nodes.
    let model = forty();
    let shapes = [
        (20, true, true),
        (20, true, false),
        (20, false, false),
        (20, false, true),
        (12, false, false),
    ];
    let cap = Capacity {
        nworld: shapes.len(),
        ntree: 40,
        nv: model.nv(),
        njmax: 50,
        nsupport: 100,
        nedge: 0,
    };
    // Contacts join nodes (runs of one island before and after each other), touch single
    // trees, or none; trees in no island keep their places after every island's.
    let contacts: [&[[i32; 2]]; 3] = [
        &[[0, 1], [25, 3], [30, 31], [2, 22]],
        &[],
        &[[5, 19], [38, 38], [19, 5], [9, 27]],
    ];
    for pair in [false, true] {
        let mut s = warp_solver(&gpu, cap, &model, pair);
        let events = Events::new();
        for step in 0..4 {
            let mut b = Batch::builder();
            for (w, &shape) in shapes.iter().enumerate() {
                paired_world(&mut b, shape, contacts[(w + step) % contacts.len()]);
            }
            step_by_nodes(&mut s, &model, &b.finish(), &events, shapes.len());
            assert!(s.warp_worlds());
            assert_eq!(s.guard_warps(), pair);
        }
    }
}

/// A world of chains: equalities (t, t + 1) along each of `chains` (first and last tree),
/// listed `twice` (two passes: two runs of rows per chain), after a joint limit; then
/// `contacts`.
fn chained_world(
    b: &mut archipelago::BatchBuilder,
    (chains, twice): (&[(i32, i32)], bool),
    contacts: &[[i32; 2]],
) {
    b.row(RowType::LimitJoint, 0, &[7]);
    for pass in 0..1 + i32::from(twice) {
        for &(first, last) in chains {
            for t in first..last {
                b.row(RowType::Equality, t + 96 * pass, &[t, t + 1]);
            }
        }
    }
    contacts_then_end(b, contacts);
}

#[test]
fn the_warp_kernel_maps_long_runs_run_by_run() {
    let Some(gpu) = open() else { return };
    // Runs of 32 elements or more on average are mapped run by run: 96 trees of 1-3 dofs in
    // one chain (one run of trees and of rows), three (trees run by run, rows one by one), or
    // two listed twice (both run by run, rows in four runs); contacts join chains into one
    // island, or touch one tree, or none (the partition check then keeps the trees, reuse on).
    let dofnum: Vec<i32> = (0..96).map(|t| t % 3 + 1).collect();
    let model = Model::from_dofnum(&dofnum).unwrap();
    let shapes: [(&[(i32, i32)], bool); 4] = [
        (&[(0, 95)], false),
        (&[(0, 31), (32, 63), (64, 95)], false),
        (&[(0, 47), (48, 95)], true),
        (&[(0, 47), (48, 95)], false),
    ];
    let cap = Capacity {
        nworld: shapes.len(),
        ntree: 96,
        nv: model.nv(),
        njmax: 220,
        nsupport: 440,
        nedge: 0,
    };
    let contacts: [&[[i32; 2]]; 3] = [&[[5, 60], [90, 90]], &[], &[[40, 70], [3, 3]]];
    for (reuse, pair) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
        s.set_reuse(reuse).unwrap();
        s.set_warp_worlds(Some(true)).unwrap();
        s.set_guard_warps(Some(pair));
        let events = Events::new();
        for step in 0..6 {
            let mut b = Batch::builder();
            for (w, &shape) in shapes.iter().enumerate() {
                chained_world(&mut b, shape, contacts[(w + step / 2) % contacts.len()]);
            }
            step_by_nodes(&mut s, &model, &b.finish(), &events, shapes.len());
            assert!(s.warp_worlds());
            // Every other step repeats the last: the same partition, only the rows mapped; the
            // others change some world's partition (world 1's, at least).
            let rows_only = s.last_counts().rows_only;
            match (reuse, step) {
                (false, _) | (true, 0) => assert_eq!(rows_only, 0, "step {step}"),
                (true, _) if step % 2 == 1 => assert_eq!(rows_only, 4, "step {step}"),
                _ => assert!(rows_only < 4, "step {step}: {rows_only}"),
            }
        }
    }
}

/// A world of a `w` × `h` grid of trees coupled by one equality per edge (cloth-like), the edges
/// between rows `cut` and `cut + 1` left out when given (two nodes); then single-tree contacts.
fn grid_world(
    b: &mut archipelago::BatchBuilder,
    (w, h): (i32, i32),
    cut: Option<i32>,
    contacts: &[i32],
) {
    let mut eq = 0;
    for y in 0..h {
        for x in 0..w {
            let t = y * w + x;
            if x + 1 < w {
                b.row(RowType::Equality, eq, &[t, t + 1]);
                eq += 1;
            }
            if y + 1 < h && cut != Some(y) {
                b.row(RowType::Equality, eq, &[t, t + w]);
                eq += 1;
            }
        }
    }
    for (k, &t) in contacts.iter().enumerate() {
        b.row(RowType::ContactPyramidal, k as i32, &[t]);
    }
    b.end_world();
}

#[test]
fn the_warp_kernel_takes_models_of_up_to_512_trees() {
    let Some(gpu) = open() else { return };
    // Grids of 400 and 512 trees (one node, or two when cut) replay a warp a world against the
    // oracle; one of 513 trees is past the warp kernel's scratch, so its worlds take blocks.
    // Only the contacts change from step to step: a cut that moved would be a static change
    // without an event, which the device's guard solves directly.
    for (w, h) in [(20, 20), (16, 32), (19, 27)] {
        let ntree = (w * h) as usize;
        let model = Model::from_dofnum(&vec![3; ntree]).unwrap();
        let cap = Capacity {
            nworld: 3,
            ntree,
            nv: model.nv(),
            njmax: 2 * ntree + 8,
            nsupport: 4 * ntree + 8,
            nedge: 0,
        };
        let mut s = warp_solver(&gpu, cap, &model, ntree == 512);
        let events = Events::new();
        let last = ntree as i32 - 1;
        for step in 0..3 {
            let mut b = Batch::builder();
            grid_world(&mut b, (w, h), None, &[step, last]);
            grid_world(&mut b, (w, h), Some(h / 2), &[last - step]);
            grid_world(&mut b, (w, h), Some(1), &[step * (w + 1)]);
            step_by_nodes(&mut s, &model, &b.finish(), &events, 3);
            assert_eq!(s.warp_worlds(), ntree <= 512, "{ntree} trees");
        }
    }
}

/// An unreported change to one static row of [`guarded_world`].
#[derive(Clone, Copy)]
enum Change {
    /// Its second tree another.
    Retarget,
    /// Tendon friction instead of an equality, on the same trees.
    Kind,
    /// Its first tree only.
    Shorter,
    /// Gone.
    Dropped,
}

/// A world of the guard test: `lead` joint limits, then 40 equalities coupling trees t and
/// t + 20 (twice each), the one at `change` changed, then a contact.
fn guarded_world(b: &mut archipelago::BatchBuilder, lead: usize, change: Option<(usize, Change)>) {
    for k in 0..lead {
        b.row(RowType::LimitJoint, k as i32, &[39]);
    }
    for i in 0..40 {
        let t = (i % 20) as i32;
        match change.filter(|&(at, _)| at == i).map(|(_, c)| c) {
            None => b.row(RowType::Equality, i as i32, &[t, t + 20]),
            Some(Change::Retarget) => b.row(RowType::Equality, i as i32, &[t, (t + 21) % 40]),
            Some(Change::Kind) => b.row(RowType::FrictionTendon, i as i32, &[t, t + 20]),
            Some(Change::Shorter) => b.row(RowType::Equality, i as i32, &[t]),
            Some(Change::Dropped) => b,
        };
    }
    b.row(RowType::ContactPyramidal, 0, &[3, 38]);
    b.end_world();
}

#[test]
fn the_warp_kernel_guard_finds_a_change_at_every_place() {
    let Some(gpu) = open() else { return };
    // The warp kernel compares a world's static rows with its slot's, a batch of four a lane:
    // every kind of unreported change, at the edges of those batches and of the warp's 32
    // lanes, in worlds whose rows start at every alignment (0-3 leading rows, 41-44 rows a
    // world). A world found changed is solved directly (and its quotient rebuilt).
    let model = forty();
    let changes = [
        Change::Retarget,
        Change::Kind,
        Change::Shorter,
        Change::Dropped,
    ];
    let places = [0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33, 38, 39];
    let nworld = places.len() * 4;
    let cap = Capacity {
        nworld,
        ntree: 40,
        nv: model.nv(),
        njmax: 48,
        nsupport: 100,
        nedge: 0,
    };
    let batch = |changed: bool, shift: usize| {
        let mut b = Batch::builder();
        for w in 0..nworld {
            let change = (places[w / 4], changes[(w + shift) % 4]);
            guarded_world(&mut b, (w + shift) % 4, changed.then_some(change));
        }
        b.finish()
    };
    // The guard in the world's warp (in every fourth world after its tree and dof maps), or in a
    // second warp of its own while the first maps it.
    for pair in [false, true] {
        let mut s = warp_solver(&gpu, cap, &model, pair);
        let events = Events::new();
        for shift in 0..4 {
            // The first step rebuilds what the last changed (or contracts every world).
            step(&mut s, &model, &batch(false, shift), &events);
            step_by_nodes(&mut s, &model, &batch(false, shift), &events, nworld);
            step(&mut s, &model, &batch(true, shift), &events);
            assert_eq!(s.last_counts().direct, nworld, "{:?}", s.last_counts());
            assert_eq!(s.guard_warps(), pair);
        }
    }
}

#[test]
fn the_warp_kernel_takes_a_batch_s_one_slot_from_its_arguments() {
    let Some(gpu) = open() else { return };
    // 64 worlds of two loops of four trees (two nodes) and a contact each. While every world
    // shares one slot the warp kernel takes it and its counts from its arguments; once world
    // 37 couples the loops (unreported: its guard sends it to the block, which rebuilds it)
    // the batch has two slots and the warp kernel loads each world's.
    let model = eight();
    let nworld = 64;
    let batch = |odd: bool, shift: i32| {
        let mut b = Batch::builder();
        for w in 0..nworld as i32 {
            for t in 0..8 {
                b.row(RowType::Equality, t, &[t, 4 * (t / 4) + (t + 1) % 4]);
            }
            if odd && w == 37 {
                b.row(RowType::Equality, 8, &[3, 4]);
            }
            b.row(
                RowType::ContactPyramidal,
                0,
                &[(w + shift) % 8, (w + 3) % 8],
            );
            b.end_world();
        }
        b.finish()
    };
    let cap = Capacity {
        nworld,
        ntree: 8,
        nv: 8,
        njmax: 12,
        nsupport: 24,
        nedge: 0,
    };
    for pair in [false, true] {
        let mut s = warp_solver(&gpu, cap, &model, pair);
        let events = Events::new();
        step(&mut s, &model, &batch(false, 0), &events);
        for shift in 1..3 {
            step_by_nodes(&mut s, &model, &batch(false, shift), &events, nworld);
            assert!(s.batch_slot().is_some());
        }
        step(&mut s, &model, &batch(true, 3), &events);
        assert_eq!(s.last_counts().direct, 1, "{:?}", s.last_counts());
        for shift in 4..6 {
            step_by_nodes(&mut s, &model, &batch(true, shift), &events, nworld);
            assert_eq!(s.batch_slot(), None);
        }
        // World 37 back as the others: found by its guard again (solved by its block), then
        // rebuilt into the slot the others share, so the batch has one slot again.
        step(&mut s, &model, &batch(false, 6), &events);
        assert_eq!(s.last_counts().direct, 1, "{:?}", s.last_counts());
        step_by_nodes(&mut s, &model, &batch(false, 7), &events, nworld);
        assert!(s.batch_slot().is_some());
    }
}

#[test]
fn node_level_maps_with_the_scratch_in_global_memory() {
    let Some(gpu) = open() else { return };
    // 9,000 trees: 28 bytes of scratch each is more than a block's shared memory (227 KiB on
    // the H200), so the per-world scratch is in global memory. Two rowless couplings make two
    // interleaved nodes of many trees (the even trees below 8,000; the odd ones and 8,000 to
    // 8,989), ten trees stay alone: 12 nodes. Contacts join them or not.
    let ntree = 9000;
    let model = Model::from_dofnum(&vec![1; ntree]).unwrap();
    let cap = Capacity {
        nworld: 3,
        ntree,
        nv: ntree,
        njmax: 8,
        nsupport: 2 * ntree,
        nedge: 2,
    };
    let first: Vec<i32> = (0..8000).step_by(2).collect();
    let second: Vec<i32> = (1..8000).step_by(2).chain(8000..8990).collect();
    let batch = |contacts: [&[&[i32]]; 3]| {
        let mut b = Batch::builder();
        for c in contacts {
            for (k, &s) in c.iter().enumerate() {
                b.row(RowType::ContactPyramidal, k as i32, s);
            }
            b.rowless(0, &first);
            b.rowless(1, &second);
            b.end_world();
        }
        b.finish()
    };
    for reuse in [false, true] {
        let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
        s.set_reuse(reuse).unwrap();
        assert!(s.node_maps());
        let events = Events::new();
        for contacts in [
            [&[&[3999, 4000][..], &[8999]][..], &[&[1, 8998]], &[]],
            [&[&[8999]], &[&[1, 8998], &[4002, 8999]], &[&[7, 4001]]],
            [&[&[3999, 4000], &[8999]], &[&[1, 8998]], &[]],
        ] {
            step_by_nodes(&mut s, &model, &batch(contacts), &events, 3);
        }
    }
}

/// The paths a random run of the device quotient took, in world-steps.
#[derive(Debug, Default)]
struct Paths {
    world_steps: u64,
    reused: u64,
    by_nodes: usize,
    by_trees: usize,
    /// Launched a warp a world, and of those (reuse on) kept their partition: rows only.
    by_warps: usize,
    warp_rows_only: usize,
    /// Of those launched a warp a world, those with a second warp for the guard.
    by_pairs: usize,
    /// Solved with a node masked as asleep, and of those by their warp (the masked twins);
    /// solved directly (the guard, partial sleep).
    masked: usize,
    masked_by_warps: usize,
    /// Of those, mapped by their hint (the nodes asleep at their last masked step).
    masked_by_hint: usize,
    direct: usize,
    /// Launched a block a world right after a step with more of its worlds masked than the rule
    /// allows the warp kernels (`QuotientSolver::masked_for_blocks`).
    blocks_after_masked: usize,
}

/// One random run: `steps` steps of `nworld` worlds of `scene` mutated by every source (reported
/// or not, in bursts of every world and of none, half the untouched worlds resting), each step
/// checked against the oracle; `warps` forces the warp kernel on or off, `pair` its second warp
/// a world for the guard (`None`: the rules).
fn random_run(
    gpu: &gpu::Gpu,
    scene: &scenes::Scene,
    (nworld, steps): (usize, usize),
    (policy, reuse, nodes, warps, pair): (Policy, bool, bool, Option<bool>, Option<bool>),
    rng: &mut scenes::Rng,
    paths: &mut Paths,
) {
    let cap = scene.capacity(nworld);
    let mut solver = QuotientSolver::new(gpu, cap, &scene.model, policy.clone()).unwrap();
    solver.set_reuse(reuse).unwrap();
    solver.set_node_maps(nodes);
    solver.set_warp_worlds(warps).unwrap();
    solver.set_guard_warps(pair);
    let mut worlds = vec![scenes::World::new(scene); nworld];
    let (mut tally, mut events) = (scenes::Tally::default(), Events::new());
    let (mut out, mut last) = (Islands::default(), Islands::default());
    let mut prev = Batch::default();
    let (mut warp_steps, mut masked_before) = (0, 0);
    for step in 0..steps {
        events.clear();
        // Half the worlds left alone emit last step's rows again (resting worlds).
        let mut repeat: Vec<bool> = (0..nworld).map(|_| rng.chance(0.5)).collect();
        // Bursts: now and then every world changes at once, or none does.
        let p = match step % 50 {
            10 => 1.0,
            11..=20 => 0.0,
            _ => 0.15,
        };
        for (w, world) in worlds.iter_mut().enumerate() {
            if step > 0 && rng.chance(p) {
                let islands = last.world(w).tree_island.to_vec();
                let (w, r) = (w as u32, &mut *rng);
                scenes::mutate(scene, world, w, &islands, r, 0.8, &mut events, &mut tally);
                repeat[w as usize] = false;
            }
        }
        let batch = scenes::batch_repeating(scene, &worlds, &prev, &repeat, rng);
        let input = Input::new(&scene.model, &batch).unwrap();
        let want = oracle::solve(&input);
        // The kernels are chosen by the uploaded batch and the last step's counts: named
        // between the upload and the replay.
        solver.upload(&input, &events).unwrap();
        let (by_warps, by_pairs) = (solver.warp_worlds(), solver.guard_warps());
        solver.replay().unwrap();
        solver.download(&input, &mut out).unwrap();
        if let Some(m) = out.first_mismatch(&want) {
            panic!(
                "{policy:?} reuse {reuse} node maps {nodes} warps {warps:?} pair {pair:?} step {step}: {m:?}"
            );
        }
        if !by_warps && masked_before as f64 > solver.masked_for_blocks() * nworld as f64 {
            paths.blocks_after_masked += nworld;
        }
        let c = solver.last_counts();
        masked_before = c.masked;
        if by_warps {
            warp_steps += 1;
            paths.by_warps += nworld;
            if by_pairs {
                paths.by_pairs += nworld;
            }
            // The partition check (reuse on): only the rows mapped.
            if reuse {
                paths.warp_rows_only += c.rows_only;
            }
        }
        assert!(nodes || c.by_nodes == 0, "{c:?}");
        paths.by_nodes += c.by_nodes;
        paths.by_trees += c.replayed + c.masked + c.direct - c.by_nodes;
        paths.masked += c.masked;
        paths.masked_by_warps += c.masked_by_warps;
        paths.masked_by_hint += c.masked_by_hint;
        assert!(by_warps || c.masked_by_warps == 0, "{c:?}");
        assert!(c.masked_by_hint <= c.masked_by_warps, "{c:?}");
        paths.direct += c.direct;
        paths.world_steps += nworld as u64;
        last = want;
        prev = batch;
    }
    let c = solver.quotient().counters();
    // Nothing reused without reuse; with it, on the block kernels, resting worlds are reused
    // (the warp kernel has no reuse check, only the partition check: `warp_rows_only`).
    assert!(reuse || c.reused == 0, "{policy:?} {c:?}");
    assert!(!reuse || warp_steps > 0 || c.reused > 0, "{policy:?} {c:?}");
    paths.reused += c.reused;
    // With nothing static every world shares the one trivial quotient: nothing to rebuild.
    if policy != Policy::all_dynamic() {
        assert!(c.contracted > 1, "{policy:?} {c:?}");
    }
    assert!(tally.unreported > 0, "{tally:?}");
    assert_eq!(tally.sleeps > 0, scene.sleeps, "{tally:?}");
}

#[test]
fn random_invalidation_of_every_source_matches_the_oracle() {
    let Some(gpu) = open() else { return };
    let mut rng = scenes::Rng::new(77);
    let scene = scenes::Scene::random(&mut rng, 40, 20, 6);
    let mut paths = Paths::default();
    // (policy, reuse, node-level maps, one warp a replayed world: forced or by the rule)
    let runs = policies().into_iter().map(|p| (p, true, true, None, None));
    let more = [
        (Policy::default(), false, true, None, None),
        (Policy::default(), false, true, Some(true), Some(false)),
        (Policy::default(), true, true, Some(true), None),
        (Policy::default(), true, false, None, None),
    ];
    for run in runs.chain(more) {
        random_run(&gpu, &scene, (64, 600), run, &mut rng, &mut paths);
    }
    // Both maps ran: worlds of few nodes and the others (all-dynamic: a node per tree); the
    // reuse check; and the warp kernel, with its partition check.
    let p = &paths;
    assert!(p.by_nodes > 0 && p.by_trees > 0 && p.reused > 0, "{p:?}");
    assert!(p.by_warps > 0 && p.warp_rows_only > 0, "{p:?}");
    println!("{p:?}");
}

/// A model that finds islands in worlds without rows (native 4.0.0 with sleep, the discrete
/// integrator and a coupling flex): the same random sequences on the block kernels and, forced,
/// on the warp kernel, whose gates (`world_discovers`) then let a world without rows have the
/// islands of its rowless couplings.
#[test]
fn random_invalidation_with_islands_without_rows_matches_the_oracle() {
    let Some(gpu) = open() else { return };
    let mut rng = scenes::Rng::new(81);
    let mut paths = Paths::default();
    for (ntree, neq, warp) in [(40, 20, None), (24, 10, Some(true))] {
        let mut scene = scenes::Scene::random(&mut rng, ntree, neq, 6);
        scene.model = scene.model.clone().with_islands_without_rows(true);
        for policy in policies() {
            let run = (policy, true, true, warp, None);
            random_run(&gpu, &scene, (96, 300), run, &mut rng, &mut paths);
        }
    }
    println!("{paths:?}");
}

/// The warp kernel (what runs past seven worlds a multiprocessor) under the same random
/// sequences at every step: with at most 32 trees every slot has at most 32 nodes, so it takes
/// every world, whatever the mutations split; worlds its guard or a sleeping node stops go to
/// its block's direct solve. Forced on 96 worlds under every policy (the scene of 32 trees
/// with a second warp a world for the guard, the scene of 20 without), and by the launch rules
/// on eight worlds a multiprocessor (a second warp a world there; the masked twins at every
/// share of masked worlds, `QuotientSolver::masked_for_blocks`). Then scenes
/// of more trees, whose equalities stay static and nothing sleeps, so that their couplings keep
/// every slot within 32 nodes: 64 trees in a few nodes (the run tables), 400 in one or two (runs of 32
/// trees or more, mapped run by run) and 64 in 20-28 nodes, interleaved (up to 59 runs of one
/// node, past what the tables hold), each with the guard in the world's warp and in its own.
#[test]
fn random_invalidation_on_the_warp_kernel_matches_the_oracle() {
    let Some(gpu) = open() else { return };
    let mut rng = scenes::Rng::new(78);
    let mut paths = Paths::default();
    for (ntree, neq) in [(32, 24), (20, 8)] {
        let scene = scenes::Scene::random(&mut rng, ntree, neq, 6);
        let pair = Some(ntree == 32);
        let runs = policies()
            .into_iter()
            .map(|p| (p, true, true, Some(true), pair));
        for run in runs.chain([(Policy::default(), false, true, Some(true), pair)]) {
            random_run(&gpu, &scene, (96, 600), run, &mut rng, &mut paths);
        }
    }
    // A seed of their own: the scenes drawn do not depend on the device (`many` below).
    let mut rng = scenes::Rng::new(79);
    let statics = Policy {
        eq: EqPolicy::Static,
        ..Policy::default()
    };
    for (ntree, neq) in [(64, 160), (400, 1600), (64, 48)] {
        let mut scene = scenes::Scene::random(&mut rng, ntree, neq, 6);
        scene.sleeps = false;
        for (reuse, pair) in [(true, false), (false, true)] {
            let run = (statics.clone(), reuse, true, Some(true), Some(pair));
            random_run(&gpu, &scene, (96, 200), run, &mut rng, &mut paths);
        }
    }
    let many = 8 * gpu.info().sm_count as usize;
    let scene = scenes::Scene::random(&mut rng, 32, 24, 6);
    let run = (Policy::default(), true, true, None, None);
    random_run(&gpu, &scene, (many, 150), run, &mut rng, &mut paths);
    // Every world-step by the warp kernels, but where the rule gave each world a block after a
    // step whose worlds were more than its share masked.
    let p = &paths;
    assert_eq!(
        (p.by_warps + p.blocks_after_masked) as u64,
        p.world_steps,
        "{p:?}"
    );
    assert!(p.by_pairs > 0 && p.by_pairs < p.by_warps, "{p:?}");
    assert!(
        p.warp_rows_only > 0 && p.masked > 0 && p.direct > 0,
        "{p:?}"
    );
    assert!(p.masked_by_warps > 0 && p.masked_by_hint > 0, "{p:?}");
    println!("{p:?}");
}

/// Many more seeds, scenes and policies than the tests above, on a warp a world and on the
/// block kernels alike (the launch rule's choice at eight worlds a multiprocessor, and at 96
/// worlds; a second warp a world for the guard by its rule, or none in every third seed), with
/// and without reuse and the node-level maps, every step checked against the oracle. Not run by default (a device soak, minutes; 80 seeds took 288 s on an H200):
/// `cargo test --release --test gpu_quotient -- --ignored soak` (`ARCHIPELAGO_SOAK_SEEDS`,
/// default 40), or `bash tools/h200_run.sh soak [SEEDS]`.
#[test]
#[ignore = "a long device soak; run with --ignored"]
fn soak_random_invalidation_on_the_device() {
    let Some(gpu) = open() else { return };
    let seeds: u64 = std::env::var("ARCHIPELAGO_SOAK_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let many = 8 * gpu.info().sm_count as usize;
    let mut paths = Paths::default();
    for seed in 0..seeds {
        let k = seed as usize;
        let mut rng = scenes::Rng::new(5000 + seed);
        let (ntree, neq) = [(32, 24), (40, 20), (20, 8), (64, 40)][k % 4];
        let mut scene = scenes::Scene::random(&mut rng, ntree, neq, 6);
        // Every fifth seed finds islands in worlds without rows.
        scene.model = scene.model.clone().with_islands_without_rows(k % 5 == 4);
        let policy = policies()[(k / 4) % policies().len()].clone();
        let nworld = if k % 8 < 4 { many } else { 96 };
        let pair = (k % 3 == 2).then_some(false);
        let run = (policy, k % 10 != 9, k % 7 != 6, None, pair);
        random_run(&gpu, &scene, (nworld, 300), run, &mut rng, &mut paths);
        println!("seed {seed} ({nworld} worlds of {ntree} trees): {paths:?}");
    }
    println!("{seeds} seeds: {paths:?}");
}

/// One quotient solver's setup for a corpus case: policy, node-level maps, reuse, and warps a
/// world (`None`: the launch rule's choice; `Some(1)` or `Some(2)` forces the warp or the pair
/// kernels).
type CorpusRun = (Policy, bool, bool, Option<u8>);

/// Case `k` through a fresh solver for each of `runs`, each stepping the batch, the same batch
/// again (reuse), its rows in reverse order (the static block moved: the guard's way to a
/// rebuild) and the batch once more, every step equal to the oracle.
fn corpus_case_matches_the_oracle(
    gpu: &gpu::Gpu,
    k: usize,
    case: &synth::Case,
    runs: &[CorpusRun],
) {
    let events = Events::new();
    let mut out = Islands::default();
    let cap = Capacity::fit(&case.model, &case.batch);
    let flipped = scenes::reversed(&case.batch);
    let steps = [&case.batch, &case.batch, &flipped, &case.batch];
    let wants: Vec<Islands> = steps
        .iter()
        .map(|b| oracle::solve(&Input::new(&case.model, b).unwrap()))
        .collect();
    for (policy, nodes, reuse, warps) in runs {
        let what = format!(
            "case {k} (seed {:#x} {:?}), {policy:?}, node-level maps {nodes}, reuse {reuse}, \
             warps a world {warps:?}",
            case.seed, case.spec
        );
        let mut s = QuotientSolver::new(gpu, cap, &case.model, policy.clone())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        s.set_node_maps(*nodes);
        s.set_reuse(*reuse).unwrap();
        if let Some(n) = warps {
            s.set_warp_worlds(Some(true)).unwrap();
            s.set_guard_warps(Some(*n == 2));
        }
        for (i, (batch, want)) in steps.iter().zip(&wants).enumerate() {
            let input = Input::new(&case.model, batch).unwrap();
            s.step(&input, &events, &mut out)
                .unwrap_or_else(|e| panic!("{what}, step {i}: {e}"));
            if let Some(m) = out.first_mismatch(want) {
                panic!("{what}, step {i}: {m}");
            }
        }
    }
}

#[test]
fn generated_corpus_in_and_out_of_order_matches_the_oracle() {
    let Some(gpu) = open() else { return };
    for (k, case) in synth::corpus(11).take(100).enumerate() {
        // One warp a replayed world with reuse off; every other case with a second warp a world
        // for the guard.
        let warps = if k % 2 == 1 { 2 } else { 1 };
        let runs = [
            (Policy::default(), true, true, None),
            (Policy::default(), false, true, None),
            (Policy::all_dynamic(), true, true, None),
            (Policy::default(), true, false, Some(warps)),
        ];
        corpus_case_matches_the_oracle(&gpu, k, &case, &runs);
    }
}

/// The conformance corpus that CI checks every CPU mode on (`synth::conformance`; the first 600
/// cases by default, more with `ARCHIPELAGO_GPU_CORPUS`: `tests/support/gpu.rs`) through every
/// kernel family of the device quotient: the block kernels by the launch rule with node-level
/// maps and without them (the tree-level kernel), one warp a world with reuse off, two warps a
/// world (the guard's own) with reuse on, and every row dynamic.
#[test]
fn every_kernel_equals_the_oracle_on_the_conformance_corpus() {
    let Some(gpu) = open() else { return };
    let range = device::corpus_range();
    let start = std::time::Instant::now();
    let runs = [
        (Policy::default(), true, true, None),
        (Policy::default(), false, true, None),
        (Policy::default(), true, false, Some(1)),
        (Policy::default(), true, true, Some(2)),
        (Policy::all_dynamic(), true, false, Some(2)),
    ];
    let cases = synth::conformance().enumerate();
    for (k, case) in cases.skip(range.start).take(range.len()) {
        corpus_case_matches_the_oracle(&gpu, k, &case, &runs);
        if k % 2000 == 0 {
            eprintln!("case {k} at {:.1} s", start.elapsed().as_secs_f64());
        }
    }
    println!(
        "every quotient kernel family equal to the oracle on conformance corpus cases {range:?} \
         ({:.1} s)",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn corpus_parts_tile_the_conformance_corpus() {
    let all = synth::CONFORMANCE_CASES;
    assert_eq!(device::corpus_range_of(None), 0..600);
    assert_eq!(device::corpus_range_of(Some("all")), 0..all);
    assert_eq!(device::corpus_range_of(Some("100..250")), 100..250);
    assert_eq!(device::corpus_range_of(Some("50")), 0..50);
    for n in [1, 3, 8] {
        let mut next = 0;
        for i in 0..n {
            let r = device::corpus_range_of(Some(&format!("{i}/{n}")));
            assert_eq!(r.start, next, "part {i} of {n}");
            assert!(r.end > r.start, "part {i} of {n} is empty");
            next = r.end;
        }
        assert_eq!(next, all, "{n} parts");
    }
    // A value that selects no case is an error, not an empty run that passes.
    for bad in ["al", "3/O", "8/8", "x..5", "5..5", "0", "1/0"] {
        let spec = Some(bad);
        let got = std::panic::catch_unwind(|| device::corpus_range_of(spec));
        assert!(got.is_err(), "{bad:?} selected {got:?}");
    }
}

/// Bodies falling asleep and woken past a wave of pairs of warps: with the rule every step
/// takes the warp kernels (the masked twins at every share), and with a share set (a sixteenth)
/// a step after more masked worlds takes a block a world; exact either way.
#[test]
fn worlds_masked_past_the_share_take_a_block_each_and_stay_exact() {
    let Some(gpu) = open() else { return };
    // Bodies falling asleep and woken, equalities switched (not reported: the guard finds every
    // change), each copy of a recorded world 11 steps after the one before: many worlds have
    // a component asleep at most steps, none at the first.
    let (t, nworld) = sleep_toggles_past_a_wave(&gpu);
    let model = t.model();
    let tiled = Tiled::new(&t, 0..t.nstep(), nworld, 11);
    for share in [None, Some(gpu::quotient::ASIDE_SHARE)] {
        let mut s = QuotientSolver::new(&gpu, tiled.capacity(), model, Policy::default()).unwrap();
        s.set_masked_for_blocks(share);
        let (mut out, events) = (Islands::default(), Events::new());
        let (mut by_warps, mut by_blocks, mut masked, mut last_masked) = (0, 0, 0, 0);
        for k in 0..tiled.len() {
            let batch = tiled.step(k).0;
            let input = Input::new(model, &batch).unwrap();
            s.upload(&input, &events).unwrap();
            let warps = s.warp_worlds();
            s.replay().unwrap();
            s.download(&input, &mut out).unwrap();
            // The last step's share of masked worlds decides this one's kernels.
            let heavy = last_masked as f64 > s.masked_for_blocks() * nworld as f64;
            assert_eq!(
                warps, !heavy,
                "{share:?} step {k}: {last_masked} of {nworld} masked before it"
            );
            last_masked = s.last_counts().masked;
            let m = last_masked;
            if warps {
                by_warps += 1;
            } else {
                by_blocks += 1;
            }
            masked += m;
            let want = oracle::solve(&input);
            if let Some(mm) = out.first_mismatch(&want) {
                panic!(
                    "{share:?} step {k} ({}): {mm:?}",
                    if warps { "warps" } else { "blocks" }
                );
            }
        }
        assert!(masked > 0, "no world was masked");
        assert!(
            by_warps > 0,
            "{share:?}: warps {by_warps}, blocks {by_blocks}"
        );
        assert_eq!(
            by_blocks > 0,
            share.is_some(),
            "{share:?}: blocks {by_blocks}"
        );
        println!(
            "{share:?}: {} steps of {nworld} worlds: {by_warps} by warps, {by_blocks} by blocks, {masked} world-steps masked",
            tiled.len()
        );
    }
}

/// Whether `ARCHIPELAGO_Q_TWINS=1` has every launch after a masked step take the masked twins
/// over every world (a measurement switch): the tests of the default rule's launches then say
/// so and check nothing (the corpus checks the outputs under it).
fn twins_forced() -> bool {
    let forced = env_choice("ARCHIPELAGO_Q_TWINS") == Some(true);
    if forced {
        println!("skipped: ARCHIPELAGO_Q_TWINS=1 overrides the rule this test checks");
    }
    forced
}

/// Whether `ARCHIPELAGO_Q_TWINS=1` or the switch `var` (`0` or `1`) overrides the rule a test
/// checks: it then says so and checks nothing.
fn rule_overridden(var: &str) -> bool {
    let set = env_choice(var).is_some();
    if set {
        println!("skipped: {var} overrides the rule this test checks");
    }
    twins_forced() || set
}

/// The warp kernels set aside the worlds that the step before masked and walked (not mapped by
/// their hint), where they are no more than a sixteenth of the batch (sleep_toggles tiled past
/// seven worlds a multiprocessor, warps forced at every step; with their blocks the launch
/// stays within one wave): each has a block of its own
/// beside the warps, whose first warp maps it where its hint holds and whose block solves it
/// otherwise; the twins list the step before's other masked worlds for their warps, the plain
/// kernels take every other world beside them, and every step equals the oracle.
#[test]
fn worlds_masked_a_step_before_are_set_aside_and_stay_exact() {
    let Some(gpu) = open() else { return };
    if twins_forced() {
        return;
    }
    let (t, nworld) = sleep_toggles_past_a_wave(&gpu);
    let model = t.model();
    let tiled = Tiled::new(&t, 0..t.nstep(), nworld, 11);
    let mut s = QuotientSolver::new(&gpu, tiled.capacity(), model, Policy::default()).unwrap();
    s.set_warp_worlds(Some(true)).unwrap();
    let (mut aside, mut by_warps, mut by_hint, mut aside_by_hint) = (0, 0, 0, 0);
    let (mut first_masked, mut listed_masked) = (0, 0);
    let (mut last_masked, mut last_walked) = (Vec::new(), Vec::new());
    for k in 0..tiled.len() {
        step(&mut s, model, &tiled.step(k).0, &Events::new());
        // Those set aside are the worlds masked and walked (not mapped by their hint) the step
        // before, if they were few enough.
        let set = s.aside_worlds();
        let few = last_walked.len() <= nworld.div_ceil(16);
        assert_eq!(set, if few { &last_walked[..] } else { &[] }, "step {k}");
        aside += set.len();
        // After a step with masked worlds the masked twins ran over those worlds, the ones not
        // set aside listed for their warps, beside the plain kernels over the others: every
        // world masked again and not set aside was solved by its twin's warp; a world masked
        // first was left by its plain warp to its block. After a step with none, none was.
        // A world set aside and masked was solved by its block's first warp where its hint
        // held (flag 64), else by the block (walked, for the next step's choice).
        let c = s.last_counts();
        let masked = s.masked_worlds();
        let listed = s.listed_worlds();
        let mut want_listed = last_masked.clone();
        want_listed.retain(|w| !set.contains(w));
        assert_eq!(listed, &want_listed[..], "step {k}");
        let again = masked.iter().filter(|w| last_masked.contains(w)).count();
        let set_masked = masked.iter().filter(|w| set.contains(w)).count();
        let set_by_block = s.walked_worlds().iter().filter(|w| set.contains(w)).count();
        assert_eq!(c.masked_by_warps, again - set_by_block, "step {k}: {c:?}");
        first_masked += c.masked - again;
        listed_masked += again - set_masked;
        aside_by_hint += set_masked - set_by_block;
        by_warps += c.masked_by_warps;
        by_hint += c.masked_by_hint;
        last_masked = masked.to_vec();
        last_walked = s.walked_worlds().to_vec();
        assert_eq!(last_walked.len(), c.masked - c.masked_by_hint);
        assert_eq!(last_masked.len(), c.masked);
    }
    assert!(aside > 0, "no world was set aside");
    assert!(by_warps > 0, "no masked world was solved by its warp");
    assert!(
        aside_by_hint > 0,
        "no world set aside was mapped by its hint"
    );
    assert!(listed_masked > 0 && first_masked > 0);
    println!(
        "{nworld} worlds, {} steps: {aside} world-steps set aside ({aside_by_hint} masked and mapped by their hint), {by_warps} masked by warps ({by_hint} by their hint), {listed_masked} masked again and listed, {first_masked} masked first (by blocks)",
        tiled.len()
    );
}

/// A warp solver of 64 worlds of [`eight`] under the rule that takes reported sleepers into the
/// masked worlds: `None` without a device or where `ARCHIPELAGO_Q_FELL` overrides the rule.
fn fell_solver() -> Option<(Model, Capacity, QuotientSolver)> {
    let gpu = open()?;
    if rule_overridden("ARCHIPELAGO_Q_FELL") {
        return None;
    }
    let model = eight();
    let cap = Capacity {
        nworld: 64,
        ..four_of_eight(32, 1)
    };
    let s = warp_solver(&gpu, cap, &model, false);
    Some((model, cap, s))
}

/// Worlds reported put to sleep are taken in at the upload of the step at which they fall
/// asleep, where the sleep leaves a whole node of static rows asleep (which masks the world on
/// the device): the masked twins' warps then solve them (too many to set aside), where the
/// plain warps would have left them to their blocks. A tree of no static row sleeps without
/// masking anything, and its world is not taken in. Woken whole, they leave at the upload.
#[test]
fn worlds_reported_put_to_sleep_join_the_masked_ones_at_their_step() {
    let Some((model, cap, mut s)) = fell_solver() else {
        return;
    };
    // By world mod 4: awake; component {2, 3} (with tree 6, bound by a contact) asleep;
    // tree 7 (no row) asleep; tree 5 (one friction row, a node of its own) asleep.
    let sleepers: [&[i32]; 4] = [&[], &[2, 3, 6], &[7], &[5]];
    let batch = |asleep: bool| {
        let mut b = Batch::builder();
        for w in 0..cap.nworld {
            world(&mut b, if asleep { sleepers[w % 4] } else { &[] }, 2);
        }
        b.finish()
    };
    let events = |wake: bool| {
        let mut e = Events::new();
        for w in 0..cap.nworld {
            for &t in sleepers[w % 4] {
                match wake {
                    false => e.sleep(w as u32, t),
                    true => e.wake(w as u32, t),
                };
            }
        }
        e
    };
    let masking: Vec<u32> = (0..cap.nworld as u32).filter(|w| w % 2 == 1).collect();
    let (awake, asleep) = (batch(false), batch(true));
    let mut out = Islands::default();
    let mut run =
        |s: &mut QuotientSolver, b: &Batch, e: &Events, check: &dyn Fn(&QuotientSolver)| {
            let input = Input::new(&model, b).unwrap();
            s.upload(&input, e).unwrap();
            check(s);
            s.replay().unwrap();
            s.download(&input, &mut out).unwrap();
            assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
        };
    let none = Events::new();
    run(&mut s, &awake, &none, &|s| {
        assert_eq!(s.masked_worlds(), [] as [u32; 0])
    });
    // The step they fall asleep: taken in at the upload, listed for the twins' warps.
    run(&mut s, &asleep, &events(false), &|s| {
        assert_eq!(s.masked_worlds(), masking);
        assert_eq!(s.walked_worlds(), masking);
        assert_eq!(s.aside_worlds(), [] as [u32; 0]);
        assert_eq!(s.listed_worlds(), masking);
    });
    let c = s.last_counts();
    assert_eq!((c.masked, c.masked_by_warps), (32, 32), "{c:?}");
    assert_eq!(s.masked_worlds(), masking);
    // Asleep still: masked again, by the twins' warps.
    run(&mut s, &asleep, &none, &|s| {
        assert_eq!(s.listed_worlds(), masking)
    });
    let c = s.last_counts();
    assert_eq!((c.masked, c.masked_by_warps), (32, 32), "{c:?}");
    // Woken whole and reported: out at the upload, every world replayed.
    run(&mut s, &awake, &events(true), &|s| {
        assert_eq!(s.masked_worlds(), [] as [u32; 0])
    });
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked), (64, 0), "{c:?}");
}

/// A world reported put to sleep at a step whose batch does not have it is taken in at the
/// upload of the step that has it again (its events stay listed until then), not before.
#[test]
fn worlds_put_to_sleep_past_the_batch_join_the_masked_ones_when_they_come_back() {
    let Some((model, cap, mut s)) = fell_solver() else {
        return;
    };
    // Component {2, 3} (with tree 6, bound by a contact) falls asleep in worlds 33 and 37.
    let (island, sleepers) = ([2, 3, 6], [33u32, 37]);
    let batch = |nworld: usize, asleep: bool| {
        let mut b = Batch::builder();
        for w in 0..nworld {
            let sleeps = asleep && sleepers.contains(&(w as u32));
            world(&mut b, if sleeps { &island } else { &[] }, 2);
        }
        b.finish()
    };
    let mut out = Islands::default();
    let mut run = |s: &mut QuotientSolver, b: &Batch, e: &Events, masked: &[u32]| {
        let input = Input::new(&model, b).unwrap();
        s.upload(&input, e).unwrap();
        assert_eq!(
            s.masked_worlds(),
            masked,
            "at the upload of {} worlds",
            b.nworld()
        );
        s.replay().unwrap();
        s.download(&input, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
    };
    let none = Events::new();
    run(&mut s, &batch(cap.nworld, false), &none, &[]);
    let mut fell = Events::new();
    for w in sleepers {
        for t in island {
            fell.sleep(w, t);
        }
    }
    run(&mut s, &batch(cap.nworld / 2, false), &fell, &[]);
    run(&mut s, &batch(cap.nworld, true), &none, &sleepers);
    let c = s.last_counts();
    assert_eq!((c.replayed, c.masked), (62, 2), "{c:?}");
}

/// Worlds just too large for their scratch beside the 1 KiB of static shared memory once kept
/// (the quotient's node-level kernels declare about 1.9 KB): the solver is built, its scratch in
/// global memory, and exact. Also the full-rebuild modes at that size.
#[test]
fn trees_at_the_shared_memory_limit_build_and_stay_exact() {
    let Some(gpu) = open() else { return };
    let ntree = (gpu.info().smem_optin - 1024) / 28;
    let model = Model::from_dofnum(&vec![1; ntree]).unwrap();
    let mut b = Batch::builder();
    let last = ntree as i32 - 1;
    b.row(RowType::Equality, 0, &[0, last])
        .row(RowType::ContactPyramidal, 0, &[1, 2])
        .end_world();
    let batch = b.finish();
    let cap = Capacity::fit(&model, &batch);
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    for _ in 0..2 {
        step(&mut s, &model, &batch, &Events::new());
    }
    let input = Input::new(&model, &batch).unwrap();
    for mode in gpu::Mode::ALL {
        let mut full = match gpu::Solver::new(&gpu, mode, cap, &model) {
            Ok(full) => full,
            Err(archipelago::Error::Refused { .. }) => continue,
            Err(e) => panic!("{}: {e}", mode.name()),
        };
        let mut out = Islands::default();
        full.solve(&input, &mut out).unwrap();
        assert_eq!(
            out.first_mismatch(&oracle::solve(&input)),
            None,
            "{}",
            mode.name()
        );
    }
}

#[test]
fn a_model_of_another_dof_layout_is_refused() {
    // Eight trees and nine dofs either way, the two-dof tree first or last: the solver's
    // dof-level outputs (and its node tables) follow the model it was built for.
    let Some(gpu) = open() else { return };
    let (built_for, other) = (
        Model::from_dofnum(&[2, 1, 1, 1, 1, 1, 1, 1]).unwrap(),
        Model::from_dofnum(&[1, 1, 1, 1, 1, 1, 1, 2]).unwrap(),
    );
    let mut b = Batch::builder();
    for _ in 0..4 {
        world(&mut b, &[], 2);
    }
    let batch = b.finish();
    let cap = Capacity::fit(&built_for, &batch);
    let input = Input::new(&other, &batch).unwrap();
    let mut s = QuotientSolver::new(&gpu, cap, &built_for, Policy::default()).unwrap();
    let err = s.upload(&input, &Events::new()).unwrap_err();
    assert!(
        matches!(err, archipelago::Error::Refused { mode: "gpu", .. }),
        "{err}"
    );
    let mut right = QuotientSolver::new(&gpu, cap, &other, Policy::default()).unwrap();
    let mut out = Islands::default();
    right.step(&input, &Events::new(), &mut out).unwrap();
    assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
}

#[test]
fn a_refused_resize_leaves_the_engine_on_its_device() {
    // A capacity too small for the model is refused before anything changes: the engine stays
    // on its device with its last outputs, and steps exactly. (It had freed its device first
    // and been left on the host.)
    let Some(gpu) = open() else { return };
    let model = eight();
    let cap = four_of_eight(32, 1);
    let mut b = Batch::builder();
    for _ in 0..cap.nworld {
        world(&mut b, &[], 2);
    }
    let batch = b.finish();
    let want = oracle::solve(&Input::new(&model, &batch).unwrap());
    let options = Options {
        mode: Mode::Quotient,
        ..Options::default()
    };
    let mut e = Engine::with_gpu(&gpu, &model, cap, options).unwrap();
    e.step(&batch, &Events::new()).unwrap();
    let small = Capacity { ntree: 4, ..cap };
    assert!(matches!(
        e.resize(small),
        Err(archipelago::Error::OverCapacity { what: "ntree", .. })
    ));
    assert!(e.on_gpu());
    assert_eq!(e.capacity(), cap);
    assert_eq!(e.islands().first_mismatch(&want), None);
    let got = e.step(&batch, &Events::new()).unwrap();
    assert_eq!(got.first_mismatch(&want), None);
}

/// A GPU engine built on one thread steps exactly on another, in every mode, is resized there
/// and dropped there: each step binds its context to the stepping thread before its own
/// launches.
#[test]
fn a_gpu_engine_steps_on_the_thread_it_is_moved_to() {
    let Some(gpu) = open() else { return };
    let model = eight();
    let cap = four_of_eight(32, 1);
    let mut b = Batch::builder();
    for w in 0..cap.nworld {
        world(&mut b, &[], w % 3);
    }
    let batch = b.finish();
    let want = oracle::solve(&Input::new(&model, &batch).unwrap());
    for mode in Mode::ALL {
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut e = Engine::with_gpu(&gpu, &model, cap, options).unwrap();
        e.step(&batch, &Events::new()).unwrap();
        let (batch, want) = (batch.clone(), want.clone());
        std::thread::spawn(move || {
            for k in 0..4 {
                if k == 2 {
                    e.resize(Capacity { njmax: 20, ..cap }).unwrap();
                    assert!(e.on_gpu(), "{mode:?}");
                }
                let got = e.step(&batch, &Events::new()).unwrap();
                assert_eq!(got.first_mismatch(&want), None, "{mode:?}");
            }
        })
        .join()
        .unwrap();
    }
}

/// An upload whose events name a world or tree out of range is refused before it copies or
/// records anything: the batch uploaded before it still replays exactly, and the same step with
/// its events in range then goes through (the upload enqueues the batch's copy before its host
/// half, so the events are checked first).
#[test]
fn refused_events_copy_nothing_and_the_next_step_is_exact() {
    let Some(gpu) = open() else { return };
    let model = eight();
    let cap = four_of_eight(32, 1);
    let mut s = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    let batch = |asleep: &[i32]| {
        let mut b = Batch::builder();
        for _ in 0..cap.nworld {
            world(&mut b, asleep, 2);
        }
        b.finish()
    };
    let (awake, asleep) = (batch(&[]), batch(&[2, 3, 6]));
    let events = |wake: bool, world: u32, tree: i32| {
        let mut e = Events::new();
        for w in 0..cap.nworld as u32 {
            for t in [2, 3, 6] {
                match wake {
                    false => e.sleep(w, t),
                    true => e.wake(w, t),
                };
            }
        }
        e.sleep(world, tree);
        e
    };
    let mut out = Islands::default();
    let first = Input::new(&model, &awake).unwrap();
    s.upload(&first, &Events::new()).unwrap();
    let input = Input::new(&model, &asleep).unwrap();
    for (world, tree) in [(cap.nworld as u32, 0), (0, cap.ntree as i32)] {
        let err = s.upload(&input, &events(false, world, tree)).unwrap_err();
        assert!(
            matches!(err, archipelago::Error::Event(_)),
            "world {world} tree {tree}: {err}"
        );
        // What the refused upload left: the first batch, on the device and in the quotient.
        s.replay().unwrap();
        s.download(&first, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&oracle::solve(&first)), None);
    }
    assert_eq!(s.quotient().counters().partial_sleep, 0);
    // In range (tree 2 reported asleep once more), the same step is masked and exact.
    step(&mut s, &model, &asleep, &events(false, 0, 2));
    assert_eq!(s.last_counts().masked, cap.nworld);
    step(&mut s, &model, &awake, &events(true, 0, 7));
}

/// Past a wave of blocks no world is set aside: sleep_toggles tiled to one block more than the
/// warp kernels' wave, warps forced. Some steps have walked worlds few enough to set aside (the
/// rule above would within a wave), yet none is, and every step equals the oracle.
#[test]
fn past_a_wave_no_world_is_set_aside() {
    let Some(gpu) = open() else { return };
    if rule_overridden("ARCHIPELAGO_Q_ASIDE") {
        return;
    }
    let t = Trace::open(traces::dir().join("sleep_toggles.npz")).unwrap();
    let model = t.model();
    let probe = Tiled::new(&t, 0..1, 1, 11);
    let mut s = QuotientSolver::new(&gpu, probe.capacity(), model, Policy::default()).unwrap();
    s.set_warp_worlds(Some(true)).unwrap();
    let wave = s
        .blocks_a_wave()
        .expect("the warp program is loaded when forced");
    let nworld = 4 * (wave + 1);
    let tiled = Tiled::new(&t, 0..t.nstep(), nworld, 11);
    let mut s = QuotientSolver::new(&gpu, tiled.capacity(), model, Policy::default()).unwrap();
    s.set_warp_worlds(Some(true)).unwrap();
    let mut could = 0;
    for k in 0..tiled.len() {
        let walked = s.walked_worlds().len();
        could += usize::from(walked > 0 && walked <= nworld.div_ceil(16));
        step(&mut s, model, &tiled.step(k).0, &Events::new());
        assert_eq!(s.aside_worlds(), &[] as &[u32], "step {k}");
    }
    assert!(
        could > 0,
        "no step had few enough walked worlds to set aside"
    );
    println!("{nworld} worlds ({wave} blocks a wave): {could} steps could have set worlds aside");
}

/// A batch whose masked share alternates: sleep_toggles' step 5 (every world awake) and step 12
/// (every world with a component asleep, masked by the guard), each tiled past seven worlds a
/// multiprocessor, by turns. The kernels alternate with them, and each kernel's graph is
/// captured once (the solver keeps several), at the download of its first launch, which went
/// directly: never in a replay. With the rule, the plain warp kernels after
/// the awake step and their masked twins after the masked one; with a share set (a sixteenth),
/// the warp kernels after the awake step and blocks after the masked one.
#[test]
fn kernels_that_alternate_step_by_step_capture_their_graphs_once() {
    let Some(gpu) = open() else { return };
    if twins_forced() {
        return;
    }
    let (t, nworld) = sleep_toggles_past_a_wave(&gpu);
    let model = t.model();
    let every_world_at = |k: usize| Tiled::new(&t, k..k + 1, nworld, 0);
    let (awake, masked) = (every_world_at(5).step(0).0, every_world_at(12).step(0).0);
    let cap = every_world_at(5).capacity();
    for share in [None, Some(gpu::quotient::ASIDE_SHARE)] {
        let mut s = QuotientSolver::new(&gpu, cap, model, Policy::default()).unwrap();
        s.set_reuse(false).unwrap();
        s.set_masked_for_blocks(share);
        let (mut out, events) = (Islands::default(), Events::new());
        let mut walls = [Vec::new(), Vec::new()];
        for k in 0..10 {
            let batch = if k >= 2 && k % 2 == 0 {
                &masked
            } else {
                &awake
            };
            let input = Input::new(model, batch).unwrap();
            s.upload(&input, &events).unwrap();
            let warps = s.warp_worlds();
            let (before, t0) = (s.captures(), std::time::Instant::now());
            s.replay().unwrap();
            // What a switch of kernels costs the host's replay() (reported, not asserted): a
            // new key's launch goes directly and its graph is captured at the download.
            let us = t0.elapsed().as_secs_f64() * 1e6;
            assert_eq!(
                s.captures(),
                before,
                "{share:?} step {k}: replay() captured"
            );
            s.download(&input, &mut out).unwrap();
            walls[usize::from(s.captures() > before)].push(us);
            assert_eq!(
                out.first_mismatch(&oracle::solve(&input)),
                None,
                "{share:?} step {k}"
            );
            let c = s.last_counts();
            if k >= 2 {
                // Warps after an awake step; after a masked one the twins' warps (the rule) or
                // blocks (a sixteenth set).
                assert_eq!(warps, k % 2 == 0 || share.is_none(), "{share:?} step {k}");
                assert_eq!(
                    c.masked,
                    if k % 2 == 0 { nworld } else { 0 },
                    "{share:?} step {k}: {c:?}"
                );
            }
        }
        assert_eq!(s.captures(), 2, "{share:?}: one graph for each kernel");
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!(
            "{share:?}: {nworld} worlds: replay() {:.1} µs a step from a kept graph, {:.1} launching directly",
            mean(&walls[0]),
            mean(&walls[1])
        );
    }
}

/// closed_loops with equalities 0, 3 and 5 dynamic: 3 has static ones on both sides, and of the
/// runs they leave 1-2 weighs most, so the static equalities are 1 and 2 and those above 3
/// are solved each step with the contacts.
/// Every world's static rows are then one block, which every world replays at every step after
/// the first, in the block kernels (fewer worlds than multiprocessors) and the warp kernels.
#[test]
fn a_dynamic_equality_between_static_ones_replays_the_block_on_the_device() {
    let Some(gpu) = open() else { return };
    let t = Trace::open(traces::dir().join("closed_loops.npz")).unwrap();
    let model = t.model();
    let policy = Policy::dynamic_ids(vec![0, 3, 5]);
    for nworld in [12 * t.nworld(), 8 * gpu.info().sm_count as usize + 5] {
        // Copies of the recorded worlds 37 steps apart, each told of its own events.
        let tiled = Tiled::new(&t, 0..t.nstep(), nworld, 37);
        let mut s = QuotientSolver::new(&gpu, tiled.capacity(), model, policy.clone()).unwrap();
        s.set_reuse(false).unwrap();
        let mut out = Islands::default();
        let (mut by_warps, mut off_block) = (0, 0);
        for k in 0..tiled.len() {
            let (batch, events) = tiled.step(k);
            let input = Input::new(model, &batch).unwrap();
            s.upload(&input, &events).unwrap();
            by_warps += usize::from(s.warp_worlds());
            s.replay().unwrap();
            s.download(&input, &mut out).unwrap();
            if let Some(m) = out.first_mismatch(&oracle::solve(&input)) {
                panic!("{nworld} worlds, step {k}: {m:?}");
            }
            let c = s.last_counts();
            if k > 0 {
                off_block += c.masked + c.direct;
            }
        }
        assert_eq!(s.quotient().classifier().static_eqs(), 1..3);
        assert_eq!(
            off_block, 0,
            "{nworld} worlds: world-steps off the static block"
        );
        println!(
            "{nworld} worlds, {} steps: {by_warps} by warps",
            tiled.len()
        );
    }
}

#[test]
fn every_trace_replays_on_the_device_without_mismatch() {
    let Some(gpu) = open() else { return };
    let paths = traces::paths();
    assert!(!paths.is_empty());
    let (mut batch, mut native, mut out) =
        (Batch::default(), Islands::default(), Islands::default());
    let (mut failures, mut world_steps, mut masked, mut reused) = (Vec::new(), 0u64, 0u64, 0);
    let mut events = Events::new();
    for path in &paths {
        let t = Trace::open(path).unwrap();
        let model = t.model();
        let cap = t.capacity();
        // Events reported (equalities static, then dynamic), then none at all (guard only).
        for (k, (policy, report)) in [
            (Policy::default(), true),
            (
                Policy {
                    eq: EqPolicy::Dynamic,
                    ..Policy::default()
                },
                true,
            ),
            (Policy::default(), false),
            (Policy::default(), true),
            (Policy::default(), true),
            (Policy::default(), true),
            (Policy::default(), true),
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = QuotientSolver::new(&gpu, cap, model, policy).unwrap();
            // Runs 3-5 check every world every step (no reuse of unchanged worlds); the second
            // and the fifth take the tree-level maps in worlds of few nodes too; the last two
            // give each replayed world of few nodes a warp, the last with its partition check
            // and a second warp a world for the guard.
            s.set_reuse(k < 3 || k == 6).unwrap();
            s.set_node_maps(k != 1 && k != 4);
            s.set_warp_worlds(Some(k >= 5)).unwrap();
            s.set_guard_warps(Some(k == 6));
            for step in 0..t.nstep() {
                t.batch(step, &mut batch);
                t.native(step, &mut native);
                if report {
                    t.events(step, &mut events);
                } else {
                    events.clear();
                }
                let input = Input::new(model, &batch).unwrap();
                if let Err(e) = s.step(&input, &events, &mut out) {
                    failures.push(format!("{} [{k}] step {step}: {e}", path.display()));
                    break;
                }
                if let Some(m) = trace::compare(&out, &native) {
                    failures.push(format!("{} [{k}] step {step}: {m}", path.display()));
                }
                world_steps += t.nworld() as u64;
            }
            masked += s.quotient().counters().masked;
            reused += s.quotient().counters().reused;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(reused > 0);
    println!("{world_steps} world-steps, {masked} with sleeping nodes masked, {reused} reused");
}

#[test]
fn the_gpu_engine_matches_the_oracle_in_every_mode() {
    let Some(gpu) = open() else { return };
    let mut rng = scenes::Rng::new(3);
    let scene = scenes::Scene::random(&mut rng, 24, 10, 5);
    let nworld = 32;
    let cap = Capacity {
        nworld,
        ntree: 24,
        nv: scene.model.nv(),
        njmax: 300,
        nsupport: 1200,
        nedge: 4,
    };
    // Every mode with the default options, and the quotient without reuse.
    let runs = Mode::ALL.into_iter().map(|m| (m, true));
    for (mode, reuse) in runs.chain([(Mode::Quotient, false)]) {
        let options = Options {
            mode,
            reuse,
            ..Options::default()
        };
        let mut e = match Engine::with_gpu(&gpu, &scene.model, cap, options) {
            Ok(e) => e,
            Err(err) => panic!("{mode:?} reuse {reuse}: {err}"),
        };
        assert!(e.on_gpu());
        let mut worlds = vec![scenes::World::new(&scene); nworld];
        let (mut tally, mut events) = (scenes::Tally::default(), Events::new());
        let mut last = Islands::default();
        for step in 0..60 {
            events.clear();
            for (w, world) in worlds.iter_mut().enumerate() {
                if step > 0 && rng.chance(0.1) {
                    let islands = last.world(w).tree_island.to_vec();
                    let (w, r) = (w as u32, &mut rng);
                    scenes::mutate(&scene, world, w, &islands, r, 0.9, &mut events, &mut tally);
                }
            }
            let batch = scenes::batch(&scene, &worlds, &mut rng);
            let want = oracle::solve(&Input::new(&scene.model, &batch).unwrap());
            let got = e.step(&batch, &events).unwrap();
            assert_eq!(
                got.first_mismatch(&want),
                None,
                "{mode:?} reuse {reuse} step {step}"
            );
            last = want;
        }
        if mode == Mode::Auto {
            assert!(e.gpu_full_mode().is_some());
        }
    }
}

/// A GPU engine's full rebuild records a step's events in its download's wait exactly as the
/// quotient records them itself (every world's eight trees put to sleep, then woken: 16,384
/// events a step); a burst with one bad event fails before anything is solved.
#[test]
fn a_gpu_full_rebuild_records_its_events_as_the_quotient_does() {
    let Some(gpu) = open() else { return };
    let (model, nworld) = (eight(), 2048);
    let cap = Capacity {
        nworld,
        ntree: 8,
        nv: 8,
        njmax: 8,
        nsupport: 16,
        nedge: 0,
    };
    let engine = |mode| {
        let options = Options {
            mode,
            ..Options::default()
        };
        Engine::with_gpu(&gpu, &model, cap, options).unwrap()
    };
    let (mut full, mut quotient) = (engine(Mode::Dsu), engine(Mode::Quotient));
    // Awake: a static equality on {0, 1} and a contact on {2, 3}; asleep: no rows.
    let batch = |awake: bool| {
        let mut b = Batch::builder();
        for _ in 0..nworld {
            if awake {
                b.row(RowType::Equality, 0, &[0, 1]);
                b.row(RowType::ContactPyramidal, 0, &[2, 3]);
            }
            b.end_world();
        }
        b.finish()
    };
    let mut events = Events::new();
    for phase in 0..3 {
        let b = batch(phase != 1);
        let want = oracle::solve(&Input::new(&model, &b).unwrap());
        for e in [&mut full, &mut quotient] {
            let got = e.step(&b, &events).unwrap();
            assert_eq!(got.first_mismatch(&want), None, "phase {phase}");
        }
        assert_eq!(full.last_mode(), Mode::Dsu);
        let (a, q) = (full.quotient().tracker(), quotient.quotient().tracker());
        for w in 0..nworld {
            let sleep = invalidation::Source::Sleep;
            assert_eq!(a.epoch(sleep, w), q.epoch(sleep, w), "world {w}");
            assert_eq!(a.epoch(sleep, w), 8 * phase.min(2) as u64, "world {w}");
            for t in 0..8 {
                assert_eq!(a.awake(w, t), q.awake(w, t), "world {w} tree {t}");
            }
        }
        events.clear();
        for w in 0..nworld as u32 {
            for t in 0..8 {
                match phase {
                    0 => events.sleep(w, t),
                    _ => events.wake(w, t),
                };
            }
        }
    }
    let before = full.islands().clone();
    events.clear();
    for w in 0..nworld as u32 {
        events.sleep(w, 0);
    }
    events.sleep(nworld as u32, 0);
    assert!(full.step(&batch(false), &events).is_err());
    assert_eq!(full.islands().first_mismatch(&before), None);
    assert!(full.quotient().tracker().awake(0, 0));
}

/// A mechanism world (about 90% static): 8 closed loops of 8 trees, every link a connect
/// equality of 3 rows (unless `broken`, whose first link has none), then 5 contacts of 4 rows
/// between random trees.
fn mechanism_world(b: &mut archipelago::BatchBuilder, rng: &mut scenes::Rng, broken: bool) {
    for m in 0..8 {
        for i in 0..8 {
            let (a, c) = (8 * m + i, 8 * m + (i + 1) % 8);
            if !(broken && a == 0) {
                for _ in 0..3 {
                    b.row(RowType::Equality, a, &[a, c]);
                }
            }
        }
    }
    for k in 0..5 {
        let (a, c) = (rng.below(64) as i32, rng.below(64) as i32);
        for _ in 0..4 {
            b.row(RowType::ContactPyramidal, k, &[a, c]);
        }
    }
    b.end_world();
}

#[test]
fn many_waves_take_the_register_capped_kernels_exactly() {
    let Some(gpu) = open() else { return };
    // Past two waves even at the most blocks a multiprocessor holds (32): both solvers launch
    // their kernels' copies with fewer registers (gpu::regcap).
    let nworld = 2 * 32 * gpu.info().sm_count as usize + 1;
    let model = Model::from_dofnum(&[1; 64]).unwrap();
    let mut rng = scenes::Rng::new(26);
    let batch = |rng: &mut scenes::Rng, broken: usize| {
        let mut b = Batch::builder();
        for w in 0..nworld {
            mechanism_world(&mut b, rng, w % 10 < broken);
        }
        b.finish()
    };
    let first = batch(&mut rng, 0);
    let cap = Capacity::fit(&model, &first);
    let mut q = QuotientSolver::new(&gpu, cap, &model, Policy::default()).unwrap();
    let mut block = gpu::Solver::new(&gpu, gpu::Mode::Block, cap, &model).unwrap();
    if env_choice("ARCHIPELAGO_REGCAP") != Some(false) {
        assert_eq!(q.register_cap(), Some(gpu::regcap::QUOTIENT));
        assert_eq!(block.register_cap(), Some(gpu::regcap::BLOCK));
    }
    // New contacts every step; then a tenth of the worlds lose a link's rows unreported (the
    // guard solves them directly), and get them back.
    let steps = [
        first,
        batch(&mut rng, 0),
        batch(&mut rng, 1),
        batch(&mut rng, 0),
    ];
    // The block kernels, with reuse.
    q.set_warp_worlds(Some(false)).unwrap();
    for (k, b) in steps.iter().enumerate() {
        step(&mut q, &model, b, &Events::new());
        assert!(!q.warp_worlds() && q.reuse_active());
        let input = Input::new(&model, b).unwrap();
        let mut got = Islands::default();
        block.solve(&input, &mut got).unwrap();
        assert_eq!(
            got.first_mismatch(&oracle::solve(&input)),
            None,
            "block step {k}"
        );
    }
    // By default a batch of many worlds takes a warp a world, with reuse on (which then does
    // not apply); the worlds that lost a link's rows (one block in ten holds some) are solved
    // by their blocks. Then the block kernels again, their reuse cache emptied.
    q.set_warp_worlds(None).unwrap();
    for b in &steps {
        step(&mut q, &model, b, &Events::new());
        assert!(q.warp_worlds() && !q.reuse_active());
    }
    q.set_warp_worlds(Some(false)).unwrap();
    for b in &steps {
        step(&mut q, &model, b, &Events::new());
        assert!(q.reuse_active());
    }
}

/// The bench's reader of every output (`gpu::graph::OutputReader`) reads exactly what each
/// quotient step left in the outputs, by warps or by blocks, with worlds reused, masked and
/// solved directly (sleep_toggles past a wave): the XOR of what it read equals the host's over
/// the downloaded outputs at every step.
#[test]
fn the_output_reader_reads_every_output_of_every_quotient_step() {
    let Some(gpu) = open() else { return };
    let (t, nworld) = sleep_toggles_past_a_wave(&gpu);
    let model = t.model();
    let tiled = Tiled::new(&t, 0..t.nstep(), nworld, 11);
    for warps in [Some(true), Some(false)] {
        let mut s = QuotientSolver::new(&gpu, tiled.capacity(), model, Policy::default()).unwrap();
        s.set_warp_worlds(warps).unwrap();
        let (mut out, events) = (Islands::default(), Events::new());
        for k in 0..tiled.len() {
            let batch = tiled.step(k).0;
            let input = Input::new(model, &batch).unwrap();
            s.step(&input, &events, &mut out).unwrap();
            assert_eq!(out.first_mismatch(&oracle::solve(&input)), None, "step {k}");
            let what = format!("{warps:?} step {k}");
            device::assert_reader_reads(&gpu, s.workspace(), &out, &what);
        }
    }
}
