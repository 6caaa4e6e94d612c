//! `archipelago bench`: every mode over a matrix of shapes, on the GPU when there is one
//! (median device time per step from CUDA events around graph replays), otherwise on the CPU
//! (median wall time per step). Every result is checked against the CPU oracle before it is
//! reported.

use std::fmt::Write as _;
use std::process::ExitCode;

use archipelago::gpu::graph::median_us;
use archipelago::gpu::order::Sort;
use archipelago::gpu::solver::{Options, Overlap, Part};
use archipelago::gpu::{Gpu, Mode, Solver};
use archipelago::quotient::Policy;
use archipelago::{Error, Input, Islands};

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
mod deterministic;
mod modes;
mod quotient;
mod sequence;
mod shapes;
mod stepped;

use deterministic::deterministic_table;
use modes::{CPU_BUDGET_S, cpu_table, gpu_table};
use shapes::{
    Make, Shape, describe, shapes, synthetic_keys, trace_dir, trace_shape, trace_shape_name,
};

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

/// The replays of `solver`'s uploaded step, timed: one untimed replay tells how many of `reps`
/// fit in about `budget_s` seconds; then up to two warm-ups and those, their µs each and their
/// count; and whether what the last one wrote equals `reference` (downloaded into `out`: the
/// graph's replays, where the first step was launched directly).
fn timed_replays(
    solver: &mut Solver,
    input: &Input<'_>,
    out: &mut Islands,
    reference: &Islands,
    reps: usize,
    budget_s: f64,
) -> archipelago::Result<(Vec<f64>, usize, bool)> {
    let probe = median_us(solver.time_replays(0, 1)?);
    let reps = if probe > 0.0 {
        reps.min((budget_s * 1e6 / probe).ceil() as usize).max(1)
    } else {
        reps
    };
    let times = solver.time_replays(2.min(reps), reps)?;
    solver.download(input, out)?;
    Ok((times, reps, out.first_mismatch(reference).is_none()))
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
