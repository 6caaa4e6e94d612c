//! `archipelago replay`: runs recorded MuJoCo traces through CPU modes and checks every output
//! field at every step and world against native MuJoCo.

use std::path::PathBuf;
use std::process::ExitCode;

use archipelago::cpu::{self, CpuMode};
use archipelago::trace::{self, Oracle, Report, Trace};

/// Arguments of `archipelago replay`.
#[derive(clap::Args, Debug, Default)]
pub struct ReplayArgs {
    /// Trace files (.npz) to replay.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// A CPU mode (or `oracle`), or `all` for every CPU mode and the oracle.
    #[arg(long, default_value = "all")]
    pub mode: String,
}

fn modes(name: &str) -> archipelago::Result<Vec<Box<dyn CpuMode>>> {
    if name == "all" {
        let mut all: Vec<Box<dyn CpuMode>> =
            cpu::NAMES.iter().filter_map(|n| cpu::by_name(n)).collect();
        all.push(Box::new(Oracle));
        return Ok(all);
    }
    if name == "oracle" {
        return Ok(vec![Box::new(Oracle)]);
    }
    cpu::by_name(name)
        .map(|m| vec![m])
        .ok_or_else(|| archipelago::Error::Refused {
            mode: "replay",
            reason: format!(
                "unknown mode `{name}` (known: {}, oracle, all)",
                cpu::NAMES.join(", ")
            ),
        })
}

/// Runs the subcommand: exit status 1 on any mismatch.
pub fn run(args: &ReplayArgs) -> archipelago::Result<ExitCode> {
    let mut rows: Vec<(String, Report)> = Vec::new();
    for path in &args.traces {
        let trace = Trace::open(path)?;
        for mut mode in modes(&args.mode)? {
            let report = trace::replay(&trace, mode.as_mut())?;
            if let Some(first) = &report.first {
                let m = &first.mismatch;
                eprintln!(
                    "MISMATCH {} mode {}: step {} (sim step {}), world {}, {}[{}]: expected {}, got {}",
                    path.display(),
                    report.mode,
                    first.step,
                    first.sim_step,
                    m.world,
                    m.field,
                    m.index,
                    m.expected,
                    m.got
                );
            }
            let name = path.file_stem().map_or_else(
                || trace.scene().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            rows.push((name, report));
        }
    }
    println!(
        "{:<34} {:<10} {:>6} {:>6} {:>10} {:>10} {:>12}",
        "trace", "mode", "steps", "worlds", "rows/step", "mismatch", "µs/step"
    );
    for (name, r) in &rows {
        println!(
            "{:<34} {:<10} {:>6} {:>6} {:>10.1} {:>10} {:>12.3}",
            name,
            r.mode,
            r.steps,
            r.worlds,
            r.rows_per_step(),
            r.mismatches,
            r.time_per_step().as_secs_f64() * 1e6
        );
    }
    let bad = rows.iter().any(|(_, r)| r.mismatches > 0);
    Ok(if bad {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
