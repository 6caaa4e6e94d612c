//! How the quotient bench times a contender: a full-rebuild mode, or the quotient with its
//! first step, walls, rebuilds and floor, each checked against the CPU oracle as it runs.

use std::time::Instant;

use super::super::stepped::Stepped;
use super::super::{BenchArgs, maps_alone, median_us};
use archipelago::cpu::CpuMode;
use archipelago::gpu::graph::{Busy, L2Flush, OutputReader};
use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::{Gpu, Mode, PinnedIslands, Solver};
use archipelago::{Batch, Capacity, Input, Islands};
use invalidation::{Edit, Events};

/// Whole steps timed for the wall-time columns.
const WALL_REPS: usize = 10;

/// Pairs of steps (steady, then one world's edit reported) for the cost of one world's
/// rebuild: the median of their differences.
pub(super) const REBUILD_REPS: usize = 15;

/// Pairs of steps (steady, then a capacity change reported) for the cost of every world's
/// rebuild: the median of their differences. One such step alone read up to twice the median
/// now and then (session 68: 15.6 against 7.5-9.4 ms, with as many page faults a process).
pub(super) const REBUILD_ALL_REPS: usize = 5;

/// Replays enqueued back to back for the back-to-back column: each launch's overhead then overlaps
/// the replay before it, as in a simulation loop that does not wait for every step.
const BACK_TO_BACK: usize = 100;

/// One contender's figures.
pub(super) struct Timed {
    pub(super) name: String,
    /// The solver's construction alone (its programs loaded, its workspace allocated), without
    /// a first step: the quotient's first step is reported apart.
    pub(super) construct_ms: f64,
    pub(super) device_us: f64,
    /// Device µs per step with the replays enqueued back to back (see `BACK_TO_BACK`).
    pub(super) back_us: f64,
    /// Device µs per step with an L2 flush before each replay (`gpu::graph::L2Flush`).
    pub(super) cold_us: f64,
    /// Device µs per step with the device kept busy before each replay (`gpu::graph::Busy`).
    pub(super) busy_us: f64,
    /// Device µs per step and a read of every output after it (`gpu::graph::OutputReader`).
    pub(super) read_us: f64,
    /// Bytes of outputs that read covers.
    pub(super) read_bytes: usize,
    pub(super) wall_us: f64,
    /// The maps stage replayed alone (`dsu`, whose maps are a launch of their own).
    pub(super) maps_us: Option<f64>,
    /// Registers a thread of its kernel when capped for many waves.
    pub(super) register_cap: Option<u32>,
    pub(super) ok: bool,
}

/// The device columns of a solver's uploaded step, its replays timed five ways.
struct DeviceFigures {
    device_us: f64,
    back_us: f64,
    cold_us: f64,
    busy_us: f64,
    read_us: f64,
    read_bytes: usize,
}

impl DeviceFigures {
    /// Times `s`'s replays: the median of `reps` replays between events, `BACK_TO_BACK` of them
    /// enqueued back to back, `reps` each after an L2 flush or with the device kept busy, and
    /// `reps` each followed by a read of every output.
    fn of(
        g: &Gpu,
        s: &mut impl Stepped,
        reps: usize,
        (flush, busy): (&L2Flush, &Busy),
    ) -> archipelago::Result<DeviceFigures> {
        let reps = reps.max(1);
        let reader = OutputReader::new(g, s.workspace())?;
        Ok(DeviceFigures {
            device_us: median_us(s.time_replays(2, reps)?),
            back_us: s.time_back_to_back(2, BACK_TO_BACK)?,
            cold_us: median_us(flush.time_replays(reps, || s.replay())?),
            busy_us: median_us(busy.time_replays(reps, || s.replay())?),
            read_us: median_us(reader.time_replays(reps, || s.replay())?),
            read_bytes: reader.bytes(),
        })
    }
}

pub(super) fn full_mode(
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
    let d = DeviceFigures::of(g, &mut solver, args.reps, timers)?;
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
        read_us: d.read_us,
        read_bytes: d.read_bytes,
        wall_us: median_us(wall),
        maps_us,
        register_cap: solver.register_cap(),
        ok,
    })
}

/// The quotient's figures besides the common ones.
pub(super) struct QuotientFigures {
    pub(super) timed: Timed,
    pub(super) first_ms: f64,
    /// The steady step's host half (µs; its own work, beside the batch's copy).
    pub(super) host_us: f64,
    /// The steady step's upload (µs; the copy and the host half beside it).
    pub(super) upload_us: f64,
    pub(super) rebuild_all_ms: f64,
    pub(super) rebuild_one_us: f64,
    pub(super) slots: usize,
    pub(super) counts: archipelago::gpu::quotient::StepCounts,
    pub(super) bytes: usize,
    /// Device µs per step with reuse on and every world unchanged (`None` if some world was
    /// not reused).
    pub(super) unchanged_us: Option<f64>,
    /// Device µs per step (reuse off) with the node-level maps off, where some world took them.
    pub(super) tree_maps_us: Option<f64>,
    /// Whether the timed steps (reuse off) took one warp per replayed world.
    pub(super) warp_worlds: bool,
    /// And a second warp a world for its guard.
    pub(super) guard_warps: bool,
    /// Bytes a step must move at least: every support and offset read once, every output
    /// written once (`Workspace::floor_bytes`).
    pub(super) floor_bytes: usize,
}

pub(super) fn quotient(
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
    let d = DeviceFigures::of(g, &mut run.q, reps, timers)?;
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
            read_us: d.read_us,
            read_bytes: d.read_bytes,
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
