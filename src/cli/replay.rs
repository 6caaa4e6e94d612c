//! `archipelago replay`.

use std::process::ExitCode;

/// Arguments of `archipelago replay`.
#[derive(clap::Args, Debug, Default)]
pub struct ReplayArgs {}

/// Runs the subcommand.
pub fn run(_args: &ReplayArgs) -> archipelago::Result<ExitCode> {
    eprintln!("archipelago replay: not implemented yet");
    Ok(ExitCode::FAILURE)
}
