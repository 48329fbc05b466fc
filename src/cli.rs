//! Command-line definitions (clap derive). Only definitions live here: the doc
//! comments are the `--help` text, and every flag is documented where it is declared.

use crate::units::{parse_count, parse_fpp, parse_seed};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Default target false-positive rate for new filters.
pub const DEFAULT_FPP: f64 = 1e-6;
/// Capacity of a filter when `-n` is not given and the input cannot be counted.
pub const DEFAULT_CAPACITY: u64 = 10_000_000;

const EXIT_CODES: &str = "\
Exit status:
  0  success; for `query`, at least one item was selected
  1  `query`: no item was selected (with --all: not every item)
  2  error (bad flag, unreadable input, corrupt filter, ...)

A closed standard output (e.g. `seen dedup big.txt | head`) ends the run quietly.";

/// Deduplicate huge streams of lines with a Bloom filter kept in a memory-mapped file.
///
/// Lines are raw bytes (no UTF-8 assumption), terminated by `\n` (or NUL with
/// -z); a last line without terminator is still a line. Data goes to standard
/// output, messages to standard error. A Bloom filter never forgets a line it
/// has seen, but may (rarely, with the probability you choose) mistake a new
/// line for a seen one.
#[derive(Debug, Parser)]
#[command(name = "seen", version, arg_required_else_help = true, after_help = EXIT_CODES)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a filter file from lines (files or standard input).
    #[command(after_help = "\
Examples:
  seen build -o blocklist.seen domains.txt          # sized for the lines in domains.txt
  seen build -n 50M -p 1e-6 -o big.seen < list.txt  # sized explicitly, lines from stdin
  seen build --add -o blocklist.seen more.txt       # insert into an existing filter

The file is written to a temporary file in the same directory and renamed into
place, so readers see either the old filter or the new one, never a half-written file.")]
    Build(BuildArgs),
    /// Ask a filter whether items are (probably) in it, grep-style.
    #[command(after_help = "\
Examples:
  seen query blocklist.seen example.com            # prints it if present; exit 0/1
  if seen query -q blocklist.seen \"$domain\"; then echo blocked; fi
  seen query blocklist.seen < candidates.txt       # prints the present ones
  seen query -v blocklist.seen < candidates.txt    # prints the absent ones
  seen query -c blocklist.seen < candidates.txt    # counts the present ones

Exit status: 0 if at least one item was selected (with --all: every item),
1 if not, 2 on error.")]
    Query(QueryArgs),
    /// Print each line only the first time it is seen, in input order.
    #[command(after_help = "\
Examples:
  seen dedup urls.txt > unique.txt                  # like awk '!seen[$0]++', any size
  zcat huge.log.gz | seen dedup -n 500M > unique.log
  crawl-links | seen dedup -f crawled.seen > new.txt  # remembers across runs
  seen dedup --repeated urls.txt                    # only the lines seen before

A false positive drops a line that was in fact new, with probability about -p
(default 1e-6) per new line; a line is never printed twice.")]
    Dedup(DedupArgs),
    /// Report a filter's parameters, fill ratio, estimated items and false-positive rate.
    #[command(after_help = "\
Examples:
  seen stats crawled.seen
  seen stats --json crawled.seen | jq .estimated_fpp")]
    Stats(StatsArgs),
}

/// How records are read and hashed.
#[derive(Debug, Args, Clone, Copy)]
pub struct RecordArgs {
    /// Records end with NUL instead of newline (input and output), as with `find -print0`.
    #[arg(short = 'z', long = "null")]
    pub null: bool,

    /// Threads hashing in parallel [default: RAYON_NUM_THREADS, else the number of
    /// CPUs; at most 256]. Output is identical for any value.
    #[arg(short = 'j', long = "threads", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Options of `seen build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Filter file to write.
    #[arg(short = 'o', long = "output", value_name = "FILTER")]
    pub output: PathBuf,

    /// Number of distinct lines the filter must hold (e.g. 1e6, 50k, 10M). Default:
    /// the number of lines in the input files (standard input cannot be counted).
    #[arg(short = 'n', long = "capacity", value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub capacity: Option<u64>,

    /// Target false-positive rate at capacity (e.g. 1e-6, 0.001, 0.1%) [default: 1e-6].
    #[arg(short = 'p', long = "fpp", value_name = "P", value_parser = parse_fpp, allow_negative_numbers = true)]
    pub fpp: Option<f64>,

    /// Replace FILTER if it exists (atomically).
    #[arg(long, conflicts_with = "add")]
    pub force: bool,

    /// Insert into the existing FILTER instead of making a new one (-n/-p are then ignored).
    #[arg(long)]
    pub add: bool,

    /// Hash seed for a new filter (decimal or 0x-hex); the default is fixed, so
    /// rebuilding from the same lines gives the same file bits.
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    pub seed: Option<u64>,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Input files; `-` or none means standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Options of `seen query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Filter file to ask.
    #[arg(value_name = "FILTER")]
    pub filter: PathBuf,

    /// Items to look up. Without items, lines are read from --file or standard input.
    #[arg(value_name = "ITEM")]
    pub items: Vec<OsString>,

    /// Read items, one per line, from FILE (`-` is standard input); may be repeated.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "items"
    )]
    pub files: Vec<PathBuf>,

    /// Select the items that are NOT in the filter.
    #[arg(short = 'v', long = "invert-match")]
    pub invert: bool,

    /// Print only the number of selected items.
    #[arg(short = 'c', long = "count")]
    pub count: bool,

    /// Print nothing; only the exit status tells.
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    pub quiet: bool,

    /// Exit 0 only if every item is selected (and there is at least one).
    #[arg(long)]
    pub all: bool,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,
}

/// Options of `seen dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Persistent filter: lines recorded in earlier runs are suppressed and new ones
    /// recorded. Created if missing (sized by -n/-p).
    #[arg(short = 'f', long = "filter", value_name = "FILTER")]
    pub filter: Option<PathBuf>,

    /// Number of distinct lines to size the filter for. Default: the number of
    /// lines in the input files, or 10M for standard input (and for a new -f
    /// filter, at least 10M).
    #[arg(short = 'n', long = "capacity", value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub capacity: Option<u64>,

    /// Target false-positive rate at capacity, i.e. the chance that a new line is
    /// wrongly dropped [default: 1e-6].
    #[arg(short = 'p', long = "fpp", value_name = "P", value_parser = parse_fpp, allow_negative_numbers = true)]
    pub fpp: Option<f64>,

    /// Print only the lines that were seen before (each repeat), the inverse of the default.
    #[arg(short = 'd', long = "repeated")]
    pub repeated: bool,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Input files; `-` or none means standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Options of `seen stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Filter file to inspect.
    #[arg(value_name = "FILTER")]
    pub filter: PathBuf,

    /// Print one JSON object (schema in docs/STATS.md) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
