//! The one plan resolver: what a command asks of its filter ([`Wants`],
//! with the sizing flags and the input) → measure the input when the
//! store to make needs it → size → the store to open ([`Where`]). Each
//! command builds a [`Wants`] from its flags and gets back where its run
//! goes; none measures, sizes or tells one store from another itself.

use crate::filter::sizing::Spec;
use crate::filter::sizing::policy::{self, Asked, DEFAULT_CAPACITY, Measured, expected_keys};
use crate::hash::DEFAULT_SEED;
use crate::input::{Source, count_records, estimate_records, total_bytes, uncountable};
use crate::pipeline::Options;
use crate::store::{Ability, Access, FilterAt, Link, NewFile, RedisLayout, Target, Where};
use anyhow::{Result, bail};

/// What a run does with a filter, as its command's flags say.
#[derive(Debug)]
pub(crate) enum Wants {
    /// A filter in memory for this run only (`dedup` without `-f`).
    Memory,
    /// Record lines in the filter there (`build --add`).
    Add(FilterAt),
    /// Remember lines across runs (`dedup -f`): made when missing; `journal`:
    /// the records' terminator, when the lines judged new are printed (not
    /// `-d`/`-D`), for a store that records before they are written.
    Remember { at: FilterAt, journal: Option<u8> },
    /// Make a new filter there (`build -o`); `replace`: `--force`.
    Make { at: FilterAt, replace: bool },
}

/// The flags that size and seed a new filter, and the rest a plan needs.
#[derive(Debug)]
pub(crate) struct Sizing {
    /// `-n`, `-p`, `--growth`, `--fixed`, `--window`, … as asked.
    pub asked: Asked,
    /// Some sizing flag was given (they are ignored for a filter that is
    /// there already: said on stderr).
    pub given: bool,
    /// `--window` was given.
    pub window_given: bool,
    /// `--seed`.
    pub seed: Option<u64>,
    /// Say on stderr what was made, when nothing sized it (not `-q`).
    pub quiet: bool,
    /// `--redis-timeout`, `--redis-wait`.
    pub link: Link,
    /// `--redis-layout`: how a new Redis filter keeps its lines.
    pub layout: RedisLayout,
}

/// Resolves `wants` into the store a run uses, measuring `sources` when a
/// new filter must be sized from them.
///
/// # Errors
/// An input that cannot be measured (or, for a fixed filter, counted), a
/// size that cannot be had, a target that may not be written, or what the
/// store cannot do.
pub(crate) fn resolve(
    wants: Wants,
    sizing: &Sizing,
    sources: &[Source],
    opts: &Options,
) -> Result<Where> {
    let asked = &sizing.asked;
    let at = |at: FilterAt, access: Access| Where::At {
        at,
        access,
        link: sizing.link,
    };
    Ok(match wants {
        Wants::Memory => {
            let input = if asked.capacity.is_none() {
                measured(sources, opts, asked.may_sample())?
            } else {
                Measured::Unknown
            };
            Where::Memory(policy::in_memory(asked, input)?)
        }
        Wants::Add(filter) => {
            if sizing.given || sizing.seed.is_some() {
                eprintln!(
                    "seen: warning: sizing flags and --seed are ignored with --add ({filter} keeps its own)"
                );
            }
            let expect_keys = expected_keys(None, total_bytes(sources));
            let access = Access::Write {
                create: None,
                expect_keys,
                journal: None,
            };
            at(filter, access)
        }
        Wants::Remember {
            at: filter,
            journal,
        } => {
            let (create, lines) = if filter.exists() == Some(true) {
                if sizing.given && !made_so(&filter, sizing.link, asked) {
                    warn_sizing_ignored(&filter, sizing.window_given);
                }
                (None, None)
            } else {
                let mut lines = None;
                if asked.capacity.is_none() {
                    // A filter that grows may be sized from a sample, as an
                    // in-memory one is: no pass over the input first.
                    let sample = asked.may_sample() && filter.can(Ability::Grow);
                    lines = measured(sources, opts, sample)?.lines();
                }
                let spec = fit(&filter, asked.spec(policy::for_new_file(lines)), asked);
                let new = NewFile {
                    spec,
                    seed: DEFAULT_SEED,
                    announce: asked.capacity.is_none() && !sizing.quiet,
                    layout: sizing.layout,
                };
                (Some(new), lines)
            };
            let expect_keys = expected_keys(lines, total_bytes(sources));
            let access = Access::Write {
                create,
                expect_keys,
                journal,
            };
            at(filter, access)
        }
        Wants::Make {
            at: filter,
            replace,
        } => {
            check_output(&filter, replace)?;
            let lines = match asked.capacity {
                Some(_) => None,
                None => counted(sources, opts)?,
            };
            if asked.capacity.is_none() && lines.is_none() && asked.fixed {
                bail!(
                    "{} cannot be counted in advance to size a --fixed filter (it can only be \
                     read once): pass -n/--capacity (e.g. -n 10M), or drop --fixed",
                    uncountable(sources).unwrap_or_else(|| "the input".into())
                );
            }
            let access = Access::New {
                spec: fit(
                    &filter,
                    asked.spec(lines.unwrap_or(DEFAULT_CAPACITY)),
                    asked,
                ),
                seed: sizing.seed.unwrap_or(DEFAULT_SEED),
                replace,
                expect_keys: expected_keys(lines, total_bytes(sources)),
                layout: sizing.layout,
            };
            at(filter, access)
        }
    })
}

