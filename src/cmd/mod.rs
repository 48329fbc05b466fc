//! One module per subcommand. `build`, `dedup` and `query` resolve their flags
//! into a [`Job`](crate::job::Job) and give it an output; `stats`, `verify`,
//! `plan` and `completions` read a filter or the flags and report (`stats
//! --probe` runs a lookup `Job` on the filter it has read).

pub mod build;
pub mod completions;
pub mod copy;
pub mod dedup;
pub mod merge;
pub mod plan;
pub mod query;
pub mod stats;
pub mod verify;

use crate::cli::RecordArgs;
use crate::filter::sizing::policy::Measured;
use crate::input::{Source, count_records, estimate_records};
use crate::pipeline::Options;
use anyhow::Result;

/// The Redis location a filter argument names, if it names one.
///
/// # Errors
/// A malformed location.
pub(crate) fn redis_location(arg: &std::path::Path) -> Result<Option<crate::redis::Location>> {
    match arg.to_str() {
        Some(s) if crate::redis::is_location(s) => crate::redis::Location::parse(s).map(Some),
        _ => Ok(None),
    }
}

/// Refuses a file where a new filter may not be written (`copy`, `merge`):
/// a directory, a file that is not a filter, or (unless `replace`) a filter;
/// `hint` ends the message for a filter there.
///
/// # Errors
/// Each refusal, naming the path and what to do.
pub(crate) fn check_new_filter_path(
    out: &std::path::Path,
    replace: bool,
    hint: &str,
) -> Result<()> {
    use crate::file::{Target, check_target};
    if out.is_dir() && !out.is_symlink() {
        anyhow::bail!(
            "{} is a directory: give the filter file to write",
            out.display()
        );
    }
    match check_target(out, replace)? {
        Target::Free => Ok(()),
        Target::Filter if replace => Ok(()),
        Target::Filter => anyhow::bail!(
            "{} already exists: pass --force to replace it{hint}",
            out.display()
        ),
        Target::OtherFile => anyhow::bail!(
            "{} is not a seen filter: give a new path, or the path of a filter with --force",
            out.display()
        ),
    }
}

/// Pipeline options from `-z`, `-j` and `--no-mmap`.
pub(crate) fn options(r: RecordArgs) -> Options {
    let mut o = Options::new(if r.null { 0 } else { b'\n' }, r.threads.map(usize::from));
    o.mmap = !r.no_mmap;
    o
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `--no-mmap` reaches the pipeline (and the counting pass, which takes
    /// `Options::mmap` too); without it, input files are mapped.
    #[test]
    fn no_mmap_turns_mapping_off() {
        let args = |no_mmap| RecordArgs {
            null: false,
            threads: Some(1),
            no_mmap,
        };
        assert!(options(args(false)).mmap);
        assert!(!options(args(true)).mmap);
    }
}
