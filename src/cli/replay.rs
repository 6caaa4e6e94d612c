//! `archipelago replay`: runs recorded MuJoCo traces through the CPU modes, the oracle, the CPU
//! engines told of the traces' events and, on a CUDA device, the GPU modes, and checks every
//! output field at every step and world against native MuJoCo. This is how a trace recorded
//! from a scene of one's own (tools/record_trace.py) is checked in every mode.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use archipelago::cpu::quotient::QuotientMode;
use archipelago::cpu::{self, CpuMode};
use archipelago::quotient::Policy;
use archipelago::trace::{self, Oracle, Report, Trace};
use archipelago::{Engine, Error, Mode, Options, Result, gpu};

/// Arguments of `archipelago replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Trace files (.npz) to replay.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Modes (comma-separated): a CPU mode (dense, dsu, labelprop, quotient), `oracle`, a CPU
    /// engine told of the trace's events (engine-quotient, engine-auto), a GPU mode (gpu-dense,
    /// gpu-dsu, gpu-labelprop, gpu-tiled, gpu-block, gpu-warp, gpu-quotient, gpu-auto), or a
    /// group: `cpu` (every CPU mode, the oracle and the CPU engines), `gpu` (every GPU mode) or
    /// `all` (both; the GPU modes only where a CUDA device opens).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub mode: Vec<String>,
    /// These equality ids (comma-separated) are dynamic in the quotient modes
    /// (`EqPolicy::DynamicIds`) instead of the default policy, which learns the equalities that
    /// toggle: a policy of one's own checked against native MuJoCo.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::equality_id,
        allow_hyphen_values = true
    )]
    pub eq_dynamic: Option<Vec<i32>>,
}

impl ReplayArgs {
    /// The quotient modes' classification policy.
    fn policy(&self) -> Policy {
        (self.eq_dynamic.clone()).map_or_else(Policy::default, Policy::dynamic_ids)
    }
}

/// One mode of the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    /// A CPU mode or the oracle, solving each step alone (the CPU quotient then hears of no
    /// event: its guard finds every change).
    Cpu(&'static str),
    /// A full-rebuild GPU mode.
    Gpu(gpu::Mode),
    /// The quotient or `auto` as an [`Engine`] runs them (reuse on), told of the trace's events
    /// (equalities switched, trees put to sleep or woken) as a simulation would tell it: on the
    /// CPU, or on the device.
    Engine { mode: Mode, on_gpu: bool },
}

impl Which {
    /// Whether the mode runs the quotient under `--eq-dynamic`'s policy.
    fn takes_policy(self) -> bool {
        matches!(self, Which::Cpu("quotient") | Which::Engine { .. })
    }

    fn name(self) -> String {
        match self {
            Which::Cpu(name) => name.into(),
            Which::Gpu(m) => format!("gpu-{}", m.name()),
            Which::Engine { mode, on_gpu } => {
                format!("{}-{}", if on_gpu { "gpu" } else { "engine" }, mode.name())
            }
        }
    }

    fn on_gpu(self) -> bool {
        match self {
            Which::Cpu(_) => false,
            Which::Gpu(_) => true,
            Which::Engine { on_gpu, .. } => on_gpu,
        }
    }

    /// The engines of either side.
    fn engines(on_gpu: bool) -> [Which; 2] {
        [Mode::Quotient, Mode::Auto].map(|mode| Which::Engine { mode, on_gpu })
    }

    fn every_cpu() -> impl Iterator<Item = Which> {
        let modes = cpu::NAMES.into_iter().chain(["oracle"]).map(Which::Cpu);
        modes.chain(Which::engines(false))
    }

    fn every_gpu() -> impl Iterator<Item = Which> {
        let full = gpu::Mode::ALL.into_iter().map(Which::Gpu);
        full.chain(Which::engines(true))
    }
}

/// Every mode `replay` knows, in its order: the CPU side's, then the device's.
fn every() -> Vec<Which> {
    Which::every_cpu().chain(Which::every_gpu()).collect()
}

