//! `archipelago bench --quotient`: the device quotient against the best full-rebuild GPU mode in
//! the same run, on shapes whose static share of rows is about 0%, 50%, 90% and 99% and on the
//! committed traces tiled across worlds, plus the cost of a rebuild.
//!
//! Per shape: every full-rebuild mode (all but `dense` unless `--modes` names it) and the quotient,
//! each checked against the CPU oracle first; device time per step from CUDA events around graph
//! replays of one batch (the figure the other tables report; the quotient with reuse off, since a
//! replayed batch is unchanged by construction), the same replays enqueued back to back (100
//! between one pair of events: each launch's overhead then overlaps the replay before it, as in a
//! loop that does not wait for every step), the same replays each after an L2 flush (a write
//! over twice the L2 cache, not timed: the step's rows, tables and outputs then come from device
//! memory, as after the rest of a simulation's step, where the other figures find them in L2),
//! the same replays each after the device was kept busy (`gpu::graph::Busy`: the replay is queued
//! before the device reaches it, so no host launch latency can enter the figure, while L2 stays
//! warm), and wall time per whole step (host half, uploads, replay, downloads), which is what
//! `auto` compares; rows and outputs are in page-locked memory
//! (`gpu::PinnedBatch`, `gpu::PinnedIslands`). The rebuild rows time the host half (the host's own
//! work, which the upload runs beside the batch's copy: `QuotientSolver::last_host_half`) of a
//! step whose events invalidate every world (a capacity change), minus a steady step's, and of
//! one world (an edit): the median over worlds of an edit step's host half less that of the
//! steady step just before it. The
//! quotient's floor is its device time with reuse on and every world unchanged: only the reuse
//! check runs, which reads every hyperedge (the row-level outputs are then in place: nothing is
//! written), taken with a block a world (the warp kernels, which run past seven worlds a
//! multiprocessor, twelve for worlds of more than 1,024 rows, or past one with two warps a world,
//! have no reuse check). The bound of any step, by any mode, is the empty graph replay plus the
//! bytes a step must move (every support and offset read once, every output written once) at
//! the measured copy bandwidth: the best full rebuild divided by it is the most any mode could
//! gain on the shape where the step's bytes come from device memory (with L2 warm a step may beat
//! it: session 85 measured a build without the guard below it on an H100). Then the same
//! contenders step a sequence of batches (see [`super::sequence`]): there the quotient with
//! reuse on reuses the worlds that did not change, where the block kernels run. On synthetic
//! shapes with equalities, toggling sequences (an equality switched off and on at every step in
//! 10% or all of the worlds) set the quotient with equalities static against dynamic and
//! learned, by device and by wall time.

use std::fmt::Write as _;
use std::time::Instant;

use super::sequence::{self, PolicyFigures, Sequence};
use super::stepped::Stepped;
use super::{BenchArgs, Make, Shape, maps_alone, median_us, synthetic_keys};
use archipelago::cpu::CpuMode;
use archipelago::engine::auto_keeps_quotient;
use archipelago::gpu::graph::{Busy, L2Flush};
use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::{Gpu, Mode, PinnedBatch, PinnedIslands, Solver};
use archipelago::quotient::{Policy, classify};
use archipelago::synth::Rng;
use archipelago::trace::Trace;
use archipelago::{Batch, Capacity, Input, Islands, Model, RowType};
use invalidation::{Edit, Events};

/// The traces of issue 4's figures, at the world counts of its MuJoCo Warp figures (as in the
/// plain bench's list, [`super::shapes`], which also has replicate_particle at 256 worlds).
const TRACES: [(&str, usize); 5] = [
    ("flex_trampoline", 64),
    ("aloha_clutter", 2048),
    ("replicate_particle", 1024),
    ("benchmark_humanoid200", 256),
    ("humanoid_100_humanoids", 256),
];

/// Traces whose rows are mostly static (default policy, over all their steps): hammock 98%,
/// flex_poncho_edgeequality 91%; tiled to these world counts.
const STATIC_TRACES: [(&str, usize); 2] = [("hammock", 1024), ("flex_poncho_edgeequality", 64)];

/// A synthetic shape's generator: its batch of the given worlds from a seed (the seed varies
/// the dynamic rows).
type Generator = fn(u64, usize) -> Shape;

/// The synthetic shapes: name, generator, seed of the shape itself, worlds by default.
const SYNTHETIC: [(&str, Generator, u64, usize); 4] = [
    ("q:contacts-0%", contacts_only, 11, 4096),
    ("q:humanoid-50%", humanoid_like, 12, 1024),
    ("q:mechanism-90%", mechanism, 13, 1024),
    ("q:cloth-99%", cloth_like, 14, 256),
];

/// Rest fractions of a synthetic shape's step sequences.
const SYNTHETIC_REST: [f64; 2] = [0.0, 0.5];

/// Shares of the worlds that switch an equality off and on at every step, in the toggling
/// sequences of the synthetic shapes that have it (issue 5: static against dynamic
/// equalities for toggle-heavy worlds).
const TOGGLING_SHARES: [f64; 2] = [0.1, 1.0];

/// Whole steps timed for the wall-time columns.
const WALL_REPS: usize = 10;

/// Pairs of steps (steady, then one world's edit reported) for the cost of one world's
/// rebuild: the median of their differences.
const REBUILD_REPS: usize = 15;

/// Pairs of steps (steady, then a capacity change reported) for the cost of every world's
/// rebuild: the median of their differences. One such step alone read up to twice the median
/// now and then (session 68: 15.6 against 7.5-9.4 ms, with as many page faults a process).
const REBUILD_ALL_REPS: usize = 5;

/// Replays enqueued back to back for the back-to-back column: each launch's overhead then overlaps
/// the replay before it, as in a simulation loop that does not wait for every step.
const BACK_TO_BACK: usize = 100;

fn shape(name: &str, model: Model, batch: Batch) -> Shape {
    Shape {
        name: name.to_string(),
        model,
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// Contacts only (0% static): pairs of nearby trees, 4 pyramidal rows each, some against the
/// floor.
fn contacts_only(seed: u64, nworld: usize) -> Shape {
    let (ntree, rows) = (64, 64);
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut k = 0;
        while k < rows {
            let a = rng.below(ntree) as i32;
            let support = if rng.below(4) == 0 {
                vec![a]
            } else {
                vec![a, ((a as usize + 1 + rng.below(6)) % ntree) as i32]
            };
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &support);
                k += 1;
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![6; ntree]).expect("valid");
    shape("q:contacts-0%", model, b.finish())
}

/// Humanoid-like (about 50% static): 32 trees of 4 dofs, two friction-loss rows per tree, then
/// limits and contacts.
fn humanoid_like(seed: u64, nworld: usize) -> Shape {
    let ntree = 32;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        for t in 0..ntree as i32 {
            b.row(RowType::FrictionDof, 4 * t, &[t]);
            b.row(RowType::FrictionDof, 4 * t + 1, &[t]);
        }
        for k in 0..8 {
            b.row(RowType::LimitJoint, k, &[rng.below(ntree) as i32]);
        }
        for k in 0..14 {
            let a = rng.below(ntree) as i32;
            let c = ((a as usize + 1 + rng.below(3)) % ntree) as i32;
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &[a, c]);
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![4; ntree]).expect("valid");
    shape("q:humanoid-50%", model, b.finish())
}

