//! The local journal of a run that records in Redis: the lines a test-and-set
//! may judge new, written down (and synced) before it is sent, so that a run
//! killed between the server's answer and its own output loses nothing: the
//! next run on this machine prints what the killed one had judged new and not
//! written ([`Journal::replay`]).
//!
//! A journal is a directory per filter; each run appends to files of its own
//! there (`run-PID-N`), holding an exclusive `flock` on them while it lives.
//! Records: a type byte, the chunk number and the payload length (u64
//! little-endian each), then the payload:
//! - `C`: the chunk's records, back to back (synced before the test-and-set);
//! - `V`: one byte per record, 1 when it was judged new;
//! - `W`: the chunk was written; payload: how many of its new records were
//!   (u64; `u64::MAX` for all);
//! - `R`: the chunk's output may not have been read after all (the reader of
//!   a pipe went away): it counts as not written.
//!
//! A chunk with `C` and no `W` is replayed: its records judged new (all of
//! them when its `V` is missing) after the first that were written.

use anyhow::{Context, Result};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Environment variable naming the directory of journals.
pub(crate) const DIR_ENV: &str = "SEEN_JOURNAL_DIR";
/// Bytes after which a run starts a new journal file (the old one goes once
/// all its chunks are written).
const SEGMENT_BYTES: u64 = 64 << 20;
/// "All of its new records were written."
const ALL: u64 = u64::MAX;
/// Output that may still sit unread in a pipe or socket buffer when the
/// reader goes away (`| head`): the chunks written last, this many bytes of
/// them, are printed again by the next run ([`Journal::retract_recent`]).
const UNREAD_BYTES: u64 = 8 << 20;

/// The directory of journals, on this machine, of the filter named `name`
/// whose meta value is `meta` (the same filter however its location is
/// written; another filter made under the same name gets another one).
pub(super) fn dir_for(name: &str, meta: &[u8]) -> Result<PathBuf> {
    let base = match std::env::var_os(DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
            (Some(x), _) if !x.is_empty() => PathBuf::from(x).join("seen/journals"),
            (_, Some(h)) if !h.is_empty() => PathBuf::from(h).join(".local/state/seen/journals"),
            _ => anyhow::bail!(
                "no directory for the journal of Redis filter {name}: set {DIR_ENV} (or HOME) \
                 to a directory on this machine"
            ),
        },
    };
    let id = xxhash_rust::xxh3::xxh3_64(meta);
    Ok(base.join(format!("{name}-{id:016x}")))
}

/// One file of a run's journal.
struct Segment {
    path: PathBuf,
    file: File,
    /// Chunks `first..end` have their `C` record here.
    first: u64,
    end: u64,
    bytes: u64,
}

/// The journal a run writes.
pub(crate) struct Journal {
    dir: PathBuf,
    segments: VecDeque<Segment>,
    /// Chunks journalled so far, and reported written.
    chunks: u64,
    acked: u64,
    /// Verdicts of the newest chunk, not yet written down.
    verdicts: Vec<u8>,
    files_made: u64,
    /// This run's files are `run-{run}-{n}`: the start time and the process.
    run: String,
    /// A chunk was written only in part (the sink stopped).
    partial: bool,
    /// Bytes of the chunks journalled and not yet written, oldest first.
    pending: VecDeque<u64>,
    /// The chunks written last (number, bytes), as many as cover
    /// [`UNREAD_BYTES`].
    recent: VecDeque<(u64, u64)>,
}

fn put(file: &mut File, kind: u8, seq: u64, payload: &[u8]) -> std::io::Result<u64> {
    // One write per record: the head and its payload.
    let mut buf = Vec::with_capacity(17 + payload.len());
    buf.push(kind);
    buf.extend_from_slice(&seq.to_le_bytes());
    buf.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    buf.extend_from_slice(payload);
    file.write_all(&buf)?;
    Ok(buf.len() as u64)
}

