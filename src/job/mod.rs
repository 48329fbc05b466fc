//! The config layer: a run of `build`, `dedup` or `query` (or the lookups
//! of `stats --probe`) as a plan ([`Job`]: sources, options, keys, store,
//! mode, progress, summary), resolved once from the flags by the command's
//! module, and the one function that executes a plan ([`execute`]; on a
//! store already open, [`execute_on`]): open or create the store, settle the
//! keys, show progress, run the pipeline into the command's [`Output`],
//! commit, report.
//!
//! Which store a run uses is resolved in one place, [`plan::resolve`]
//! (flags → measured input → size → [`Where`]); opening it is the store
//! room's business (`store::Opened`), so neither this room nor the commands
//! tell one store from another.

pub(crate) mod plan;

use crate::format::Header;
use crate::input::{Source, total_bytes};
use crate::keys::KeySpec;
use crate::pipeline::{self, Chunk, Counts, Mode, Options, Taken};
use crate::progress::{Progress, Show};
use crate::report::Summary;
use crate::store::{Opened, Where};
use anyhow::Result;

/// The plan of one run.
#[derive(Debug)]
pub(crate) struct Job {
    /// Where the records come from, in order.
    pub sources: Vec<Source>,
    /// How records are read and hashed; its `keys` are settled by [`execute`].
    pub opts: Options,
    /// The key options the flags ask for (`None`: the filter's own, else raw).
    pub keys: Option<KeySpec>,
    /// The records are keys already (`query --as-keys`): the key options
    /// apply without field selection, recorded or asked.
    pub lines_are_keys: bool,
    /// The store to open or create.
    pub store: Where,
    /// Insert, look up, or judge, write and record.
    pub mode: Mode,
    /// When progress may be shown.
    pub progress: Show,
    /// The records go to standard output (a progress bar yields to them on a
    /// terminal).
    pub prints_lines: bool,
    /// `--summary`: `Some(json)`.
    pub summary: Option<bool>,
}

/// Where a run's verdicts go: the command's sink.
pub trait Output: Send {
    /// Takes a chunk, in input order, on the writer thread; [`Taken::Stop`]
    /// ends the run. In [`Mode::Deferred`] the chunk's output (every part
    /// of it, to every file it goes to) must have been handed to the kernel
    /// when this returns: its new keys are recorded after that.
    ///
    /// # Errors
    /// A failed write (a closed stdout is `BrokenPipe`).
    fn chunk(&mut self, chunk: &Chunk) -> Result<Taken>;

    /// Called once the keys of the run are settled, before the first chunk.
    fn begin(&mut self, keys: KeySpec) {
        let _ = keys;
    }

    /// Called once the run has ended well, before the summary.
    ///
    /// # Errors
    /// A failed write.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// Records written, for the summary (`None`: this output writes none).
    fn written(&self) -> Option<u64> {
        None
    }

    /// Records written to a second output, those not printed (`dedup
    /// --dups-out`), for the summary (`None`: there is none).
    fn dups_written(&self) -> Option<u64> {
        None
    }
}

/// No output: `build` only fills the filter.
pub(crate) struct Nothing;

impl Output for Nothing {
    fn chunk(&mut self, _: &Chunk) -> Result<Taken> {
        Ok(Taken::All)
    }
}

/// Executes `job`, its verdicts going to `out`. Returns what the pipeline
/// counted.
///
/// # Errors
/// A store that cannot be opened, created or committed, an input error, or
/// a failed write; a run stopped by a signal returns
/// [`Interrupted`](crate::signals::Interrupted). A persistent filter is
/// committed whatever happened (what was written stays recorded); a new one
/// appears only when everything went well.
pub(crate) fn execute<O: Output>(job: Job, out: &mut O) -> Result<Counts> {
    refuse_filters_as_lines(&job.sources)?;
    let store = Opened::open(&job.store, job.keys)?;
    if crate::clock::is_fixed() && store.header().window.is_none() {
        let name = match &job.store {
            Where::At { at, .. } => at.to_string(),
            Where::Memory(_) => "the in-memory filter".into(),
        };
        eprintln!(
            "seen: note: --now is ignored: {name} has no time window (the time only \
             matters to a filter made with --window)"
        );
    }
    run_on(job, store, out)
}

/// Executes `job` on `store`, already opened from `job.store`, as
/// [`execute`] does: for `stats --probe`, which counts the filter's bits and
/// then looks lines up in the same filter, read once (a Redis filter's
/// shards are fetched once, not twice).
///
/// # Errors
/// As [`execute`].
pub(crate) fn execute_on<O: Output>(job: Job, store: Opened, out: &mut O) -> Result<Counts> {
    refuse_filters_as_lines(&job.sources)?;
    run_on(job, store, out)
}

