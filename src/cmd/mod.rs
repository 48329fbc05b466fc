//! One module per subcommand. `build`, `dedup` and `query` resolve their flags
//! into a [`Job`](crate::job::Job) and give it an output; `stats`, `verify`,
//! `plan` and `completions` read a filter or the flags and report (`stats
//! --probe` runs a lookup `Job` on the filter it has read).

pub mod build;
pub mod completions;
pub mod copy;
pub mod dedup;
pub mod forget;
pub mod merge;
pub mod plan;
pub mod query;
pub mod stats;
pub mod verify;

use crate::cli::RecordArgs;
use crate::pipeline::Options;

/// Pipeline options from `-z`, `-j` and `--no-mmap`.
pub(crate) fn options(r: RecordArgs) -> Options {
    let mut o = Options::new(if r.null { 0 } else { b'\n' }, r.threads.map(usize::from));
    o.mmap = !r.no_mmap;
    o
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