/// Mechanism (about 90% static): 8 closed loops of 8 trees each, every link a connect equality
/// of 3 rows, then a few contacts.
fn mechanism(seed: u64, nworld: usize) -> Shape {
    let ntree = 64;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        for m in 0..8 {
            for i in 0..8 {
                let (a, c) = (8 * m + i, 8 * m + (i + 1) % 8);
                for _ in 0..3 {
                    b.row(RowType::Equality, a, &[a, c]);
                }
            }
        }
        for k in 0..5 {
            let a = rng.below(ntree) as i32;
            let c = rng.below(ntree) as i32;
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &[a, c]);
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![1; ntree]).expect("valid");
    shape("q:mechanism-90%", model, b.finish())
}

/// Cloth-like (about 99% static): a 20×20 grid of 3-dof vertices coupled by one flex-edge
/// equality row per edge, then a few floor contacts.
fn cloth_like(seed: u64, nworld: usize) -> Shape {
    let side = 20usize;
    let ntree = side * side;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut eq = 0;
        for y in 0..side {
            for x in 0..side {
                let t = (y * side + x) as i32;
                if x + 1 < side {
                    b.row(RowType::Equality, eq, &[t, t + 1]);
                    eq += 1;
                }
                if y + 1 < side {
                    b.row(RowType::Equality, eq, &[t, t + side as i32]);
                    eq += 1;
                }
            }
        }
        for k in 0..8 {
            b.row(RowType::ContactPyramidal, k, &[rng.below(ntree) as i32]);
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![3; ntree]).expect("valid");
    shape("q:cloth-99%", model, b.finish())
}

/// The quotient section's shapes: the four synthetic static shares, then issue 4's traces,
/// then the mostly static traces, each at its default world count or at `worlds` (a trace's
/// worlds are its recorded ones repeated; its name says how many).
pub(super) fn shapes(worlds: Option<usize>) -> Vec<(String, Make)> {
    let mut out: Vec<(String, Make)> = SYNTHETIC
        .into_iter()
        .map(|(n, f, seed, nworld)| {
            let nworld = worlds.unwrap_or(nworld);
            let make = move || {
                // One world first: what each of the shape's worlds takes.
                let one = f(seed, 1);
                let rows = Capacity::fit(&one.model, &one.batch).njmax;
                super::memory::check("bench", n, nworld, one.model.ntree(), rows)?;
                Ok(Some(f(seed, nworld)))
            };
            (n.to_string(), Box::new(make) as Make)
        })
        .collect();
    for (scene, nworld) in TRACES.into_iter().chain(STATIC_TRACES) {
        let nworld = worlds.unwrap_or(nworld);
        let name = format!("trace:{scene}x{nworld}");
        let label = name.clone();
        let make = move || super::trace_shape(&label, scene, nworld);
        out.push((name, Box::new(make) as Make));
    }
    out
}

/// The step sequences of the shape listed as `name` (see [`shapes`]; `worlds` as there): for
/// a synthetic shape, one per rest fraction over four versions of it, then, where its worlds
/// have equality [`sequence::TOGGLED_EQ`], one per toggling share; for a trace, its recorded
/// steps. With `asleep` (`--asleep SHARE` and the policy), a synthetic shape's one sleeping
/// sequence at that share ([`Sequence::sleeping`]) instead, and none for a trace (its recorded
/// worlds are awake).
fn sequences(
    name: &str,
    worlds: Option<usize>,
    asleep: Option<(f64, &Policy)>,
) -> archipelago::Result<Vec<Sequence>> {
    if let Some(&(_, f, seed, nworld)) = SYNTHETIC.iter().find(|(n, ..)| *n == name) {
        let nworld = worlds.unwrap_or(nworld);
        let shape = f(seed, nworld);
        let mut versions = vec![shape.batch];
        versions.extend((1..4).map(|k| f(seed + 1000 * k, nworld).batch));
        let model = &shape.model;
        if let Some((share, policy)) = asleep {
            let classifier = policy.classifier_for(&versions[0]);
            let seq = Sequence::sleeping(model.clone(), versions, share, &classifier);
            return Ok(vec![seq]);
        }
        let mut out: Vec<Sequence> = SYNTHETIC_REST
            .iter()
            .map(|&rest| Sequence::synthetic(model.clone(), versions.clone(), rest))
            .collect();
        let b = &versions[0];
        let toggles = (0..b.nrow())
            .any(|r| b.row_type[r].is_equality() && b.row_id[r] == sequence::TOGGLED_EQ);
        if toggles {
            out.extend(
                TOGGLING_SHARES
                    .iter()
                    .map(|&share| Sequence::toggling(model.clone(), versions.clone(), share)),
            );
        }
        return Ok(out);
    }
    let Some((scene, nworld)) = super::trace_shape_name(name).filter(|_| asleep.is_none()) else {
        return Ok(Vec::new());
    };
    let path = super::trace_dir().join(format!("{scene}.npz"));
    Ok(vec![Sequence::trace(Trace::open(&path)?, nworld)])
}

/// One contender's figures.
struct Timed {
    name: String,
    /// The solver's construction alone (its programs loaded, its workspace allocated), without
    /// a first step: the quotient's first step is reported apart.
    construct_ms: f64,
    device_us: f64,
    /// Device µs per step with the replays enqueued back to back (see `BACK_TO_BACK`).
    back_us: f64,
    /// Device µs per step with an L2 flush before each replay (`gpu::graph::L2Flush`).
    cold_us: f64,
    /// Device µs per step with the device kept busy before each replay (`gpu::graph::Busy`).
    busy_us: f64,
    wall_us: f64,
    /// The maps stage replayed alone (`dsu`, whose maps are a launch of their own).
    maps_us: Option<f64>,
    /// Registers a thread of its kernel when capped for many waves.
    register_cap: Option<u32>,
    ok: bool,
}

/// The device columns of a solver's uploaded step, its replays timed four ways.
struct DeviceFigures {
    device_us: f64,
    back_us: f64,
    cold_us: f64,
    busy_us: f64,
}

