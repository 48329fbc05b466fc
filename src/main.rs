//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. This file only parses arguments, runs the subcommand and
//! maps errors to `seen: error: …` and exit status 2.

use clap::Parser;
use seen::{cli, cmd, output, signals};
use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args_os().len() == 1 {
        eprint!("{}", cli::short_usage());
        return ExitCode::from(2);
    }
    let cli = cli::Cli::parse();
    signals::explain_sigbus();
    if matches!(cli.command, cli::Command::Build(_) | cli::Command::Dedup(_)) {
        // Runs that write a filter stop at a safe point on SIGINT/SIGTERM.
        signals::catch();
    }
    let result = match cli.command {
        cli::Command::Build(a) => cmd::build::run(a),
        cli::Command::Query(a) => cmd::query::run(a),
        cli::Command::Dedup(a) => cmd::dedup::run(a),
        cli::Command::Stats(a) => cmd::stats::run(a),
        cli::Command::Plan(a) => cmd::plan::run(a),
        cli::Command::Verify(a) => cmd::verify::run(a),
        cli::Command::Completions(a) => cmd::completions::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        // Interrupted before anything needed saving (e.g. waiting for a lock).
        Err(_) if signals::received() != 0 => ExitCode::from(128 + signals::received() as u8),
        Err(e) => {
            eprintln!("seen: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
