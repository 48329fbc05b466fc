//! `seen build`: make a filter file from lines, or add lines to one.

use super::options;
use crate::cli::BuildArgs;
use crate::filter::sizing::policy::Asked;
use crate::input::sources;
use crate::job::plan::{Sizing, Wants, resolve};
use crate::job::{Job, Nothing, execute};
use crate::pipeline::Mode;
use anyhow::Result;
use std::process::ExitCode;

/// Runs `seen build`.
///
/// # Errors
/// Bad arguments, unreadable inputs, or a filter that cannot be written.
pub fn run(a: BuildArgs) -> Result<ExitCode> {
    execute(plan(a)?, &mut Nothing)?;
    Ok(ExitCode::SUCCESS)
}

/// The run `a` asks for.
///
/// # Errors
/// A target that may not be written, or an input that cannot be counted to
/// size a `--fixed` filter.
fn plan(a: BuildArgs) -> Result<Job> {
    let mut opts = options(a.records);
    // Only hashes are needed: long lines are hashed as they stream by.
    opts.stream_long = true;
    let sources = sources(&a.files);
    let sizing = Sizing {
        given: a.size.any(),
        window_given: a.size.window.is_some(),
        asked: Asked::from(a.size),
        seed: a.seed,
        quiet: a.progress.quiet,
        link: a.lock.link(),
        layout: a.redis_layout.unwrap_or_default(),
    };
    let wants = if a.add {
        Wants::Add(a.output)
    } else {
        Wants::Make {
            at: a.output,
            replace: a.force,
        }
    };
    let store = resolve(wants, &sizing, &sources, &opts)?;
    Ok(Job {
        sources,
        opts,
        keys: a.keys.spec(),
        lines_are_keys: false,
        store,
        mode: Mode::Insert,
        progress: a.progress.into(),
        prints_lines: false,
        summary: a.summary.then_some(a.json),
    })
}
