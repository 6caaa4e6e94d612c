//! `archipelago demo`.

use std::process::ExitCode;

/// Arguments of `archipelago demo`.
#[derive(clap::Args, Debug, Default)]
pub struct DemoArgs {}

/// Runs the subcommand.
pub fn run(_args: &DemoArgs) -> archipelago::Result<ExitCode> {
    eprintln!("archipelago demo: not implemented yet");
    Ok(ExitCode::FAILURE)
}
