//! `seen build`: make a filter file from lines, or add lines to one.

use super::{counted, options, redis_location};
use crate::cli::{BuildArgs, DEFAULT_CAPACITY};
use crate::file::{Target, check_target};
use crate::filter::sizing::policy::{Asked, expected_keys};
use crate::hash::DEFAULT_SEED;
use crate::input::{sources, total_bytes, uncountable};
use crate::job::{AtRedis, Job, Nothing, Where, execute};
use crate::pipeline::Mode;
use anyhow::{Result, bail};
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
    let redis = redis_location(&a.output)?;
    let store = if let Some(loc) = redis.clone().filter(|_| a.add) {
        if a.size.any() || a.seed.is_some() {
            eprintln!(
                "seen: warning: sizing flags and --seed are ignored with --add ({loc} keeps its own)"
            );
        }
        Where::Redis(AtRedis {
            loc,
            create: None,
            write: true,
            journal: None,
            link: a.lock.redis(),
        })
    } else if a.add {
        if a.size.any() || a.seed.is_some() {
            eprintln!(
                "seen: warning: sizing flags and --seed are ignored with --add ({} keeps its own)",
                a.output.display()
            );
        }
        Where::Update {
            path: a.output.clone(),
            create: None,
            expect_keys: expected_keys(None, total_bytes(&sources)),
        }
    } else {
        if redis.is_none() {
            check_output(&a)?;
        }
        let asked = Asked::from(a.size);
        let lines = match a.size.capacity {
            Some(_) => None,
            None => counted(&sources, &opts)?,
        };
        if a.size.capacity.is_none() && lines.is_none() && a.size.fixed {
            bail!(
                "{} cannot be counted in advance to size a --fixed filter (it can only be \
                 read once): pass -n/--capacity (e.g. -n 10M), or drop --fixed",
                uncountable(&sources).unwrap_or_else(|| "the input".into())
            );
        }
        match redis {
            Some(loc) => Where::RedisNew {
                loc,
                // A filter in Redis does not grow: one layer takes the target.
                spec: crate::filter::sizing::Spec {
                    growth: None,
                    ..asked.spec(lines.unwrap_or(DEFAULT_CAPACITY))
                },
                seed: a.seed.unwrap_or(DEFAULT_SEED),
                replace: a.force,
                link: a.lock.redis(),
            },
            None => Where::Create {
                path: a.output.clone(),
                spec: asked.spec(lines.unwrap_or(DEFAULT_CAPACITY)),
                seed: a.seed.unwrap_or(DEFAULT_SEED),
                replace: a.force,
                expect_keys: expected_keys(lines, total_bytes(&sources)),
            },
        }
    };
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

/// Refuses an `-o` that `build` may not write: a directory, an existing
/// filter without `--force`, or a file that is not a filter.
///
/// # Errors
/// Which of those it is, and what to do.
fn check_output(a: &BuildArgs) -> Result<()> {
    if a.output.is_dir() && !a.output.is_symlink() {
        bail!(
            "{} is a directory: -o takes the filter file to write",
            a.output.display()
        );
    }
    match check_target(&a.output, a.force)? {
        Target::Free => Ok(()),
        Target::Filter if a.force => Ok(()),
        Target::Filter => bail!(
            "{} already exists: pass --force to replace it or --add to insert into it",
            a.output.display()
        ),
        Target::OtherFile => bail!(
            "{} already exists and is not a seen filter: choose another path (--force \
             would refuse it too: it only replaces filter files)",
            a.output.display()
        ),
    }
}