impl DeviceFigures {
    /// Times `s`'s replays: the median of `reps` replays between events, `BACK_TO_BACK` of them
    /// enqueued back to back, and `reps` each after an L2 flush or with the device kept busy.
    fn of(
        s: &mut impl Stepped,
        reps: usize,
        (flush, busy): (&L2Flush, &Busy),
    ) -> archipelago::Result<DeviceFigures> {
        let reps = reps.max(1);
        Ok(DeviceFigures {
            device_us: median_us(s.time_replays(2, reps)?),
            back_us: s.time_back_to_back(2, BACK_TO_BACK)?,
            cold_us: median_us(flush.time_replays(reps, || s.replay())?),
            busy_us: median_us(busy.time_replays(reps, || s.replay())?),
        })
    }
}

fn full_mode(
    g: &Gpu,
    mode: Mode,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    timers: (&L2Flush, &Busy),
) -> archipelago::Result<Timed> {
    let cap = Capacity::fit(input.model(), input.batch());
    let opts = args.solver_options();
    let start = Instant::now();
    let mut solver = Solver::with_options(g, mode, cap, input.model(), opts)?;
    let construct_ms = start.elapsed().as_secs_f64() * 1e3;
    // Page-locked outputs, as an Engine on a GPU has.
    let mut out = PinnedIslands::new(g, &cap);
    out.fill(input, |o| solver.solve(input, o))?;
    let mut ok = out.first_mismatch(reference).is_none();
    let mut wall = Vec::with_capacity(WALL_REPS);
    for _ in 0..WALL_REPS {
        let t = Instant::now();
        out.fill(input, |o| solver.solve(input, o))?;
        wall.push(t.elapsed().as_secs_f64() * 1e6);
    }
    // The graph's replays (the first step was launched directly, its graph captured then).
    ok &= out.first_mismatch(reference).is_none();
    solver.upload(input)?;
    let d = DeviceFigures::of(&mut solver, args.reps, timers)?;
    // What the timed replays wrote, the last one's.
    ok &= solver.download_equals(input, &mut out, reference)?;
    let maps_us = maps_alone(&mut solver, 2, args.reps.max(1))?;
    Ok(Timed {
        name: mode.to_string(),
        construct_ms,
        device_us: d.device_us,
        back_us: d.back_us,
        cold_us: d.cold_us,
        busy_us: d.busy_us,
        wall_us: median_us(wall),
        maps_us,
        register_cap: solver.register_cap(),
        ok,
    })
}

/// The quotient's figures besides the common ones.
struct QuotientFigures {
    timed: Timed,
    first_ms: f64,
    /// The steady step's host half (µs; its own work, beside the batch's copy).
    host_us: f64,
    /// The steady step's upload (µs; the copy and the host half beside it).
    upload_us: f64,
    rebuild_all_ms: f64,
    rebuild_one_us: f64,
    slots: usize,
    counts: archipelago::gpu::quotient::StepCounts,
    bytes: usize,
    /// Device µs per step with reuse on and every world unchanged (`None` if some world was
    /// not reused).
    unchanged_us: Option<f64>,
    /// Device µs per step (reuse off) with the node-level maps off, where some world took them.
    tree_maps_us: Option<f64>,
    /// Whether the timed steps (reuse off) took one warp per replayed world.
    warp_worlds: bool,
    /// And a second warp a world for its guard.
    guard_warps: bool,
    /// Bytes a step must move at least: every support and offset read once, every output
    /// written once (`Workspace::floor_bytes`).
    floor_bytes: usize,
}

fn quotient(
    g: &Gpu,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    timers: (&L2Flush, &Busy),
    waking: Option<&(Batch, Events)>,
) -> archipelago::Result<QuotientFigures> {
    // A shape put partly asleep starts awake (its batch holds every row of the measured one).
    let first = match waking {
        Some((awake, _)) => Input::new(input.model(), awake)?,
        None => *input,
    };
    let cap = Capacity::fit(first.model(), first.batch());
    let start = Instant::now();
    let q = QuotientSolver::new(g, cap, input.model(), args.policy())?;
    let construct_ms = start.elapsed().as_secs_f64() * 1e3;
    let reps = args.reps.max(1);
    let mut run = QuotientRun {
        q,
        out: PinnedIslands::new(g, &cap),
        input: *input,
        reference,
        none: Events::new(),
        ok: true,
    };
    // Every step below is the same batch: with reuse on, every world after the first would be
    // reused. These figures are the quotient's own check and solve; the sequences measure reuse.
    run.q.set_reuse(false)?;
    let first_ms = run.first_steps(&first, waking)?;
    let (wall_us, upload_us, host_us) = run.walls()?;
    let counts = run.q.last_counts();
    // The steady step's device figures, before the rebuilds below (which, on a shape put partly
    // asleep, contract its sleeping worlds apart).
    run.q.upload(input, &run.none)?;
    let d = DeviceFigures::of(&mut run.q, reps, timers)?;
    let (warp_worlds, guard_warps) = (run.q.warp_worlds(), run.q.guard_warps());
    // What the timed replays wrote, the last one's.
    run.check()?;
    let tree_maps_us = run.tree_maps_only(counts.by_nodes > 0, reps)?;
    let (rebuild_all_ms, rebuild_one_us) = run.rebuilds()?;
    let unchanged_us = run.unchanged(reps)?;
    let q = &run.q;
    Ok(QuotientFigures {
        timed: Timed {
            name: "quotient (reuse off)".into(),
            construct_ms,
            device_us: d.device_us,
            back_us: d.back_us,
            cold_us: d.cold_us,
            busy_us: d.busy_us,
            wall_us,
            maps_us: None,
            register_cap: q.register_cap(),
            ok: run.ok,
        },
        first_ms,
        host_us,
        upload_us,
        rebuild_all_ms,
        rebuild_one_us,
        slots: q.quotient().cache().live_slots(),
        counts,
        bytes: q.quotient_bytes(),
        unchanged_us,
        tree_maps_us,
        warp_worlds,
        guard_warps,
        floor_bytes: q.workspace().floor_bytes(),
    })
}

/// The quotient as [`quotient`] measures it: its solver and page-locked outputs on one shape's
/// batch, and whether every step it checked equalled the reference.
struct QuotientRun<'a> {
    q: QuotientSolver,
    out: PinnedIslands,
    input: Input<'a>,
    reference: &'a Islands,
    /// No events: a steady step.
    none: Events,
    ok: bool,
}

