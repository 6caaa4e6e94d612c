//! `archipelago demo` (also what the tool does with no arguments): a built-in realistic batch per
//! tree count, run through every mode, timed, and checked against the oracle.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use archipelago::cpu::{self, Stats};
use archipelago::synth::{self, Spec};
use archipelago::{Capacity, Input, Islands, Model, gpu, oracle};
use indicatif::{ProgressBar, ProgressStyle};

use super::{Error, Result, memory};

const WORLDS: usize = 4096;
const TREES: [usize; 3] = [22, 64, 256];
const ROWS: usize = 100;
const REPEATS: usize = 7;
const SEED: u64 = 1;

/// Arguments of `archipelago demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Worlds per batch.
    #[arg(long, default_value_t = WORLDS)]
    pub worlds: usize,
    /// Trees of the model; one batch per value (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = TREES)]
    pub trees: Vec<usize>,
    /// Mean rows per world.
    #[arg(long, default_value_t = ROWS)]
    pub rows: usize,
    /// Timed runs per mode and batch (the median is reported).
    #[arg(long, default_value_t = REPEATS)]
    pub repeats: usize,
    /// Seed of the generated batches.
    #[arg(long, default_value_t = SEED)]
    pub seed: u64,
    /// Modes to run, comma-separated (default: all): dense, dsu, labelprop, quotient,
    /// quotient-reuse, and with a device gpu-dense, gpu-dsu, gpu-labelprop, gpu-tiled,
    /// gpu-block, gpu-warp, gpu-quotient, gpu-quotient-reuse; or the groups cpu, gpu, all.
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
}

impl Default for DemoArgs {
    fn default() -> DemoArgs {
        DemoArgs {
            worlds: WORLDS,
            trees: TREES.to_vec(),
            rows: ROWS,
            repeats: REPEATS,
            seed: SEED,
            modes: Vec::new(),
        }
    }
}

