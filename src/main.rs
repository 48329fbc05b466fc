//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. This file only parses arguments, runs the subcommand and
//! maps errors to `seen: error: …` and exit status 2.

use clap::Parser;
use seen::{cli, cmd, output};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Build(a) => cmd::build::run(a),
        cli::Command::Query(a) => cmd::query::run(a),
        cli::Command::Dedup(a) => cmd::dedup::run(a),
        cli::Command::Stats(a) => cmd::stats::run(a),
        cli::Command::Plan(a) => cmd::plan::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seen: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
