//! Issue 40, the filter file's side: writers that laundered damage
//! `verify` had found (item 3), and the smaller edges of item 7 that belong
//! to files and commands rather than to Redis. One test per hole, each
//! shown to fail on the main branch it was fixed against (the test's
//! comment says what it printed there).

use crate::common::{numbered, seen, seen_env, seen_io, stats_json, tmp, write};
use std::fs;
use std::path::Path;

/// Zeroes the 4 KiB page at `at` in the file `name` in `dir`.
fn zero_page(dir: &Path, name: &str, at: usize) {
    let p = dir.join(name);
    let mut b = fs::read(&p).unwrap();
    b[at..at + 4096].fill(0);
    fs::write(&p, b).unwrap();
}

/// `seen verify NAME`'s exit status.
fn verify(dir: &Path, name: &str) -> i32 {
    seen(dir, ["verify", name]).code
}

/// A run that writes a filter: what it is, its arguments, its input and
/// its environment.
type Writer<'a> = (&'a str, &'a [&'a str], &'a [u8], &'a [(&'a str, &'a str)]);

/// Item 3: a clean filter with one zeroed 4 KiB page fails `verify` (exit
/// 1); on main, `echo x | seen dedup -f`, `build --add`, `merge` and `copy`
/// then wrote fresh checksums over the damage (all exit 0, and `verify`
/// exit 0 after each), and the next run printed again 921 lines recorded
/// before. Now each refuses (exit 2, naming the file and `seen verify`)
/// and leaves the file clean with the damage detectable (`verify` exit 1,
/// not 3), both when a writer maps the file and when it holds it in memory
/// (`SEEN_HOLD`), for a few lines and for many; a copy or merge is not made.
#[test]
fn writers_refuse_a_damaged_clean_filter_instead_of_laundering_it() {
    let d = tmp();
    let p = d.path();
    write(&d, "in.txt", &numbered("L-", 0..60_000));
    write(&d, "more.txt", &numbered("M-", 0..1_000));
    seen(
        p,
        ["build", "-q", "-n", "100k", "-o", "good.seen", "in.txt"],
    )
    .ok();
    // One layer of 416 KiB: one checksum segment, which every key touches.
    fs::copy(p.join("good.seen"), p.join("f.seen")).unwrap();
    zero_page(p, "f.seen", 3 * 4096);
    assert_eq!(verify(p, "f.seen"), 1);
    let damaged = fs::read(p.join("f.seen")).unwrap();
    let writers: [Writer; 6] = [
        (
            "dedup -f, one line",
            &["dedup", "-f", "g.seen"],
            b"x\n",
            &[],
        ),
        (
            "dedup -f, held",
            &["dedup", "-f", "g.seen", "more.txt"],
            b"",
            &[("SEEN_HOLD", "always")],
        ),
        (
            "dedup -f, mapped",
            &["dedup", "-f", "g.seen", "more.txt"],
            b"",
            &[("SEEN_HOLD", "never")],
        ),
        (
            "build --add",
            &["build", "--add", "-o", "g.seen", "more.txt"],
            b"",
            &[],
        ),
        ("merge", &["merge", "-o", "m.seen", "g.seen"], b"", &[]),
        ("copy", &["copy", "g.seen", "m.seen"], b"", &[]),
    ];
    for (what, args, input, env) in writers {
        fs::write(p.join("g.seen"), &damaged).unwrap();
        let r = seen_env(p, env, args, input);
        assert_eq!(r.code, 2, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("g.seen") && r.stderr.contains("seen verify"),
            "{what}: {}",
            r.stderr
        );
        assert_eq!(verify(p, "g.seen"), 1, "{what}: the damage was hidden");
        assert_eq!(stats_json(p, "g.seen")["clean"], true, "{what}");
        assert!(!p.join("m.seen").exists(), "{what}: made a filter");
    }
    // A merge into the damaged filter itself leaves it as it was.
    fs::write(p.join("g.seen"), &damaged).unwrap();
    seen(p, ["build", "-q", "-n", "100k", "-o", "h.seen", "more.txt"]).ok();
    let r = seen(p, ["merge", "-o", "g.seen", "g.seen", "h.seen"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(fs::read(p.join("g.seen")).unwrap(), damaged);
    // The undamaged filter takes the same writers.
    let r = seen_io(p, ["dedup", "-f", "good.seen"], b"x\n");
    assert_eq!((r.code, &r.stdout[..]), (0, &b"x\n"[..]), "{}", r.stderr);
    seen(p, ["build", "--add", "-o", "good.seen", "more.txt"]).ok();
    assert_eq!(verify(p, "good.seen"), 0);
}

/// Item 3, lazily: a writer checks a segment's checksum when it is about
/// to rewrite it, not the whole file, so damage in a segment no key of the
/// run touches is left as it was, and found by `verify`; a run whose line
/// lands in the damaged segment refuses. On main, `a` and `b` left the
/// damage (in segment 3 of 4) alone, but `c`, whose blocks are in that
/// segment, was recorded (exit 0) and `verify` then exited 0.
#[test]
fn damage_in_a_segment_a_writer_does_not_touch_stays_detectable() {
    let d = tmp();
    let p = d.path();
    write(&d, "in.txt", &numbered("S-", 0..10_000));
    // A fixed layer of 3.76 MiB: four checksum segments.
    seen(
        p,
        [
            "build", "-q", "--fixed", "-n", "1M", "-o", "f.seen", "in.txt",
        ],
    )
    .ok();
    let len = fs::metadata(p.join("f.seen")).unwrap().len();
    assert_eq!(len, 3_952_640);
    // A page of the last segment (the bits start at 4096).
    zero_page(p, "f.seen", 4096 + (3 << 20) + 4096);
    assert_eq!(verify(p, "f.seen"), 1);
    for line in ["a\n", "b\n", "c\n"] {
        let r = seen_io(p, ["dedup", "-f", "f.seen"], line.as_bytes());
        assert!(r.code == 0 || r.code == 2, "{}", r.stderr);
        assert_eq!(verify(p, "f.seen"), 1, "after {line:?}: {}", r.stderr);
    }
}

/// Item 7: `--now 9999-12-31T23:59:59Z` was refused with an overflow
/// message while `@253402300799`, the same moment, was accepted; and a
/// `+25:00` offset (no place's) was accepted. On main: exit 2, "converting
/// datetime with time zone offset `+00` to timestamp overflowed", and exit
/// 0 for `+25:00`. Now the last second of 9999 is taken in any form, and
/// an offset of 24 hours or more is refused, saying why.
#[test]
fn now_takes_the_last_second_of_9999_and_refuses_offsets_of_a_day() {
    let d = tmp();
    let p = d.path();
    seen_io(p, ["build", "-o", "f.seen"], b"a\n").ok();
    for t in [
        "@253402300799",
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59+00:00",
        "9999-12-31T22:59:59-01:00",
        "2026-12-01T09:00:00+23:59",
        "1970-01-01T00:00:00Z",
    ] {
        let r = seen(p, ["query", "--now", t, "f.seen", "a"]);
        assert_eq!(
            (r.code, &r.stdout[..]),
            (0, &b"a\n"[..]),
            "{t}: {}",
            r.stderr
        );
    }
    for (t, why) in [
        ("2026-12-01T09:00:00+25:00", "24 hours"),
        ("2026-12-01T09:00:00-24:00", "24 hours"),
        ("9999-12-31T23:59:59-00:01", "9999"),
        ("@253402300800", "9999"),
        ("1969-12-31T23:59:59Z", "1970"),
        ("1970-01-01T00:30:00+01:00", "1970"),
        ("2026-12-01T09:00:00", "RFC 3339"),
        ("2026-12-01", "RFC 3339"),
    ] {
        let r = seen(p, ["query", "--now", t, "f.seen", "a"]);
        assert_eq!(r.code, 2, "{t}: {}", r.stderr);
        assert!(
            r.stderr.contains(why) && !r.stderr.contains("overflow"),
            "{t}: {}",
            r.stderr
        );
    }
}

/// Runs `script` with `sh -c` in `dir`, `$SEEN` naming the binary.
fn sh(dir: &Path, script: &str) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("SEEN", crate::common::BIN)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Item 7: `stats`, `stats --json`, `plan`, `verify` and `completions`,
/// whose output is their work, exited 0 having printed nothing when
/// standard output was closed (`>&-`; on main: exit 0 and an empty stderr
/// for each). Now each is an error (exit 2, saying so) before anything is
/// done, as `dedup` and `query` are, and so is an output open read-only;
/// `> /dev/null` still throws a report away on purpose, and `stats` with
/// `--max-fpp` or `--max-fill` (asked for its exit status) still runs.
#[test]
fn reports_refuse_a_closed_standard_output() {
    let d = tmp();
    let p = d.path();
    write(&d, "in.txt", &numbered("c", 0..1000));
    seen(p, ["build", "-q", "-o", "f.seen", "in.txt"]).ok();
    for cmd in [
        "stats f.seen",
        "stats --json f.seen",
        "stats --probe in.txt f.seen",
        "plan -n 1M",
        "verify f.seen",
        "completions bash",
    ] {
        for redirect in [">&-", "1<in.txt"] {
            let o = sh(p, &format!("\"$SEEN\" {cmd} {redirect}"));
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd} {redirect}: {err}");
            assert!(
                err.contains("standard output is"),
                "{cmd} {redirect}: {err}"
            );
        }
        let o = sh(p, &format!("\"$SEEN\" {cmd} > /dev/null"));
        assert_eq!(o.status.code(), Some(0), "{cmd}: {o:?}");
    }
    for cmd in ["stats --max-fpp 0.5 f.seen", "stats --max-fill 0.9 f.seen"] {
        let o = sh(p, &format!("\"$SEEN\" {cmd} >&-"));
        assert_eq!(o.status.code(), Some(0), "{cmd}: {o:?}");
    }
    let o = sh(p, "\"$SEEN\" stats --max-fill 0.0001 f.seen >&-");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
}

/// Item 7: under an address-space limit, a thread that could not be
/// started panicked: `(ulimit -v 52500; seen dedup -f new.seen big.txt)`
/// exited 101, "failed to spawn thread" (the line counting's scoped
/// threads; the checksum writer and `merge`'s rayon pool were the same).
/// On main, this sweep of limits gave exit 101 (dedup -f at 52,500 KiB
/// and near it). Now a thread that cannot start is done without: its work
/// runs on the calling thread (or the run stops with exit 2 where a
/// thread is needed); 134 (an abort on a small allocation, as the README
/// says) is allowed, a panic never.
#[test]
fn a_thread_that_cannot_start_is_never_a_panic() {
    let d = tmp();
    let p = d.path();
    // Over 16 MiB: counted on two threads.
    write(
        &d,
        "big.txt",
        &numbered("https://u.example/p", 0..1_000_000),
    );
    seen_io(p, ["build", "-q", "-n", "10M", "-o", "a.seen"], b"a\n").ok();
    seen_io(p, ["build", "-q", "-n", "10M", "-o", "b.seen"], b"b\n").ok();
    let mut seen_codes = std::collections::BTreeMap::<i32, Vec<u32>>::new();
    for kib in (30_000..=110_000).step_by(2_500) {
        for cmd in [
            "rm -f new.seen; exec \"$SEEN\" dedup -j 2 -f new.seen big.txt > /dev/null",
            "exec \"$SEEN\" merge --force -o m.seen a.seen b.seen",
        ] {
            let o = sh(p, &format!("ulimit -v {kib}; {cmd}"));
            // `exec`: an abort is seen as the signal itself, not the shell's
            // 134 (CI saw "memory allocation of 20164 bytes failed" so).
            let code = o.status.code().unwrap_or_else(|| {
                use std::os::unix::process::ExitStatusExt;
                128 + o.status.signal().unwrap_or(-129)
            });
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                [0, 2, 134].contains(&code) && !err.contains("panicked"),
                "ulimit -v {kib}; {cmd}: exit {code}: {err}"
            );
            seen_codes.entry(code).or_default().push(kib);
        }
    }
    // The sweep reached both ends: runs that fit, and runs refused.
    assert!(
        seen_codes.contains_key(&0) && seen_codes.contains_key(&2),
        "{seen_codes:?}"
    );
}

