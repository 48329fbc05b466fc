//! Lines longer than memory should need: `build` and `query -c`/`-q` hash a
//! line longer than 64 MiB as it streams by (XXH3 in pieces), so memory stays
//! bounded whatever the line's length, and the bits are the same as when the
//! line is held whole. `SEEN_LONG_RECORD_BYTES` and `SEEN_CHUNK_BYTES` shrink
//! the thresholds so small inputs exercise every boundary.

use crate::common::{BIN, Rng, Run, seen_env, tmp, write};
use std::path::Path;
use std::process::Command;

/// Runs `seen ARGS` in `dir` under `env`; asserts exit 0 or 1.
fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let o = seen_env(dir, env, args, b"");
    assert!(o.code < 2, "{args:?}: {}", o.stderr);
    o
}

/// Records of lengths from 0 to 5,000 bytes (most short), in random order.
fn random_records(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = match rng.below(4) {
                0 => 300 + rng.below(4700) as usize,
                _ => rng.below(40) as usize,
            };
            let mut r = format!("{i}:").into_bytes();
            r.extend((0..len).map(|_| b'a' + rng.below(26) as u8));
            r
        })
        .collect()
}

const SMALL: [(&str, &str); 2] = [
    ("SEEN_CHUNK_BYTES", "64"),
    ("SEEN_LONG_RECORD_BYTES", "250"),
];

#[test]
fn streamed_long_lines_hash_as_whole_ones() {
    let d = tmp();
    let mut rng = Rng(20261130);
    let recs = random_records(&mut rng, 600);
    // Two files; the second ends with a long record and no terminator.
    let (a, b) = recs.split_at(300);
    let join =
        |rs: &[Vec<u8>]| -> Vec<u8> { rs.iter().flat_map(|r| [&r[..], b"\n"].concat()).collect() };
    write(&d, "a.txt", &join(a));
    let mut tail = join(b);
    tail.extend_from_slice(&[b'z'; 3000]);
    write(&d, "b.txt", &tail);

    // Held whole (default thresholds) and streamed: the same bits.
    let args = ["build", "--fixed", "-n", "2000", "-o"];
    run(
        d.path(),
        &[],
        &[&args[..], &["whole.seen", "a.txt", "b.txt"]].concat(),
    );
    run(
        d.path(),
        &SMALL,
        &[&args[..], &["streamed.seen", "a.txt", "b.txt"]].concat(),
    );
    let whole = std::fs::read(d.path().join("whole.seen")).unwrap();
    let streamed = std::fs::read(d.path().join("streamed.seen")).unwrap();
    assert_eq!(whole.len(), streamed.len());
    assert!(whole[4096..] == streamed[4096..], "the bit arrays differ");

    // Every record, long or short, is found by a query that holds lines
    // whole, and counted by one that streams them.
    let all = [&join(&recs)[..], &[b'z'; 3000], b"\n"].concat();
    write(&d, "all.txt", &all);
    let o = run(
        d.path(),
        &[],
        &["query", "-v", "-c", "streamed.seen", "-f", "all.txt"],
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "0",
        "a record is missing"
    );
    let o = run(
        d.path(),
        &SMALL,
        &["query", "-c", "whole.seen", "-f", "all.txt"],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "601");
    // Long lines that were never inserted are (all but surely) absent.
    let absent: Vec<u8> = recs
        .iter()
        .filter(|r| r.len() > 250)
        .flat_map(|r| [&r[..], b"!\n"].concat())
        .collect();
    write(&d, "absent.txt", &absent);
    let o = run(
        d.path(),
        &SMALL,
        &["query", "-c", "whole.seen", "-f", "absent.txt"],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "0");
    // -q streams too, and stops at the first match.
    let o = run(
        d.path(),
        &SMALL,
        &["query", "-q", "whole.seen", "-f", "all.txt"],
    );
    assert_eq!(o.code, 0);
}

/// Whether GNU time is there to measure peak RSS (tests say when they skip).
fn gnu_time() -> bool {
    let there = Command::new("/usr/bin/time").arg("true").output().is_ok();
    if !there {
        eprintln!("skipped: /usr/bin/time (GNU time) is not installed");
    }
    there
}

