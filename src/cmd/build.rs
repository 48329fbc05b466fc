//! `seen build`: make a filter file from lines, or add lines to one.

use super::{Summary, counted, expected_keys, keys, layer_counts, options, spec};
use crate::cli::{BuildArgs, DEFAULT_CAPACITY};
use crate::file::{NewFilter, Target, WriteFilter, check_target};
use crate::hash::DEFAULT_SEED;
use crate::input::{sources, total_bytes, uncountable};
use crate::pipeline::{Mode, run as pipeline};
use crate::progress::Progress;
use anyhow::{Result, bail};
use std::process::ExitCode;

/// Runs `seen build`.
///
/// # Errors
/// Bad arguments, unreadable inputs, or a filter that cannot be written.
pub fn run(a: BuildArgs) -> Result<ExitCode> {
    let mut opts = options(a.records);
    // Only hashes are needed: long lines are hashed as they stream by.
    opts.stream_long = true;
    let sources = sources(&a.files);
    if a.add {
        if a.size.any() || a.seed.is_some() {
            eprintln!(
                "seen: warning: sizing flags and --seed are ignored with --add ({} keeps its own)",
                a.output.display()
            );
        }
        let mut f = WriteFilter::open(&a.output, expected_keys(None, &sources))?;
        opts.keys = keys(&a.keys, Some((f.header().keys, &a.output)));
        let before = layer_counts(f.header());
        let progress = Progress::start(a.progress.into(), total_bytes(&sources), "lines", false);
        let result = pipeline(&sources, opts, &mut f, Mode::Insert, |_| Ok(true));
        drop(progress);
        f.commit()?;
        let c = result?;
        if a.summary {
            Summary::new(&c, None, opts.keys, &before, f.header()).print(a.json);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if a.output.is_dir() && !a.output.is_symlink() {
        bail!(
            "{} is a directory: -o takes the filter file to write",
            a.output.display()
        );
    }
    match check_target(&a.output, a.force)? {
        Target::Free => {}
        Target::Filter if a.force => {}
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
    let mut lines = None;
    let spec = spec(&a.size, || match counted(&sources, &opts)? {
        Some(n) => {
            lines = Some(n);
            Ok(n)
        }
        None if a.size.fixed => bail!(
            "{} cannot be counted in advance to size a --fixed filter (it can only be \
             read once): pass -n/--capacity (e.g. -n 10M), or drop --fixed",
            uncountable(&sources).unwrap_or_else(|| "the input".into())
        ),
        None => Ok(DEFAULT_CAPACITY),
    })?;
    opts.keys = keys(&a.keys, None);
    let seed = a.seed.unwrap_or(DEFAULT_SEED);
    let mut f = NewFilter::create(&a.output, &spec, seed, opts.keys)?;
    f.expect_keys(expected_keys(lines, &sources));
    let progress = Progress::start(a.progress.into(), total_bytes(&sources), "lines", false);
    let c = pipeline(&sources, opts, &mut f, Mode::Insert, |_| Ok(true));
    drop(progress);
    let c = c?;
    if a.summary {
        Summary::new(&c, None, opts.keys, &[], f.header()).print(a.json);
    }
    f.finish(a.force)?;
    Ok(ExitCode::SUCCESS)
}