/// The number of layers of the filter `name` in `dir`, and its file size.
fn layers_and_bytes(dir: &Path, name: &str) -> (usize, u64) {
    let s = stats_json(dir, name);
    (
        s["layers"].as_array().unwrap().len(),
        s["file_bytes"].as_u64().unwrap(),
    )
}

/// Item 7: `build --add` of lines all present already added an empty
/// layer when the newest layer was exactly full (so did `dedup -f` held
/// in memory). On main: 1 layer of 16,384 bytes became 2 layers of 32,768
/// bytes with 1,000 inserts, after each. Now a layer is added only when a
/// key needs it: the first line not present.
#[test]
fn a_full_layer_grows_only_when_a_line_needs_room() {
    let d = tmp();
    let p = d.path();
    write(&d, "k.txt", &numbered("k", 0..1000));
    seen(p, ["build", "-q", "-n", "1000", "-o", "k.seen", "k.txt"]).ok();
    let full = layers_and_bytes(p, "k.seen");
    assert_eq!(full.0, 1);
    assert_eq!(stats_json(p, "k.seen")["inserts"], 1000);
    seen(p, ["build", "--add", "-o", "k.seen", "k.txt"]).ok();
    assert_eq!(layers_and_bytes(p, "k.seen"), full, "build --add");
    for hold in ["always", "never"] {
        let r = seen_env(
            p,
            &[("SEEN_HOLD", hold)],
            ["dedup", "-f", "k.seen", "k.txt"],
            b"",
        );
        assert_eq!((r.code, r.stdout.len()), (0, 0), "{}", r.stderr);
        assert_eq!(layers_and_bytes(p, "k.seen"), full, "dedup -f, hold {hold}");
    }
    // Lines present, then one new: that one gets a layer.
    let mut more = numbered("k", 0..1000);
    more.extend_from_slice(b"new\n");
    write(&d, "more.txt", &more);
    let r = seen(p, ["dedup", "-f", "k.seen", "more.txt"]);
    assert_eq!((r.code, &r.stdout[..]), (0, &b"new\n"[..]), "{}", r.stderr);
    assert_eq!(layers_and_bytes(p, "k.seen").0, 2);
    assert_eq!(stats_json(p, "k.seen")["inserts"], 1001);
}

