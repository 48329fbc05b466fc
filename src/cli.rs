//! Command-line definitions (clap derive). Only definitions live here: the doc
//! comments are the `--help` text, and every flag is documented where it is declared.

use crate::keys::{KeySpec, parse_delimiter};
use crate::store::{FilterAt, Link};
use crate::units::{
    Every, parse_count, parse_count_or_zero, parse_every, parse_fpp, parse_fraction, parse_seed,
    parse_wait, parse_window,
};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

pub use crate::filter::sizing::policy::{DEFAULT_CAPACITY, DEFAULT_FPP};

/// The "Exit status" section of every `--help`.
const EXIT_CODES: &str = include_str!("exit_codes.txt");

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

/// What `seen` without arguments prints: a few lines, not the whole help.
pub fn short_usage() -> String {
    use clap::CommandFactory;
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    format!(
        "Usage: seen <COMMAND> [OPTIONS] [ARGS]\n\
         Commands: {}\n\
         \n  seen dedup urls.txt > unique.txt   # print each line the first time it is seen\n\
         \nRun `seen COMMAND --help` for a command's options and examples, \
         `seen --help` for all of it.\n",
        names.join(", ")
    )
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a filter file from lines (files or standard input).
    #[command(after_help = "\
Examples:
  seen build -o block.seen domains.txt           # sized for its line count
  seen build -n 50M -p 1e-6 -o big.seen < list   # sized explicitly, from stdin
  seen build --add -o block.seen more.txt        # insert into a filter
  seen build -k 2 -t , -o ids.seen users.csv     # keyed by the 2nd CSV field

The file is written to a temporary file in the same directory and renamed into
place, so readers see the old filter or the new one, never a half-written file.

Exit status: 0 done, 2 error (nothing is left at -o but what was there), 130/143
stopped by SIGINT/SIGTERM (the unfinished filter is removed).")]
    Build(BuildArgs),
    /// Ask a filter whether items are (probably) in it, grep-style.
    #[command(after_help = "\
Examples:
  seen query block.seen example.com            # prints it if present; exit 0/1
  if seen query -q block.seen \"$domain\"; then echo blocked; fi
  seen query block.seen < candidates.txt       # prints the present ones
  seen query -v block.seen < candidates.txt    # prints the absent ones
  seen query -c block.seen < candidates.txt    # counts the present ones
  seen query --json block.seen < candidates.txt  # one verdict per line

Exit status: 0 if at least one item was selected (with --all: every item),
1 if not, 2 on error.")]
    Query(QueryArgs),

    /// Forget items: a filter answers them as absent until they are recorded again.
    #[command(after_help = "\
Examples:
  seen forget crawled.seen https://example.com/failed   # crawl it again
  seen forget -f optout.txt --url crawled.seen          # erase these users' URLs
  seen forget --summary crawled.seen < false-positives.txt

A forgotten item is new to `dedup -f` (printed once, then recorded again) and
absent to `query`; no other item changes its answer, and a false positive
forgotten becomes absent (the filter keeps forgotten keys' 128-bit hashes, 16
bytes each in a file). Not for a Redis filter in the Bloom layout.

Exit status: 0 if at least one item was present and is now forgotten, 1 if
none was present, 2 on error.")]
    Forget(ForgetArgs),
    /// Print each line only the first time it is seen, in input order.
    #[command(after_help = "\
Examples:
  seen dedup urls.txt > unique.txt          # like awk '!seen[$0]++', any size
  zcat huge.log.gz | seen dedup > uniq.log  # the filter grows as needed
  crawl | seen dedup --url -f crawled.seen  # remembers URLs across runs
  ls batches/* | xargs -P 4 -n 1 seen dedup -f crawled.seen > new.txt
  seen dedup -k 2 -t , users.csv            # first row per value of field 2
  seen dedup -d urls.txt                    # each line that repeats, once
  seen dedup -f crawled.seen -m 1000 < frontier  # the next 1,000 new lines

A false positive drops a line that was in fact new, with probability about -p
(default 1e-6) per new line; a line is never printed twice.

With -f, a line is recorded only after it was written out: a killed run loses
nothing (the next run prints what it did not). Several processes may share one
filter (e.g. under xargs -P): they take turns per commit span and print each
line once between them.

Exit status: 0 done (a closed standard output, as with `| head`, ends the run
quietly), 2 error, 130/143 stopped by SIGINT/SIGTERM (what was printed is
recorded).")]
    Dedup(DedupArgs),
    /// Report a filter's parameters, fill ratio, estimated items and false-positive rate.
    #[command(after_help = "\
Examples:
  seen stats crawled.seen
  seen stats --json crawled.seen | jq .estimated_fpp
  seen stats --max-fpp 1e-5 crawled.seen || alert  # cron: exit 1 if degraded

Exit status: 0 healthy, 1 past --max-fpp or --max-fill, 2 error.")]
    Stats(StatsArgs),
    /// Check a filter file: its header and every data segment against its checksum.
    #[command(after_help = "\
Examples:
  seen verify crawled.seen && echo intact
  seen verify --repair crawled.seen   # cron: settle a killed writer's file first

Exit status: 0 intact, 1 a data segment is damaged (each is named), 2 the file
is not a usable filter (header, length) or cannot be read, 3 a writer was
killed and some checksums are stale, not known damaged (--repair settles it).")]
    Verify(VerifyArgs),
    /// Copy a filter between a file and Redis (or Redis and Redis), byte for byte.
    #[command(after_help = "\
Examples:
  seen copy crawled.seen redis://cache:6379/crawl        # publish to a fleet
  seen copy redis+cluster://n1:7000,n2:7000/crawl snap.seen  # snapshot to a file
  seen copy --force built.seen redis://cache/blocklist   # replace one there
  seen copy --zstd crawled.seen - | ssh host seen copy - crawled.seen  # another machine

The copy holds the same bits at the same positions: it answers every query as
the original does. A file is written to a temporary file and renamed into
place; in Redis the shards are stored first and the filter's meta key last, so
readers never see a half-copied filter (with --force, the old one is gone
first).

Exit status: 0 copied, 2 error.")]
    Copy(CopyArgs),
    /// Merge filters into one (the union of their lines), of any sizes.
    #[command(after_help = include_str!("help/merge.txt"))]
    Merge(MergeArgs),
    /// Show the layout, size and false-positive rate a filter would have, without writing anything.
    #[command(after_help = "\
Examples:
  seen plan -n 100M -p 1e-6            # a growing filter: its first layers
  seen plan -n 100M -p 1e-6 --fixed    # one fixed layer
  seen plan -n 1M -p 1% --classic      # and the textbook (unblocked) filter")]
    Plan(PlanArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "\
Examples:
  seen completions bash > ~/.local/share/bash-completion/completions/seen
  seen completions zsh > ~/.zfunc/_seen   # fpath+=(~/.zfunc) before compinit
  seen completions fish > ~/.config/fish/completions/seen.fish

The same scripts are committed under completions/ in the source tree.")]
    Completions(CompletionsArgs),
}

impl Command {
    /// Whether the subcommand's work is the data it writes on standard
    /// output, so that a closed one must stop it before it starts: `dedup`,
    /// `query` but for `-q`, and the reports of `stats` (but for
    /// `--max-fpp`/`--max-fill`, asked for the exit status), `verify`,
    /// `plan` and `completions`, which exited 0 having printed nothing. A
    /// report is thrown away on purpose with `> /dev/null`.
    pub fn writes_stdout(&self) -> bool {
        match self {
            Command::Dedup(_) | Command::Verify(_) | Command::Plan(_) | Command::Completions(_) => {
                true
            }
            Command::Query(a) => !a.quiet,
            Command::Stats(a) => a.max_fpp.is_none() && a.max_fill.is_none(),
            Command::Copy(a) => a.to.is_stdio(),
            Command::Build(_) | Command::Merge(_) | Command::Forget(_) => false,
        }
    }

    /// `--wait`: how long to wait for another process's lock at most.
    pub fn lock_wait(&self) -> Option<std::time::Duration> {
        match self {
            Command::Build(a) => a.lock.wait,
            Command::Query(a) => a.lock.wait,
            Command::Forget(a) => a.lock.wait,
            Command::Dedup(a) => a.lock.wait,
            Command::Stats(a) => a.lock.wait,
            Command::Verify(a) => a.lock.wait,
            Command::Copy(a) => a.lock.wait,
            Command::Merge(a) => a.lock.wait,
            Command::Plan(_) | Command::Completions(_) => None,
        }
    }

    /// `--now`: the time to work at, instead of the system clock.
    pub fn now(&self) -> Option<u64> {
        match self {
            Command::Build(a) => a.lock.now,
            Command::Query(a) => a.lock.now,
            Command::Forget(a) => a.lock.now,
            Command::Dedup(a) => a.lock.now,
            Command::Stats(a) => a.lock.now,
            Command::Verify(a) => a.lock.now,
            Command::Copy(a) => a.lock.now,
            Command::Merge(a) => a.lock.now,
            Command::Plan(_) | Command::Completions(_) => None,
        }
    }
}

/// Options of `seen completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Which part of a record is compared (hashed). The whole record is always
/// what is printed.
#[derive(Debug, Args, Clone, Copy, Default)]
#[command(next_help_heading = "Keys (what is compared)")]
pub struct KeyArgs {
    /// Compare records by field N only (1-based): fields are runs of blanks
    /// (spaces, tabs; newlines too in -z records), leading blanks ignored, as
    /// awk splits (and `sort -b -k`); with -t, split on every -t byte, as
    /// `cut -f N` does. A record with fewer fields has an empty key (as in awk).
    #[arg(short = 'k', long = "key", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub field: Option<u16>,

    /// Split fields for -k on every CHAR (empty fields kept, like `cut`): one
    /// byte (e.g. ',' or ';'), '\t' or 0x1f [default: runs of blanks].
    #[arg(short = 't', long = "delimiter", value_name = "CHAR", value_parser = parse_delimiter, requires = "field")]
    pub delimiter: Option<u8>,

    /// Strip whitespace (space, tab, CR, LF, VT, FF) around the key.
    #[arg(long)]
    pub trim: bool,

    /// Compare URLs in canonical form: scheme and host lower-cased, default port,
    /// fragment and `.`/`..` path segments dropped (WHATWG parsing). Keys that
    /// are not absolute URLs are compared as they are (counted by --summary).
    #[arg(long)]
    pub url: bool,

    /// With --url: also sort the query parameters (`?b=2&a=1` = `?a=1&b=2`).
    #[arg(long, requires = "url")]
    pub url_sort_query: bool,

    /// Compare keys case-insensitively (Unicode lower case for UTF-8 keys).
    #[arg(short = 'i', long)]
    pub ignore_case: bool,

    /// Compare whole records as they are, ignoring key options recorded in the filter.
    #[arg(long, conflicts_with_all = ["field", "trim", "url", "ignore_case"])]
    pub raw_keys: bool,
}

impl KeyArgs {
    /// The key spec these flags ask for, or `None` when no key flag was given
    /// (a filter's recorded options then apply).
    pub fn spec(&self) -> Option<KeySpec> {
        if self.raw_keys {
            return Some(KeySpec::RAW);
        }
        let spec = KeySpec {
            field: self.field,
            delimiter: self.field.and(self.delimiter),
            trim: self.trim,
            url: self.url,
            url_sort_query: self.url_sort_query,
            ignore_case: self.ignore_case,
        };
        (!spec.is_raw()).then_some(spec)
    }
}

/// Waiting for another process's lock on the filter.
#[derive(Debug, Args, Clone, Copy, Default)]
#[command(next_help_heading = "Progress and waiting")]
pub struct LockArgs {
    /// Give up (exit 2) when another process has held the filter's lock for
    /// DURATION (500ms, 10s, 5min, 1h; 0: do not wait), as `flock -w` does
    /// [default: wait as long as it takes, saying so on stderr after 1 s].
    #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
    pub wait: Option<std::time::Duration>,

    /// With a Redis filter (redis://...): give up (exit 2) when a server has
    /// not answered, or could not be reached again, for DURATION (500ms,
    /// 10s, 1min) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
    pub redis_timeout: Option<std::time::Duration>,

    /// With a Redis filter that this run writes: before printing a batch's
    /// lines, wait until N replicas of each server hold its writes (Redis
    /// WAIT, for at most --redis-timeout), so that a failover to one of them
    /// forgets no printed line; fewer replicas in time: the batch is printed
    /// and the run stops, exit 2 [default: 0, no wait].
    #[arg(long, value_name = "N")]
    pub redis_wait: Option<u32>,

    /// The time to work at, for a filter with a --window: an RFC 3339 time
    /// (2026-12-01T09:00:00Z, or with an offset: +01:00) or @ and Unix
    /// seconds (@1796115600); for replays, tests and scripts. A time before
    /// the latest a writer recorded in the filter counts as that time
    /// [default: the system clock].
    #[arg(long, value_name = "TIME", value_parser = crate::clock::parse_now, help_heading = "Time windows")]
    pub now: Option<u64>,
}

impl LockArgs {
    /// The `--redis-timeout` and `--redis-wait`, or their defaults.
    pub fn link(&self) -> Link {
        Link {
            timeout: self
                .redis_timeout
                .unwrap_or(std::time::Duration::from_secs(10))
                .max(std::time::Duration::from_millis(1)),
            replicas: self.redis_wait.unwrap_or(0),
        }
    }
}

/// Progress on standard error.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct ProgressArgs {
    /// Show progress on stderr even when it is not a terminal (by default it is
    /// shown only on a terminal, and only for work that lasts over a second).
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,

    /// No progress and no notes on stderr (warnings and errors still print).
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl From<ProgressArgs> for crate::progress::Show {
    fn from(a: ProgressArgs) -> Self {
        crate::progress::Show {
            forced: a.progress,
            quiet: a.quiet,
        }
    }
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

    /// Read input files (and a file redirected to stdin) instead of
    /// memory-mapping them: up to about 20% slower, but a file that another
    /// program truncates meanwhile (log rotation with copytruncate) just ends
    /// early, where a mapped one stops seen (exit 2).
    #[arg(long = "no-mmap")]
    pub no_mmap: bool,
}

/// How a new filter is sized. Only used when a filter is created.
#[derive(Debug, Args, Clone, Copy)]
pub struct SizeArgs {
    /// Distinct lines to size the filter for (e.g. 1e6, 50k, 10M). Each command
    /// says its own default (`-n` help of build, dedup and plan, below).
    #[arg(short = 'n', long = "capacity", value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub capacity: Option<u64>,

    /// Target false-positive rate (e.g. 1e-6, 0.001, 0.1%): the chance that a new
    /// line is taken for a seen one. A growing filter stays under it at any size;
    /// a fixed one meets it up to its capacity [default: 1e-6].
    #[arg(short = 'p', long = "fpp", value_name = "P", value_parser = parse_fpp, allow_negative_numbers = true)]
    pub fpp: Option<f64>,

    /// When full, add a layer G times larger (2-16) [default: 2].
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u32).range(2..=16), conflicts_with = "fixed")]
    pub growth: Option<u32>,

    /// Never grow: one layer of -n lines; past it the false-positive rate rises
    /// (warned on stderr when it passes -p, and again past 10 times -p).
    #[arg(long, visible_alias = "no-grow")]
    pub fixed: bool,

    /// Forget lines after a time window (6d, 7d, 12h, 90min, 2w): a line
    /// recorded at time t is seen until t + W and new again from
    /// t + W*(1 + 1/S) on (S: --slices); -n is then the distinct lines per
    /// window. Recorded in the filter, which every later command follows
    /// [default: never forget].
    #[arg(long, value_name = "DURATION", value_parser = parse_window, help_heading = "Time windows")]
    pub window: Option<u64>,

    /// Slices of a --window (1-32): lines are forgotten a slice at a time,
    /// at most W/S after the window [default: 8].
    #[arg(long, value_name = "S", requires = "window", value_parser = clap::value_parser!(u32).range(1..=32), help_heading = "Time windows")]
    pub slices: Option<u32>,
}

impl From<SizeArgs> for crate::filter::sizing::policy::Asked {
    fn from(s: SizeArgs) -> Self {
        crate::filter::sizing::policy::Asked {
            capacity: s.capacity,
            fpp: s.fpp,
            growth: s.growth,
            fixed: s.fixed,
            window: s.window,
            slices: s.slices,
        }
    }
}

impl SizeArgs {
    /// Whether any sizing flag was given.
    pub fn any(&self) -> bool {
        self.capacity.is_some()
            || self.fpp.is_some()
            || self.growth.is_some()
            || self.fixed
            || self.window.is_some()
    }
}

/// `-n` of `build`: its default is the line count of its input files.
const BUILD_CAPACITY: &str = "Distinct lines to size the new filter for (e.g. 1e6, 50k, 10M) \
[default: the lines in the input files, else 10M]";
const BUILD_CAPACITY_LONG: &str = "Distinct lines to size the new filter for (e.g. 1e6, 50k, \
10M): the whole capacity with --fixed, else the first layer's (the filter grows past it). \
Default: the number of lines in the input files, counted before the build; 10M when reading \
standard input, which cannot be counted in advance (--fixed then needs -n). Ignored with --add.";

/// `-n` of `plan`: no input, so a fixed default.
const PLAN_CAPACITY: &str = "Distinct lines to plan for (e.g. 1e6, 50k, 10M) [default: 10M]";
const PLAN_CAPACITY_LONG: &str = "Distinct lines to plan for (e.g. 1e6, 50k, 10M): the whole \
capacity with --fixed, else the first layer's (the filter grows past it). Default: 10M (plan \
reads no input; 10M is also what a filter gets when its input cannot be counted in advance).";

/// `-n` of `dedup`: the input's lines, sampled when large; at least 10M for a new -f file.
const DEDUP_CAPACITY: &str = "Distinct lines to size the filter for (e.g. 1e6, 50k, 10M) \
[default: the lines in the input files, else 10M]";
const DEDUP_CAPACITY_LONG: &str = "Distinct lines to size the filter for (e.g. 1e6, 50k, 10M): \
the whole capacity with --fixed, else the first layer's (the filter grows past it). Default: \
without -f, the number of lines in the input files (files of 64 MiB or more are sampled rather \
than counted, unless --fixed or -p under 1e-7; the filter grows should a file hold more lines \
by the time it is read), 10M when reading standard input; for a new -f file, the lines in the \
input files but at least 10M. Ignored when the -f file exists.";

/// Options of `seen build`.
#[derive(Debug, Args)]
#[command(mut_arg("capacity", |a| a.help(BUILD_CAPACITY).long_help(BUILD_CAPACITY_LONG)))]
pub struct BuildArgs {
    /// Filter to write: a file, or a Redis location
    /// (redis://[USER@]HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME;
    /// the password, if any, in SEEN_REDIS_PASSWORD).
    #[arg(short = 'o', long = "output", value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub output: FilterAt,

    /// Input files; `-` or none means standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Sizing of a new filter.
    #[command(flatten)]
    pub size: SizeArgs,

    /// How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in
    /// small Redis sets: one command per line, nothing read whole, about 4.7
    /// bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies
    /// to and from a file byte for byte, but every run reads the shards it
    /// touches whole) [default: sets]. Only when the filter is made in Redis.
    #[arg(long, value_enum, value_name = "LAYOUT", help_heading = "Redis")]
    pub redis_layout: Option<crate::store::RedisLayout>,

    /// Replace FILTER if it exists (atomically, keeping its key options unless
    /// key flags are given); only a seen filter (or an empty file) is replaced.
    #[arg(long, conflicts_with = "add")]
    pub force: bool,

    /// Insert into the existing FILTER instead of making a new one (sizing flags are then ignored).
    #[arg(long)]
    pub add: bool,

    /// Print a summary to stderr: lines read, new, duplicates, expected false positives.
    #[arg(long)]
    pub summary: bool,

    /// With --summary: print it as one JSON object (schema in docs/JSON.md).
    #[arg(long, requires = "summary")]
    pub json: bool,

    /// Hash seed for a new filter (decimal or 0x-hex); the default is fixed, so
    /// rebuilding from the same lines gives the same file bits.
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    pub seed: Option<u64>,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Keys (recorded in a new filter).
    #[command(flatten)]
    pub keys: KeyArgs,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Filter to ask: a file, or a Redis location (redis://HOST[:PORT][/DB]/NAME,
    /// redis+cluster://HOST:PORT,.../NAME).
    #[arg(value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub filter: FilterAt,

    /// Keys to look up. Without items, lines are read from --file or standard
    /// input. An item is a key: the filter's field selection (-k/-t) is not
    /// applied to it, its trim, URL and case rules are. An item that names an
    /// existing file is still looked up as a string (with a note on stderr:
    /// the lines of a file are read with --file).
    #[arg(value_name = "ITEM")]
    pub items: Vec<OsString>,

    /// Read records, one per line, from FILE (`-` is standard input); may be
    /// repeated. The filter's key options pick each record's key (see --as-keys).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "items"
    )]
    pub files: Vec<PathBuf>,

    /// Lines read from --file or standard input are keys, not records: the
    /// filter's field selection (-k/-t) is not applied to them (its trim, URL
    /// and case rules are), as for items on the command line.
    #[arg(long, conflicts_with = "field")]
    pub as_keys: bool,

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

    /// Print one JSON object per item with its verdict (schema in docs/JSON.md),
    /// instead of the selected items.
    #[arg(long, conflicts_with_all = ["count", "quiet", "invert"])]
    pub json: bool,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Keys (default: the options recorded in FILTER).
    #[command(flatten)]
    pub keys: KeyArgs,

    /// Lock waits (this group's heading also takes --progress).
    #[command(flatten)]
    pub lock: LockArgs,

    /// Show progress on stderr even when it is not a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
}

/// Options of `seen forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Filter file to forget in.
    #[arg(value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub filter: FilterAt,

    /// Keys to forget. Without items, lines are read from --file or standard
    /// input. An item is a key: the filter's field selection (-k/-t) is not
    /// applied to it, its trim, URL and case rules are.
    #[arg(value_name = "ITEM")]
    pub items: Vec<OsString>,

    /// Read records, one per line, from FILE (`-` is standard input); may be
    /// repeated. The filter's key options pick each record's key (see --as-keys).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "items"
    )]
    pub files: Vec<PathBuf>,

    /// Lines read from --file or standard input are keys, not records: the
    /// filter's field selection (-k/-t) is not applied to them (its trim, URL
    /// and case rules are), as for items on the command line.
    #[arg(long, conflicts_with = "field")]
    pub as_keys: bool,

    /// Print a summary on stderr: items read, forgotten, not present, list size.
    #[arg(long)]
    pub summary: bool,

    /// With --summary: print it as one JSON object (schema in docs/JSON.md).
    #[arg(long, requires = "summary")]
    pub json: bool,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Keys (default: the options recorded in FILTER).
    #[command(flatten)]
    pub keys: KeyArgs,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,
}

/// Options of `seen dedup`.
#[derive(Debug, Args)]
#[command(mut_arg("capacity", |a| a.help(DEDUP_CAPACITY).long_help(DEDUP_CAPACITY_LONG)))]
pub struct DedupArgs {
    /// Persistent filter: lines recorded in earlier runs are suppressed and new ones
    /// recorded. Created if missing (sized by the flags below; at least 10M lines).
    /// A file, or a Redis location shared by many machines
    /// (redis://HOST[:PORT][/DB]/NAME, redis+cluster://HOST:PORT,.../NAME).
    #[arg(short = 'f', long = "filter", value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub filter: Option<FilterAt>,

    /// Input files; `-` or none means standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Sizing of the filter (in memory, or a new -f file).
    #[command(flatten)]
    pub size: SizeArgs,

    /// How a new Redis filter keeps its lines: `sets` (32-bit fingerprints in
    /// small Redis sets: one command per line, nothing read whole, about 4.7
    /// bytes per line) or `bloom` (Bloom layers in shards, as seen 0.2: copies
    /// to and from a file byte for byte, but every run reads the shards it
    /// touches whole) [default: sets]. Only when the filter is made in Redis.
    #[arg(long, value_enum, value_name = "LAYOUT", help_heading = "Redis")]
    pub redis_layout: Option<crate::store::RedisLayout>,

    /// Print a summary to stderr: lines read, written, duplicates, and how many
    /// new lines were probably dropped as false positives.
    #[arg(long)]
    pub summary: bool,

    /// With -f: record printed lines in FILTER (and let other processes at it)
    /// at least this often: a duration (500ms, 2s, 1min) or a line count (100k, 1M)
    /// [default: 1s or 1M lines, whichever comes first, but at least 16 times
    /// as long as the last commit took, which grows with the filter (the
    /// first span of a filter held in memory: as its commit is foreseen to
    /// take)];
    /// a span (the lines recorded by one commit) ends between input chunks
    /// (4 MiB), so it holds at least
    /// one chunk, when the input pauses for 20 ms (by default, not before
    /// those 16 times), and also once 524,288 new lines wait to be recorded
    /// (bounded memory; with -m, 1,048,576 while the filter is held in
    /// memory). A line is recorded only after it was written out, so a killed
    /// run loses nothing; it may print again, in the next run, the lines of
    /// its last span.
    #[arg(long, value_name = "WHEN", value_parser = parse_every, requires = "filter")]
    pub commit_every: Option<Every>,

    /// With --summary: print it as one JSON object (schema in docs/JSON.md).
    #[arg(long, requires = "summary")]
    pub json: bool,

    /// Print each line that repeats, once, at its second occurrence (as
    /// `uniq -d`, but the repeats need not be adjacent); with -f, a line
    /// recorded in an earlier run repeats at its first occurrence here. About
    /// `p` of the lines seen once are printed too, and about `p` of the
    /// repeated ones are not (false positives of the filter, and of a second
    /// in-memory filter of the lines printed).
    #[arg(short = 'd', long = "repeated", conflicts_with = "all_repeated")]
    pub repeated: bool,

    /// Print every occurrence of a line after its first (each repeat): the
    /// inverse of the default (as `uniq -D` prints repeats, minus the first).
    #[arg(short = 'D', long = "all-repeated")]
    pub all_repeated: bool,

    /// Write every line that is not printed (the duplicates, and the new
    /// lines dropped as false positives) to FILE, in input order, the same
    /// bytes: the "probably seen" lines, for a second look against an exact
    /// store. With -f, a line is recorded only after both outputs it goes to
    /// were written. FILE is created or truncated.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["repeated", "all_repeated"])]
    pub dups_out: Option<PathBuf>,

    /// Stop after printing N lines (as `grep -m`). With -f, exactly those N
    /// are recorded, so `seen dedup -f F -m 1000 < frontier` hands out the
    /// next 1,000 new lines each run (`| head -1000` cannot: what head left
    /// unread in the pipe is not known, so the open span is not recorded).
    /// 0 reads and records nothing. Not with a Redis filter (it records lines
    /// before printing them).
    #[arg(short = 'm', long = "max-count", value_name = "N", value_parser = parse_count_or_zero)]
    pub max_count: Option<u64>,

    /// Record format.
    #[command(flatten)]
    pub records: RecordArgs,

    /// Keys (recorded in a new -f filter; default: the options recorded in it).
    #[command(flatten)]
    pub keys: KeyArgs,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Filter to inspect: a file, or a Redis location (redis://..., redis+cluster://...).
    #[arg(value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub filter: FilterAt,

    /// Print one JSON object (schema in docs/STATS.md) instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Exit 1 when the estimated current false-positive rate is above P
    /// (with --probe: when the measured rate is).
    #[arg(long, value_name = "P", value_parser = parse_fpp)]
    pub max_fpp: Option<f64>,

    /// Measure the false-positive rate: look up the lines of FILE (`-`:
    /// standard input), items known never to have been inserted, and report
    /// the share found present, with its 95% confidence interval, next to the
    /// estimate.
    #[arg(long, value_name = "FILE")]
    pub probe: Option<PathBuf>,

    /// Exit 1 when the fill ratio (bits set / bits, over all layers) is above F (e.g. 0.5, 50%).
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub max_fill: Option<f64>,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress (counting the bits of a big filter).
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen copy`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Filter to copy: a file, a Redis location (redis://... or redis+cluster://...), or - for standard input (from `seen copy F -`, zstd-compressed or not).
    #[arg(value_name = "FROM", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub from: FilterAt,

    /// Where the copy goes: a new file (compressed when its name ends in .zst), a Redis location, or - for standard output.
    #[arg(value_name = "TO", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub to: FilterAt,

    /// Compress a copy into a file or through a pipe with zstd (--zstd=LEVEL: 1-19) [default: 3].
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, require_equals = true, default_missing_value = "3", value_parser = clap::value_parser!(i32).range(1..=19))]
    pub zstd: Option<i32>,

    /// Replace a filter already at TO.
    #[arg(long)]
    pub force: bool,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Filters to merge: files, or Redis locations (redis://..., redis+cluster://...).
    #[arg(value_name = "FILTER", required = true, num_args = 1.., value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub inputs: Vec<FilterAt>,

    /// The merged filter: a file, or a Redis location. A file may be one of
    /// the inputs (replaced by the union); a Redis input, or any other filter
    /// already there, needs --force.
    #[arg(short = 'o', long = "output", value_name = "OUT", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub output: FilterAt,

    /// Replace a filter already at OUT that is not one of the inputs.
    #[arg(long)]
    pub force: bool,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Filter to check: a file, or a Redis location (redis://..., redis+cluster://...).
    #[arg(value_name = "FILTER", value_hint = clap::ValueHint::AnyPath, value_parser = crate::store::FilterAtParser)]
    pub filter: FilterAt,

    /// If a writer was killed (the file is dirty), first recompute its
    /// checksums and counters from its bits, as the next writer would (takes
    /// the write lock); then check. A clean file is only checked: its damage
    /// is reported, never repaired. (A dirty file's stale checksums cannot be
    /// told from damage: --repair trusts its bits.) For a Redis filter:
    /// removes the journals on this machine of an earlier filter at that
    /// location (deleted or made again), which can never be replayed.
    #[arg(long)]
    pub repair: bool,

    /// Set the time of a filter file with a --window back to TIME (now: this machine's clock; or as --now takes), after a --now too far ahead moved it; lines recorded after TIME count as recorded at TIME. What it did is said on stderr.
    #[arg(long, value_name = "TIME", value_parser = crate::clock::parse_set_clock)]
    pub set_clock: Option<u64>,

    /// Lock waits.
    #[command(flatten)]
    pub lock: LockArgs,

    /// Progress.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Options of `seen plan`.
#[derive(Debug, Args)]
#[command(mut_arg("capacity", |a| a.help(PLAN_CAPACITY).long_help(PLAN_CAPACITY_LONG)))]
pub struct PlanArgs {
    /// Sizing to show (the same flags as `build` and `dedup`).
    #[command(flatten)]
    pub size: SizeArgs,

    /// How many layers of a growing filter to show.
    #[arg(long, value_name = "L", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=62))]
    pub layers: u32,

    /// Also show the textbook classic (unblocked) Bloom filter for -n and -p.
    #[arg(long)]
    pub classic: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
