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
    let mut keys = a.keys.spec();
    if a.force && !a.add && keys.is_none() {
        keys = kept_keys(&a.output, a.lock.link());
    }
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
        keys,
        lines_are_keys: false,
        store,
        mode: Mode::Insert,
        progress: a.progress.into(),
        prints_lines: false,
        summary: a.summary.then_some(a.json),
    })
}

/// The key options of the filter a `build --force` replaces, when it
/// records some and no key flag was given: a replaced `--url` filter stays a
/// `--url` filter (issue 43: it silently became a whole-record one, and its
/// URLs in another spelling went from present to absent). Said on stderr.
fn kept_keys(
    at: &crate::store::FilterAt,
    link: crate::store::Link,
) -> Option<crate::keys::KeySpec> {
    let old = at.open_read(link).ok()?;
    let keys = old.header().keys;
    if keys.is_raw() {
        return None;
    }
    eprintln!(
        "seen: {at} is replaced by a filter with the key options it records ({}); pass \
         --raw-keys, or other key flags, to change them",
        keys.flags()
    );
    Some(keys)
}
