//! `archipelago bench`.

use std::process::ExitCode;

/// Arguments of `archipelago bench`.
#[derive(clap::Args, Debug, Default)]
pub struct BenchArgs {}

/// Runs the subcommand.
pub fn run(_args: &BenchArgs) -> archipelago::Result<ExitCode> {
    eprintln!("archipelago bench: not implemented yet");
    Ok(ExitCode::FAILURE)
}