/// The modes a `--mode` list selects ([`super::modes::pick`]): every mode picked, those asked
/// for by their own name, and whether the device modes may be left out where none opens.
fn select(asked: &[String]) -> Result<(Vec<Which>, Vec<Which>, bool)> {
    let every = every();
    let names: Vec<String> = every.iter().map(|w| w.name()).collect();
    let known: Vec<(&str, bool)> = (names.iter().map(String::as_str))
        .zip(every.iter().map(|w| w.on_gpu()))
        .collect();
    let p = super::modes::pick(asked, &known)?;
    let at = |list: Vec<usize>| list.into_iter().map(|i| every[i]).collect();
    Ok((at(p.modes), at(p.named), p.gpu_optional))
}

/// Replays `t` through `which` (on `device` for a GPU mode), the quotient modes under `policy`.
fn replay(t: &Trace, which: Which, device: Option<&gpu::Gpu>, policy: &Policy) -> Result<Report> {
    let name = which.name();
    let (model, cap) = (t.model(), t.capacity());
    let device = || device.ok_or_else(|| Error::NoDevice("no device was opened".into()));
    match which {
        Which::Cpu("oracle") => trace::replay(t, &mut Oracle),
        Which::Cpu("quotient") => trace::replay(t, &mut QuotientMode::new(policy.clone())),
        Which::Cpu(mode) => {
            let mut m: Box<dyn CpuMode> = cpu::by_name(mode).ok_or_else(|| Error::UnknownMode {
                name: mode.into(),
                known: cpu::NAMES.join(", "),
            })?;
            trace::replay(t, m.as_mut())
        }
        Which::Gpu(mode) => {
            let g = device()?;
            let mut s = gpu::Solver::new(g, mode, cap, model)?;
            // Page-locked outputs, as a GPU Engine keeps them, so that every GPU mode's time is
            // the same whole step (into pageable ones each of 19 outputs is a copy of its own).
            let mut pinned = gpu::PinnedIslands::new(g, &cap);
            trace::replay_with(t, &name, |input, _, out| {
                pinned.fill(input, |o| s.solve(input, o))?;
                out.clone_from(&pinned);
                Ok(())
            })
        }
        Which::Engine { mode, on_gpu } => {
            let options = Options {
                mode,
                policy: policy.clone(),
                ..Options::default()
            };
            let mut engine = match on_gpu {
                true => Engine::with_gpu(device()?, model, cap, options)?,
                false => Engine::new(model, cap, options)?,
            };
            trace::replay_with(t, &name, |input, events, out| {
                out.clone_from(engine.step_input(input, events)?);
                Ok(())
            })
        }
    }
}

