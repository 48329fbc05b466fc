//! `seen dedup`: print each line the first time it is seen, in input order.

use super::options;
use crate::cli::DedupArgs;
use crate::file::MemFilter;
use crate::filter::sizing::policy::{self, Asked};
use crate::hash::DEFAULT_SEED;
use crate::input::{Source, sources};
use crate::job::plan::{Sizing, Wants, resolve};
use crate::job::{Job, Output, execute};
use crate::output::stdout;
use crate::pipeline::Store;
use crate::pipeline::{Chunk, Commit, Mode, Taken};
use crate::store::{Ability, FilterAt};
use crate::units::Every;
use anyhow::{Context, Result, bail};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, IoSlice, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Lines per commit span of `dedup -f` by default.
pub const DEFAULT_COMMIT_LINES: u64 = 1_000_000;
/// Time per commit span of `dedup -f` by default.
pub const DEFAULT_COMMIT_TIME: Duration = Duration::from_secs(1);

/// Whether standard output is a regular file (its data must be synced before the
/// lines it holds are recorded).
fn stdout_is_file() -> bool {
    rustix::fs::fstat(std::io::stdout())
        .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file())
        .unwrap_or(false)
}

/// Runs `seen dedup`.
///
/// # Errors
/// Bad arguments, unreadable inputs, a filter that cannot be opened or written,
/// a `--dups-out` file that cannot be used, or a failed write to either output.
pub fn run(a: DedupArgs) -> Result<ExitCode> {
    // Before anything is read: a --dups-out file that cannot be written, or
    // that is an input, the filter or standard output, is refused now.
    let dups = match &a.dups_out {
        Some(path) => Some(DupsFile::open(
            path,
            &sources(&a.files),
            a.filter.as_ref().and_then(FilterAt::path),
        )?),
        None => None,
    };
    if a.max_count == Some(0) {
        // Nothing may be printed: nothing is read or recorded (a --dups-out
        // file is left empty, as `>` leaves it).
        if let Some(d) = dups {
            d.truncate()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (repeats, once, max) = (a.repeated || a.all_repeated, a.repeated, a.max_count);
    let fpp = Asked::from(a.size).fpp();
    let job = match plan(a, dups.as_ref()) {
        Ok(job) => job,
        Err(e) => {
            if let Some(d) = dups {
                d.abandon();
            }
            return Err(e);
        }
    };
    let mut printer = Printer::new(stdout(), repeats);
    if once {
        printer = printer.each_once(fpp)?;
    }
    if let Some(m) = max {
        printer = printer.at_most(m, job.opts.term);
    }
    if let Some(d) = dups {
        let name = d.path.display().to_string();
        printer = printer.dups_to(d.truncate()?, name);
    }
    execute(job, &mut printer)?;
    Ok(ExitCode::SUCCESS)
}

/// The `--dups-out` file of a run: open for writing, checked to be none of
/// the run's other files, and not yet truncated.
struct DupsFile {
    file: File,
    path: PathBuf,
    /// It did not exist: made by this run (removed if the run is refused).
    created: bool,
}

impl DupsFile {
    /// Opens (or creates) `path` for writing, and refuses it when it is
    /// standard output, an input (`sources`) or the `filter` file, compared
    /// by device and inode (a terminal or `/dev/null` may be shared).
    ///
    /// # Errors
    /// `-`, a file that cannot be opened for writing, or one of those.
    fn open(path: &Path, sources: &[Source], filter: Option<&Path>) -> Result<DupsFile> {
        if path == Path::new("-") {
            bail!(
                "--dups-out -: standard output already carries the printed lines; give the \
                 lines not printed a file of their own (e.g. --dups-out dups.txt)"
            );
        }
        let (file, created) = match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Not truncated yet: it may be an input (checked next). A
                // dangling link is followed, as `>` follows it.
                let f = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path);
                (
                    f.with_context(|| format!("cannot open --dups-out file {}", path.display()))?,
                    false,
                )
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create --dups-out file {}", path.display()));
            }
        };
        let d = DupsFile {
            file,
            path: path.to_owned(),
            created,
        };
        match d.refuse_shared(sources, filter) {
            Ok(()) => Ok(d),
            Err(e) => {
                d.abandon();
                Err(e)
            }
        }
    }

    /// Refuses a file that is also standard output, an input or the filter:
    /// the lines would mix into the printed ones, or it would be truncated
    /// before it is read.
    fn refuse_shared(&self, sources: &[Source], filter: Option<&Path>) -> Result<()> {
        use rustix::fs::{FileType, Stat, fstat, stat};
        let name = self.path.display();
        let me = fstat(&self.file)
            .map_err(io::Error::from)
            .with_context(|| format!("cannot inspect --dups-out file {name}"))?;
        if FileType::from_raw_mode(me.st_mode) == FileType::CharacterDevice {
            // /dev/null, a terminal: not storage, any number may share it.
            return Ok(());
        }
        let same = |o: rustix::io::Result<Stat>| {
            o.is_ok_and(|o| o.st_dev == me.st_dev && o.st_ino == me.st_ino)
        };
        if same(fstat(io::stdout())) {
            bail!(
                "--dups-out {name} is standard output: the lines not printed would be mixed \
                 into the printed ones; give them a file of their own"
            );
        }
        for source in sources {
            let is_it = match source {
                Source::Stdin => same(fstat(io::stdin())),
                Source::File(p) => same(stat(p)),
            };
            if is_it {
                bail!(
                    "--dups-out {name} is also an input ({}): it would be truncated before it \
                     is read; give the lines not printed another file",
                    source.name()
                );
            }
        }
        if let Some(f) = filter
            && same(stat(f))
        {
            bail!(
                "--dups-out {name} is the filter ({}): it would be overwritten; give the lines \
                 not printed another file",
                f.display()
            );
        }
        Ok(())
    }

    /// The file, emptied (when it is a regular file), for the run to write.
    ///
    /// # Errors
    /// When it cannot be truncated.
    fn truncate(self) -> Result<File> {
        if self.file.metadata().is_ok_and(|m| m.is_file()) {
            self.file.set_len(0).with_context(|| {
                format!("cannot truncate --dups-out file {}", self.path.display())
            })?;
        }
        Ok(self.file)
    }

    /// Gives the file up before the run: removed if this run made it.
    fn abandon(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The run `a` asks for.
///
/// # Errors
/// An input that cannot be measured to size the filter, or a filter that
/// cannot be sized.
fn plan(a: DedupArgs, dups: Option<&DupsFile>) -> Result<Job> {
    let opts = options(a.records);
    let sources = sources(&a.files);
    let sizing = Sizing {
        given: a.size.any(),
        window_given: a.size.window.is_some(),
        asked: Asked::from(a.size),
        seed: None,
        quiet: a.progress.quiet,
        link: a.lock.link(),
        layout: a.redis_layout.unwrap_or_default(),
    };
    let (wants, mode) = match a.filter.clone() {
        None => (Wants::Memory, Mode::Insert),
        Some(at) => {
            if let Some(m) = a.max_count
                && let Some(why) = at.refuses(Ability::StopAfter(m))
            {
                bail!("{why}");
            }
            let printed = !(a.repeated || a.all_repeated);
            // A store that records before printing (it journals) needs no
            // commit protocol: its test-and-set runs as lines are judged.
            let mode = if at.records_before_printing() {
                Mode::Insert
            } else {
                mode(&a, dups)?
            };
            let journal = printed.then_some(opts.term);
            (Wants::Remember { at, journal }, mode)
        }
    };
    let store = resolve(wants, &sizing, &sources, &opts)?;
    Ok(Job {
        sources,
        opts,
        keys: a.keys.spec(),
        lines_are_keys: false,
        store,
        mode,
        progress: a.progress.into(),
        prints_lines: true,
        summary: a.summary.then_some(a.json),
    })
}

/// How `dedup -f` records: a line only once it is written (`--commit-every`
/// says how often), to both outputs it may go to (standard output,
/// `--dups-out`), each synced first when it is a regular file; except with
/// `--repeated`, whose new lines are never printed, so nothing waits for the
/// output.
///
/// # Errors
/// When an output to sync cannot be duplicated (out of file descriptors).
fn mode(a: &DedupArgs, dups: Option<&DupsFile>) -> Result<Mode> {
    if a.repeated || a.all_repeated {
        return Ok(Mode::Insert);
    }
    let (lines, every) = match a.commit_every {
        Some(Every::Lines(n)) => (n, Duration::MAX),
        Some(Every::Time(t)) => (u64::MAX, t),
        None => (DEFAULT_COMMIT_LINES, DEFAULT_COMMIT_TIME),
    };
    let mut sync = Vec::new();
    if stdout_is_file() {
        let out = io::stdout().as_fd().try_clone_to_owned();
        let out = out.context("cannot duplicate standard output")?;
        sync.push((File::from(out), "standard output".to_owned()));
    }
    if let Some(d) = dups
        && d.file.metadata().is_ok_and(|m| m.is_file())
    {
        let name = d.path.display();
        let f = d.file.try_clone();
        let f = f.with_context(|| format!("cannot duplicate --dups-out file {name}"))?;
        sync.push((f, format!("--dups-out file {name}")));
    }
    Ok(Mode::Deferred(Commit {
        lines,
        every,
        stretch: a.commit_every.is_none(),
        stops: a.max_count.is_some(),
        sync,
    }))
}

/// Prints each record's first occurrence (or, with `repeated`, every later
/// one) in input order; with [`Printer::dups_to`], writes the others to a
/// second output.
pub struct Printer<W> {
    out: W,
    repeated: bool,
    written: u64,
    /// `-m`: the most records to print, and their terminator.
    max: Option<(u64, u8)>,
    /// `-d`: the repeated records printed so far, so each is printed once.
    printed: Option<MemFilter>,
    /// `--dups-out`: where the records not printed go.
    dups: Option<Dups>,
}

/// The second output of `dedup --dups-out`: every record read and not
/// printed, in input order.
struct Dups {
    out: BufWriter<File>,
    /// Its path, for messages.
    name: String,
    written: u64,
}

impl<W: Write + Send> Printer<W> {
    /// A printer to `out`.
    pub fn new(out: W, repeated: bool) -> Self {
        Printer {
            out,
            repeated,
            written: 0,
            max: None,
            printed: None,
            dups: None,
        }
    }

    /// Writes every record not printed to `file` (named `name` in messages),
    /// in input order, as [`Output::chunk`] says.
    pub fn dups_to(self, file: File, name: String) -> Self {
        Printer {
            dups: Some(Dups {
                out: BufWriter::with_capacity(crate::output::BUF, file),
                name,
                written: 0,
            }),
            ..self
        }
    }

    /// Prints each repeated record once (`-d`), remembering those printed in
    /// an in-memory filter at rate `fpp`.
    ///
    /// # Errors
    /// When its memory cannot be had.
    pub fn each_once(self, fpp: f64) -> Result<Self> {
        let spec = policy::printed_repeats(fpp);
        Ok(Printer {
            printed: Some(MemFilter::with_spec(&spec, DEFAULT_SEED)?),
            ..self
        })
    }

    /// `-d`: of the chunk's records seen before, those not printed yet, each
    /// once, in order.
    fn repeats_once(&mut self, c: &Chunk) -> Result<Taken> {
        let printed = self.printed.as_mut().expect("-d keeps a filter");
        let (mut repeats, mut hashes) = (Vec::new(), Vec::new());
        c.for_each_hashed(|record, h, seen| {
            if seen {
                repeats.push(record);
                hashes.push(h);
            }
        });
        let mut was = Vec::new();
        printed.insert_batch(&hashes, &mut was)?;
        let mut room = self.max.map_or(u64::MAX, |(m, _)| m - self.written);
        for (record, was) in repeats.iter().zip(was) {
            if !was && room > 0 {
                self.out.write_all(record).context("cannot write output")?;
                self.written += 1;
                room -= 1;
            }
        }
        self.out.flush().context("cannot write output")?;
        Ok(if room == 0 {
            Taken::Stop { new: 0 }
        } else {
            Taken::All
        })
    }

    /// Prints at most `max` records (ended by `term`), then stops the run.
    pub fn at_most(self, max: u64, term: u8) -> Self {
        Printer {
            max: Some((max, term)),
            ..self
        }
    }
}

impl<W: Write + Send> Output for Printer<W> {
    /// Prints the chunk's records to print; with `--dups-out`, then writes
    /// the others (up to where `-m` stopped), and hands both to the kernel
    /// before returning: a deferred pipeline records the chunk's new lines
    /// only then.
    fn chunk(&mut self, c: &Chunk) -> Result<Taken> {
        if self.printed.is_some() {
            return self.repeats_once(c);
        }
        // The runs of printed records go out as they lie in the chunk, many per
        // vectored write, with no copy through a user-space buffer; when they
        // are short (lines alternating new and seen), one iovec per line costs
        // the kernel more than copying them into the buffer does.
        let (mut runs, mut bytes) = (Vec::new(), 0);
        let before = self.written;
        let written = &mut self.written;
        // Records that may still be printed (-m).
        let mut room = self.max.map_or(u64::MAX, |(m, _)| m - before);
        let term = self.max.map_or(b'\n', |(_, t)| t);
        // Where the last printed run ends (its address): with -m, the run
        // stops there, and the records after it are not read.
        let mut last_end = 0;
        c.for_each_run(self.repeated, |mut run, mut n| {
            if n > room {
                if room == 0 {
                    return Ok(());
                }
                // The first `room` records of the run.
                let last = memchr::memchr_iter(term, run).nth(room as usize - 1);
                run = &run[..last.expect("a run holds n records") + 1];
                n = room;
            }
            room -= n;
            *written += n;
            bytes += run.len();
            last_end = run.as_ptr_range().end as usize;
            runs.push(IoSlice::new(run));
            Ok(())
        })?;
        let out = &mut self.out;
        write_runs(out, &mut runs, bytes).context("cannot write output")?;
        // Every chunk goes to the kernel before the next: a deferred pipeline
        // records it only then, and a signal ends the run after it.
        out.flush().context("cannot write output")?;
        if let Some(d) = &mut self.dups {
            d.chunk(c, !self.repeated, (room == 0).then_some(last_end))?;
        }
        if room == 0 {
            // -m reached: only the new records printed are recorded.
            let new = if self.repeated {
                0
            } else {
                self.written - before
            };
            return Ok(Taken::Stop { new: new as usize });
        }
        Ok(Taken::All)
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush().context("cannot write output")?;
        if let Some(d) = &mut self.dups {
            d.out.flush().map_err(|e| d.failed(e))?;
        }
        Ok(())
    }

    fn written(&self) -> Option<u64> {
        Some(self.written)
    }

    fn dups_written(&self) -> Option<u64> {
        self.dups.as_ref().map(|d| d.written)
    }
}

impl Dups {
    /// Writes the runs of the chunk's records whose verdict is `want` that
    /// start before address `stop` (all without it), and flushes them.
    fn chunk(&mut self, c: &Chunk, want: bool, stop: Option<usize>) -> Result<()> {
        let (mut runs, mut bytes, mut records) = (Vec::new(), 0, 0);
        c.for_each_run(want, |run, n| {
            // Runs of either verdict alternate: one that starts before the
            // last printed record's end also ends before it.
            if stop.is_none_or(|stop| (run.as_ptr() as usize) < stop) {
                bytes += run.len();
                records += n;
                runs.push(IoSlice::new(run));
            }
            Ok(())
        })?;
        write_runs(&mut self.out, &mut runs, bytes)
            .and_then(|()| self.out.flush())
            .map_err(|e| self.failed(e))?;
        self.written += records;
        Ok(())
    }

    /// The error of a failed write: a closed pipe is an error here, not
    /// the quiet end a closed standard output is (`| head`).
    fn failed(&self, e: io::Error) -> anyhow::Error {
        let e = if e.kind() == io::ErrorKind::BrokenPipe {
            io::Error::other("its reader has closed it (broken pipe)")
        } else {
            e
        };
        anyhow::Error::new(e).context(format!("cannot write to --dups-out file {}", self.name))
    }
}

/// Writes `runs` (`bytes` in all): as one vectored write when they are long
/// enough on average, else copied into the buffer.
fn write_runs<W: Write>(out: &mut W, runs: &mut [IoSlice<'_>], bytes: usize) -> io::Result<()> {
    if bytes >= runs.len() * MIN_AVERAGE_RUN {
        write_all_vectored(out, runs)
    } else {
        runs.iter().try_for_each(|r| out.write_all(r))
    }
}

/// Average bytes per run of printed records below which a chunk's output is
/// copied into the buffer rather than handed to the kernel as one iovec per run
/// (measured: lines alternating new and seen, 80 bytes each, doubled the
/// system time with vectored writes).
const MIN_AVERAGE_RUN: usize = 128;

/// Writes every byte of `bufs` (`Write::write_all_vectored` is not stable),
/// at most [`IOV_MAX`] slices per call.
fn write_all_vectored<W: Write>(out: &mut W, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    /// The smallest `IOV_MAX` POSIX allows and Linux's value.
    const IOV_MAX: usize = 1024;
    while !bufs.is_empty() {
        match out.write_vectored(&bufs[..bufs.len().min(IOV_MAX)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MemFilter;
    use crate::filter::sizing;
    use crate::pipeline::Store;

    /// Issue 19, hole 1: a file counted at 1,400 lines that holds 2,000,000
    /// distinct ones by the time it is read (it was still being written).
    /// The filter sized from the count must grow and keep every line but
    /// about `p` of them; a fixed layer of 1,400 (what `dedup FILE` made
    /// before) calls most of them seen.
    #[test]
    fn a_filter_sized_from_a_count_grows_past_it() {
        let l = policy::from_count(1_400, 1e-6).unwrap();
        let mut f = MemFilter::with_first(&l.spec, &l.first.unwrap(), DEFAULT_SEED).unwrap();
        let (mut dropped, mut out) = (0u64, Vec::new());
        let keys: Vec<_> = (0..2_000_000u32)
            .map(|i| crate::hash::hash(format!("https://g.example/{i}").as_bytes(), DEFAULT_SEED))
            .collect();
        for batch in keys.chunks(4096) {
            f.insert_batch(batch, &mut out).unwrap();
            dropped += out.iter().filter(|&&seen| seen).count() as u64;
        }
        let h = f.header();
        assert!(h.layers.len() > 1, "it grew: {} layers", h.layers.len());
        let now: Vec<_> = h.layers.iter().map(|l| (l.layout, l.inserts)).collect();
        assert!(sizing::compound_fpp(&now) <= 1e-6, "{now:?}");
        // Expected about 2 (2M lines at 1e-6); 20 is far past any fluke.
        assert!(
            dropped <= 20,
            "{dropped} of 2,000,000 new lines called seen"
        );
        assert_eq!(f.inserts() + dropped, 2_000_000);
    }

    /// A writer that takes at most `max` bytes per call, and is interrupted on
    /// every third call.
    struct Stingy {
        out: Vec<u8>,
        max: usize,
        calls: usize,
    }

    impl Write for Stingy {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.max - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.max {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn vectored_writes_resume_after_short_and_interrupted_writes() {
        let pieces: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| format!("line {i}\n").repeat(i as usize % 5).into_bytes())
            .collect();
        let want: Vec<u8> = pieces.concat();
        for max in [1, 7, 100, 1 << 20] {
            let mut w = Stingy {
                out: Vec::new(),
                max,
                calls: 0,
            };
            let mut bufs: Vec<IoSlice> = pieces.iter().map(|p| IoSlice::new(p)).collect();
            write_all_vectored(&mut w, &mut bufs).unwrap();
            assert!(w.out == want, "max {max}");
        }
        let mut full = Stingy {
            out: Vec::new(),
            max: 0,
            calls: 0,
        };
        let e = write_all_vectored(&mut full, &mut [IoSlice::new(b"x")]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
    }
}