impl QuotientRun<'_> {
    /// Downloads the last replay and checks it.
    fn check(&mut self) -> archipelago::Result<()> {
        let (q, out) = (&mut self.q, &mut self.out);
        self.ok &= q.download_equals(&self.input, out, self.reference)?;
        Ok(())
    }

    /// A whole checked step with `events`: its host half's µs (the host's own work, which the
    /// upload runs beside the batch's copy).
    fn step(&mut self, events: &Events) -> archipelago::Result<f64> {
        self.q.upload(&self.input, events)?;
        let us = self.q.last_host_half().as_secs_f64() * 1e6;
        self.q.replay()?;
        self.check()?;
        Ok(us)
    }

    /// The first step, which contracts every world, from `first` (ms); on a shape put partly
    /// asleep (`waking`), `first` is its batch awake, checked against the CPU, and then its
    /// components fall asleep, reported: their nodes are masked from then on.
    fn first_steps(
        &mut self,
        first: &Input<'_>,
        waking: Option<&(Batch, Events)>,
    ) -> archipelago::Result<f64> {
        let (q, out) = (&mut self.q, &mut self.out);
        let t = Instant::now();
        q.upload(first, &self.none)?;
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        q.replay()?;
        match waking {
            Some((_, asleep)) => {
                let mut awake = Islands::default();
                let mut dsu = archipelago::cpu::dsu::Dsu::default();
                CpuMode::solve(&mut dsu, first, &mut awake)?;
                self.ok &= q.download_equals(first, out, &awake)?;
                q.upload(&self.input, asleep)?;
                q.replay()?;
                self.check()?;
            }
            None => self.check()?,
        }
        Ok(first_ms)
    }

    /// The steady step's medians over `WALL_REPS` whole steps: wall, upload and host half (µs).
    fn walls(&mut self) -> archipelago::Result<(f64, f64, f64)> {
        let (q, out, input) = (&mut self.q, &mut self.out, &self.input);
        let (mut wall, mut upload, mut host) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..WALL_REPS {
            let t = Instant::now();
            q.upload(input, &self.none)?;
            upload.push(t.elapsed().as_secs_f64() * 1e6);
            host.push(q.last_host_half().as_secs_f64() * 1e6);
            q.replay()?;
            out.fill(input, |o| q.download(input, o))?;
            wall.push(t.elapsed().as_secs_f64() * 1e6);
        }
        self.ok &= out.first_mismatch(self.reference).is_none();
        Ok((median_us(wall), median_us(upload), median_us(host)))
    }

    /// The same step with the tree-level maps only, where node-level maps apply (`by_nodes`:
    /// some world took them): device µs, checked too.
    fn tree_maps_only(&mut self, by_nodes: bool, reps: usize) -> archipelago::Result<Option<f64>> {
        if !(self.q.node_maps() && by_nodes) {
            return Ok(None);
        }
        self.q.set_node_maps(false);
        self.q.upload(&self.input, &self.none)?;
        let us = median_us(self.q.time_replays(2, reps)?);
        self.check()?;
        self.q.set_node_maps(true);
        Ok(Some(us))
    }

    /// The host cost of a rebuild beyond a steady step: of every world (ms; a capacity change
    /// reported) and of one (µs; an edit of one world, a different one each time). One world's
    /// rebuild is small against the spread of a host half, so each such step is paired with a
    /// steady step just before it: the medians of their differences.
    fn rebuilds(&mut self) -> archipelago::Result<(f64, f64)> {
        let none = Events::new();
        let mut all = Events::new();
        all.capacity_changed();
        let mut all_us = Vec::with_capacity(REBUILD_ALL_REPS);
        for _ in 0..REBUILD_ALL_REPS {
            let steady = self.step(&none)?;
            all_us.push(self.step(&all)? - steady);
        }
        let nworld = self.input.batch().nworld();
        let mut one_us = Vec::with_capacity(REBUILD_REPS);
        for i in (0..REBUILD_REPS).filter(|_| nworld > 0) {
            let steady = self.step(&none)?;
            let mut one = Events::new();
            let world = (i * nworld / REBUILD_REPS) as u32;
            one.edit(Some(world), Edit::EqRetargeted { eq: 0 });
            one_us.push(self.step(&one)? - steady);
        }
        let all_ms = median_us(all_us).max(0.0) / 1e3;
        Ok((all_ms, median_us(one_us).max(0.0)))
    }

    /// The floor of a quotient step on this shape (device µs): reuse on and every world
    /// unchanged since its last step, so only the reuse check runs (it reads every hyperedge,
    /// as any exact check must); the row-level outputs are in place, as no world's rows moved.
    /// The warp kernel has no reuse check, so this takes the block kernels (the last use of the
    /// solver). `None` if some world was not reused.
    fn unchanged(&mut self, reps: usize) -> archipelago::Result<Option<f64>> {
        let (q, out, input) = (&mut self.q, &mut self.out, &self.input);
        q.set_reuse(true)?;
        q.set_warp_worlds(Some(false))?;
        out.fill(input, |o| q.step(input, &self.none, o))?;
        out.fill(input, |o| q.step(input, &self.none, o))?;
        self.ok &= out.first_mismatch(self.reference).is_none();
        if q.last_counts().reused != input.batch().nworld() {
            return Ok(None);
        }
        Ok(Some(median_us(q.time_replays(2, reps)?)))
    }
}

/// One summary line per shape, for the table at the end.
pub(super) struct Summary {
    shape: String,
    static_rows: f64,
    /// Static support entries (rows' and rowless couplings'): flex scenes contract couplings
    /// without rows.
    static_entries: f64,
    best: Option<(String, f64, f64)>,
    quotient: Option<(f64, f64)>,
    /// The quotient's device µs per step with every world unchanged (reuse on).
    unchanged: Option<f64>,
    /// The least device µs any step can take on the shape: the empty replay plus the floor
    /// bytes at the measured copy bandwidth.
    bound: Option<f64>,
    /// With an L2 flush before each step: the best full rebuild (mode, device µs) and the
    /// quotient's device µs.
    cold: Option<(String, f64, f64)>,
    /// The same with the device kept busy before each step instead (L2 warm).
    busy: Option<(String, f64, f64)>,
    sequences: Vec<SequenceLine>,
}

/// A step sequence's summary: its label, the best full rebuild over it, the quotient's mean
/// device µs per step, the share of world-steps reused.
struct SequenceLine {
    label: String,
    best: Option<(Mode, f64)>,
    quotient: f64,
    quotient_off: f64,
    reused: f64,
    /// The `auto` Engine's wall time over the best full rebuild's, and its quotient steps.
    auto: Option<(f64, usize)>,
    /// The `auto` Engine's wall time over that of the full rebuild it chose.
    auto_own: Option<f64>,
    /// The same over the steps between its trials only.
    auto_between: Option<f64>,
    /// On a toggling sequence, the equality policies against the best full rebuild.
    toggles: Option<Toggles>,
}

/// A toggling sequence's figures: the best full rebuild's median wall, and per equality policy
/// (static, the default, first) its mean device µs and median wall µs per step.
struct Toggles {
    best_wall: Option<(String, f64)>,
    policies: Vec<PolicyFigures>,
}