/// [`execute`] once the sources are checked and the store is open.
fn run_on<O: Output>(job: Job, mut store: Opened, out: &mut O) -> Result<Counts> {
    let mut opts = job.opts;
    let recorded = store.recorded_keys();
    if let (Some(asked), Some((r, name)), true) = (job.keys, &recorded, store.shared_writer())
        && asked != *r
    {
        {
            anyhow::bail!(
                "{name} records keys `{}` ({r}); this run asks for `{}` ({asked}): writers \
                 sharing a filter must key lines alike, or their bits would mix: drop the key flags",
                r.flags(),
                asked.flags()
            );
        }
    }
    opts.keys = settle_keys(job.keys, recorded, job.lines_are_keys);
    out.begin(opts.keys);
    let before = layer_counts(store.header());
    let progress = Progress::start(
        job.progress,
        total_bytes(&job.sources),
        "lines",
        job.prints_lines,
    );
    let lookup = matches!(job.mode, Mode::Lookup);
    let result = pipeline::run(&job.sources, opts, &mut store, job.mode, |c: &Chunk| {
        out.chunk(c)
    });
    drop(progress);
    let result = result.and_then(|counts| out.finish().map(|()| counts));
    if let Err(e) = &result
        && crate::output::is_broken_pipe(e)
    {
        store.output_lost();
    }
    let rates = result.as_ref().ok().and_then(|c| store.run_rates(c.new));
    let finished = store.finish(result.is_ok());
    // The run's own error first: a store's failure at its end often follows
    // from it (a server gone).
    let counts = result?;
    let after = finished?;
    if job.summary != Some(true) {
        // `--summary --json` counts them in its one JSON object.
        warn_missing_fields(&counts, opts.keys, lookup);
    }
    if let (Some(json), Some(after)) = (job.summary, &after) {
        let mut summary = Summary::new(&counts, out.written(), opts.keys, &before, after);
        if let Some((expected, now)) = rates {
            summary.expected_false_positives = expected;
            summary.fpp_now = now;
        }
        summary.dups_written = out.dups_written();
        summary.print(json);
    }
    Ok(counts)
}

/// The keys of a run: the ones the flags ask for, else the ones `recorded`
/// in the filter file (none for a new or in-memory filter); without field
/// selection when the input is `keys_only` (query items, `--as-keys`).
/// Asking for other keys than a file records is allowed (e.g. to query it
/// differently) but warned about: keys made another way do not match what
/// is in it.
pub(crate) fn settle_keys(
    asked: Option<KeySpec>,
    recorded: Option<(KeySpec, String)>,
    keys_only: bool,
) -> KeySpec {
    let strip = |k: KeySpec| if keys_only { k.without_field() } else { k };
    match (asked.map(strip), recorded) {
        (None, Some((r, _))) => strip(r),
        (None, None) => KeySpec::RAW,
        (Some(a), Some((r, name))) if a != strip(r) => {
            eprintln!(
                "seen: warning: {name} was built with keys `{}` ({r}); using `{}` ({a}) as asked: \
                 lines keyed differently will not match what it holds (drop the key flags to use its own)",
                r.flags(),
                a.flags(),
            );
            a
        }
        (Some(a), _) => a,
    }
}

/// Refuses a filter file given where lines are read: its bytes would be
/// taken as a few dozen binary "lines" and the run would succeed
/// (`seen build --add -o a.seen b.seen` inserted b.seen's bytes).
///
/// # Errors
/// The first source that is a filter, with what to do instead.
pub(crate) fn refuse_filters_as_lines(sources: &[Source]) -> Result<()> {
    use std::os::fd::AsFd;
    for source in sources {
        let holds = match source {
            Source::Stdin => crate::file::holds_filter(std::io::stdin().as_fd()),
            Source::File(p) => crate::file::names_filter(p),
        };
        if holds {
            anyhow::bail!(
                "{} is a seen filter, not a file of lines: give it where a filter goes \
                 (`query FILTER`, `dedup -f FILTER`, `build --add -o FILTER`); to combine \
                 two filters, `seen merge A B -o BOTH`",
                source.name()
            );
        }
    }
    Ok(())
}

/// Says how many records had no key field: their keys are all the empty
/// key (as awk's `$N` is empty), so they count as one, which is rarely what
/// was meant (a header, a blank line, another separator).
fn warn_missing_fields(counts: &Counts, keys: KeySpec, lookup: bool) {
    let (Some(field), missing) = (keys.field, counts.missing_field) else {
        return;
    };
    if missing == 0 {
        return;
    }
    crate::say!(
        "seen: warning: {} of {} records had no field {field} (keys `{}`): {}",
        indicatif::HumanCount(missing),
        indicatif::HumanCount(counts.read),
        keys.flags(),
        if lookup {
            "each was looked up as the empty key"
        } else {
            "each was taken as the empty key, so they all count as one"
        },
    );
}

/// Keys per layer, to compare a filter before and after a run.
fn layer_counts(h: &Header) -> Vec<u64> {
    h.layers.iter().map(|l| l.inserts).collect()
}
