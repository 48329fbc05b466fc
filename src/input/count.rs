//! Counting and sampling the records of input files, to size a filter for
//! them before they are read: counted exactly (in parallel over mapped
//! spans or positioned reads), or, for large files, estimated from samples.

use super::{Source, map_input, open_file, uncountable};
use crate::filter::sizing::policy::Measured;
use anyhow::{Context, Result};
use std::fs::File;
use std::io;

/// Counts the records of every source when all are regular files (a last record
/// without terminator counts); `None` when one is standard input or not a regular
/// file (a pipe cannot be read twice). A large file is counted by up to
/// `threads` (at most [`MAX_COUNT_THREADS`]) threads at once, in mapped spans
/// when `map`, else with positioned reads.
///
/// # Errors
/// When a file cannot be opened or read.
pub(crate) fn count_records(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
) -> Result<Option<u64>> {
    Ok(
        match estimate_past(sources, term, threads, map, u64::MAX)? {
            Measured::Counted(n) | Measured::Estimated(n) => Some(n),
            Measured::Unknown => None,
        },
    )
}

/// Files at least this large are sampled by [`estimate_records`] rather than
/// counted (the `SEEN_SAMPLE_MIN_BYTES` environment variable, a test switch,
/// sets another threshold).
pub(super) const SAMPLE_MIN_BYTES: u64 = 64 << 20;
/// Spans a sampled file is read in, evenly spaced from its start to its end.
const SAMPLES: u64 = 256;
/// Bytes of each sample span.
const SAMPLE_SPAN: usize = 64 << 10;

/// Like [`count_records`], but a file of [`SAMPLE_MIN_BYTES`] or more is not
/// read through: [`SAMPLES`] spans of 64 KiB spread evenly over it are
/// counted (16 MiB, 2 % of an 800 MB file) and its records estimated as their
/// density times its size, at least one per 4 KiB. The estimate may be off
/// either way for a file whose line lengths change at a scale finer than the
/// spacing of the spans: callers must stay correct whatever it says.
///
/// # Errors
/// As [`count_records`].
pub(crate) fn estimate_records(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
) -> Result<Measured> {
    let min = crate::tuning::get()
        .sample_min_bytes
        .unwrap_or(SAMPLE_MIN_BYTES);
    estimate_past(sources, term, threads, map, min)
}

/// [`estimate_records`] sampling files of `min` bytes or more (none with
/// `u64::MAX`: [`count_records`]): `Counted` when every file was counted,
/// `Estimated` when one was sampled, `Unknown` when a source cannot be read
/// twice (standard input, a pipe).
fn estimate_past(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
    min: u64,
) -> Result<Measured> {
    if uncountable(sources).is_some() {
        return Ok(Measured::Unknown);
    }
    let (mut total, mut estimated) = (0u64, false);
    for s in sources {
        let Source::File(path) = s else {
            return Ok(Measured::Unknown);
        };
        let file = open_file(path)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let n = if len >= min.max(1) {
            estimated = true;
            sample_file(&file, term, len)
        } else {
            count_file(&file, term, threads, map)
        };
        total += n.with_context(|| format!("cannot read {}", path.display()))?;
    }
    Ok(if estimated {
        Measured::Estimated(total)
    } else {
        Measured::Counted(total)
    })
}

/// The records of a file of `len` bytes estimated from [`SAMPLES`] spans
/// (see [`estimate_records`]).
fn sample_file(file: &File, term: u8, len: u64) -> io::Result<u64> {
    let span = (SAMPLE_SPAN as u64).min(len);
    let mut buf = vec![0u8; span as usize];
    let (mut bytes, mut terms) = (0u64, 0u64);
    for i in 0..SAMPLES {
        stop_if_signalled()?;
        let at = (len - span) * i / (SAMPLES - 1);
        let n = read_at_most(file, &mut buf, at)?;
        bytes += n as u64;
        terms += memchr::memchr_iter(term, &buf[..n]).count() as u64;
    }
    // Nothing read: the file shrank to nothing since its size was taken.
    let density = if bytes == 0 {
        0.0
    } else {
        terms as f64 / bytes as f64
    };
    // One more for a last record without terminator.
    Ok(((density * len as f64).ceil() as u64).max(len / 4096) + 1)
}

/// Files at least this large are counted in parallel spans; smaller ones,
/// and pseudo-files whose size means nothing (`/proc` says 0), are read to
/// their end.
const PARALLEL_COUNT_BYTES: u64 = 64 << 20;
/// Bytes of a file counted as one piece of work.
const COUNT_SPAN: u64 = 16 << 20;
/// Threads counting one file at most: with [`COUNT_SPAN`], at most 64 MiB of
/// it is mapped (or buffered) at once, whatever `-j` says.
const MAX_COUNT_THREADS: usize = 4;