/// The full-rebuild modes a default run would time that `modes` leaves out: "the best full
/// rebuild" of a run is the best of those it ran, and a shape's best can change with its world
/// count (at 8,192 worlds `warp` overtook `block`, which a run of `block` alone cannot show).
fn left_out(modes: &[Mode]) -> Vec<&'static str> {
    Mode::ALL
        .into_iter()
        .filter(|&m| m != Mode::Dense && !modes.contains(&m))
        .map(|m| m.name())
        .collect()
}

/// Measures `shape` and appends its section to `out`; returns whether every result was exact,
/// and the summary line.
pub(super) fn table(
    g: &Gpu,
    name: &str,
    shape: &Shape,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<(bool, Summary)> {
    // The rows in page-locked memory, as a user who wants the fastest walls would have them.
    let mut rows = PinnedBatch::new(g, &Capacity::fit(input.model(), input.batch()));
    rows.build(|b| {
        b.worlds_from(input.batch());
    });
    let input = &Input::new(input.model(), &rows)?;
    let policy = args.policy();
    let share = classify::share(input, &policy.classifier_for(input.batch()));
    let _ = writeln!(
        out,
        "static share ({}): {:.1}% of rows, {:.1}% of support entries\n",
        super::super::describe_policy(&policy, input.batch()),
        100.0 * share.row_fraction(),
        100.0 * share.entry_fraction()
    );
    let modes: Vec<Mode> = if args.modes.is_empty() {
        Mode::ALL
            .into_iter()
            .filter(|&m| m != Mode::Dense)
            .collect()
    } else {
        Mode::ALL.into_iter().filter(|&m| args.wants(m)).collect()
    };
    let left_out = left_out(&modes);
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "full-rebuild modes left out by `--modes`: {} (the best full rebuild below is the best of those run)\n",
            left_out.join(", ")
        );
    }
    out.push_str("| mode | construct ms | device µs/step | wall µs/step | equals CPU | device µs/step, back to back | device µs/step, L2 flushed before each | device µs/step, device busy before each |\n|---|---|---|---|---|---|---|---|\n");
    let timers = (&L2Flush::new(g)?, &Busy::new(g)?);
    let full = full_rows(g, &modes, input, reference, args, timers, out);
    let mut all_ok = full.ok;
    let mut summary = Summary {
        shape: shape.name.clone(),
        static_rows: share.row_fraction(),
        static_entries: share.entry_fraction(),
        best: full.best.clone(),
        quotient: None,
        unchanged: None,
        bound: None,
        cold: None,
        busy: None,
        sequences: Vec::new(),
    };
    match quotient(g, input, reference, args, timers, shape.waking.as_ref()) {
        Ok(f) => {
            all_ok &= f.timed.ok;
            row(out, &f.timed);
            quotient_lines(g, input, &f, &full, timers, &mut summary, out)?;
        }
        Err(e) => {
            all_ok = false;
            let _ = writeln!(out, "| quotient | — | {e} | — | — | — | — | — |");
        }
    }
    let sequences = match args.no_sequences {
        true => Vec::new(),
        false => sequences(name, args.worlds(), args.asleep.zip(Some(&policy)))?,
    };
    for mut seq in sequences {
        let again = (!args.no_again).then_some(timers.0);
        let f = sequence::run(g, &mut seq, &modes, &policy, again)?;
        all_ok &= f.ok;
        f.report(&seq, out);
        summary.sequences.push(sequence_line(&seq, f));
    }
    Ok((all_ok, summary))
}

/// A mode's row of the shape's table.
fn row(out: &mut String, t: &Timed) {
    let _ = writeln!(
        out,
        "| {} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {:.1} | {:.1} |",
        t.name,
        t.construct_ms,
        t.device_us,
        t.wall_us,
        if t.ok { "yes" } else { "NO" },
        t.back_us,
        t.cold_us,
        t.busy_us
    );
}

/// The full rebuilds' figures that the quotient's lines set it against: the fastest exact mode
/// warm (device and wall µs), with L2 flushed and with the device busy.
struct FullRebuilds {
    best: Option<(String, f64, f64)>,
    best_cold: Option<(String, f64)>,
    best_busy: Option<(String, f64)>,
    /// The maps stage alone, where a mode timed it.
    maps_us: Option<f64>,
    /// The modes whose kernels were capped for many waves, and at how many registers.
    capped: Vec<String>,
    /// Whether every mode was exact or refused the shape.
    ok: bool,
}

/// Times each full-rebuild mode in `modes` on `input` and writes its row (a refusal's reason
/// where it refused).
fn full_rows(
    g: &Gpu,
    modes: &[Mode],
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    timers: (&L2Flush, &Busy),
    out: &mut String,
) -> FullRebuilds {
    let mut full = FullRebuilds {
        best: None,
        best_cold: None,
        best_busy: None,
        maps_us: None,
        capped: Vec::new(),
        ok: true,
    };
    for &mode in modes {
        match full_mode(g, mode, input, reference, args, timers) {
            Ok(t) => {
                full.ok &= t.ok;
                if t.ok && full.best.as_ref().is_none_or(|b| t.device_us < b.1) {
                    full.best = Some((t.name.clone(), t.device_us, t.wall_us));
                }
                if t.ok && full.best_cold.as_ref().is_none_or(|b| t.cold_us < b.1) {
                    full.best_cold = Some((t.name.clone(), t.cold_us));
                }
                if t.ok && full.best_busy.as_ref().is_none_or(|b| t.busy_us < b.1) {
                    full.best_busy = Some((t.name.clone(), t.busy_us));
                }
                full.maps_us = full.maps_us.or(t.maps_us);
                if let Some(n) = t.register_cap {
                    full.capped.push(format!("{} at {n}", t.name));
                }
                row(out, &t);
            }
            Err(e) => {
                full.ok &= matches!(e, archipelago::Error::Refused { .. });
                let _ = writeln!(out, "| {mode} | — | {e} | — | — | — | — | — |");
            }
        }
    }
    full
}

/// The quotient's lines below the table: its solver and steady step, its floor, the bound of
/// any step, and its speedups over the best full rebuild warm, cold and busy; the same figures
/// into `summary`.
fn quotient_lines(
    g: &Gpu,
    input: &Input<'_>,
    f: &QuotientFigures,
    full: &FullRebuilds,
    timers: (&L2Flush, &Busy),
    summary: &mut Summary,
    out: &mut String,
) -> archipelago::Result<()> {
    summary.quotient = Some((f.timed.device_us, f.timed.wall_us));
    summary.unchanged = f.unchanged_us;
    // The launch under every step's device time, measured beside the shape's figures; the
    // bandwidth is the process's one measurement (the report's header).
    let launch_us = archipelago::gpu::graph::empty_graph_us(g, 50)?;
    let (bandwidth, _) = super::floor_bandwidth(g)?;
    let bound = launch_us + f.floor_bytes as f64 / bandwidth * 1e6;
    summary.bound = bound.is_finite().then_some(bound);
    steady_step_line(input, f, out);
    if !full.capped.is_empty() {
        let _ = writeln!(
            out,
            "\nfull-rebuild kernels capped for many waves (registers a thread): {}",
            full.capped.join(", ")
        );
    }
    floor_and_maps_lines(f, full, out);
    if let Some(bound) = summary.bound {
        bound_line(bound, launch_us, bandwidth, f, full, out);
    }
    speedup_lines(g, f, full, timers, summary, out)
}