/// Runs the subcommand: exit status 1 on any mismatch, where a mode asked for by name refused
/// a trace (a group's modes may refuse one they cannot take, saying why), or where a file did
/// not read as a trace (the others still run); 2, before anything runs, where a file is missing.
pub fn run(args: &ReplayArgs) -> super::Result<ExitCode> {
    // A path that is not there is said before anything runs; a file that does not read as a
    // trace is said in its turn, and the others still run.
    if let Some(missing) = args.traces.iter().find(|p| !p.is_file()) {
        return Err(Error::Trace {
            path: missing.display().to_string(),
            detail: "no such file".into(),
        }
        .into());
    }
    let (mut modes, named, gpu_optional) = select(&args.mode)?;
    let device = open_device(&mut modes, gpu_optional)?;
    outln!(
        "{:<34} {:<16} {:>6} {:>6} {:>10} {:>10} {:>12}",
        "trace",
        "mode",
        "steps",
        "worlds",
        "rows/step",
        "mismatch",
        "µs/step"
    );
    let (mut bad, policy) = (false, args.policy());
    for path in &args.traces {
        let t = &match Trace::open(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {e}");
                bad = true;
                continue;
            }
        };
        let name = path.file_stem().map_or_else(
            || t.scene().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        if modes.iter().any(|w| w.takes_policy()) {
            say_policy(args, t, &name, &policy);
        }
        for &which in &modes {
            let r = match replay(t, which, device.as_ref(), &policy) {
                Ok(r) => r,
                // A mode that cannot take this trace (dense past its scratch cap) says why.
                Err(Error::Refused { reason, .. }) => {
                    outln!("{name:<34} {:<16} refused: {reason}", which.name());
                    if named.contains(&which) {
                        eprintln!(
                            "{} was asked for by name and checked nothing on {}",
                            which.name(),
                            path.display()
                        );
                        bad = true;
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            say_report(path, &name, &r);
            bad |= r.mismatches > 0;
        }
    }
    Ok(if bad {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The device of the GPU modes among `modes`, if any: where none opens, an error, or with
/// `gpu_optional` (a group asked for them) a line that says so and `modes` without them.
fn open_device(modes: &mut Vec<Which>, gpu_optional: bool) -> Result<Option<gpu::Gpu>> {
    if !modes.iter().any(|w| w.on_gpu()) {
        return Ok(None);
    }
    match gpu::Gpu::open() {
        Ok(g) => Ok(Some(g)),
        Err(e) if gpu_optional => {
            eprintln!("GPU modes skipped: {e}");
            modes.retain(|w| !w.on_gpu());
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Says, before a trace's quotient modes run, the policy they take on it, and which of
/// `--eq-dynamic`'s ids name none of its equalities.
fn say_policy(args: &ReplayArgs, t: &Trace, name: &str, policy: &Policy) {
    let Some(ids) = args.eq_dynamic.as_ref() else {
        return;
    };
    let neq = t.counts().neq;
    let past: Vec<_> = ids
        .iter()
        // (Below 0 only where the arguments were not parsed from a command line.)
        .filter(|&&id| id < 0 || id as usize >= neq)
        .collect();
    if !past.is_empty() {
        let has = match neq {
            0 => "no equalities".to_string(),
            1 => "one equality, 0".to_string(),
            n => format!("equalities {}", super::say_run(0..n as i32)),
        };
        let none = if past.len() == 1 {
            "it matches"
        } else {
            "they match"
        };
        eprintln!("--eq-dynamic {past:?}: {name} has {has}; {none} none");
    }
    let first = t.step(0).0;
    eprintln!(
        "quotient modes on {name}: {}",
        super::describe_policy(policy, &first)
    );
}

/// A mode's line for one trace, after its first mismatch (if any) on stderr.
fn say_report(path: &Path, name: &str, r: &Report) {
    if let Some(first) = &r.first {
        let m = &first.mismatch;
        eprintln!(
            "MISMATCH {} mode {}: step {} (sim step {}), world {}, {}[{}]: expected {}, got {}",
            path.display(),
            r.mode,
            first.step,
            first.sim_step,
            m.world,
            m.field,
            m.index,
            m.expected,
            m.got
        );
    }
    outln!(
        "{:<34} {:<16} {:>6} {:>6} {:>10.1} {:>10} {:>12.3}",
        name,
        r.mode,
        r.steps,
        r.worlds,
        r.rows_per_step(),
        r.mismatches,
        r.time_per_step().as_secs_f64() * 1e6
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_its_own_name_and_side() {
        let every = every();
        assert_eq!(every.len(), cpu::NAMES.len() + 3 + gpu::Mode::ALL.len() + 2);
        for (i, w) in every.iter().enumerate() {
            assert!(
                every[..i].iter().all(|v| v.name() != w.name()),
                "{}",
                w.name()
            );
            assert_eq!(w.on_gpu(), w.name().starts_with("gpu-"), "{}", w.name());
        }
        let (all, named, optional) = select(&["all".into()]).unwrap();
        assert_eq!((all, named.len(), optional), (every, 0, true));
        let names: Vec<String> = select(&["cpu".into()])
            .unwrap()
            .0
            .iter()
            .map(|w| w.name())
            .collect();
        for name in ["oracle", "engine-quotient", "engine-auto", "quotient"] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
    }
}
