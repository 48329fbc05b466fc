//! `seen completions`: shell completion scripts generated from the clap definitions.

use crate::cli::{Cli, CompletionsArgs};
use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;
use std::process::ExitCode;

/// The completion script for `shell`, as committed under `completions/`.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "seen", &mut out);
    out
}

/// The file name under `completions/` of the script for `shell`.
pub fn file_name(shell: Shell) -> String {
    match shell {
        Shell::Bash => "seen.bash".into(),
        Shell::Zsh => "_seen".into(),
        Shell::Fish => "seen.fish".into(),
        Shell::Elvish => "seen.elv".into(),
        Shell::PowerShell => "_seen.ps1".into(),
        other => format!("seen.{other}"),
    }
}

/// Runs `seen completions`.
///
/// # Errors
/// A failed write to standard output.
pub fn run(a: CompletionsArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(&script(a.shell))
        .and_then(|()| out.flush())
        .context("cannot write output")?;
    Ok(ExitCode::SUCCESS)
}
