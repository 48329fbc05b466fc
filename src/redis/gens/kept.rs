//! Copies of sealed generations kept on this machine between runs, beside
//! the filter's journals: a run loads the copies earlier runs took (of
//! generations still live) instead of looking those generations up on the
//! server again, and writes each copy it takes, so a short run pays for
//! the sealed generations no other run here has copied yet, not for all.
//!
//! A copy stays true as long as its generation lives: a sealed generation
//! takes no line that decides anything (see `copies`), its index is never
//! used again (indexes only grow), and the directory is the filter's own
//! (named, as the journal's, by its meta value, which holds a random tag:
//! a filter made again under the name gets another directory; one left by
//! a filter made again at the same location is removed on the way).
//!
//! Beside them, files `ttl-G-…` list the sets of generation G that runs
//! here gave their time to live (`EXPIRE`, in the fenced add): a set keeps
//! it until it expires with its slice, so a later run in the same slice
//! does not send it again. Files `looked-G-…` count the lines runs here
//! looked up on the server in each group of G not copied, so that many
//! short runs copy a group once their lookups together have cost what
//! the copy does, as one long run would.
//!
//! A file of copies holds one generation's copies of some groups: a head of
//! [`HEAD`] bytes (magic, the generation's index, slice, rank, fingerprint
//! bits and sets per group, the groups in it, the body's checksum), then
//! per group its number and fingerprints (u32 each), the offset of each
//! set's first fingerprint (one more at the end), and the fingerprints,
//! each set's sorted; little-endian. A file is written under a temporary
//! name and renamed, then never changed (it is mapped by readers, and
//! removed once its generation is gone); one that does not check out
//! (damaged, of another generation) is removed, and its groups copied
//! again.

use super::Gen;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first bytes of a file of copies.
const MAGIC: &[u8; 8] = b"seencp\x00\x01";
/// Bytes of a file's head.
const HEAD: usize = 56;
/// Where the head keeps its count of groups, and the body's checksum.
const GROUPS_AT: usize = 44;
const SUM_AT: usize = 48;
/// Seconds after which a temporary file is a dead run's.
const STALE_SECS: u64 = 3600;

