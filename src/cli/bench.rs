//! `archipelago bench`: every mode over a matrix of shapes, on the GPU when there is one
//! (median device time per step from CUDA events around graph replays), otherwise on the CPU
//! (median wall time per step). Every result is checked against the CPU oracle before it is
//! reported.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use archipelago::cpu::dense::Dense;
use archipelago::cpu::quotient::QuotientMode;
use archipelago::cpu::{self, CpuMode};
use archipelago::gpu::graph::median_us;
use archipelago::gpu::order::Sort;
use archipelago::gpu::solver::{Options, Overlap, Part};
use archipelago::gpu::{Gpu, Mode, Solver};
use archipelago::order::{Canonicalizer, KeyLayout, RowKeys};
use archipelago::quotient::Policy;
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Error, Input, Islands, Model, RowType};

use super::memory;

/// Arguments of `archipelago bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Shapes to run (comma-separated names; `list` prints them, and with `--quotient` the
    /// quotient's, which are others; an unknown name is an error).
    /// Default: all. Besides the listed ones, `trace:NAMExN` is the busiest step of any trace
    /// `traces/NAME.npz` (under `$ARCHIPELAGO_ROOT` when set) with its worlds repeated to N.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,
    /// GPU modes to run (comma-separated names; every GPU table honours it, an unknown name is
    /// an error; the CPU table runs every CPU mode). Default: all; `vs dense` needs `dense`.
    #[arg(long, value_delimiter = ',')]
    modes: Vec<Mode>,
    /// Timed replays (or CPU steps) per mode and shape.
    #[arg(long, default_value_t = 30)]
    reps: usize,
    /// Most GiB the `dense` baseline may take for its matrix and stack: 64 on a GPU by default;
    /// on the CPU the CPU `dense`'s own cap (1 GiB) unless given.
    #[arg(long)]
    dense_limit_gib: Option<f64>,
    /// Run the CPU modes even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Also write the table (Markdown) to this file.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Compare deterministic mode on versus off for every GPU mode (the canonical order step
    /// inside the captured graph) instead of the plain table (GPU only: refused on the CPU).
    #[arg(long, conflicts_with = "quotient")]
    deterministic: bool,
    /// The static quotient against the best full-rebuild GPU mode on shapes of 0–99% static
    /// rows and the committed traces, with rebuild costs and a summary table (on the CPU:
    /// the plain CPU table over those shapes).
    #[arg(long)]
    quotient: bool,
    /// With `--quotient`: every shape at this many worlds instead of its own count (a
    /// synthetic shape generated so, a trace's recorded worlds repeated), to see how a shape
    /// scales past one wave of worlds per multiprocessor.
    #[arg(long, requires = "quotient", value_parser = clap::value_parser!(u32).range(1..))]
    worlds: Option<u32>,
    /// With `--quotient`: each shape's steady step only, without its step sequences (an A/B of
    /// kernels in a fraction of the time).
    #[arg(long, requires = "quotient")]
    no_sequences: bool,
    /// With `--quotient`: the step sequences without their replays again after each step's
    /// check. Those replays leave the next step's L2 and the quotient's hints as a step of
    /// their own would, for the contenders that have them (every one but the quotient with
    /// reuse on); without them every contender's next step finds the device as its own step
    /// left it, so reuse off and on compare like for like.
    #[arg(long, requires = "quotient")]
    no_again: bool,
    /// With `--quotient` (on the GPU): these equality ids (comma-separated) are dynamic in the
    /// quotient and the `auto` Engine (`EqPolicy::DynamicIds`) instead of the default policy,
    /// which learns the equalities that toggle; a toggling sequence then leaves out its table
    /// of policies.
    #[arg(
        long,
        requires = "quotient",
        value_delimiter = ',',
        value_parser = super::equality_id,
        allow_hyphen_values = true
    )]
    eq_dynamic: Option<Vec<i32>>,
    /// With `--quotient`: the static component of tree 0 asleep in this share (0 to 1) of each
    /// shape's worlds, spread evenly: its rows gone, and in the quotient its node masked, told
    /// so by sleep events after a first step with every world awake. For the share of masked
    /// worlds past which the block kernels pay (`ARCHIPELAGO_Q_MASKED`). With the step
    /// sequences, a synthetic shape's sequence is one in which that component falls asleep,
    /// sleeps, wakes and stays awake in turn, timed by phase (`bench/sequence/`); a trace
    /// shape has none then.
    #[arg(long, requires = "quotient", value_parser = parse_share)]
    asleep: Option<f64>,
    /// Deterministic mode: the sort of worlds that fit one block (`auto`, `bitonic`, `block`).
    #[arg(long, default_value = "auto", value_parser = parse_sort)]
    sort: Sort,
    /// Deterministic mode: when the fused modes' kernel overlaps the sort (`auto`, `never`,
    /// `always`).
    #[arg(long, default_value = "auto", value_parser = parse_overlap)]
    overlap: Overlap,
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a share from 0 to 1")),
    }
}

