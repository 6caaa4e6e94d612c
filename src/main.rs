//! The `archipelago` command-line tool: `demo` (the default), `replay`, `bench`, `kernels`.

mod cli;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "archipelago",
    version,
    about = "Exact constraint-island discovery for batched MuJoCo worlds",
    after_help = "Without a subcommand it runs `demo` with its defaults; `archipelago demo --help` lists its options."
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the built-in default batch through every mode and compare with the oracle.
    Demo(cli::demo::DemoArgs),
    /// Replay recorded MuJoCo traces and check every output against native MuJoCo.
    Replay(cli::replay::ReplayArgs),
    /// Time every mode over a matrix of shapes (GPU when present, otherwise CPU).
    Bench(cli::bench::BenchArgs),
    /// Build every kernel program into the kernel cache ahead of time (NVRTC only, no GPU).
    Kernels(cli::kernels::KernelsArgs),
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let result = match args.command {
        None => cli::demo::run(&cli::demo::DemoArgs::default()),
        Some(Command::Demo(a)) => cli::demo::run(&a),
        Some(Command::Replay(a)) => cli::replay::run(&a),
        Some(Command::Bench(a)) => cli::bench::run(&a),
        Some(Command::Kernels(a)) => cli::kernels::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
