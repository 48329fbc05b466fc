//! `seen build`: make a filter file from lines, or add lines to one.

use super::{counted, options, plan, warn_over_capacity};
use crate::cli::{BuildArgs, DEFAULT_FPP};
use crate::file::{NewFilter, WriteFilter};
use crate::hash::DEFAULT_SEED;
use crate::input::sources;
use crate::pipeline::{Mode, run as pipeline};
use anyhow::{Result, bail};
use std::process::ExitCode;

/// Runs `seen build`.
///
/// # Errors
/// Bad arguments, unreadable inputs, or a filter that cannot be written.
pub fn run(a: BuildArgs) -> Result<ExitCode> {
    let opts = options(a.records);
    let term = opts.term;
    let sources = sources(&a.files);
    if a.add {
        if a.capacity.is_some() || a.fpp.is_some() || a.seed.is_some() {
            eprintln!(
                "seen: warning: -n, -p and --seed are ignored with --add ({} keeps its own)",
                a.output.display()
            );
        }
        let mut f = WriteFilter::open(&a.output)?;
        let result = pipeline(&sources, opts, &mut f, Mode::Insert, |_| Ok(true));
        f.commit()?;
        result?;
        let h = f.header();
        let l = &h.layers[0];
        warn_over_capacity(
            &a.output.display().to_string(),
            l.inserts,
            l.capacity,
            &l.layout,
            l.target_fpp,
        );
        return Ok(ExitCode::SUCCESS);
    }
    if a.output.is_dir() {
        bail!(
            "{} is a directory: -o takes the filter file to write",
            a.output.display()
        );
    }
    if !a.force && a.output.exists() {
        bail!(
            "{} already exists: pass --force to replace it or --add to insert into it",
            a.output.display()
        );
    }
    let n = match a.capacity {
        Some(n) => n,
        None => match counted(&sources, term)? {
            Some(n) => n.max(1),
            None => bail!(
                "{} cannot be counted in advance to size the filter (it can only be \
                 read once): pass -n/--capacity (e.g. -n 10M), or give the lines as regular files",
                crate::input::uncountable(&sources).unwrap_or_else(|| "the input".into())
            ),
        },
    };
    let fpp = a.fpp.unwrap_or(DEFAULT_FPP);
    let plan = plan(n, fpp)?;
    let mut f = NewFilter::create(&a.output, &plan, a.seed.unwrap_or(DEFAULT_SEED))?;
    let c = pipeline(&sources, opts, &mut f, Mode::Insert, |_| Ok(true))?;
    f.finish(a.force)?;
    warn_over_capacity(
        &a.output.display().to_string(),
        c.new,
        plan.capacity,
        &plan.layout,
        fpp,
    );
    Ok(ExitCode::SUCCESS)
}