fn parse_overlap(s: &str) -> Result<Overlap, String> {
    match s {
        "auto" => Ok(Overlap::Auto),
        "never" => Ok(Overlap::Never),
        "always" => Ok(Overlap::Always),
        _ => Err(format!("unknown overlap `{s}` (auto, never, always)")),
    }
}

fn parse_sort(s: &str) -> Result<Sort, String> {
    match s {
        "auto" => Ok(Sort::Auto),
        "bitonic" => Ok(Sort::Bitonic),
        "block" => Ok(Sort::Block),
        _ => Err(format!("unknown sort `{s}` (auto, bitonic, block)")),
    }
}

mod asleep;
mod quotient;
mod sequence;
mod stepped;

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            shapes: Vec::new(),
            modes: Vec::new(),
            reps: 30,
            dense_limit_gib: None,
            cpu: false,
            out: None,
            deterministic: false,
            quotient: false,
            worlds: None,
            no_sequences: false,
            no_again: false,
            eq_dynamic: None,
            asleep: None,
            sort: Sort::Auto,
            overlap: Overlap::Auto,
        }
    }
}

impl BenchArgs {
    /// Whether `--modes` names `mode` (every mode when it names none).
    fn wants(&self, mode: Mode) -> bool {
        self.modes.is_empty() || self.modes.contains(&mode)
    }

    /// `--worlds`, as a count.
    fn worlds(&self) -> Option<usize> {
        self.worlds.map(|n| n as usize)
    }

    /// The quotient's classification policy: `--eq-dynamic`'s, else the default.
    fn policy(&self) -> Policy {
        (self.eq_dynamic.clone()).map_or_else(Policy::default, Policy::dynamic_ids)
    }

    /// The GPU solver options these arguments ask for: the cap on `dense`'s scratch and the
    /// sort of deterministic mode.
    fn solver_options(&self) -> Options {
        Options {
            dense_limit: Some(gib_bytes(self.dense_limit_gib.unwrap_or(64.0))),
            sort: self.sort,
            overlap: self.overlap,
            ..Options::default()
        }
    }
}

/// Bytes of each of the two buffers of the device-to-device copy that measures the floor's
/// bandwidth ([`floor_bandwidth`]), at most: several times any L2 cache.
const FLOOR_COPY_BYTES: usize = 256 << 20;

/// The floor's bandwidth, this device's own, once per process: bytes read and written per second
/// by device-to-device copies (an H200 about 4.3e12, an H100 about 3e12), and the bytes each copy
/// took. Measured at the first call, which `run` makes before any shape's solver holds device
/// memory; where even then two buffers of [`FLOOR_COPY_BYTES`] do not fit, smaller ones, down to
/// four times the L2 cache (below that the copy would run from L2 and overstate the rate).
pub(super) fn floor_bandwidth(g: &Gpu) -> archipelago::Result<(f64, usize)> {
    static FLOOR: std::sync::OnceLock<(f64, usize)> = std::sync::OnceLock::new();
    if let Some(&floor) = FLOOR.get() {
        return Ok(floor);
    }
    let least = (4 * archipelago::gpu::graph::l2_bytes(g)?).max(32 << 20);
    let mut bytes = FLOOR_COPY_BYTES.max(least);
    let bandwidth = loop {
        match archipelago::gpu::graph::copy_bandwidth(g, bytes, 10) {
            Err(Error::OutOfMemory { .. }) if bytes / 2 >= least => bytes /= 2,
            r => break r?,
        }
    };
    Ok(*FLOOR.get_or_init(|| (bandwidth, bytes)))
}

/// One benchmark shape.
struct Shape {
    name: String,
    model: Model,
    batch: Batch,
    /// Canonical-order keys of the rows (deterministic mode).
    keys: RowKeys,
    /// The batch the quotient steps first, and the events that lead from it to `batch` (a
    /// shape put partly asleep: see `bench/asleep.rs`).
    waking: Option<(Batch, invalidation::Events)>,
}