/// Solves one batch step into the outputs.
pub type SolveFn = Box<dyn FnMut(&Input<'_>, &mut Islands) -> archipelago::Result<Stats>>;

/// Computes every output of a batch one way. Anything that can fill [`Islands`] from an
/// [`Input`] is a runner: the CPU modes now, device modes alongside them.
pub struct Runner {
    /// The name the table and `--modes` use.
    pub name: String,
    /// Solves one batch step.
    pub solve: SolveFn,
    /// The device a GPU runner copies its outputs from (they then go to page-locked buffers,
    /// as in a GPU `Engine`); `None` for the CPU.
    pub device: Option<std::rc::Rc<gpu::Gpu>>,
}

/// One mode of the demo, in table order ([`Kind::every`]): the CPU modes, then the device's.
/// The demo solves one batch again and again, so `quotient` runs with reuse off (every step
/// solves every world over its quotient) and `quotient-reuse` with it on: there every world
/// keeps its last outputs, so it times the reuse check and copy, the floor of a quotient step
/// (`bench --quotient` measures reuse on step sequences). The same two for the device quotient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A CPU mode by its name, with reuse on or off.
    Cpu { name: &'static str, reuse: bool },
    /// A full-rebuild GPU mode.
    Gpu(gpu::Mode),
    /// The device quotient, with reuse on or off.
    GpuQuotient { reuse: bool },
}

impl Kind {
    fn every() -> Vec<Kind> {
        let cpu = cpu::NAMES
            .into_iter()
            .map(|name| Kind::Cpu { name, reuse: false });
        let full = gpu::Mode::ALL.into_iter().map(Kind::Gpu);
        cpu.chain([Kind::Cpu {
            name: "quotient",
            reuse: true,
        }])
        .chain(full)
        .chain([false, true].map(|reuse| Kind::GpuQuotient { reuse }))
        .collect()
    }

    fn name(self) -> String {
        let reuse = |r: bool| if r { "-reuse" } else { "" };
        match self {
            Kind::Cpu { name, reuse: r } => format!("{name}{}", reuse(r)),
            Kind::Gpu(m) => format!("gpu-{}", m.name()),
            Kind::GpuQuotient { reuse: r } => format!("gpu-quotient{}", reuse(r)),
        }
    }

    fn on_gpu(self) -> bool {
        !matches!(self, Kind::Cpu { .. })
    }

    /// This mode as a runner (a device mode's on `device`).
    fn runner(self, device: Option<&std::rc::Rc<gpu::Gpu>>) -> Result<Runner> {
        let device =
            || device.ok_or_else(|| archipelago::Error::NoDevice("no device was opened".into()));
        Ok(match self {
            Kind::Cpu { name, reuse } => {
                let mut mode =
                    cpu::by_name(name).ok_or_else(|| archipelago::Error::UnknownMode {
                        name: name.into(),
                        known: cpu::NAMES.join(", "),
                    })?;
                mode.set_reuse(reuse);
                Runner {
                    name: self.name(),
                    solve: Box::new(move |input, out| mode.solve(input, out)),
                    device: None,
                }
            }
            Kind::Gpu(mode) => gpu_runner(self.name(), device()?, mode),
            Kind::GpuQuotient { reuse } => gpu_quotient_runner(self.name(), device()?, reuse),
        })
    }
}

/// The runners `--modes` picks ([`super::modes::pick`]; every mode when it is empty), in table
/// order. The device is opened only where a picked mode runs on it, so a process of CPU modes
/// does not wait for its kernels; where it does not open, its modes are left out if only `all`
/// (or nothing) asked for them, and otherwise its error ends the run. Also the runners asked
/// for by their own name.
fn runners(asked: &[String]) -> Result<(Vec<Runner>, Vec<String>)> {
    let every = Kind::every();
    let names: Vec<String> = every.iter().map(|k| k.name()).collect();
    let known: Vec<(&str, bool)> = (names.iter().map(String::as_str))
        .zip(every.iter().map(|k| k.on_gpu()))
        .collect();
    let all = ["all".to_string()];
    let picked = super::modes::pick(if asked.is_empty() { &all } else { asked }, &known)?;
    let mut order = picked.modes.clone();
    order.sort_unstable();
    let mut kinds: Vec<Kind> = order.into_iter().map(|i| every[i]).collect();
    let device = match kinds.iter().any(|k| k.on_gpu()).then(gpu::Gpu::open) {
        Some(Ok(g)) => Some(std::rc::Rc::new(g)),
        Some(Err(e)) if picked.gpu_optional => {
            eprintln!("GPU modes skipped: {e}");
            kinds.retain(|k| !k.on_gpu());
            None
        }
        Some(Err(e)) => return Err(e.into()),
        None => None,
    };
    let runners = kinds
        .into_iter()
        .map(|k| k.runner(device.as_ref()))
        .collect::<Result<_>>()?;
    Ok((
        runners,
        picked.named.into_iter().map(|i| names[i].clone()).collect(),
    ))
}

/// The solver in `built` when `input` is for its model and fits its capacity (sizes only: the
/// input is validated); otherwise the old one is freed first and `build` makes one for the
/// capacity that fits `input`.
fn reuse_or_build<'a, S>(
    built: &'a mut Option<(Model, Capacity, S)>,
    input: &Input<'_>,
    build: impl FnOnce(Capacity) -> archipelago::Result<S>,
) -> archipelago::Result<&'a mut S> {
    let model = input.model();
    let reusable = built
        .as_ref()
        .is_some_and(|(m, cap, _)| m == model && cap.fits(input).is_ok());
    if !reusable {
        *built = None; // free the old workspace before allocating the new one
        let cap = Capacity::fit(model, input.batch());
        *built = Some((model.clone(), cap, build(cap)?));
    }
    match built {
        Some((_, _, solver)) => Ok(solver),
        None => unreachable!("a solver was just built"),
    }
}

/// A GPU mode as a runner. Its solver (workspace, captured graph) is built for the first batch
/// and rebuilt only when a batch no longer fits; the time includes upload and download.
fn gpu_runner(name: String, device: &std::rc::Rc<gpu::Gpu>, mode: gpu::Mode) -> Runner {
    let (device, device2) = (device.clone(), device.clone());
    let mut built: Option<(Model, Capacity, gpu::Solver)> = None;
    Runner {
        name,
        solve: Box::new(move |input, out| {
            let solver = reuse_or_build(&mut built, input, |cap| {
                gpu::Solver::new(&device, mode, cap, input.model())
            })?;
            solver.solve(input, out)
        }),
        device: Some(device2),
    }
}