/// The quotient's first line: its slots and memory, how its steady step solved the worlds, and
/// the host's part of a step, of the first step and of rebuilds.
fn steady_step_line(input: &Input<'_>, f: &QuotientFigures, out: &mut String) {
    let _ = writeln!(
        out,
        "\nquotient: {} slot(s) for {} worlds, {:.1} MiB on the device{}; steady step: {} replayed, {} masked ({} by their warps, {} of them by their hint), {} solved directly; host half {:.1} µs/step, beside the batch's copy (upload {:.1} µs/step); first step (contract every world) {:.2} ms; rebuild of every world {:.2} ms, of one world {:.1} µs (host, beyond a steady step: the median of {} and of {} such pairs)",
        f.slots,
        input.batch().nworld(),
        f.bytes as f64 / (1 << 20) as f64,
        f.timed.register_cap.map_or(String::new(), |n| format!(
            ", kernels of at most {n} registers a thread (many waves)"
        )) + match (f.warp_worlds, f.guard_warps) {
            (true, true) => ", one warp a replayed world and one for its guard",
            (true, false) => ", one warp a replayed world",
            _ => "",
        },
        f.counts.replayed,
        f.counts.masked,
        f.counts.masked_by_warps,
        f.counts.masked_by_hint,
        f.counts.direct,
        f.host_us,
        f.upload_us,
        f.first_ms,
        f.rebuild_all_ms,
        f.rebuild_one_us,
        REBUILD_ALL_REPS,
        REBUILD_REPS
    );
}

/// The parts of a step: the quotient's floor (every world unchanged), its step with the
/// tree-level maps only, and the maps alone, where they were measured.
fn floor_and_maps_lines(f: &QuotientFigures, full: &FullRebuilds, out: &mut String) {
    match f.unchanged_us {
        Some(us) => {
            let _ = writeln!(
                out,
                "\nquotient, every world unchanged since its last step (reuse on: the reuse check only, every output in place; a block a world, as the warp kernel has no reuse check): {us:.1} µs/step — the floor of a quotient step on this shape"
            );
        }
        None => out
            .push_str("\nquotient, every world unchanged: not measured (a world was not reused)\n"),
    }
    if let Some(us) = f.tree_maps_us {
        let _ = writeln!(
            out,
            "\nquotient (reuse off) with the tree-level maps only (node-level maps off): {us:.1} µs/step; with them: {} of {} worlds mapped from their nodes",
            f.counts.by_nodes,
            f.counts.replayed + f.counts.masked + f.counts.direct
        );
    }
    if let Some(maps) = full.maps_us {
        let _ = writeln!(
            out,
            "\nmaps alone (dsu's maps launch over its labels, replayed by itself): {maps:.1} µs/step — the share of a step that every mode pays to write every output"
        );
    }
}

/// The bound of any step (`bound` µs: the empty replay's `launch_us` and the floor's bytes at
/// `bandwidth`), and the most a mode could gain over the best full rebuild.
fn bound_line(
    bound: f64,
    launch_us: f64,
    bandwidth: f64,
    f: &QuotientFigures,
    full: &FullRebuilds,
    out: &mut String,
) {
    let _ = writeln!(
        out,
        "\nbound of any step on this shape: {bound:.1} µs/step — the empty replay ({launch_us:.1} µs) and {:.1} MB (every support and offset read once, every output written once) at {:.2} TB/s, from device memory (with L2 warm a step may beat it){}",
        f.floor_bytes as f64 / 1e6,
        bandwidth / 1e12,
        full.best
            .as_ref()
            .map_or(String::new(), |(mode, d, _)| format!(
                "; from device memory no mode can be more than {:.2}x faster than the best full rebuild ({mode})",
                d / bound
            ))
    );
}

/// The quotient against the best full rebuild warm, with L2 flushed and with the device busy;
/// the latter two into `summary`.
fn speedup_lines(
    g: &Gpu,
    f: &QuotientFigures,
    full: &FullRebuilds,
    timers: (&L2Flush, &Busy),
    summary: &mut Summary,
    out: &mut String,
) -> archipelago::Result<()> {
    if let Some((mode, d, w)) = &full.best {
        let _ = writeln!(
            out,
            "\nvs best full rebuild ({mode}): device {:.2}x, wall {:.2}x; auto picks {}",
            d / f.timed.device_us,
            w / f.timed.wall_us,
            auto_pick(f.timed.wall_us, mode, *w)
        );
    }
    if let Some((mode, d)) = &full.best_cold {
        summary.cold = Some((mode.clone(), *d, f.timed.cold_us));
        let _ = writeln!(
            out,
            "\nwith L2 flushed before each step ({:.0} MB written over, not timed; every mode's rows, tables and outputs then come from device memory, as after the rest of a simulation's step): vs best full rebuild ({mode}) device {:.2}x",
            timers.0.bytes() as f64 / 1e6,
            d / f.timed.cold_us
        );
    }
    if let Some((mode, d)) = &full.best_busy {
        summary.busy = Some((mode.clone(), *d, f.timed.busy_us));
        let _ = writeln!(
            out,
            "\nwith the device kept busy before each step (the step enqueued before the device reaches it, as when a simulation's host runs ahead: no host launch latency; L2 warm; an empty replay {:.1} µs so): vs best full rebuild ({mode}) device {:.2}x",
            timers.1.empty_graph_us(g, 50)?,
            d / f.timed.busy_us
        );
    }
    Ok(())
}