/// Runs `seen ARGS` in `dir` under GNU time; asserts it succeeded and returns
/// its peak RSS in KiB.
fn peak_rss_kib(dir: &Path, args: &[&str]) -> u64 {
    let o = Command::new("/usr/bin/time")
        .args(["-f", "%M", BIN])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    err.lines().last().unwrap().trim().parse().unwrap()
}

/// A 256 MiB line: `build` needs about the streaming threshold (64 MiB) and
/// the filter, not the line. Measured with GNU time's peak RSS.
#[test]
fn building_from_a_huge_line_does_not_hold_it() {
    if !gnu_time() {
        return;
    }
    let d = tmp();
    let line = vec![b'u'; 256 << 20];
    write(&d, "huge.txt", &[&line[..], b"\nshort\n"].concat());
    drop(line);
    let kib = peak_rss_kib(d.path(), &["build", "-n", "10", "-o", "h.seen", "huge.txt"]);
    assert!(kib < 200 << 10, "peak RSS {kib} KiB for a 256 MiB line");
    // And the line is in the filter, as a query that holds it finds.
    let o = run(d.path(), &[], &["query", "-c", "h.seen", "-f", "huge.txt"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "2");
}

/// Sizing a filter from the input's line count (no `-n`) reads the whole input
/// once before the real pass; that must not hold it either (a whole-file map
/// would count its 300 MB against the peak RSS, and so would a map per thread
/// with `-j 8`). Measured as above.
#[test]
fn counting_pass_does_not_hold_the_input() {
    if !gnu_time() {
        return;
    }
    let d = tmp();
    let line = format!("https://example.com/{}\n", "a".repeat(76));
    write(&d, "big.txt", line.repeat(3 << 20).as_bytes());
    let kib = peak_rss_kib(d.path(), &["build", "-j", "8", "-o", "b.seen", "big.txt"]);
    // At most 4 threads × 16 MiB windows at once, whatever -j says.
    assert!(kib < 100 << 10, "peak RSS {kib} KiB for a 300 MiB input");
    // The filter was sized from the count: 3 Mi lines.
    let o = run(d.path(), &[], &["stats", "--json", "b.seen"]);
    let stats = String::from_utf8_lossy(&o.stdout);
    assert!(stats.contains("\"capacity\":3145728,"), "{stats}");
}

/// With output to a file, `dedup -f` keeps a window's new keys in memory until
/// the window's commit (the output is synced first); a window also ends once
/// 524,288 keys wait, so a long `--commit-every` cannot make memory grow with
/// the input. Measured (release build): 105 MB peak for these 3M lines, 241 MB
/// before the bound (428 MB for 6M lines); the pipeline's own buffers take
/// about 40 MB with lines this short, so the bound checked is the filter plus
/// 128 MiB.
#[test]
fn persistent_dedup_to_a_file_bounds_waiting_keys() {
    if !gnu_time() {
        return;
    }
    let d = tmp();
    let n = 3_000_000u32;
    let mut text = String::with_capacity(n as usize * 16);
    for i in 0..n {
        text.push_str(&format!("https://e.org/{i}\n"));
    }
    write(&d, "in.txt", text.as_bytes());
    let out = std::fs::File::create(d.path().join("out.txt")).unwrap();
    let o = Command::new("/usr/bin/time")
        .args(["-f", "%M", BIN])
        .args([
            "dedup",
            "-f",
            "f.seen",
            "-n",
            "3M",
            "--commit-every",
            "1000M",
        ])
        .arg("in.txt")
        .current_dir(d.path())
        .stdout(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let kib: u64 = err.lines().last().unwrap().trim().parse().unwrap();
    let filter_kib = std::fs::metadata(d.path().join("f.seen")).unwrap().len() / 1024;
    println!("peak RSS {kib} KiB, filter {filter_kib} KiB");
    assert!(
        kib < filter_kib + (128 << 10),
        "peak RSS {kib} KiB for a {filter_kib} KiB filter"
    );
    let printed = std::fs::read(d.path().join("out.txt")).unwrap();
    assert_eq!(printed.len(), text.len(), "every line printed once");
}