/// The device quotient as a runner, with or without reuse (no events reported: the device guard
/// keeps it exact), rebuilt like [`gpu_runner`]'s solver when a batch no longer fits.
fn gpu_quotient_runner(name: String, device: &std::rc::Rc<gpu::Gpu>, reuse: bool) -> Runner {
    use archipelago::gpu::quotient::QuotientSolver;
    let (device, device2) = (device.clone(), device.clone());
    let mut built: Option<(Model, Capacity, QuotientSolver)> = None;
    let events = invalidation::Events::new();
    Runner {
        name,
        solve: Box::new(move |input, out| {
            let solver = reuse_or_build(&mut built, input, |cap| {
                let policy = archipelago::quotient::Policy::default();
                let mut q = QuotientSolver::new(&device, cap, input.model(), policy)?;
                q.set_reuse(reuse)?;
                Ok(q)
            })?;
            solver.step(input, &events, out)
        }),
        device: Some(device2),
    }
}

/// One line of the table.
struct Line {
    mode: String,
    worlds: usize,
    trees: usize,
    rows: usize,
    outcome: Outcome,
}

enum Outcome {
    Ran {
        median: Duration,
        stats: Stats,
        equal: bool,
    },
    Refused(String),
}

/// Runs the subcommand.
pub fn run(args: &DemoArgs) -> Result<ExitCode> {
    // Sizes first: a refusal should not wait for the device's kernels.
    check_sizes(args)?;
    let (mut runners, named) = runners(&args.modes)?;
    let repeats = args.repeats.max(1);
    let steps = args.trees.len() * (2 + runners.len() * (repeats + 1));
    let bar = progress(steps as u64);
    let mut lines = Vec::new();
    outln!(
        "archipelago demo: {} worlds, ~{} rows/world, trees {:?}, seed {}, median of {} runs",
        args.worlds,
        args.rows,
        args.trees,
        args.seed,
        repeats
    );
    for &ntree in &args.trees {
        bar.set_message(format!("ntree {ntree}: generating"));
        let spec = Spec::realistic(args.worlds, ntree, args.rows);
        let (model, batch) = synth::batch(&spec, args.seed);
        // With a device, the rows in page-locked memory, as a user after the fastest steps has
        // them (`gpu::PinnedBatch`); every runner reads the same rows.
        let pinned = runners.iter().find_map(|r| r.device.clone()).map(|g| {
            let mut rows = gpu::PinnedBatch::new(&g, &Capacity::fit(&model, &batch));
            rows.build(|b| {
                b.worlds_from(&batch);
            });
            rows
        });
        let input = Input::new(&model, pinned.as_deref().unwrap_or(&batch))?;
        bar.inc(1);
        bar.set_message(format!("ntree {ntree}: oracle"));
        let want = oracle::solve(&input);
        bar.inc(1);
        for runner in &mut runners {
            bar.set_message(format!("ntree {ntree}: {}", runner.name));
            let outcome = measure(runner, &input, &want, repeats, &bar)?;
            lines.push(Line {
                mode: runner.name.clone(),
                worlds: batch.nworld(),
                trees: ntree,
                rows: batch.nrow(),
                outcome,
            });
        }
    }
    bar.finish_and_clear();
    print_table(&lines);
    let all_equal = lines
        .iter()
        .all(|l| !matches!(l.outcome, Outcome::Ran { equal: false, .. }));
    if !all_equal {
        eprintln!("some outputs differ from the oracle");
        return Ok(ExitCode::FAILURE);
    }
    // A mode asked for by name (not by a group) that refused every batch checked nothing.
    let idle: Vec<&String> = named
        .iter()
        .filter(|m| {
            lines
                .iter()
                .filter(|l| &l.mode == *m)
                .all(|l| matches!(l.outcome, Outcome::Refused(_)))
        })
        .collect();
    if !idle.is_empty() {
        for m in idle {
            eprintln!("{m} was asked for by name and refused every batch");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses sizes no batch can have (no world; tree ids past `i32`; rows past a batch's `u32`
/// offsets) or that cannot fit the memory at hand, before anything is generated.
fn check_sizes(args: &DemoArgs) -> Result<()> {
    let usage = |reason: String| Error::Usage {
        command: "demo",
        reason,
    };
    if args.worlds == 0 {
        return Err(usage("--worlds must be at least 1".into()));
    }
    for &ntree in &args.trees {
        if ntree > i32::MAX as usize {
            return Err(usage(format!(
                "--trees {ntree}: tree ids are 32-bit, at most {}",
                i32::MAX
            )));
        }
        // A world has up to twice the mean rows, each row of a few trees.
        let rows = args.rows.saturating_mul(2);
        let capacity = Capacity {
            nworld: args.worlds,
            ntree,
            nv: ntree.saturating_mul(6),
            njmax: rows,
            nsupport: rows,
            nedge: 1,
        };
        capacity
            .check_sizes()
            .map_err(|e| usage(format!("{e} (--worlds, --trees or --rows too large)")))?;
        memory::check("demo", "a batch", args.worlds, ntree, rows)?;
    }
    Ok(())
}

/// One untimed run, then `repeats` timed ones; every output is checked against `want`.
fn measure(
    runner: &mut Runner,
    input: &Input<'_>,
    want: &Islands,
    repeats: usize,
    bar: &ProgressBar,
) -> Result<Outcome> {
    // A device runner's outputs page-locked (its downloads then run at the link's speed, as
    // in a GPU `Engine`), plain ones for the CPU; `fill` runs the solve on either.
    let mut out = match &runner.device {
        Some(g) => gpu::PinnedIslands::new(g, &Capacity::fit(input.model(), input.batch())),
        None => gpu::PinnedIslands::default(),
    };
    let solve = &mut runner.solve;
    let mut stats = match out.fill(input, |o| solve(input, o)) {
        Ok(stats) => stats,
        Err(archipelago::Error::Refused { reason, .. }) => {
            bar.inc(repeats as u64 + 1);
            return Ok(Outcome::Refused(reason));
        }
        Err(e) => return Err(e.into()),
    };
    bar.inc(1);
    let mut equal = out.first_mismatch(want).is_none();
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        stats = out.fill(input, |o| solve(input, o))?;
        times.push(start.elapsed());
        equal &= out.first_mismatch(want).is_none();
        bar.inc(1);
    }
    times.sort();
    Ok(Outcome::Ran {
        median: times[times.len() / 2],
        stats,
        equal,
    })
}

fn progress(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
        bar.set_style(style);
    }
    bar
}

fn print_table(lines: &[Line]) {
    let w = lines
        .iter()
        .map(|l| l.mode.len())
        .max()
        .unwrap_or(0)
        .max(10);
    outln!(
        "{:<w$} {:>7} {:>6} {:>8} {:>12} {:>10} {:>10} {:>7}  oracle",
        "mode",
        "worlds",
        "trees",
        "rows",
        "median/step",
        "ns/world",
        "scratch",
        "rounds"
    );
    let mut refusals = Vec::new();
    for l in lines {
        let head = format!(
            "{:<w$} {:>7} {:>6} {:>8}",
            l.mode, l.worlds, l.trees, l.rows
        );
        match &l.outcome {
            Outcome::Ran {
                median,
                stats,
                equal,
            } => {
                let per_world = match l.worlds {
                    0 => "-".to_string(),
                    n => format!("{:.1}", median.as_nanos() as f64 / n as f64),
                };
                outln!(
                    "{head} {:>12} {:>10} {:>10} {:>7}  {}",
                    duration(*median),
                    per_world,
                    bytes(stats.scratch_bytes),
                    stats.rounds,
                    if *equal { "equal" } else { "DIFFERS" }
                );
            }
            Outcome::Refused(reason) => {
                outln!(
                    "{head} {:>12} {:>10} {:>10} {:>7}  refused [{}]",
                    "-",
                    "-",
                    "-",
                    "-",
                    refusals.len() + 1
                );
                refusals.push(reason.clone());
            }
        }
    }
    for (k, reason) in refusals.iter().enumerate() {
        outln!("[{}] {reason}", k + 1);
    }
    if lines.iter().any(|l| l.mode.ends_with("quotient-reuse")) {
        outln!(
            "quotient-reuse, gpu-quotient-reuse: the same batch again with reuse on, so every world keeps its last outputs: the floor of a quotient step (the check that nothing changed, and the copy)"
        );
    }
}

fn duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1e3 {
        format!("{us:.1} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