/// A step sequence's line of the summary table.
fn sequence_line(seq: &Sequence, f: sequence::Figures) -> SequenceLine {
    let [reused, ..] = f.counts;
    let all = f.counts.iter().sum::<usize>().max(1);
    SequenceLine {
        label: seq.label.clone(),
        best: f.best(),
        quotient: f.quotient,
        quotient_off: f.quotient_off,
        auto: f
            .auto_wall()
            .zip(f.best_full_wall())
            .map(|(a, b)| (a / b.1, f.auto_quotient_steps)),
        auto_own: f.auto_wall().zip(f.auto_full_wall()).map(|(a, b)| a / b.1),
        auto_between: f.auto_between_ratio().map(|(_, r)| r),
        reused: reused as f64 / all as f64,
        toggles: (!f.policies.is_empty()).then(|| {
            let quotient_wall = f.wall.iter().find(|(w, _)| w == "quotient");
            let best_wall = f.best_full_wall();
            let default = PolicyFigures {
                label: sequence::default_eq_label(),
                device: f.quotient,
                wall: quotient_wall.map_or(f64::NAN, |w| w.1),
                direct: f.counts[3],
            };
            // In the table's order (static, dynamic, learned), whichever is the default.
            let order = sequence::eq_policies().map(|(label, _)| label);
            let mut policies: Vec<PolicyFigures> =
                std::iter::once(default).chain(f.policies).collect();
            policies.sort_by_key(|p| order.iter().position(|&l| l == p.label));
            Toggles {
                best_wall,
                policies,
            }
        }),
    }
}

/// Which mode the `auto` Engine keeps where the quotient's whole step takes `quotient_wall`
/// and the full rebuild `mode`'s `full_wall`: the Engine's own rule, the quotient only where
/// it is faster by the margin (`engine::auto_keeps_quotient`), not merely faster.
fn auto_pick(quotient_wall: f64, mode: &str, full_wall: f64) -> &str {
    if auto_keeps_quotient(quotient_wall, full_wall) {
        "quotient"
    } else {
        mode
    }
}

/// The summary table over every shape.
pub(super) fn summary(rows: &[Summary]) -> String {
    let mut out = String::from(
        "### Summary: quotient vs the best full-rebuild GPU mode\n\n| shape | static rows / entries | best full (device µs) | quotient device µs | device speedup | best full wall µs | quotient wall µs | wall speedup | auto | quotient, every world unchanged (device µs) | best full ÷ that | bound of any step (device µs) | best full ÷ bound | L2 flushed before each step: best full, quotient (device µs) | speedup there | device busy before each step: best full, quotient (device µs) | speedup there |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in rows {
        let best = s
            .best
            .as_ref()
            .map_or("—".into(), |(m, d, _)| format!("{m} {d:.1}"));
        let (q, speed, bw, qw, wspeed, auto) = match (&s.best, s.quotient) {
            (Some((m, d, w)), Some((qd, qw))) => (
                format!("{qd:.1}"),
                format!("{:.2}x", d / qd),
                format!("{w:.1}"),
                format!("{qw:.1}"),
                format!("{:.2}x", w / qw),
                auto_pick(qw, m, *w).to_string(),
            ),
            (_, Some((qd, qw))) => (
                format!("{qd:.1}"),
                "—".into(),
                "—".into(),
                format!("{qw:.1}"),
                "—".into(),
                "quotient".into(),
            ),
            _ => (
                "failed".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ),
        };
        // A step time and the best full rebuild over it, as two cells.
        let over = |us: Option<f64>| match (us, &s.best) {
            (Some(u), Some((_, d, _))) => (format!("{u:.1}"), format!("{:.2}x", d / u)),
            (Some(u), None) => (format!("{u:.1}"), "—".into()),
            _ => ("—".into(), "—".into()),
        };
        // The floor of this quotient's step (every world unchanged; a step with any world
        // changed costs more), and the bound of any step (launch and bytes at full bandwidth):
        // over the latter, the most any mode could gain.
        let ((floor, ceiling), (bound, most)) = (over(s.unchanged), over(s.bound));
        let pair = |x: &Option<(String, f64, f64)>| {
            x.as_ref().map_or(("—".into(), "—".into()), |(m, d, q)| {
                (format!("{m} {d:.1}, {q:.1}"), format!("{:.2}x", d / q))
            })
        };
        let ((cold, cold_speed), (busy, busy_speed)) = (pair(&s.cold), pair(&s.busy));
        let _ = writeln!(
            out,
            "| {} | {:.1}% / {:.1}% | {best} | {q} | {speed} | {bw} | {qw} | {wspeed} | {auto} | {floor} | {ceiling} | {bound} | {most} | {cold} | {cold_speed} | {busy} | {busy_speed} |",
            s.shape,
            100.0 * s.static_rows,
            100.0 * s.static_entries
        );
    }
    // Without sequences (`--no-sequences`) neither sequence table.
    if rows.iter().all(|s| s.sequences.is_empty()) {
        return out;
    }
    out.push_str(
        "\n### Summary: step sequences, quotient (reuse on) vs the best full-rebuild GPU mode over the same steps\n\n| shape | static rows / entries | sequence | best full (device µs/step) | quotient, reuse off | quotient, reuse on | speedup (reuse on) | world-steps reused | auto Engine median wall / best full median wall (quotient steps) | auto Engine median wall / its own full mode's | the same between its trials |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in rows {
        for line in &s.sequences {
            let (label, q, reused) = (&line.label, line.quotient, line.reused);
            let (b, speed) = line.best.map_or(("—".into(), "—".into()), |(m, us)| {
                (format!("{m} {us:.1}"), format!("{:.2}x", us / q))
            });
            let _ = writeln!(
                out,
                "| {} | {:.1}% / {:.1}% | {label} | {b} | {:.1} | {q:.1} | {speed} | {:.1}% | {} | {} | {} |",
                s.shape,
                100.0 * s.static_rows,
                100.0 * s.static_entries,
                line.quotient_off,
                100.0 * reused,
                line.auto
                    .map_or("—".into(), |(r, n)| format!("{r:.3}x ({n})")),
                line.auto_own.map_or("—".into(), |r| format!("{r:.3}x")),
                line.auto_between.map_or("—".into(), |r| format!("{r:.3}x"))
            );
        }
    }
    toggle_summary(rows, &mut out);
    out
}