/// Keys for synthetic contacts: tree `t` carries geoms `2t + 1` and `2t + 2`, geom 0 is the
/// floor; the collision id counts earlier rows of the same pair in the world.
fn synthetic_keys(batch: &Batch) -> RowKeys {
    let mut keys = RowKeys::with_capacity(batch.nrow());
    for w in 0..batch.nworld() {
        let mut seen: std::collections::HashMap<[i32; 2], i32> = Default::default();
        for r in batch.rows_of(w) {
            if !batch.row_type[r].is_contact() {
                keys.push_other();
                continue;
            }
            let s = batch.row_support_of(r);
            let a = 2 * s[0] + 1;
            let b = s.get(1).map_or(0, |t| 2 * t + 2);
            let pair = [a.min(b), a.max(b)];
            let n = seen.entry(pair).or_insert(0);
            keys.push_contact(pair, *n);
            *n += 1;
        }
    }
    keys
}

/// Trees with a free joint (6 dofs) every fourth tree, hinges otherwise.
fn robot_model(ntree: usize) -> Model {
    let dofnum: Vec<i32> = (0..ntree).map(|t| if t % 4 == 0 { 6 } else { 1 }).collect();
    Model::from_dofnum(&dofnum).expect("valid dof counts")
}

/// Contact-like rows: each contact couples a tree with a near neighbour (or the floor) and
/// emits `rows_per_contact` rows; a few equality and limit rows are mixed in.
fn contacts(
    rng: &mut Rng,
    b: &mut archipelago::BatchBuilder,
    ntree: usize,
    rows: usize,
    window: usize,
    rows_per_contact: usize,
) {
    let mut k = 0;
    while k < rows {
        let a = rng.below(ntree);
        let roll = rng.below(20);
        if roll == 0 {
            b.row(
                RowType::Equality,
                k as i32,
                &[a as i32, ((a + 1) % ntree) as i32],
            );
            k += 1;
        } else if roll == 1 {
            b.row(RowType::LimitJoint, k as i32, &[a as i32]);
            k += 1;
        } else {
            let support = if roll < 5 {
                vec![a as i32] // against the floor
            } else {
                let d = 1 + rng.below(window.max(1));
                vec![a as i32, ((a + d) % ntree) as i32]
            };
            for _ in 0..rows_per_contact.min(rows - k) {
                b.row(RowType::ContactPyramidal, k as i32, &support);
                k += 1;
            }
        }
    }
    b.end_world();
}