/// [`count_records`] of one open file. A large file's reported size is split
/// into spans shared out to up to [`MAX_COUNT_THREADS`] threads (span `i`
/// to thread `i % threads`), each mapped (no copy, unmapped after) or, when it
/// cannot be mapped or `map` is false, read with positioned reads; then, and
/// for any other file, whatever lies past the size is read to the end.
fn count_file(file: &File, term: u8, threads: usize, map: bool) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut total = 0;
    let mut pos = 0;
    if len >= PARALLEL_COUNT_BYTES {
        total = count_spans(file, term, threads.min(MAX_COUNT_THREADS), map, len)?;
        pos = len;
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut last = None;
    loop {
        stop_if_signalled()?;
        let n = read_at_most(file, &mut buf, pos)?;
        if n == 0 {
            break;
        }
        total += memchr::memchr_iter(term, &buf[..n]).count() as u64;
        last = Some(buf[n - 1]);
        pos += n as u64;
    }
    if last.is_none() && pos > 0 {
        let mut b = [term];
        if file.read_at(&mut b, pos - 1)? == 1 {
            last = Some(b[0]);
        }
    }
    Ok(total + u64::from(last.is_some_and(|b| b != term)))
}

/// Reads from `offset` until `buf` is full or the file ends, retrying when
/// interrupted; returns the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Ends a count early when SIGINT or SIGTERM has arrived (counting a large
/// uncached file can take many seconds); the caller exits with 128 + signal.
fn stop_if_signalled() -> io::Result<()> {
    if crate::signals::received() == 0 {
        return Ok(());
    }
    Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"))
}