/// Where a run that only looks lines up goes: the filter at `at`, read
/// (`query`, `stats --probe`); nothing to measure or size.
pub(crate) fn reading(at: FilterAt, link: Link) -> Where {
    Where::At {
        at,
        access: Access::Read,
        link,
    }
}

/// `spec` as the store at `at` can hold it: one that does not grow (or
/// grows only when `--growth` asks, as a Redis filter) takes the whole
/// target in its one layer.
fn fit(at: &FilterAt, spec: Spec, asked: &Asked) -> Spec {
    if at.can(Ability::Grow) || (asked.growth.is_some() && at.can(Ability::GrowWhenAsked)) {
        spec
    } else {
        Spec {
            growth: None,
            ..spec
        }
    }
}

/// Whether the filter at `filter` was made as the sizing flags `asked`
/// say (a daily cron job that passes the flags it made the filter with is
/// not warned every day, issue 43); `false` when it cannot be read (the
/// run's own open says why).
fn made_so(filter: &FilterAt, link: Link, asked: &Asked) -> bool {
    let Ok(f) = filter.open_read(link) else {
        return false;
    };
    let h = f.header();
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    asked.capacity.is_none_or(|n| n == h.capacity)
        && asked.fpp.is_none_or(|p| same(p, h.target_fpp))
        && (!asked.fixed || h.growth.is_none())
        && asked
            .growth
            .is_none_or(|g| h.growth.is_some_and(|hg| hg.factor == g))
        && asked.window.is_none_or(|secs| {
            h.window.is_some_and(|w| {
                w.window.secs == secs && asked.slices.is_none_or(|s| s == w.window.slices)
            })
        })
        && (asked.window.is_some() || asked.slices.is_none())
}

/// Says that the sizing flags (and `--window`) are ignored for a filter
/// that is there already.
fn warn_sizing_ignored(filter: &FilterAt, window_given: bool) {
    eprintln!(
        "seen: warning: {filter} already exists: sizing flags are ignored (they only size a new filter){}",
        if window_given {
            "; --window too: a filter keeps the window it was made with, or \
             none (`seen stats` shows it)"
        } else {
            ""
        }
    );
}

/// Refuses an `-o` that `build` may not write: a directory, an existing
/// filter without `--force`, or a file that is not a filter (a store that
/// is not a path refuses what it cannot take when it opens).
///
/// # Errors
/// Which of those it is, and what to do.
fn check_output(filter: &FilterAt, replace: bool) -> Result<()> {
    let Some(path) = filter.path() else {
        return Ok(());
    };
    if path.is_dir() && !path.is_symlink() {
        bail!(
            "{} is a directory: -o takes the filter file to write",
            path.display()
        );
    }
    match filter.target(replace)? {
        None | Some(Target::Free) => Ok(()),
        Some(Target::Filter) if replace => Ok(()),
        Some(Target::Filter) => bail!(
            "{} already exists: pass --force to replace it or --add to insert into it",
            path.display()
        ),
        Some(Target::OtherFile) => bail!(
            "{} already exists and is not a seen filter: choose another path (--force \
             would refuse it too: it only replaces filter files)",
            path.display()
        ),
    }
}

/// Counts the input records when they can be counted (regular files only).
///
/// # Errors
/// When a file cannot be opened or read (the message names it: "cannot open
/// x: ...", "x is a directory").
pub(crate) fn counted(sources: &[Source], opts: &Options) -> Result<Option<u64>> {
    count_records(sources, opts.term, opts.threads, opts.mmap)
}

/// The input's size as sizing needs it: sampled when `sample` (large files),
/// else counted; unknown when it cannot be measured (standard input, a pipe).
///
/// # Errors
/// As [`counted`].
pub(crate) fn measured(sources: &[Source], opts: &Options, sample: bool) -> Result<Measured> {
    if sample {
        estimate_records(sources, opts.term, opts.threads, opts.mmap)
    } else {
        Ok(counted(sources, opts)?.map_or(Measured::Unknown, Measured::Counted))
    }
}