impl Journal {
    /// Starts this run's journal in `dir`.
    ///
    /// # Errors
    /// When the directory cannot be made.
    pub(crate) fn start(dir: &Path) -> Result<Journal> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make the journal directory {}", dir.display()))?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            segments: VecDeque::new(),
            chunks: 0,
            acked: 0,
            verdicts: Vec::new(),
            files_made: 0,
            run: format!(
                "{:020}-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
                std::process::id()
            ),
            partial: false,
            pending: VecDeque::new(),
            recent: VecDeque::new(),
        })
    }

    fn newest(&mut self) -> Result<&mut Segment> {
        let full = self
            .segments
            .back()
            .is_none_or(|s| s.bytes >= SEGMENT_BYTES);
        if full {
            self.files_made += 1;
            // Names sort in the order runs started, then in the order of
            // their files; never one that exists (another machine's run on a
            // shared directory).
            let path = self
                .dir
                .join(format!("run-{}-{:06}", self.run, self.files_made));
            let file = OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot create the journal {}", path.display()))?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .with_context(|| format!("cannot lock the journal {}", path.display()))?;
            self.segments.push_back(Segment {
                path,
                file,
                first: self.chunks,
                end: self.chunks,
                bytes: 0,
            });
        }
        Ok(self.segments.back_mut().expect("a segment"))
    }

    /// Writes down the verdicts of the newest chunk, if not yet done.
    fn flush_verdicts(&mut self) -> Result<()> {
        if self.chunks == 0 || self.verdicts.is_empty() {
            return Ok(());
        }
        let seq = self.chunks - 1;
        let v = std::mem::take(&mut self.verdicts);
        let s = self
            .segments
            .iter_mut()
            .find(|s| (s.first..s.end).contains(&seq))
            .expect("the chunk's segment");
        s.bytes += put(&mut s.file, b'V', seq, &v)
            .with_context(|| format!("cannot write the journal {}", s.path.display()))?;
        Ok(())
    }

    /// Writes down a chunk's records (synced) before they are judged.
    ///
    /// # Errors
    /// When the journal cannot be written or synced.
    pub(crate) fn chunk(&mut self, records: &[u8]) -> Result<()> {
        self.flush_verdicts()?;
        let seq = self.chunks;
        let s = self.newest()?;
        s.bytes += put(&mut s.file, b'C', seq, records)
            .and_then(|n| s.file.sync_data().map(|()| n))
            .with_context(|| format!("cannot write the journal {}", s.path.display()))?;
        s.end = seq + 1;
        self.chunks += 1;
        self.pending.push_back(records.len() as u64);
        Ok(())
    }

    /// Adds the verdicts of the newest chunk's next records (true: new).
    pub(crate) fn verdicts(&mut self, new: impl IntoIterator<Item = bool>) {
        self.verdicts.extend(new.into_iter().map(u8::from));
    }

    /// The oldest chunk not yet reported written was written: all its new
    /// records, or the first `new`.
    ///
    /// # Errors
    /// When the journal cannot be written.
    pub(crate) fn written(&mut self, new: Option<usize>) -> Result<()> {
        let seq = self.acked;
        if seq + 1 == self.chunks {
            self.flush_verdicts()?;
        }
        self.acked += 1;
        self.partial |= new.is_some();
        let n = new.map_or(ALL, |n| n as u64);
        let Some(s) = self
            .segments
            .iter_mut()
            .find(|s| (s.first..s.end).contains(&seq))
        else {
            return Ok(());
        };
        s.bytes += put(&mut s.file, b'W', seq, &n.to_le_bytes())
            .with_context(|| format!("cannot write the journal {}", s.path.display()))?;
        let bytes = self.pending.pop_front().unwrap_or(0);
        self.recent.push_back((seq, bytes));
        while self.recent.len() > 1
            && self.recent.iter().skip(1).map(|r| r.1).sum::<u64>() >= UNREAD_BYTES
        {
            self.recent.pop_front();
        }
        // Files whose chunks were all written go (never the one being
        // filled, nor one with chunks that could still be retracted).
        let keep_from = self.recent.front().map_or(self.acked, |r| r.0);
        while self.segments.len() > 1 && self.segments[0].end <= keep_from {
            let s = self.segments.pop_front().expect("a segment");
            let _ = std::fs::remove_file(&s.path);
        }
        Ok(())
    }

    /// The output was closed by its reader (`| head`): what the chunks
    /// written last wrote may never have been read (it sat in a pipe's
    /// buffer), so they count as not written and the next run prints their
    /// new records again (perhaps twice, never lost).
    pub(crate) fn retract_recent(&mut self) {
        for &(seq, _) in &self.recent {
            if let Some(s) = self
                .segments
                .iter_mut()
                .find(|s| (s.first..s.end).contains(&seq))
            {
                let _ = put(&mut s.file, b'R', seq, &[]);
            }
        }
        self.partial = true;
    }

    /// Ends the journal of a run that went well: its files go, unless some
    /// lines judged new were not written (the sink stopped early): then they
    /// stay for the next run, as after a failure ([`Journal::keep`]).
    pub(crate) fn close(mut self) {
        if self.partial || self.acked < self.chunks {
            return self.keep();
        }
        for s in self.segments.drain(..) {
            let _ = std::fs::remove_file(&s.path);
        }
    }

    /// Ends the journal of a run that failed: the verdicts known are written
    /// down, and the files stay for the next run.
    pub(crate) fn keep(mut self) {
        let _ = self.flush_verdicts();
        for s in &self.segments {
            let _ = s.file.sync_data();
        }
    }

    /// Prints, to `out`, what the dead runs journalled in `dir` had judged
    /// new and not written (each record with `term` after it), then removes
    /// their journals. Journals of live runs (locked) are left alone. Returns
    /// the records printed.
    ///
    /// # Errors
    /// When a journal cannot be read or `out` cannot be written.
    pub(crate) fn replay(dir: &Path, term: u8, out: &mut dyn Write) -> Result<u64> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(0);
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("run-"))
            })
            .collect();
        // Oldest run first, each run's files in the order it made them.
        paths.sort();
        let mut held = Vec::new();
        let mut bytes = Vec::new();
        for p in &paths {
            let Ok(mut f) = OpenOptions::new().read(true).write(true).open(p) else {
                continue;
            };
            if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err()
            {
                continue; // a live run's
            }
            // Replayed and removed by another run since we listed it.
            if f.metadata().is_ok_and(|m| m.nlink() == 0) {
                continue;
            }
            let mut b = Vec::new();
            f.read_to_end(&mut b)
                .with_context(|| format!("cannot read the journal {}", p.display()))?;
            bytes.push(b);
            held.push((p.clone(), f));
        }
        let mut printed = 0;
        for b in &bytes {
            printed += replay_one(b, term, out)?;
        }
        out.flush().context("cannot write standard output")?;
        for (p, _) in &held {
            let _ = std::fs::remove_file(p);
        }
        Ok(printed)
    }
}