/// A copy's bytes: made by this run, or a file's, mapped.
pub(super) enum Bytes {
    Own(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Own(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// The u32 at byte `at` of `b`.
fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn word64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// One (generation, group), copied: where its sets' offsets and its
/// fingerprints are in the bytes it shares with the other groups of its
/// file.
pub(super) struct Copy {
    bytes: Arc<Bytes>,
    starts: usize,
    fps: usize,
    len: usize,
}

impl Copy {
    /// Fingerprints it holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether set `k` holds `fp`.
    pub(super) fn holds(&self, k: usize, fp: u32) -> bool {
        let b = &self.bytes[..];
        let (mut lo, mut hi) = (
            word(b, self.starts + 4 * k) as usize,
            word(b, self.starts + 4 * k + 4) as usize,
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match word(b, self.fps + 4 * mid).cmp(&fp) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// The bytes of one generation's copies, as a file holds them.
pub(super) struct Batch {
    buf: Vec<u8>,
    groups: u32,
}

impl Batch {
    /// A batch of generation `g`'s groups.
    pub(super) fn new(g: &Gen) -> Batch {
        let mut buf = Vec::with_capacity(HEAD);
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&g.index.to_le_bytes());
        buf.extend_from_slice(&g.slice.to_le_bytes());
        buf.extend_from_slice(&g.rank.to_le_bytes());
        buf.extend_from_slice(&g.fp_bits.to_le_bytes());
        buf.extend_from_slice(&g.per_group.to_le_bytes());
        buf.resize(HEAD, 0);
        Batch { buf, groups: 0 }
    }

    /// Adds group `t`, its sets' fingerprints (each sorted) back to back,
    /// set k's from `starts[k]` to `starts[k + 1]`.
    pub(super) fn group(&mut self, t: u64, starts: &[u32], fps: &[u32]) {
        let put = |b: &mut Vec<u8>, w: u32| b.extend_from_slice(&w.to_le_bytes());
        put(&mut self.buf, t as u32);
        put(&mut self.buf, fps.len() as u32);
        for &s in starts {
            put(&mut self.buf, s);
        }
        for &f in fps {
            put(&mut self.buf, f);
        }
        self.groups += 1;
    }

    /// The file's bytes.
    pub(super) fn finish(mut self) -> Vec<u8> {
        let sum = xxhash_rust::xxh3::xxh3_64(&self.buf[HEAD..]);
        self.buf[GROUPS_AT..GROUPS_AT + 4].copy_from_slice(&self.groups.to_le_bytes());
        self.buf[SUM_AT..SUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
        self.buf
    }
}

/// What a file's head says of its generation.
#[derive(Debug, PartialEq)]
struct Made {
    index: u64,
    slice: u64,
    rank: u32,
    fp_bits: u32,
    per_group: u64,
}

impl Made {
    fn of(g: &Gen) -> Made {
        Made {
            index: g.index,
            slice: g.slice,
            rank: g.rank,
            fp_bits: g.fp_bits,
            per_group: g.per_group,
        }
    }
}

/// A file's generation and groups; `None` when it does not check out (cut
/// short, damaged: its checksum, its offsets).
fn parse(bytes: Arc<Bytes>) -> Option<(Made, Vec<(u64, Copy)>)> {
    let b = &bytes[..];
    if b.len() < HEAD || b[..8] != *MAGIC {
        return None;
    }
    let made = Made {
        index: word64(b, 8),
        slice: word64(b, 16),
        rank: word(b, 24),
        fp_bits: word(b, 28),
        per_group: word64(b, 32),
    };
    if word64(b, SUM_AT) != xxhash_rust::xxh3::xxh3_64(&b[HEAD..]) {
        return None;
    }
    let sets = usize::try_from(made.per_group).ok()?;
    let mut groups = Vec::new();
    let mut at = HEAD;
    for _ in 0..word(b, GROUPS_AT) {
        let head = b.get(at..at + 8)?;
        let (t, len) = (u64::from(word(head, 0)), word(head, 4) as usize);
        let starts = at + 8;
        let fps = starts.checked_add(sets.checked_add(1)?.checked_mul(4)?)?;
        let end = fps.checked_add(len.checked_mul(4)?)?;
        if end > b.len() {
            return None;
        }
        // Offsets that only grow, up to the count: lookups stay in bounds.
        let mut last = 0;
        for k in 0..=sets {
            let s = word(b, starts + 4 * k);
            if s < last || s as usize > len || (k == sets && s as usize != len) {
                return None;
            }
            last = s;
        }
        groups.push((
            t,
            Copy {
                bytes: Arc::clone(&bytes),
                starts,
                fps,
                len,
            },
        ));
        at = end;
    }
    (at == b.len()).then_some((made, groups))
}

/// Where the copies of the filter whose journals are in `journal_dir` are
/// kept: beside that directory (a journal directory goes when its runs
/// are done; copies stay).
pub(super) fn dir_of(journal_dir: &Path) -> PathBuf {
    let name = journal_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    journal_dir.with_file_name(format!("{name}.copies"))
}

/// Where a filter's copies are kept, and its location (written there, as
/// beside a journal, so that a filter made again there can tell them).
pub(super) type Place = (PathBuf, String);

/// Makes a batch's copies the run's own, and writes them to a file where
/// they are kept (when they are; a copy that cannot be written is only not
/// kept).
pub(super) fn own(place: Option<&Place>, bytes: Vec<u8>) -> Vec<(u64, Copy)> {
    if let Some((dir, location)) = place {
        let _ = write(dir, location, &bytes);
    }
    parse(Arc::new(Bytes::Own(bytes)))
        .map(|(_, groups)| groups)
        .unwrap_or_default()
}

/// A name no other run's file has: the time, the process and a counter.
fn unique() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{:020}-{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn write(dir: &Path, location: &str, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot make the directory {}", dir.display()))?;
    crate::redis::journal::mark_location(dir, location);
    Ok(put(dir, &format!("copy-{}", unique()), bytes)?)
}

/// Writes file `name` in `dir` whole: under a temporary name, then renamed.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".tmp-{name}"));
    let done = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, dir.join(name)));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// The copies kept in `dir` of the generations `live` (at most `budget`
/// fingerprints in all), by (generation, group). On the way it removes
/// the files of generations not live (gone for good: indexes are not
/// used again, and the time a writer works at only moves forward, with
/// the filter's clock), those that do not check out, and temporary files
/// of runs long dead.
pub(super) fn load(dir: &Path, live: &[Gen], budget: usize) -> HashMap<(u64, u64), Copy> {
    let mut held = HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return held;
    };
    let mut names: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    names.sort();
    let (mut total, mut full) = (0, false);
    for p in names {
        let file = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(file) = file else { continue };
        if file.starts_with(".tmp-") {
            remove_if_stale(&p);
            continue;
        }
        let log = file.strip_prefix("ttl-").or(file.strip_prefix("looked-"));
        if let Some(g) = log {
            let index = g.split('-').next().and_then(|g| g.parse::<u64>().ok());
            if !index.is_some_and(|g| live.iter().any(|l| l.index == g)) {
                let _ = std::fs::remove_file(&p);
            }
            continue;
        }
        if !file.starts_with("copy-") {
            continue;
        }
        let Some((made, groups)) = map(&p).and_then(parse) else {
            let _ = std::fs::remove_file(&p);
            continue;
        };
        let Some(g) = live.iter().find(|g| g.index == made.index) else {
            let _ = std::fs::remove_file(&p);
            continue;
        };
        if Made::of(g) != made {
            let _ = std::fs::remove_file(&p);
            continue;
        }
        for (t, c) in groups {
            // Past the budget: nothing more taken (files still checked).
            if full || total + c.len() > budget {
                full = true;
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = held.entry((g.index, t)) {
                total += c.len();
                e.insert(c);
            }
        }
    }
    held
}

/// A record of a log file (see [`Log`]): a value of 40 bits, with a check
/// of it in the high bits (a record cut short or damaged is skipped).
fn record(v: u64) -> u64 {
    (xxhash_rust::xxh3::xxh3_64(&v.to_le_bytes()) << 40) | (v & VALUE_MASK)
}

/// The low bits of a record: its value.
const VALUE_MASK: u64 = (1 << 40) - 1;

/// Log files of one kind and generation past which a run that reads them
/// writes what they hold to one file and removes them.
const LOG_FILES: usize = 16;

/// What a log file lists, by the start of its name (`ttl-G-…`,
/// `looked-G-…`: of generation G).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    /// Sets given their time to live: a set's number, counted over every
    /// group.
    Ttl,
    /// Lines looked up on the server in a group not copied: the group's
    /// number times 2^32 plus the lines (see [`looked_record`]).
    Looked,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Ttl => "ttl",
            Kind::Looked => "looked",
        }
    }
}

/// The record of `n` lines looked up in group `t` (groups are at most
/// 256; `n` is cut to 32 bits).
pub(super) fn looked_record(t: u64, n: u64) -> u64 {
    debug_assert!(t < 256, "group {t}");
    ((t & 0xff) << 32) | n.min(u64::from(u32::MAX))
}

/// The values of the good records of kind `kind` of generation `g` in
/// `dir`, as `compact` makes them (the same in fewer values). Past
/// [`LOG_FILES`] files, those values go to one file and the files read are
/// removed (a run writing one of them meanwhile loses what it adds after:
/// what the logs hold only saves commands, see [`Kind`]).
fn read_log(
    dir: &Path,
    kind: Kind,
    g: u64,
    compact: impl FnOnce(Vec<u64>) -> Vec<u64>,
) -> Vec<u64> {
    let (mut values, mut read) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return values;
    };
    let prefix = format!("{}-{g}-", kind.prefix());
    for e in entries.filter_map(Result::ok) {
        if !e.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let Ok(b) = std::fs::read(e.path()) else {
            continue;
        };
        for r in b.chunks_exact(8) {
            let r = u64::from_le_bytes(r.try_into().expect("8 bytes"));
            if record(r & VALUE_MASK) == r {
                values.push(r & VALUE_MASK);
            }
        }
        read.push(e.path());
    }
    let values = compact(values);
    if read.len() > LOG_FILES
        && put(dir, &format!("{prefix}{}", unique()), &bytes_of(&values)).is_ok()
    {
        for p in read {
            let _ = std::fs::remove_file(p);
        }
    }
    values
}

/// The sets of generation `g` that runs on this machine gave their time to
/// live (set numbers, counted over every group), from the files `ttl-G-…`
/// in `dir`.
pub(super) fn given_ttl(dir: &Path, g: u64) -> std::collections::HashSet<u64> {
    let compact = |mut v: Vec<u64>| {
        v.sort_unstable();
        v.dedup();
        v
    };
    read_log(dir, Kind::Ttl, g, compact).into_iter().collect()
}

/// The lines runs on this machine looked up on the server per group of
/// generation `g`, from the files `looked-G-…` in `dir`.
pub(super) fn looked(dir: &Path, g: u64) -> HashMap<u64, u64> {
    let sums = |v: Vec<u64>| -> HashMap<u64, u64> {
        let mut sums: HashMap<u64, u64> = HashMap::new();
        for v in v {
            *sums.entry(v >> 32).or_default() += v & u64::from(u32::MAX);
        }
        sums
    };
    let compact = |v: Vec<u64>| {
        let mut v: Vec<u64> = sums(v)
            .into_iter()
            .map(|(t, n)| looked_record(t, n))
            .collect();
        v.sort_unstable();
        v
    };
    sums(read_log(dir, Kind::Looked, g, compact))
}

/// This run's log files, one per kind and generation it wrote to: lists
/// of records that later runs here read (see [`Kind`]).
#[derive(Default)]
pub(super) struct Log {
    files: HashMap<(Kind, u64), std::fs::File>,
}

impl Log {
    /// Closes the files of generations `alive` says are gone (a run that
    /// streams for months keeps a file open per live generation only).
    pub(super) fn keep_live(&mut self, alive: impl Fn(u64) -> bool) {
        self.files.retain(|&(_, g), _| alive(g));
    }