/// Item 7: a run that creates a filter makes its temporary file, then
/// locks it; another run sweeping killed runs' leftovers in that moment
/// took the unlocked, empty file for a killed run's, removed it and said
/// "removed 1 temporary file … left by runs that were killed" (the maker
/// then made another). On main, a fresh empty temporary file next to the
/// target was removed, and said so, by `build`. Now a fresh empty one
/// (younger than a minute) is left to its maker; an old empty one, and a
/// killed run's (sized at once), are removed as before.
#[test]
fn a_fresh_empty_temporary_file_is_not_taken_for_a_killed_runs() {
    let d = tmp();
    let p = d.path();
    write(&d, "in.txt", &numbered("t", 0..100));
    let fresh = p.join(".k.seen.FRESH1.tmp");
    fs::write(&fresh, b"").unwrap();
    let r = seen(p, ["build", "-o", "k.seen", "in.txt"]);
    r.ok();
    assert!(!r.stderr.contains("removed"), "{}", r.stderr);
    assert!(fresh.exists(), "a fresh empty temporary file was removed");
    // Two minutes old: abandoned.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    fs::File::options()
        .write(true)
        .open(&fresh)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // And one with a killed run's bytes, fresh.
    fs::write(p.join(".k.seen.SIZED1.tmp"), vec![0u8; 8192]).unwrap();
    let r = seen(p, ["build", "--force", "-o", "k.seen", "in.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("removed 2 temporary files"),
        "{}",
        r.stderr
    );
    assert!(!fresh.exists());
}

/// Item 7: a writer of a filter longer than the file-size limit (`ulimit
/// -f`) recorded its line, then failed to write the checksums at the end
/// of the file (EFBIG): exit 2, with the file left dirty, so the next run
/// said "a run was killed or crashed". On main: `echo new1 | seen dedup
/// -f u.seen` under `ulimit -f 100` (51,200 bytes in sh's 512-byte blocks,
/// for a 434,176-byte filter) printed new1, exit 2, and `stats` said
/// `"clean": false`. Now such a filter is refused before anything is
/// read, printed or written (exit 2, naming the limit and what to do), by
/// `dedup -f` and `build --add`; the file is left clean and unchanged.
#[test]
fn a_filter_longer_than_the_file_size_limit_is_refused_before_writing() {
    let d = tmp();
    let p = d.path();
    seen_io(p, ["build", "-q", "-n", "100k", "-o", "u.seen"], b"a\nb\n").ok();
    let before = fs::read(p.join("u.seen")).unwrap();
    assert_eq!(before.len(), 434_176);
    for cmd in [
        "echo new1 | \"$SEEN\" dedup -f u.seen",
        "echo new1 | \"$SEEN\" build --add -o u.seen",
    ] {
        let o = sh(p, &format!("ulimit -f 100; {cmd}"));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(o.stdout.is_empty(), "{cmd}: printed {:?}", o.stdout);
        assert!(
            err.contains("u.seen") && err.contains("ulimit -f") && !err.contains("warning"),
            "{cmd}: {err}"
        );
        assert_eq!(fs::read(p.join("u.seen")).unwrap(), before, "{cmd}");
    }
    // A limit the file fits in: it runs.
    let o = sh(p, "ulimit -f 1000; echo new1 | \"$SEEN\" dedup -f u.seen");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(o.stdout, b"new1\n");
    assert_eq!(stats_json(p, "u.seen")["clean"], true);
}