/// Prints what one journal file holds to print (see [`Journal::replay`]).
fn replay_one(b: &[u8], term: u8, out: &mut dyn Write) -> Result<u64> {
    struct Entry<'a> {
        records: &'a [u8],
        verdicts: Option<&'a [u8]>,
        written: Option<u64>,
    }
    let mut chunks: std::collections::BTreeMap<u64, Entry> = Default::default();
    let mut at = 0;
    while at + 17 <= b.len() {
        let kind = b[at];
        let seq = u64::from_le_bytes(b[at + 1..at + 9].try_into().expect("8"));
        let len = u64::from_le_bytes(b[at + 9..at + 17].try_into().expect("8")) as usize;
        let Some(payload) = b.get(at + 17..at + 17 + len) else {
            break; // cut short by the kill: never sent
        };
        at += 17 + len;
        match kind {
            b'C' => {
                chunks.insert(
                    seq,
                    Entry {
                        records: payload,
                        verdicts: None,
                        written: None,
                    },
                );
            }
            b'V' => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.verdicts = Some(payload);
                }
            }
            b'W' if len == 8 => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.written = Some(u64::from_le_bytes(payload.try_into().expect("8")));
                }
            }
            b'R' => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.written = None;
                }
            }
            _ => break,
        }
    }
    let mut printed = 0;
    for e in chunks.values() {
        if e.written == Some(ALL) {
            continue;
        }
        let skip = e.written.unwrap_or(0);
        let mut new_seen = 0;
        let records = e.records.strip_suffix(&[term]).unwrap_or(e.records);
        if records.is_empty() && e.records.is_empty() {
            continue;
        }
        for (i, r) in records.split(|&c| c == term).enumerate() {
            let is_new = match e.verdicts {
                Some(v) => v.get(i).is_none_or(|&x| x == 1),
                None => true,
            };
            if !is_new {
                continue;
            }
            new_seen += 1;
            if new_seen <= skip {
                continue;
            }
            out.write_all(r)
                .and_then(|()| out.write_all(&[term]))
                .context("cannot write standard output")?;
            printed += 1;
        }
    }
    Ok(printed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_what_was_judged_new_and_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path()).unwrap();
        j.chunk(b"a\nb\nc\n").unwrap();
        j.verdicts([true, false, true]);
        j.written(None).unwrap();
        j.chunk(b"d\ne\nf\n").unwrap();
        j.verdicts([true, true, false]);
        j.chunk(b"g\nh\n").unwrap(); // no verdicts: all count as new
        j.chunk(b"i\nj\nk").unwrap();
        j.verdicts([true, true, true]);
        j.written(None).unwrap(); // chunk 1 written
        j.written(Some(1)).unwrap(); // chunk 2: only its first new one
        // A live run's journal is not touched.
        let mut out = Vec::new();
        assert_eq!(Journal::replay(dir.path(), b'\n', &mut out).unwrap(), 0);
        drop(j); // killed: the lock goes with the process
        let mut out = Vec::new();
        let n = Journal::replay(dir.path(), b'\n', &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "h\ni\nj\nk\n");
        assert_eq!(n, 4);
        // Replayed journals are gone.
        let mut out = Vec::new();
        assert_eq!(Journal::replay(dir.path(), b'\n', &mut out).unwrap(), 0);
    }

    #[test]
    fn a_run_that_stopped_early_keeps_what_it_owes() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path()).unwrap();
        j.chunk(b"a\nb\nc\n").unwrap();
        j.verdicts([true, true, true]);
        j.chunk(b"d\n").unwrap();
        j.verdicts([true]);
        j.written(Some(1)).unwrap();
        j.close();
        let mut out = Vec::new();
        Journal::replay(dir.path(), b'\n', &mut out).unwrap();
        assert_eq!(out, b"b\nc\nd\n");
    }

    #[test]
    fn a_closed_output_takes_back_the_last_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path()).unwrap();
        for r in [&b"a\n"[..], b"b\n", b"c\n"] {
            j.chunk(r).unwrap();
            j.verdicts([true]);
            j.written(None).unwrap();
        }
        j.retract_recent();
        j.close();
        let mut out = Vec::new();
        Journal::replay(dir.path(), b'\n', &mut out).unwrap();
        assert_eq!(out, b"a\nb\nc\n");
    }

    #[test]
    fn a_clean_run_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path()).unwrap();
        j.chunk(b"a\n").unwrap();
        j.verdicts([true]);
        j.written(None).unwrap();
        j.close();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_record_cut_short_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path()).unwrap();
        j.chunk(b"a\nb\n").unwrap();
        let path = j.segments[0].path.clone();
        drop(j);
        let mut b = std::fs::read(&path).unwrap();
        b.extend_from_slice(&[b'C', 1, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0, b'x']);
        std::fs::write(&path, b).unwrap();
        let mut out = Vec::new();
        Journal::replay(dir.path(), b'\n', &mut out).unwrap();
        assert_eq!(out, b"a\nb\n");
    }
}