/// The records in the first `len` bytes of `file` (as far as it still goes),
/// counted in [`COUNT_SPAN`]s by `threads` threads.
fn count_spans(file: &File, term: u8, threads: usize, map: bool, len: u64) -> io::Result<u64> {
    let spans = len.div_ceil(COUNT_SPAN);
    let threads = (threads as u64).clamp(1, spans.max(1));
    let share = |t: u64| -> io::Result<u64> {
        let mut buf = Vec::new();
        let mut n = 0u64;
        for i in (t..spans).step_by(threads as usize) {
            stop_if_signalled()?;
            let start = i * COUNT_SPAN;
            let want = COUNT_SPAN.min(len - start) as usize;
            if map && let Ok(m) = map_input(file, start, want) {
                n += memchr::memchr_iter(term, &m).count() as u64;
                continue;
            }
            crate::memory::resize(&mut buf, want, "counting the input")?;
            let got = read_at_most(file, &mut buf, start)?;
            n += memchr::memchr_iter(term, &buf[..got]).count() as u64;
            if got < want {
                // The file shrank meanwhile: nothing more to count.
                break;
            }
        }
        Ok(n)
    };
    std::thread::scope(|s| {
        // A share whose thread cannot start (an address-space limit) is
        // counted here, after this thread's own.
        let mut here = vec![0];
        let mut others = Vec::new();
        for t in 1..threads {
            match std::thread::Builder::new()
                .name("seen-count".into())
                .spawn_scoped(s, move || share(t))
            {
                Ok(h) => others.push(h),
                Err(_) => here.push(t),
            }
        }
        let mut total = 0;
        for t in here {
            total += share(t)?;
        }
        for h in others {
            total += h
                .join()
                .map_err(|_| io::Error::other("a counting thread panicked"))??;
        }
        Ok(total)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::Path;

    /// The mapped count, the striped-read count and a plain count agree, for
    /// any number of threads, with and without a last terminator, across the
    /// span boundaries.
    #[test]
    fn counts_agree_with_and_without_a_map() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut data = Vec::new();
        while data.len() < (70 << 20) + 12_345 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 200) as usize;
            data.extend(std::iter::repeat_n(b'a' + (rng % 26) as u8, len));
            data.push(if rng & 1 == 0 { b'\n' } else { 0 });
        }
        for (name, bytes) in [
            ("big", &data[..]),
            ("cut", &data[..data.len() - 1]),
            ("one", &b"x"[..]),
            ("empty", &b""[..]),
            ("only-terms", &b"\n\n\n"[..]),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let file = File::open(&path).unwrap();
            for term in [b'\n', 0] {
                let want = memchr::memchr_iter(term, bytes).count() as u64
                    + u64::from(bytes.last().is_some_and(|&b| b != term));
                for threads in [1, 2, 3, 8] {
                    let ctx = format!("{name} term={term} threads={threads}");
                    assert_eq!(
                        count_file(&file, term, threads, true).unwrap(),
                        want,
                        "{ctx}"
                    );
                    assert_eq!(
                        count_file(&file, term, threads, false).unwrap(),
                        want,
                        "{ctx}"
                    );
                }
                let sources = [Source::File(path.clone()), Source::File(path.clone())];
                for map in [false, true] {
                    assert_eq!(
                        count_records(&sources, term, 2, map).unwrap(),
                        Some(2 * want)
                    );
                }
            }
        }
        assert_eq!(
            count_records(&[Source::Stdin], b'\n', 2, true).unwrap(),
            None
        );
        // Pseudo-files report a size of 0 (or a page) whatever they hold.
        for proc_file in ["/proc/cpuinfo", "/proc/version"] {
            let Ok(bytes) = std::fs::read(proc_file) else {
                continue;
            };
            let want = memchr::memchr_iter(b'\n', &bytes).count() as u64
                + u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
            let file = File::open(proc_file).unwrap();
            assert_eq!(
                count_file(&file, b'\n', 2, true).unwrap(),
                want,
                "{proc_file}"
            );
        }
    }

    /// A file large enough for the spans, then the same file with an
    /// unterminated last line appended.
    #[test]
    fn large_files_count_an_unterminated_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grows");
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let body = line.repeat((PARALLEL_COUNT_BYTES as usize / line.len()) + 1000);
        std::fs::write(&path, &body).unwrap();
        let file = File::open(&path).unwrap();
        let lines = (body.len() / line.len()) as u64;
        assert_eq!(count_file(&file, b'\n', 3, true).unwrap(), lines);
        let mut more = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        more.write_all(b"x\ny").unwrap();
        assert_eq!(count_file(&file, b'\n', 3, true).unwrap(), lines + 2);
        assert_eq!(count_file(&file, b'\n', 3, false).unwrap(), lines + 2);
    }

    /// A file of `lines` records made by `line(i)`, and its path.
    fn file_of(dir: &Path, name: &str, lines: usize, line: impl Fn(usize) -> String) -> Source {
        let path = dir.join(name);
        let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
        for i in 0..lines {
            writeln!(f, "{}", line(i)).unwrap();
        }
        f.flush().unwrap();
        Source::File(path)
    }

    #[test]
    fn estimates_come_from_samples_of_large_files_only() {
        let dir = tempfile::tempdir().unwrap();
        // 300,000 URL-like lines of 40 to 90 bytes (about 20 MB).
        let urls = file_of(dir.path(), "urls", 300_000, |i| {
            format!("https://example.com/{}/{i}", "x".repeat(i * 7919 % 51))
        });
        // 12 MB of 4-byte lines, then 12 MB of 1,000-byte ones: the density
        // changes once, by 250 times.
        let halves = file_of(dir.path(), "halves", 3_012_000, |i| {
            if i < 3_000_000 {
                format!("{:03}", i % 1000)
            } else {
                "y".repeat(999)
            }
        });
        for (src, lines) in [(&urls, 300_000u64), (&halves, 3_012_000)] {
            let srcs = [src.clone()];
            let exact = count_records(&srcs, b'\n', 2, true).unwrap().unwrap();
            assert_eq!(exact, lines);
            // Under the threshold: counted.
            let counted = estimate_past(&srcs, b'\n', 2, true, u64::MAX).unwrap();
            assert_eq!(counted, Measured::Counted(lines));
            let Measured::Estimated(est) = estimate_past(&srcs, b'\n', 2, true, 1).unwrap() else {
                panic!("not sampled")
            };
            let off = (est as f64 - lines as f64).abs() / lines as f64;
            assert!(off < 0.02, "estimated {est} for {lines} lines");
        }
        // Two files, the smaller counted and the larger sampled: an estimate.
        let both = [urls, halves];
        let len = std::fs::metadata(match &both[0] {
            Source::File(p) => p,
            Source::Stdin => unreachable!(),
        })
        .unwrap()
        .len();
        assert!(matches!(
            estimate_past(&both, b'\n', 2, true, len + 1).unwrap(),
            Measured::Estimated(n) if n.abs_diff(300_000 + 3_012_000) < 3_312_000 / 50
        ));
        assert_eq!(
            estimate_past(&[Source::Stdin], b'\n', 2, true, 1).unwrap(),
            Measured::Unknown
        );
    }

    #[test]
    fn estimates_never_go_under_one_record_per_4_kib() {
        let dir = tempfile::tempdir().unwrap();
        // One 1 MiB record without terminator: no sample sees a terminator.
        let path = dir.path().join("one");
        std::fs::write(&path, vec![b'z'; 1 << 20]).unwrap();
        let srcs = [Source::File(path)];
        assert_eq!(
            estimate_past(&srcs, b'\n', 1, true, 1).unwrap(),
            Measured::Estimated((1 << 20) / 4096 + 1)
        );
        assert_eq!(count_records(&srcs, b'\n', 1, true).unwrap(), Some(1));
    }
}