    /// Adds `values` of generation `g` to this run's file of that kind in
    /// `place`'s directory. A file that cannot be written only costs the
    /// next runs what it would have saved them.
    pub(super) fn add(&mut self, place: &Place, kind: Kind, g: u64, values: &[u64]) {
        use std::io::Write;
        if values.is_empty() {
            return;
        }
        let f = match self.files.entry((kind, g)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let dir = &place.0;
                let _ = std::fs::create_dir_all(dir);
                crate::redis::journal::mark_location(dir, &place.1);
                let path = dir.join(format!("{}-{g}-{}", kind.prefix(), unique()));
                let Ok(f) = std::fs::File::create(path) else {
                    return;
                };
                e.insert(f)
            }
        };
        if f.write_all(&bytes_of(values)).is_err() {
            self.files.remove(&(kind, g));
        }
    }
}

fn bytes_of(values: &[u64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| record(v).to_le_bytes())
        .collect()
}

/// Removes the copies of the filters made before this one under its name
/// at its location (directories beside `dir` of the same name and another
/// id that record `location`): none of them can be used again.
pub(super) fn remove_others(dir: &Path, location: &str) {
    // `NAME-ID.copies`, ID 16 hex digits.
    let split = |p: &Path| -> Option<(String, String)> {
        let f = p.file_name()?.to_str()?.strip_suffix(".copies")?;
        let (name, id) = f.rsplit_once('-')?;
        (id.len() == 16 && id.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| (name.to_string(), id.to_string()))
    };
    let (Some((name, id)), Some(base)) = (split(dir), dir.parent()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let other = split(&p).is_some_and(|(n, i)| n == name && i != id);
        if other && crate::redis::journal::location_of(&p).as_deref() == Some(location) {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// A file mapped whole (`None`: gone, empty, or not mappable).
fn map(p: &Path) -> Option<Arc<Bytes>> {
    let f = std::fs::File::open(p).ok()?;
    let len = usize::try_from(f.metadata().ok()?.len()).ok()?;
    if len < HEAD {
        return None;
    }
    // Written once under another name and renamed, never changed after:
    // see `map_input` for what the mapping is.
    let m = crate::input::map_input(&f, 0, len).ok()?;
    Some(Arc::new(Bytes::Mapped(m)))
}

fn remove_if_stale(p: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(STALE_SECS);
    let stale = std::fs::metadata(p)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t < old);
    if stale {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn gen0() -> Gen {
        Gen {
            index: 3,
            slice: 2,
            rank: 1,
            capacity: 1000,
            rate: 1e-3,
            fp_bits: 32,
            per_group: 3,
        }
    }

    fn file() -> Vec<u8> {
        let mut b = Batch::new(&gen0());
        b.group(5, &[0, 2, 2, 5], &[1, 9, 3, 4, 8]);
        b.group(7, &[0, 0, 1, 1], &[6]);
        b.finish()
    }

    /// A batch reads back as written: each set holds its fingerprints
    /// and no other.
    #[test]
    fn a_batch_reads_back() {
        let (made, groups) = parse(Arc::new(Bytes::Own(file()))).unwrap();
        assert_eq!(made, Made::of(&gen0()));
        let (t, c) = &groups[0];
        assert_eq!((*t, c.len()), (5, 5));
        assert!(c.holds(0, 1) && c.holds(0, 9) && !c.holds(0, 3));
        assert!(!c.holds(1, 1) && !c.holds(1, 3));
        assert!(c.holds(2, 3) && c.holds(2, 4) && c.holds(2, 8) && !c.holds(2, 9));
        let (t, c) = &groups[1];
        assert_eq!((*t, c.len()), (7, 1));
        assert!(c.holds(1, 6) && !c.holds(0, 6) && !c.holds(2, 6));
    }

    /// A file cut short, with a byte changed, or whose offsets would read
    /// out of bounds (its checksum made to match) does not check out.
    #[test]
    fn a_bad_file_does_not_check_out() {
        let check = |b: Vec<u8>| parse(Arc::new(Bytes::Own(b))).is_some();
        let good = file();
        assert!(check(good.clone()));
        assert!(!check(good[..good.len() - 4].to_vec()));
        let mut flipped = good.clone();
        flipped[HEAD + 20] ^= 1;
        assert!(!check(flipped));
        let mut b = Batch::new(&gen0());
        b.group(5, &[0, 4, 2, 5], &[1, 9, 3, 4, 8]);
        assert!(!check(b.finish()));
        let mut b = Batch::new(&gen0());
        b.group(5, &[0, 2, 2, 6], &[1, 9, 3, 4, 8]);
        assert!(!check(b.finish()));
    }

    /// Loading takes the files of live generations, up to the budget, and
    /// removes the others and stale temporary files.
    #[test]
    fn load_keeps_what_is_live() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let place = (d.clone(), "here".to_string());
        own(Some(&place), file());
        let mut other = gen0();
        other.index = 2;
        let mut b = Batch::new(&other);
        b.group(1, &[0, 1, 1, 1], &[4]);
        own(Some(&place), b.finish());
        let tmp = d.join(".tmp-old");
        std::fs::write(&tmp, b"x").unwrap();
        let f = std::fs::File::options().write(true).open(&tmp).unwrap();
        f.set_modified(
            std::time::SystemTime::now() - std::time::Duration::from_secs(2 * STALE_SECS),
        )
        .unwrap();
        let live = [gen0()];
        assert_eq!(
            load(&d, &live, 5).len(),
            1,
            "the second group is past the budget"
        );
        let held = load(&d, &live, 100);
        assert_eq!(held.len(), 2);
        assert!(held[&(3, 7)].holds(1, 6));
        assert_eq!(files(&d), 1, "generation 2's file is gone");
        assert!(!tmp.exists(), "the stale temporary file is gone");
        let mut resized = gen0();
        resized.per_group = 4;
        assert!(load(&d, &[resized], 100).is_empty());
        assert_eq!(files(&d), 0);
    }

    /// The sets a run gave their time to live read back, per generation;
    /// a damaged record is skipped; a dead generation's file goes.
    #[test]
    fn sets_given_a_time_to_live_are_kept_per_generation() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let place = (d.clone(), "here".to_string());
        let mut log = Log::default();
        log.add(&place, Kind::Ttl, 3, &[5, 9]);
        log.add(&place, Kind::Ttl, 3, &[12]);
        log.add(&place, Kind::Ttl, 2, &[7]);
        assert_eq!(given_ttl(&d, 3), [5, 9, 12].into());
        assert_eq!(given_ttl(&d, 2), [7].into());
        assert!(given_ttl(&d, 4).is_empty());
        // A record changed on disk (its set number) no longer checks out.
        let f = &named(&d, "ttl-3-")[0];
        let mut b = std::fs::read(f).unwrap();
        b[0] ^= 1;
        std::fs::write(f, b).unwrap();
        assert_eq!(given_ttl(&d, 3), [9, 12].into());
        load(&d, &[gen0()], 100);
        assert_eq!(given_ttl(&d, 3), [9, 12].into(), "generation 3 is live");
        assert!(given_ttl(&d, 2).is_empty(), "generation 2's file is gone");
        // One file a run: past LOG_FILES, one file of them all.
        for j in 0..LOG_FILES as u64 {
            Log::default().add(&place, Kind::Ttl, 3, &[9, 100 + j]);
        }
        let ttl_files = || named(&d, "ttl-3-").len();
        assert_eq!(ttl_files(), LOG_FILES + 1);
        let all: std::collections::HashSet<u64> = [9, 12]
            .into_iter()
            .chain(100..100 + LOG_FILES as u64)
            .collect();
        assert_eq!(given_ttl(&d, 3), all);
        assert_eq!(ttl_files(), 1);
        assert_eq!(given_ttl(&d, 3), all);
    }

    /// Counted lookups read back summed per group; past `LOG_FILES`
    /// files they are written as one; a dead generation's files go.
    #[test]
    fn counted_lookups_add_up_per_group() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let place = (d.clone(), "here".to_string());
        let mut log = Log::default();
        log.add(&place, Kind::Looked, 3, &[looked_record(5, 10)]);
        log.add(
            &place,
            Kind::Looked,
            3,
            &[looked_record(5, 7), looked_record(255, 1)],
        );
        log.add(&place, Kind::Looked, 2, &[looked_record(0, 4)]);
        let sums = looked(&d, 3);
        assert_eq!(sums, [(5, 17), (255, 1)].into());
        assert_eq!(looked(&d, 2), [(0, 4)].into());
        assert!(given_ttl(&d, 3).is_empty(), "a kind of its own");
        // Both kinds of one generation from one run: each in its file.
        log.add(&place, Kind::Ttl, 3, &[42]);
        assert_eq!(given_ttl(&d, 3), [42].into());
        assert_eq!(looked(&d, 3), [(5, 17), (255, 1)].into());
        // A generation gone: its file is closed, the live one's kept.
        assert_eq!(log.files.len(), 3);
        log.keep_live(|g| g == 3);
        assert_eq!(log.files.len(), 2);
        assert!(log.files.keys().all(|&(_, g)| g == 3));
        let count = |d: &Path| named(d, "looked-3-").len();
        // One file a run: 20 more runs, then one file of the sums.
        for _ in 0..LOG_FILES + 4 {
            Log::default().add(&place, Kind::Looked, 3, &[looked_record(5, 1)]);
        }
        assert_eq!(count(&d), LOG_FILES + 5);
        assert_eq!(looked(&d, 3), [(5, 37), (255, 1)].into());
        assert_eq!(count(&d), 1);
        assert_eq!(looked(&d, 3), [(5, 37), (255, 1)].into());
        load(&d, &[gen0()], 100);
        assert!(looked(&d, 2).is_empty(), "generation 2's file is gone");
        assert_eq!(looked(&d, 3)[&5], 37);
    }

    fn files(d: &Path) -> usize {
        named(d, "copy-").len()
    }

    /// The files in `d` whose names begin with `prefix`, in order.
    pub(in crate::redis::gens) fn named(d: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .collect();
        v.sort();
        v
    }

    /// The copies of a filter made before this one under its name, at its
    /// location, go; those of another location, another name, or this
    /// filter stay.
    #[test]
    fn copies_of_a_filter_made_again_go() {
        let base = tempfile::tempdir().unwrap();
        let dir = |n: &str| base.path().join(n);
        let ours = dir("f-00000000000000aa.copies");
        for (n, loc) in [
            ("f-00000000000000aa.copies", "redis://a/f"),
            ("f-00000000000000bb.copies", "redis://a/f"),
            ("f-00000000000000cc.copies", "redis://b/f"),
            ("g-00000000000000dd.copies", "redis://a/f"),
            ("x-f-00000000000000ee.copies", "redis://a/f"),
        ] {
            std::fs::create_dir(dir(n)).unwrap();
            crate::redis::journal::mark_location(&dir(n), loc);
        }
        remove_others(&ours, "redis://a/f");
        let mut left: Vec<String> = std::fs::read_dir(base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "f-00000000000000aa.copies",
                "f-00000000000000cc.copies",
                "g-00000000000000dd.copies",
                "x-f-00000000000000ee.copies"
            ]
        );
    }
}