fn random_shape(name: &'static str, nworld: usize, ntree: usize, rows: usize, seed: u64) -> Shape {
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        contacts(&mut rng, &mut b, ntree, rows, 8, 4);
    }
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: robot_model(ntree),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// One world whose trees form a single path, in a random order (the worst case for
/// propagation: diameter ntree - 1).
fn chain_shape(name: &'static str, ntree: usize, seed: u64) -> Shape {
    let mut rng = Rng::new(seed);
    let mut perm: Vec<i32> = (0..ntree as i32).collect();
    rng.shuffle(&mut perm);
    let mut b = Batch::builder();
    for i in 0..ntree.saturating_sub(1) {
        b.row(RowType::Equality, i as i32, &[perm[i], perm[i + 1]]);
    }
    b.end_world();
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: Model::from_dofnum(&vec![1; ntree]).expect("valid"),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// Particle-like: `ntree` 3-dof particles in a cube, contacts between grid neighbours and with
/// the floor, 4 pyramidal rows each.
fn particle_shape(
    name: &'static str,
    nworld: usize,
    ntree: usize,
    rows: usize,
    seed: u64,
) -> Shape {
    let mut rng = Rng::new(seed);
    let side = (ntree as f64).cbrt().ceil() as usize;
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut k = 0;
        while k < rows {
            let a = rng.below(ntree);
            let step = [1, side, side * side][rng.below(3)];
            let support = if rng.below(10) == 0 || a + step >= ntree {
                vec![a as i32]
            } else {
                vec![a as i32, (a + step) as i32]
            };
            for _ in 0..4.min(rows - k) {
                b.row(RowType::ContactPyramidal, k as i32, &support);
                k += 1;
            }
        }
        b.end_world();
    }
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: Model::from_dofnum(&vec![3; ntree]).expect("valid"),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

type Make = Box<dyn Fn() -> super::Result<Option<Shape>>>;
type Synthetic = (&'static str, fn() -> Shape);

fn shapes() -> Vec<(String, Make)> {
    let synthetic: Vec<Synthetic> = vec![
        ("8192x64", || random_shape("8192x64", 8192, 64, 64, 1)),
        ("aloha-2048x22", || {
            random_shape("aloha-2048x22", 2048, 22, 100, 2)
        }),
        ("1024x256", || random_shape("1024x256", 1024, 256, 256, 3)),
        ("humanoid-256x200", || {
            random_shape("humanoid-256x200", 256, 200, 1090, 9)
        }),
        ("64x1024", || random_shape("64x1024", 64, 1024, 1024, 4)),
        ("1x4096", || random_shape("1x4096", 1, 4096, 4096, 5)),
        ("1x4096-chain", || chain_shape("1x4096-chain", 4096, 6)),
        ("particle-1024x1000", || {
            particle_shape("particle-1024x1000", 1024, 1000, 3960, 7)
        }),
        ("1024x4096", || {
            random_shape("1024x4096", 1024, 4096, 4096, 8)
        }),
        // Past the shared-memory sorts' 8192-row tile: deterministic mode's global radix sort.
        ("16x4096-16k", || {
            random_shape("16x4096-16k", 16, 4096, 16384, 10)
        }),
    ];
    let mut all: Vec<(String, Make)> = synthetic
        .into_iter()
        .map(|(n, f)| (n.to_string(), Box::new(move || Ok(Some(f()))) as Make))
        .collect();
    // Real MuJoCo 4.0.0 traces, their busiest step tiled to the world counts of issue 4's
    // MuJoCo Warp figures.
    for (scene, nworld) in [
        ("aloha_clutter", 2048),
        ("replicate_particle", 1024),
        ("replicate_particle", 256),
        ("benchmark_humanoid200", 256),
        ("humanoid_100_humanoids", 256),
        ("flex_trampoline", 64),
    ] {
        let name = format!("trace:{scene}x{nworld}");
        let label = name.clone();
        all.push((name, Box::new(move || trace_shape(&label, scene, nworld))));
    }
    all
}

/// The trace and world count a shape called `trace:NAMExN` names (N at least 1).
fn trace_shape_name(name: &str) -> Option<(&str, usize)> {
    let (scene, n) = name.strip_prefix("trace:")?.rsplit_once('x')?;
    let n = n.parse::<usize>().ok().filter(|&n| n > 0)?;
    (!scene.is_empty()).then_some((scene, n))
}

/// Where the committed traces are: `$ARCHIPELAGO_ROOT/traces`, else `./traces`.
fn trace_dir() -> std::path::PathBuf {
    std::env::var_os("ARCHIPELAGO_ROOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("."))
        .join("traces")
}

/// The busiest step of trace `scene` with its worlds repeated to `nworld` worlds (None when
/// the trace is not there).
fn trace_shape(name: &str, scene: &str, nworld: usize) -> super::Result<Option<Shape>> {
    let path = trace_dir().join(format!("{scene}.npz"));
    if !path.exists() {
        return Ok(None);
    }
    let tr = archipelago::trace::Trace::open(&path)?;
    let step = (0..tr.nstep()).max_by_key(|&s| tr.nrow(s)).unwrap_or(0);
    let mut src = Batch::default();
    tr.batch(step, &mut src);
    let rows = Capacity::fit(tr.model(), &src).njmax;
    memory::check("bench", name, nworld, tr.model().ntree(), rows)?;
    let mut src_keys = RowKeys::default();
    tr.row_keys(step, &mut src_keys);
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    for w in 0..nworld {
        if src.nworld() == 0 {
            b.end_world();
            continue;
        }
        let sw = w % src.nworld();
        b.world_from(&src, sw);
        for r in src.rows_of(sw) {
            keys.push_contact(src_keys.geom[r], src_keys.colid[r]);
        }
    }
    Ok(Some(Shape {
        name: format!("{name} (step {step} of {})", tr.nstep()),
        model: tr.model().clone(),
        batch: b.finish(),
        keys,
        waking: None,
    }))
}

/// Static facts of a shape: per-world rows and support entries, arity, index dtype.
fn describe(s: &Shape) -> String {
    let b = &s.batch;
    let nw = b.nworld().max(1);
    let entries = b.row_support.len() + b.edge_support.len();
    let hyper = b.nrow() + b.nedge();
    let max_arity = (0..b.nrow())
        .map(|r| b.row_support_of(r).len())
        .chain((0..b.nedge()).map(|e| b.edge_support_of(e).len()))
        .max()
        .unwrap_or(0);
    format!(
        "nworld {} · ntree {} · nv {} · rows/world {:.0} · entries/world {:.0} · arity mean {:.2} max {} · index i32",
        b.nworld(),
        s.model.ntree(),
        s.model.nv(),
        b.nrow() as f64 / nw as f64,
        entries as f64 / nw as f64,
        entries as f64 / hyper.max(1) as f64,
        max_arity
    )
}

/// The maps stage replayed alone, median µs: `dsu`'s maps are a launch of their own, so its
/// solver times them (every mode pays for the same outputs); `None` for other modes.
fn maps_alone(solver: &mut Solver, warmup: usize, reps: usize) -> archipelago::Result<Option<f64>> {
    Ok(match solver.mode() {
        Mode::Dsu => Some(median_us(solver.time_part(Part::Maps, warmup, reps)?)),
        _ => None,
    })
}

fn mib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

/// `gib` GiB in bytes (clamped to `0..=usize::MAX`).
fn gib_bytes(gib: f64) -> usize {
    (gib * (1u64 << 30) as f64) as usize
}

fn write_error(path: &std::path::Path, e: std::io::Error) -> super::Error {
    super::Error::Write {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

/// The shapes `args` asks for, in order (every built-in one without `--shapes`; a trace asked
/// for by name that is not built in, from traces/); `None` once `--shapes list` has printed them.
fn select_shapes(args: &BenchArgs) -> super::Result<Option<Vec<(String, Make)>>> {
    let mut all = if args.quotient {
        quotient::shapes(args.worlds())
    } else {
        shapes()
    };
    // Any other trace asked for by name (a scene of one's own, recorded into traces/).
    for name in &args.shapes {
        if all.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Some((scene, nworld)) = trace_shape_name(name) {
            let (label, scene) = (name.clone(), scene.to_string());
            let make = move || trace_shape(&label, &scene, nworld);
            all.push((name.clone(), Box::new(make) as Make));
        }
    }
    if args.shapes.iter().any(|s| s == "list") {
        for (name, _) in &all {
            outln!("{name}");
        }
        return Ok(None);
    }
    if let Some(name) = args
        .shapes
        .iter()
        .find(|s| !all.iter().any(|(n, _)| n == *s))
    {
        return Err(super::Error::Usage {
            command: "bench",
            reason: format!("unknown shape `{name}` (`--shapes list` prints them)"),
        });
    }
    Ok(Some(
        all.into_iter()
            .filter(|(n, _)| args.shapes.is_empty() || args.shapes.iter().any(|s| s == n))
            .collect(),
    ))
}

/// The device, or why there is none (`--cpu`, no CUDA): then the CPU table runs, unless `args`
/// asks for what only a device has, which is refused.
fn open_device(args: &BenchArgs) -> super::Result<archipelago::Result<Gpu>> {
    let gpu = if args.cpu {
        Err(Error::NoDevice("--cpu given".into()))
    } else {
        Gpu::open()
    };
    // The CPU table would stand in for them as if they had been honoured.
    if let (true, Err(e)) = (args.deterministic, &gpu) {
        return Err(super::Error::Usage {
            command: "bench",
            reason: format!("--deterministic compares GPU modes, and there is no GPU ({e})"),
        });
    }
    if let (false, Err(e)) = (args.modes.is_empty(), &gpu) {
        return Err(super::Error::Usage {
            command: "bench",
            reason: format!(
                "--modes picks GPU modes, and there is no GPU ({e}); the CPU table runs every \
                 CPU mode"
            ),
        });
    }
    Ok(gpu)
}

/// The report's first lines: the date and command, then the device and what every figure rests
/// on (the floor's bandwidth, the empty replay), or the CPU fallback and why.
fn header(gpu: &archipelago::Result<Gpu>, args: &BenchArgs) -> super::Result<String> {
    let mut report = format!(
        "Date: {} · command: `{}`\n\n",
        today(),
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    match gpu {
        Ok(g) => {
            let i = g.info();
            let empty = archipelago::gpu::graph::empty_graph_us(g, 50)?;
            let (bandwidth, copy_bytes) = floor_bandwidth(g)?;
            let _ = writeln!(
                report,
                "GPU: {} (sm_{}{}, {} SMs, {:.1} GiB, driver CUDA {}.{}); main module built by NVRTC in {:.2} s (0: taken from the kernel cache), loaded in {:.2} s; floor bandwidth {:.2} TB/s (bytes read and written by device-to-device copies of {} MiB, 10 back to back, the best of 3 runs; the memory's peak {}); empty one-kernel graph replay {:.1} µs; {} timed graph replays per cell, median\n",
                i.name,
                i.capability.0,
                i.capability.1,
                i.sm_count,
                i.total_mem as f64 / (1u64 << 30) as f64,
                i.driver_version / 1000,
                i.driver_version % 1000 / 10,
                i.compile_s,
                i.load_s,
                bandwidth / 1e12,
                copy_bytes >> 20,
                archipelago::gpu::graph::peak_bandwidth(g)
                    .map_or("not reported".into(), |p| format!("{:.2} TB/s", p / 1e12)),
                empty,
                args.reps.max(1)
            );
        }
        Err(e) => {
            let _ = writeln!(
                report,
                "CPU fallback ({e}); {} timed steps per cell (fewer where they pass {CPU_BUDGET_S} s), \
                 median wall time\n",
                args.reps.max(1)
            );
        }
    }
    Ok(report)
}

/// Runs the subcommand.
pub fn run(args: &BenchArgs) -> super::Result<ExitCode> {
    // A report that cannot be written is said before the bench, not after it.
    if let Some(path) = &args.out {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| write_error(path, e))?;
    }
    let Some(selected) = select_shapes(args)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let gpu = open_device(args)?;
    let mut report = header(&gpu, args)?;
    let mut failed = false;
    out!("{report}");
    let mut summaries = Vec::new();
    for (name, make) in selected {
        let Some(mut shape) = make()? else {
            let dir = trace_dir();
            let dir = std::path::absolute(&dir).unwrap_or(dir);
            let missing = format!(
                "its trace is not in {} (run from the repository's root, or set \
                 ARCHIPELAGO_ROOT to it)",
                dir.display()
            );
            // A shape asked for by name is not skipped in silence.
            if args.shapes.contains(&name) {
                return Err(super::Error::Usage {
                    command: "bench",
                    reason: format!("{name}: {missing}"),
                });
            }
            outln!("### {name}: {missing}; skipped\n");
            continue;
        };
        if let (true, Some(share)) = (args.quotient, args.asleep) {
            shape = shape.put_to_sleep(share, &args.policy());
        }
        let input = Input::new(&shape.model, &shape.batch)?;
        // The oracle, which shares no code with the modes: against the CPU `dsu`, the CPU
        // table's `dsu` row would be checked against itself.
        let reference = archipelago::oracle::solve(&input);
        let mut section = format!("### {}\n{}\n\n", shape.name, describe(&shape));
        let ok = match &gpu {
            Ok(g) if args.quotient => {
                // Each quotient solver prints its phase marks when dropped: name their shape.
                if archipelago::gpu::phase_trace::requested() {
                    eprintln!("QTRACE shape {name}");
                }
                let (ok, line) =
                    quotient::table(g, &name, &shape, &input, &reference, args, &mut section)?;
                summaries.push(line);
                ok
            }
            Ok(g) if args.deterministic => {
                deterministic_table(g, &shape, &input, &reference, args, &mut section)?
            }
            Ok(g) => gpu_table(g, &input, &reference, args, &mut section)?,
            Err(_) => cpu_table(&input, &reference, args, &mut section)?,
        };
        failed |= !ok;
        section.push('\n');
        out!("{section}");
        report.push_str(&section);
    }
    if !summaries.is_empty() {
        let table = quotient::summary(&summaries);
        out!("{table}");
        report.push_str(&table);
    }
    if let Some(path) = &args.out {
        std::fs::write(path, &report).map_err(|e| write_error(path, e))?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

struct Row {
    mode: Mode,
    result: archipelago::Result<Measured>,
}

struct Measured {
    construct_ms: f64,
    workspace: usize,
    peak: usize,
    median_us: f64,
    rounds: u32,
    floor_us: f64,
    /// The maps stage replayed alone (modes with a separate maps launch).
    maps_us: Option<f64>,
    ok: bool,
}

/// One GPU mode over `input`; `bandwidth` (bytes/s) puts its floor in µs.
fn measure(
    g: &Gpu,
    bandwidth: f64,
    mode: Mode,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
) -> archipelago::Result<Measured> {
    let cap = Capacity::fit(input.model(), input.batch());
    let (free_before, _) = g.mem_info()?;
    let opts = args.solver_options();
    let start = Instant::now();
    let mut solver = Solver::with_options(g, mode, cap, input.model(), opts)?;
    // The first step: launched directly, its graph captured at the download (in the figure).
    solver.upload(input)?;
    solver.replay()?;
    let mut out = Islands::default();
    let stats = solver.download(input, &mut out)?;
    let construct_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut ok = out.first_mismatch(reference).is_none();
    let (free_after, _) = g.mem_info()?;
    // One untimed replay tells how many timed ones fit in a few seconds.
    let probe = median_us(solver.time_replays(0, 1)?);
    let reps = if probe > 0.0 {
        args.reps.min((3e6 / probe).ceil() as usize).max(1)
    } else {
        args.reps
    };
    let times = solver.time_replays(2.min(reps), reps)?;
    // What the graph's timed replays wrote (the first step was launched directly).
    solver.download(input, &mut out)?;
    ok &= out.first_mismatch(reference).is_none();
    let maps_us = maps_alone(&mut solver, 2.min(reps), reps)?;
    Ok(Measured {
        construct_ms,
        workspace: solver.workspace().bytes(),
        peak: free_before.saturating_sub(free_after),
        median_us: median_us(times),
        rounds: stats.rounds,
        floor_us: solver.workspace().floor_bytes() as f64 / bandwidth * 1e6,
        maps_us,
        ok,
    })
}

fn gpu_table(
    g: &Gpu,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    let (bandwidth, _) = floor_bandwidth(g)?;
    let rows: Vec<Row> = Mode::ALL
        .into_iter()
        .filter(|&m| args.wants(m))
        .map(|mode| Row {
            mode,
            result: measure(g, bandwidth, mode, input, reference, args),
        })
        .collect();
    let dense = rows
        .iter()
        .find(|r| r.mode == Mode::Dense)
        .and_then(|r| r.result.as_ref().ok())
        .map(|m| m.median_us);
    out.push_str("| mode | construct ms | workspace MiB | peak MiB | median µs/step | rounds | vs dense | floor µs | equals CPU |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut all_ok = true;
    let mut best: Option<(f64, Mode)> = None;
    for r in &rows {
        match &r.result {
            Ok(m) => {
                all_ok &= m.ok;
                if m.ok && best.is_none_or(|(b, _)| m.median_us < b) {
                    best = Some((m.median_us, r.mode));
                }
                let ratio = match dense {
                    Some(d) => format!("{:.1}x", d / m.median_us),
                    None if rows.iter().any(|r| r.mode == Mode::Dense) => "does not fit".into(),
                    None => "not run".into(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {:.1} | {} | {} | {:.1} | {} | {} | {:.2} | {} |",
                    r.mode,
                    m.construct_ms,
                    mib(m.workspace),
                    mib(m.peak),
                    m.median_us,
                    m.rounds,
                    ratio,
                    m.floor_us,
                    if m.ok { "yes" } else { "NO" }
                );
            }
            Err(e) => {
                let refused = matches!(e, Error::Refused { .. });
                all_ok &= refused;
                let short = match refused {
                    true => "does not fit (refused)".into(),
                    false => e.to_string(),
                };
                let _ = writeln!(
                    out,
                    "| {} | — | — | — | {} | — | — | — | — |",
                    r.mode, short
                );
            }
        }
    }
    if let Some((us, mode)) = best {
        let _ = writeln!(
            out,
            "\nauto (fastest measured, exact): {mode} at {us:.1} µs/step"
        );
    }
    let maps = rows.iter().find_map(|r| r.result.as_ref().ok()?.maps_us);
    if let Some(maps) = maps {
        let _ = writeln!(
            out,
            "maps alone (dsu's maps launch over its labels, replayed by itself): {maps:.1} µs/step"
        );
    }
    Ok(all_ok)
}

/// Seconds of timed steps a CPU cell takes at most (past them it stops before `--reps`).
const CPU_BUDGET_S: f64 = 3.0;

fn cpu_table(
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    out.push_str("| mode | median µs/step | rounds | scratch MiB | equals CPU oracle |\n|---|---|---|---|---|\n");
    let mut all_ok = true;
    for name in cpu::NAMES {
        // `--eq-dynamic`'s policy for the quotient, `--dense-limit-gib` for `dense`.
        let mut mode: Box<dyn CpuMode> = match (name, args.dense_limit_gib) {
            ("quotient", _) => Box::new(QuotientMode::new(args.policy())),
            ("dense", Some(gib)) => Box::new(Dense::new(gib_bytes(gib))),
            _ => match cpu::by_name(name) {
                Some(mode) => mode,
                None => continue,
            },
        };
        // One batch solved again and again: with reuse the quotient would time its cache.
        mode.set_reuse(false);
        let mut islands = Islands::default();
        let mut stats = match mode.solve(input, &mut islands) {
            Ok(s) => s,
            Err(e) => {
                // As in the GPU tables: a mode that does not fit is not a failure, any other
                // error is.
                all_ok &= matches!(e, Error::Refused { .. });
                let _ = writeln!(out, "| {name} | {e} | — | — | — |");
                continue;
            }
        };
        let mut ok = islands.first_mismatch(reference).is_none();
        let mut times = Vec::new();
        let budget = Instant::now();
        // At least one, as on the GPU: no timed step would leave the median NaN.
        for _ in 0..args.reps.max(1) {
            let t = Instant::now();
            stats = mode.solve(input, &mut islands)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            if budget.elapsed().as_secs_f64() > CPU_BUDGET_S {
                break;
            }
        }
        // The timed steps' outputs too (the quotient's first step contracts; the timed ones
        // replay its quotients).
        ok &= islands.first_mismatch(reference).is_none();
        all_ok &= ok;
        let _ = writeln!(
            out,
            "| {name} | {:.1} | {} | {} | {} |",
            median_us(times),
            stats.rounds,
            mib(stats.scratch_bytes),
            if ok { "yes" } else { "NO" }
        );
    }
    Ok(all_ok)
}

/// Today's date (UTC) as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    // Civil date from days since 1970-01-01 (Gregorian, proleptic).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Median µs per step of `mode` with deterministic mode `on` or off, whether the outputs equal
/// `expected` (the CPU reference, canonical when on), the sort plan, and (when on) the median µs
/// of the order stage replayed alone.
fn measure_det(
    g: &Gpu,
    mode: Mode,
    shape: &Shape,
    input: &Input<'_>,
    expected: &Islands,
    on: bool,
    args: &BenchArgs,
) -> archipelago::Result<(f64, bool, String, Option<f64>)> {
    let cap = Capacity::fit(input.model(), input.batch());
    let opts = Options {
        deterministic: on,
        ..args.solver_options()
    };
    let mut solver = Solver::with_options(g, mode, cap, input.model(), opts)?;
    solver.upload_keyed(input, &shape.keys)?;
    solver.replay()?;
    let mut out = Islands::default();
    solver.download(input, &mut out)?;
    let mut ok = out.first_mismatch(expected).is_none();
    let plan = solver
        .order()
        .and_then(|o| o.plan())
        .map_or(String::new(), |p| format!("{p:?}"));
    let probe = median_us(solver.time_replays(0, 1)?);
    let reps = if probe > 0.0 {
        args.reps.min((2e6 / probe).ceil() as usize).max(1)
    } else {
        args.reps
    };
    let times = solver.time_replays(2.min(reps), reps)?;
    // What the graph's timed replays wrote (the first step was launched directly).
    solver.download(input, &mut out)?;
    ok &= out.first_mismatch(expected).is_none();
    let order = match on {
        true => Some(median_us(solver.time_part(
            Part::Order,
            2.min(reps),
            reps,
        )?)),
        false => None,
    };
    Ok((median_us(times), ok, plan, order))
}

/// Deterministic mode on versus off for every GPU mode on one shape.
fn deterministic_table(
    g: &Gpu,
    shape: &Shape,
    input: &Input<'_>,
    reference: &Islands,
    args: &BenchArgs,
    out: &mut String,
) -> archipelago::Result<bool> {
    let cap = Capacity::fit(input.model(), input.batch());
    let mut canon = Canonicalizer::new(&cap);
    let (sorted, _) = canon.canonicalize(input, &shape.keys)?;
    let sorted_input = Input::new(input.model(), sorted)?;
    let mut canonical = Islands::default();
    archipelago::cpu::dsu::Dsu::default().solve(&sorted_input, &mut canonical)?;
    let bits = KeyLayout::fit(input.batch(), &shape.keys).bits();
    let _ = writeln!(out, "canonical key: {bits} bits\n");
    out.push_str("| mode | off µs/step | on µs/step | on/off | on − off µs | order stage alone µs | sort | off equals CPU | on equals CPU canonical |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut all_ok = true;
    for mode in Mode::ALL.into_iter().filter(|&m| args.wants(m)) {
        let off = measure_det(g, mode, shape, input, reference, false, args);
        let on = measure_det(g, mode, shape, input, &canonical, true, args);
        match (off, on) {
            (Ok((off_us, off_ok, _, _)), Ok((on_us, on_ok, plan, order))) => {
                all_ok &= off_ok && on_ok;
                let _ = writeln!(
                    out,
                    "| {mode} | {off_us:.1} | {on_us:.1} | {:.2} | {:.1} | {} | {plan} | {} | {} |",
                    on_us / off_us,
                    on_us - off_us,
                    order.map_or("—".into(), |u| format!("{u:.1}")),
                    if off_ok { "yes" } else { "NO" },
                    if on_ok { "yes" } else { "NO" }
                );
            }
            (Err(e), _) | (_, Err(e)) => {
                let refused = matches!(e, Error::Refused { .. });
                all_ok &= refused;
                let short = match refused {
                    true => "does not fit (refused)".into(),
                    false => e.to_string(),
                };
                let _ = writeln!(out, "| {mode} | {short} | — | — | — | — | — | — | — |");
            }
        }
    }
    Ok(all_ok)
}

#[cfg(test)]
mod tests {
    use super::median_us;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_its_middle_two() {
        assert!(median_us(Vec::new()).is_nan());
        assert_eq!(median_us(vec![3.0, 1.0, 2.0]), 2.0);
        // 30 timed steps (the default --reps): not the 16th smallest.
        assert_eq!(median_us(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        let reps: Vec<f64> = (1..=30).map(f64::from).collect();
        assert_eq!(median_us(reps), 15.5);
    }
}
