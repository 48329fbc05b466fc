//! `seen forget` (issue 41): deletion, exactly, on filter files. A key is
//! present when a layer holds it and it is not on the forget list; a
//! forgotten key is new to `dedup -f` (printed once, then recorded again),
//! absent to `query`, and no other key changes its answer.

use crate::common::{command, numbered, records, seen, seen_io, tmp, write};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;

/// `query -c FILTER` of `keys` (one per line): how many are present.
fn present(dir: &std::path::Path, filter: &str, keys: &[u8]) -> u64 {
    let r = seen_io(dir, ["query", "-c", filter], keys);
    assert!(r.code == 0 || r.code == 1, "{}", r.ctx());
    r.stdout_str().trim().parse().unwrap()
}

/// `seen build -q FLAGS FILE` in `dir`, exit 0.
fn build_from(dir: &std::path::Path, flags: &[&str], file: &std::path::Path) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["build".as_ref(), "-q".as_ref()];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    args.push(file.as_os_str());
    seen(dir, args).code(0);
}

/// The lines of `data` picked by `keep` (by index).
fn pick(data: &[u8], keep: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, l) in records(data, b'\n').into_iter().enumerate() {
        if keep(i) {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

/// The goal's test: forget 100,000 keys of 1,000,000; every one of the
/// other 900,000 is still present (no false negative), every forgotten one
/// is absent, and keys never recorded are present exactly as often as
/// before (the false positives did not change). `dedup -f` of the
/// forgotten keys prints each once and records it again.
#[test]
fn forgotten_keys_are_absent_and_no_other_key_changes() {
    let d = tmp();
    let all = numbered("https://example.com/page/", 0..1_000_000);
    let input = write(&d, "all.txt", &all);
    build_from(
        d.path(),
        &["-n", "1M", "-p", "1e-2", "-o", "f.seen"],
        &input,
    );
    let gone = pick(&all, |i| i % 10 == 3);
    let kept = pick(&all, |i| i % 10 != 3);
    let never = numbered("https://example.org/other/", 0..200_000);
    let fp_before = present(d.path(), "f.seen", &never);
    let before = crate::common::stats_json(d.path(), "f.seen");
    let disk_before = std::fs::metadata(d.path().join("f.seen")).unwrap().blocks() * 512;
    let gone_file = write(&d, "gone.txt", &gone);
    let r = seen(
        d.path(),
        [
            "forget".as_ref(),
            "--summary".as_ref(),
            "f.seen".as_ref(),
            "-f".as_ref(),
            gone_file.as_os_str(),
        ],
    );
    r.code(0)
        .stderr_has("100,000 items read: 100,000 forgotten, 0 not present");
    assert_eq!(present(d.path(), "f.seen", &kept), 900_000);
    assert_eq!(present(d.path(), "f.seen", &gone), 0);
    assert_eq!(present(d.path(), "f.seen", &never), fp_before);
    let s = crate::common::stats_json(d.path(), "f.seen");
    assert_eq!(s["forget"]["entries"], 100_000, "{s}");
    assert_eq!(
        s["forget"]["bytes"],
        1_600_000u64.next_multiple_of(4096),
        "{s}"
    );
    assert_eq!(s["format_version"], "3.0");
    seen(d.path(), ["verify", "f.seen"]).code(0);
    // Each forgotten line once, in input order, even repeated; the others
    // not at all.
    let mut twice = gone.clone();
    twice.extend_from_slice(&pick(&kept, |i| i < 10_000));
    twice.extend_from_slice(&gone);
    let r = seen_io(d.path(), ["dedup", "-f", "f.seen"], &twice);
    r.code(0).stdout(&gone);
    assert_eq!(present(d.path(), "f.seen", &gone), 100_000);
    let s = crate::common::stats_json(d.path(), "f.seen");
    assert_eq!(s["forget"]["entries"], 0, "{s}");
    // Recorded again from a pipe (judged, then recorded): their bits were
    // set, so they are no new inserts and take no room in a new layer (the
    // filter is full), as when a test-and-set finds them present.
    assert_eq!(s["inserts"], before["inserts"], "{s}");
    assert_eq!(s["layers"].as_array().unwrap().len(), 1, "{s}");
    // The emptied list keeps a page on disk, not its 1.6 MB.
    assert_eq!(s["forget"]["bytes"], 4096, "{s}");
    let on_disk = std::fs::metadata(d.path().join("f.seen")).unwrap().blocks() * 512;
    assert!(
        on_disk <= disk_before + 2 * 4096,
        "{on_disk} bytes on disk, {disk_before} before the forget"
    );
    seen(d.path(), ["verify", "f.seen"]).code(0);
}

/// Exit status as grep's: 0 when an item was present and is now forgotten,
/// 1 when none was (never recorded, or forgotten already), 2 on error;
/// `--json` counts them.
#[test]
fn exit_status_says_whether_anything_was_forgotten() {
    let d = tmp();
    seen_io(d.path(), ["build", "-q", "-o", "f.seen"], b"a\nb\nc\n").code(0);
    seen(d.path(), ["forget", "f.seen", "zzz"])
        .code(1)
        .no_stdout();
    seen(d.path(), ["forget", "f.seen", "a", "zzz"]).code(0);
    seen(d.path(), ["forget", "f.seen", "a"]).code(1);
    let r = seen_io(
        d.path(),
        ["forget", "--summary", "--json", "f.seen"],
        b"b\nb\nq\n",
    );
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(r.stderr.trim()).unwrap();
    assert_eq!(v["items"], 3, "{v}");
    assert_eq!(v["forgotten"], 2, "{v}");
    assert_eq!(v["absent"], 1, "{v}");
    assert_eq!(v["list_entries"], 2, "{v}");
    seen_io(d.path(), ["query", "f.seen"], b"a\nb\nc\n")
        .code(0)
        .stdout(b"c\n");
    seen(d.path(), ["forget", "missing.seen", "a"]).code(2);
    // A filter's own key rule applies: forgetting a URL forgets its
    // canonical form.
    seen_io(
        d.path(),
        ["build", "-q", "--url", "-o", "u.seen"],
        b"https://example.com/a\n",
    )
    .code(0);
    seen(d.path(), ["forget", "u.seen", "HTTPS://EXAMPLE.COM:443/a"]).code(0);
    seen(d.path(), ["query", "u.seen", "https://example.com/a"]).code(1);
}

/// A key that was never recorded but reads as present (a false positive)
/// becomes absent when forgotten: the exact white list. Every recorded key
/// stays present.
#[test]
fn a_false_positive_forgotten_becomes_absent() {
    let d = tmp();
    let held = numbered("k", 0..6000);
    let input = write(&d, "held.txt", &held);
    // Far past its capacity (its one page holds about 2,000): many false
    // positives.
    build_from(
        d.path(),
        &["--fixed", "-n", "200", "-p", "1e-2", "-o", "f.seen"],
        &input,
    );
    let others = numbered("other", 0..2000);
    let fps = seen_io(d.path(), ["query", "f.seen"], &others);
    fps.code(0);
    let fps = fps.stdout.clone();
    assert!(records(&fps, b'\n').len() > 10, "the filter is over-full");
    seen_io(d.path(), ["forget", "f.seen"], &fps).code(0);
    seen_io(d.path(), ["query", "-c", "f.seen"], &others)
        .code(1)
        .stdout(b"0\n");
    assert_eq!(present(d.path(), "f.seen", &held), 6000);
}

/// Four `dedup -f` writers and a `forget` on one file at once: each
/// forgotten line is printed exactly once over the writers and a last run
/// of all of them (by a writer that met it after the forget, else by that
/// run), every new line exactly once, and no line that stayed recorded.
#[test]
fn writers_and_a_forget_at_once_print_each_forgotten_line_once() {
    let d = tmp();
    let old = numbered("old", 0..40_000);
    let oldf = write(&d, "old.txt", &old);
    build_from(
        d.path(),
        &["-n", "200k", "-p", "1e-9", "-o", "f.seen"],
        &oldf,
    );
    let gone = pick(&old, |i| i % 4 == 0);
    let gonef = write(&d, "gone.txt", &gone);
    // Each writer: all the old lines (in another order) and new ones of its
    // own and shared.
    let mut inputs = Vec::new();
    for w in 0..4u32 {
        let mut lines: Vec<&[u8]> = records(&old, b'\n');
        let n = lines.len();
        lines.rotate_left(n / 4 * w as usize);
        let mut data = Vec::new();
        for (i, l) in lines.into_iter().enumerate() {
            data.extend_from_slice(l);
            data.push(b'\n');
            if i % 4 == 0 {
                data.extend_from_slice(format!("new{w}-{i}\nshared{i}\n").as_bytes());
            }
        }
        let name = format!("in{w}.txt");
        write(&d, &name, &data);
        inputs.push(name);
    }
    let forget = command(d.path())
        .env("SEEN_FORGET_BATCH", "1000")
        .arg("forget")
        .arg("f.seen")
        .arg("-f")
        .arg(&gonef)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let printed = crate::common::concurrent_writers(d.path(), &[], &inputs);
    let f = forget.wait_with_output().unwrap();
    assert_eq!(f.status.code(), Some(0), "{}", crate::common::stderr(&f));
    let last = seen_io(d.path(), ["dedup", "-f", "f.seen"], &old);
    last.code(0);
    let mut count: HashMap<Vec<u8>, usize> = HashMap::new();
    for l in printed
        .into_iter()
        .chain(records(&last.stdout, b'\n').into_iter().map(<[u8]>::to_vec))
    {
        *count.entry(l).or_default() += 1;
    }
    for l in records(&gone, b'\n') {
        assert_eq!(count.remove(l), Some(1), "{}", String::from_utf8_lossy(l));
    }
    for (l, n) in &count {
        let s = String::from_utf8_lossy(l);
        assert!(
            s.starts_with("new") || s.starts_with("shared"),
            "{s} printed"
        );
        assert_eq!(*n, 1, "{s} printed {n} times");
    }
    assert_eq!(count.len(), 4 * 10_000 + 10_000);
}

/// A `forget` killed at any moment leaves each batch forgotten whole or
/// not at all, the batches before the kill done, and a file that `verify
/// --repair` settles (exit 0) with the list intact.
#[test]
fn a_killed_forget_leaves_whole_batches() {
    let d = tmp();
    let keys = numbered("key", 0..60_000);
    let input = write(&d, "keys.txt", &keys);
    for (t, delay_ms) in [0u64, 15, 40, 80, 150].into_iter().enumerate() {
        let name = format!("f{t}.seen");
        build_from(d.path(), &["-p", "1e-9", "-o", &name], &input);
        let mut child = command(d.path())
            .env("SEEN_FORGET_BATCH", "5000")
            .args(["forget", &name, "-f"])
            .arg(&input)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let r = seen(d.path(), ["verify", "--repair", &name]);
        r.code(0);
        // Batch by batch: all forgotten or none, and a prefix of them.
        let lines = records(&keys, b'\n');
        let mut done = true;
        for b in lines.chunks(5000) {
            let mut batch = Vec::new();
            for l in b {
                batch.extend_from_slice(l);
                batch.push(b'\n');
            }
            let p = present(d.path(), &name, &batch);
            assert!(
                p == 0 || p == 5000,
                "trial {t}: a batch half forgotten ({p})"
            );
            if p == 5000 {
                done = false;
            } else {
                assert!(done, "trial {t}: a batch forgotten after one that was not");
            }
        }
    }
}

/// `merge` keeps a key forgotten when no input holds it as present; `copy`
/// keeps the list; `verify` finds a damaged list, and a writer refuses to
/// rewrite it (the damage stays detectable).
#[test]
fn merge_copy_and_verify_keep_the_list() {
    let d = tmp();
    seen_io(
        d.path(),
        ["build", "-q", "-n", "10k", "-o", "a.seen"],
        b"a1\na2\nb1\nb2\n",
    )
    .code(0);
    seen_io(
        d.path(),
        ["build", "-q", "-n", "10k", "-o", "b.seen"],
        b"b1\nb2\nb3\n",
    )
    .code(0);
    seen(d.path(), ["forget", "a.seen", "a1", "b1", "b2"]).code(0);
    seen(d.path(), ["forget", "b.seen", "b2"]).code(0);
    seen(d.path(), ["merge", "-o", "m.seen", "a.seen", "b.seen"]).code(0);
    seen_io(d.path(), ["query", "m.seen"], b"a1\na2\nb1\nb2\nb3\n")
        .code(0)
        .stdout(b"a2\nb1\nb3\n");
    seen(d.path(), ["copy", "a.seen", "c.seen"]).code(0);
    seen_io(d.path(), ["query", "c.seen"], b"a1\na2\nb1\nb2\n")
        .code(0)
        .stdout(b"a2\n");
    seen(d.path(), ["verify", "c.seen"]).code(0);
    // One byte of the list's entries changed.
    let path = d.path().join("c.seen");
    let v = crate::common::stats_json(d.path(), "c.seen");
    let bytes = v["forget"]["bytes"].as_u64().unwrap();
    let mut b = std::fs::read(&path).unwrap();
    let len = b.len();
    let at = len - bytes as usize;
    b[at + 3] ^= 0x40;
    std::fs::write(&path, &b).unwrap();
    let v = seen(d.path(), ["verify", "c.seen"]);
    v.code(1);
    assert!(v.stdout_str().contains("forget list"), "{}", v.ctx());
    seen_io(d.path(), ["dedup", "-f", "c.seen"], b"zz\n")
        .code(2)
        .stderr_has("forget list");
    seen(d.path(), ["verify", "c.seen"]).code(1);
}

/// With a time window: a forgotten key is absent, new to `dedup -f` (once),
/// and its list entry lasts only as long as the slices that held it: once
/// they expired and a new slice starts, the list is empty again, and the
/// key is new as any expired one.
#[test]
fn a_windows_list_forgets_with_its_slices() {
    let d = tmp();
    let day = 86_400u64;
    let t0 = 1_796_083_200u64; // a midnight, UTC
    let at = |days: u64| format!("@{}", t0 + days * day + 3600);
    let dedup = |now: &str, input: &[u8]| {
        seen_io(
            d.path(),
            [
                "dedup", "--now", now, "--window", "6d", "-n", "10k", "-f", "w.seen",
            ],
            input,
        )
    };
    dedup(&at(0), b"a\nb\n").code(0).stdout(b"a\nb\n");
    seen(d.path(), ["forget", "--now", &at(1), "w.seen", "a"]).code(0);
    seen_io(d.path(), ["query", "--now", &at(1), "w.seen"], b"a\nb\n")
        .code(0)
        .stdout(b"b\n");
    dedup(&at(1), b"a\nb\na\n").code(0).stdout(b"a\n");
    seen(d.path(), ["forget", "--now", &at(2), "w.seen", "b"]).code(0);
    let s = crate::common::stats_json(d.path(), "w.seen");
    assert_eq!(s["forget"]["entries"], 1, "{s}");
    // Day 8: day 0's slice expired; a new slice starts with the first line.
    dedup(&at(8), b"x\n").code(0).stdout(b"x\n");
    let s = crate::common::stats_json(d.path(), "w.seen");
    assert_eq!(s["forget"]["entries"], 0, "{s}");
    // Both expired with their slices: new again, as any line would be.
    dedup(&at(8), b"a\nb\n").code(0).stdout(b"a\nb\n");
}

/// A forgotten line recorded again leaves the list whichever way the span
/// that records it holds the filter (staged in memory, or mapped), and when
/// the run stops early (`-m`: a staged span is taken back and only the
/// lines written are recorded): exactly those printed leave it, and the
/// rest are printed by the next run.
#[test]
fn a_forgotten_line_recorded_again_leaves_the_list_in_every_span() {
    for hold in ["always", "never"] {
        let d = tmp();
        let all = numbered("https://example.com/p/", 0..20_000);
        let input = write(&d, "all.txt", &all);
        build_from(d.path(), &["-n", "100k", "-o", "f.seen"], &input);
        let gone = pick(&all, |i| i % 20 == 7);
        let gone_file = write(&d, "gone.txt", &gone);
        seen(
            d.path(),
            [
                "forget".as_ref(),
                "f.seen".as_ref(),
                "-f".as_ref(),
                gone_file.as_os_str(),
            ],
        )
        .code(0);
        let env = [("SEEN_HOLD", hold)];
        let r =
            crate::common::seen_env(d.path(), &env, ["dedup", "-m", "300", "-f", "f.seen"], &all);
        r.code(0).stdout(&pick(&gone, |i| i < 300));
        let s = crate::common::stats_json(d.path(), "f.seen");
        assert_eq!(s["forget"]["entries"], 700, "hold {hold}: {s}");
        let r = crate::common::seen_env(d.path(), &env, ["dedup", "-f", "f.seen"], &all);
        r.code(0).stdout(&pick(&gone, |i| i >= 300));
        let s = crate::common::stats_json(d.path(), "f.seen");
        assert_eq!(s["forget"]["entries"], 0, "hold {hold}: {s}");
        crate::common::seen_env(d.path(), &env, ["dedup", "-f", "f.seen"], &all)
            .code(0)
            .no_stdout();
    }
}

/// A `forget` between two chunks of a running `dedup -f` (its span ended
/// while its input paused): the writer's next span reads the new list, and
/// the next chunk is judged by it (its lines may have been read and hashed
/// before). Every forgotten line of that chunk is printed once, and none
/// of the others.
#[test]
fn a_forget_between_a_writers_chunks_is_seen_by_the_next_one() {
    use std::io::{BufRead, BufReader, Write};
    let d = tmp();
    let old = numbered("old", 0..20_000);
    let oldf = write(&d, "old.txt", &old);
    build_from(
        d.path(),
        &["-n", "100k", "-p", "1e-9", "-o", "f.seen"],
        &oldf,
    );
    // A list before, so that the writer starts with one that the forget
    // then replaces.
    let early = pick(&old, |i| i % 100 == 1);
    seen_io(d.path(), ["forget", "f.seen"], &early).code(0);
    let mut w = command(d.path())
        .args(["dedup", "-f", "f.seen"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = w.stdin.take().unwrap();
    let mut out = BufReader::new(w.stdout.take().unwrap());
    // First chunk: new lines; once all are printed, the writer has judged
    // them and waits for input (a waiting stream holds no lock).
    let first = numbered("new", 0..5_000);
    stdin.write_all(&first).unwrap();
    stdin.flush().unwrap();
    let mut printed = String::new();
    for _ in 0..5_000 {
        out.read_line(&mut printed).unwrap();
    }
    assert_eq!(printed.as_bytes(), first, "the first chunk, all new");
    let gone = pick(&old, |i| i % 10 == 3);
    // The writer holds no lock while its input waits: were it to, this
    // fails after a minute instead of waiting for ever.
    seen_io(d.path(), ["forget", "--wait", "60s", "f.seen"], &gone).code(0);
    stdin.write_all(&old).unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(w.wait().unwrap().success());
    let mut want: Vec<String> = records(&gone, b'\n')
        .into_iter()
        .chain(records(&early, b'\n'))
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    want.sort();
    let mut got: Vec<String> = rest.lines().map(str::to_string).collect();
    got.sort();
    assert_eq!(got.len(), want.len(), "printed after the forget");
    assert_eq!(got, want);
}