/// The toggling sequences' table: equalities static against dynamic and learned, by device
/// time and by wall time (where a static equality's switch costs a rebuild on the host).
fn toggle_summary(rows: &[Summary], out: &mut String) {
    let lines: Vec<(&Summary, &SequenceLine, &Toggles)> = rows
        .iter()
        .flat_map(|s| {
            let toggling = s
                .sequences
                .iter()
                .filter_map(|l| Some((l, l.toggles.as_ref()?)));
            toggling.map(move |(l, t)| (s, l, t))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    out.push_str(
        "\n### Summary: toggle-heavy worlds, equalities static (a switch rebuilds the world's quotient on the host) against dynamic and learned (dynamic once switched twice), quotient with reuse on\n\n",
    );
    let _ = writeln!(
        out,
        "The default policy: {}.\n",
        sequence::default_eq_label()
    );
    out.push_str(
        "| shape | sequence | best full (device µs/step) | device µs/step: static / dynamic / learned | best full (median wall µs) | median wall µs: static / dynamic / learned | fastest wall |\n|---|---|---|---|---|---|---|\n",
    );
    for (
        s,
        line,
        Toggles {
            best_wall,
            policies,
        },
    ) in lines
    {
        let best = line
            .best
            .map_or("—".into(), |(m, us)| format!("{m} {us:.1}"));
        let join = |f: fn(&PolicyFigures) -> f64, digits: usize| {
            let v: Vec<String> = policies
                .iter()
                .map(|p| format!("{:.digits$}", f(p)))
                .collect();
            v.join(" / ")
        };
        let mut walls: Vec<(&str, f64)> = policies.iter().map(|p| (p.label, p.wall)).collect();
        if let Some((m, us)) = best_wall {
            walls.push((m.as_str(), *us));
        }
        let fastest = walls
            .iter()
            .filter(|w| w.1.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("—", |w| w.0);
        let _ = writeln!(
            out,
            "| {} | {} | {best} | {} | {} | {} | {fastest} |",
            s.shape,
            line.label,
            join(|p| p.device, 1),
            best_wall
                .as_ref()
                .map_or("—".into(), |(m, us)| format!("{m} {us:.0}")),
            join(|p| p.wall, 0)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_names_the_full_rebuilds_its_modes_leave_out() {
        assert!(left_out(&Mode::ALL).is_empty());
        let all_but_dense: Vec<Mode> = Mode::ALL
            .into_iter()
            .filter(|&m| m != Mode::Dense)
            .collect();
        assert!(left_out(&all_but_dense).is_empty());
        let out = left_out(&[Mode::Block, Mode::Labelprop]);
        assert!(out.contains(&"warp") && out.contains(&"dsu") && out.contains(&"tiled"));
        assert!(!out.contains(&"block") && !out.contains(&"dense"));
    }

    #[test]
    fn the_summary_sets_the_best_full_rebuild_against_the_quotient_floor_and_the_bound() {
        let row = Summary {
            shape: "q:mechanism-90%".into(),
            static_rows: 0.906,
            static_entries: 0.906,
            best: Some(("block".into(), 16.0, 1700.0)),
            quotient: Some((16.0, 1800.0)),
            unchanged: Some(8.0),
            bound: Some(5.0),
            cold: Some(("warp".into(), 20.0, 12.5)),
            busy: Some(("block".into(), 14.0, 4.0)),
            sequences: Vec::new(),
        };
        let text = summary(&[row]);
        let line = text
            .lines()
            .find(|l| l.starts_with("| q:mechanism-90%"))
            .expect("a row for the shape");
        assert!(
            line.ends_with(
                "| block | 8.0 | 2.00x | 5.0 | 3.20x | warp 20.0, 12.5 | 1.60x | block 14.0, 4.0 | 3.50x |"
            ),
            "{line}"
        );
        let header = text.lines().nth(2).expect("a header");
        assert_eq!(header.matches('|').count(), line.matches('|').count());
        assert!(
            !text.contains("toggle-heavy"),
            "no toggling sequence, no table"
        );
        assert!(
            !text.contains("Summary: step sequences"),
            "no sequence (--no-sequences), no sequence table"
        );
    }

    #[test]
    fn auto_is_said_to_pick_the_quotient_only_past_its_margin() {
        let row = |quotient_wall: f64| Summary {
            shape: "q:hammock".into(),
            static_rows: 0.97,
            static_entries: 0.99,
            best: Some(("warp".into(), 63.0, 1000.0)),
            quotient: Some((21.0, quotient_wall)),
            unchanged: None,
            bound: None,
            cold: None,
            busy: None,
            sequences: Vec::new(),
        };
        let auto_cell = |quotient_wall: f64| {
            let text = summary(&[row(quotient_wall)]);
            let line = text
                .lines()
                .find(|l| l.starts_with("| q:hammock"))
                .expect("a row for the shape")
                .to_string();
            line.split(" | ").nth(8).expect("the auto cell").to_string()
        };
        // 1.02x faster by wall: the Engine keeps the full rebuild (3 % margin).
        assert_eq!(auto_cell(980.0), "warp");
        // 1.05x: the quotient.
        assert_eq!(auto_cell(952.0), "quotient");
        assert_eq!(auto_pick(980.0, "warp", 1000.0), "warp");
        assert_eq!(auto_pick(952.0, "warp", 1000.0), "quotient");
    }

    #[test]
    fn the_toggle_table_names_the_fastest_wall_among_the_policies_and_the_best_full_mode() {
        let line = |label: &str, walls: [f64; 3], best: f64| SequenceLine {
            label: label.into(),
            best: Some((Mode::Block, 30.0)),
            quotient: 20.0,
            quotient_off: 25.0,
            reused: 0.0,
            auto: Some((1.02, 4)),
            auto_own: Some(1.01),
            auto_between: Some(0.99),
            toggles: Some(Toggles {
                best_wall: Some(("block".into(), best)),
                policies: [
                    "equalities static",
                    "equalities dynamic",
                    "equalities learned",
                ]
                .into_iter()
                .zip(walls)
                .map(|(label, wall)| PolicyFigures {
                    label,
                    device: 20.0,
                    wall,
                    direct: 0,
                })
                .collect(),
            }),
        };
        let row = Summary {
            shape: "q:cloth-99%".into(),
            static_rows: 0.99,
            static_entries: 0.99,
            best: None,
            quotient: None,
            unchanged: None,
            bound: None,
            cold: None,
            busy: None,
            sequences: vec![
                line("ten", [900.0, 500.0, 400.0], 450.0),
                line("all", [9000.0, 500.0, 600.0], 450.0),
            ],
        };
        let text = summary(&[row]);
        // The sequence table: auto against the best full rebuild, its own, and its own between
        // its trials; as many cells as its header.
        let mut sequences = text
            .lines()
            .skip_while(|l| !l.contains("Summary: step sequences"));
        let header = sequences
            .find(|l| l.starts_with("| shape"))
            .expect("a header");
        let first = sequences
            .find(|l| l.starts_with("| q:cloth-99% | "))
            .expect("a row");
        assert!(
            first.ends_with("| 1.020x (4) | 1.010x | 0.990x |"),
            "{first}"
        );
        assert_eq!(header.matches('|').count(), first.matches('|').count());
        let table = text.lines().skip_while(|l| !l.contains("toggle-heavy"));
        let rows: Vec<&str> = table
            .filter(|l| l.starts_with("| q:cloth-99% | "))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(
            rows[0].ends_with("| 900 / 500 / 400 | equalities learned |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].ends_with("| block 450 | 9000 / 500 / 600 | block |"),
            "{}",
            rows[1]
        );
        let mut table = text.lines().skip_while(|l| !l.contains("toggle-heavy"));
        assert!(
            table.any(|l| l == "The default policy: equalities learned."),
            "{text}"
        );
        let header = table.find(|l| l.starts_with("| shape")).expect("a header");
        assert_eq!(header.matches('|').count(), rows[0].matches('|').count());
    }
}
