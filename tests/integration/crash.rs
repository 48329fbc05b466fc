//! Breaking things on purpose (issue 5): SIGKILL at random moments, several
//! processes on one filter file, SIGINT/SIGTERM, and corrupted filter files.
//!
//! Sizes are small enough for the suite; `scripts/kill-harness.sh` and
//! `scripts/fuzz-files.sh` run the same tests with many more trials
//! (`SEEN_KILL_TRIALS`, `SEEN_FUZZ_CASES`) and print the tallies. Fixed seeds;
//! nothing sleeps: a kill happens after reading a chosen number of output bytes.

use crate::common::{Rng, command, concurrent_writers, reseal, run_killed_env, seen, tmp, write};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Lines `0..n` of a URL-like universe, each repeated a few times, shuffled.
fn input(n: u64, rng: &mut Rng) -> (Vec<u8>, HashSet<Vec<u8>>) {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for i in 0..n {
        let l = format!("https://site-{}.example/{i}/page", i % 97).into_bytes();
        for _ in 0..1 + rng.below(3) {
            lines.push(l.clone());
        }
    }
    for i in (1..lines.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        lines.swap(i, j);
    }
    let distinct = lines.iter().cloned().collect();
    let mut data = Vec::new();
    for l in &lines {
        data.extend_from_slice(l);
        data.push(b'\n');
    }
    (data, distinct)
}

fn lines_of(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Invariant 3: SIGKILL at any moment never loses a line. Each trial feeds the
/// same input to `dedup -f` runs killed after a random number of output bytes,
/// then one run to completion; together they must print every distinct line
/// (false positives aside: at p = 1e-9 the budget is 0) and no run prints a
/// line twice. Trials alternate between holding the filter in memory for
/// every window and keeping it mapped (`SEEN_HOLD`).
#[test]
fn sigkill_at_random_moments_loses_no_line() {
    let trials = env_count("SEEN_KILL_TRIALS", 16);
    let mut rng = Rng(0x5EED_C0DE);
    let n = env_count("SEEN_KILL_LINES", 40_000);
    let (data, distinct) = input(n, &mut rng);
    // A first layer of half the distinct lines: every trial grows the filter.
    let first_layer = (n / 2).to_string();
    let window = (n / 12).max(1).to_string();
    let total_out: usize = distinct.iter().map(|l| l.len() + 1).sum();
    let expected_fp = distinct.len() as f64 * 1e-9;
    let budget = (expected_fp + 3.0 * expected_fp.sqrt()).floor() as usize;
    let (mut kills, mut lost_total, mut reemitted) = (0u64, 0usize, 0usize);
    for trial in 0..trials {
        let hold = [("SEEN_HOLD", if trial % 2 == 0 { "always" } else { "never" })];
        let d = tmp();
        write(&d, "in.txt", &data);
        let mut printed: Vec<Vec<u8>> = Vec::new();
        for _ in 0..3 {
            // Anywhere from the first byte to past the end of the output.
            let at = rng.below(total_out as u64 * 11 / 10) as usize;
            let (out, killed) = run_killed_env(
                d.path(),
                &hold,
                &[
                    "dedup",
                    "-p",
                    "1e-9",
                    "-n",
                    &first_layer,
                    "--commit-every",
                    &window,
                    "-f",
                    "f.seen",
                    "in.txt",
                ],
                at,
            );
            kills += u64::from(killed);
            // A run killed in the middle of a write may leave half a line: it was
            // not printed (and not recorded), so it does not count.
            let whole = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let run = lines_of(&out[..whole]);
            let unique: HashSet<&Vec<u8>> = run.iter().collect();
            assert_eq!(
                unique.len(),
                run.len(),
                "trial {trial}: a run printed a line twice"
            );
            printed.extend(run);
        }
        let (out, _) = run_killed_env(
            d.path(),
            &hold,
            &["dedup", "-f", "f.seen", "in.txt"],
            usize::MAX >> 1,
        );
        printed.extend(lines_of(&out));
        // The complete run left the file clean with every checksum current.
        let v = seen(d.path(), ["verify", "f.seen"]);
        assert_eq!(
            v.code,
            0,
            "trial {trial}: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        let union: HashSet<&Vec<u8>> = printed.iter().collect();
        assert!(union.iter().all(|l| distinct.contains(*l)));
        let lost = distinct.len() - union.len();
        lost_total += lost;
        reemitted += printed.len() - union.len();
        assert!(
            lost <= budget,
            "trial {trial}: {lost} lines never printed (false-positive budget {budget})"
        );
        if (trial + 1) % 100 == 0 {
            println!(
                "kill harness: {} trials so far, {kills} runs killed, {lost_total} lines lost, \
                 {reemitted} re-emitted",
                trial + 1
            );
        }
    }
    println!(
        "kill harness: {trials} trials, {kills} runs killed, {lost_total} lines lost, \
         {reemitted} lines re-emitted after a kill"
    );
    assert!(kills >= trials, "too few runs were killed to test anything");
}

/// Invariant 5: several processes on one filter file, overlapping inputs:
/// every distinct line printed exactly once over all of them.
#[test]
fn concurrent_writers_print_each_line_exactly_once() {
    let d = tmp();
    let mut rng = Rng(77);
    let universe: Vec<String> = (0..150_000).map(|i| format!("u{i}")).collect();
    let procs = 4;
    let mut all_inputs = HashSet::new();
    for p in 0..procs {
        // Each process gets about 60 % of the universe, in its own order.
        let mut mine: Vec<&String> = universe.iter().filter(|_| rng.below(10) < 6).collect();
        for i in (1..mine.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            mine.swap(i, j);
        }
        all_inputs.extend(mine.iter().map(|s| s.as_str().to_owned()));
        let text: String = mine.iter().map(|s| format!("{s}\n")).collect();
        write(&d, &format!("in{p}.txt"), text.as_bytes());
    }
    // Create the filter first so the processes do not race to create it.
    write(&d, "empty.txt", b"");
    let st = seen(
        d.path(),
        [
            "dedup",
            "-n",
            "200k",
            "-p",
            "1e-9",
            "-f",
            "f.seen",
            "empty.txt",
        ],
    )
    .code;
    assert_eq!(st, 0);
    let names: Vec<String> = (0..procs).map(|p| format!("in{p}.txt")).collect();
    let printed = concurrent_writers(d.path(), &[], &names);
    let union: HashSet<&Vec<u8>> = printed.iter().collect();
    println!(
        "{procs} concurrent writers: {} lines printed, {} distinct, {} inputs distinct",
        printed.len(),
        union.len(),
        all_inputs.len()
    );
    assert_eq!(
        printed.len(),
        union.len(),
        "a line was printed by two processes"
    );
    assert_eq!(union.len(), all_inputs.len(), "a line was lost");
    let v = seen(d.path(), ["verify", "f.seen"]);
    assert_eq!(v.code, 0, "{}", String::from_utf8_lossy(&v.stdout));
}

/// Runs `seen ARGS` reading stdin from a pipe we hold; writes `lines`, reads
/// `expect` lines of output (so they have been judged and written), then sends
/// `sig` and returns the exit code and stderr.
fn signal_midway(dir: &Path, args: &[&str], lines: &str, expect: usize, sig: i32) -> (i32, String) {
    let mut child = command(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.iter().filter(|&&b| b == b'\n').count() < expect {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "output ended early");
        got.extend_from_slice(&buf[..n]);
    }
    let st = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    // A deadline rather than a bare wait: a signal the process ignores (Rust's
    // own SIGBUS handler ignores one sent with kill) must fail the test, not
    // hang it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?} still running 30 s after signal {sig}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    drop(stdin);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (
        status
            .code()
            .expect("killed by the signal instead of exiting"),
        err,
    )
}

/// SIGBUS (what a mapped file that shrank raises; here sent with `kill`, as the
/// real cause cannot be timed in a test) ends any run with exit 2 and a message
/// that says what happened and what to do, not a bare "Bus error".
#[test]
fn sigbus_is_explained() {
    let d = tmp();
    for args in [&["dedup"][..], &["dedup", "-f", "f.seen"][..]] {
        let (code, err) = signal_midway(d.path(), args, "a\nb\n", 2, 7);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("a memory-mapped file shrank while in use"),
            "{err}"
        );
        assert!(err.contains("--no-mmap reads input files"), "{err}");
        assert_eq!(err.matches("shrank").count(), 1, "printed once: {err}");
    }
}

/// SIGTERM / SIGINT while `dedup -f` waits for more input: exit 143 / 130,
/// every line printed so far recorded, the file clean.
#[test]
fn sigterm_and_sigint_commit_and_exit() {
    for (sig, code) in [(15, 143), (2, 130)] {
        let d = tmp();
        let lines: String = (0..500).map(|i| format!("l{i}\n")).collect();
        let (got, err) = signal_midway(d.path(), &["dedup", "-f", "f.seen"], &lines, 500, sig);
        assert_eq!(got, code, "{err}");
        let s = seen(d.path(), ["stats", "--json", "f.seen"]).stdout_json();
        assert_eq!(s["clean"], true, "{s}");
        assert_eq!(s["inserts"], 500, "{s}");
        // build from a pipe: interrupted, it leaves neither the filter nor a
        // temporary file. (Writing more than a pipe holds returns only once
        // `seen` is reading, so the signal cannot come before its handler.)
        let big: String = (0..100_000).map(|i| format!("b{i}\n")).collect();
        let (got, err) = signal_midway(d.path(), &["build", "-o", "b.seen"], &big, 0, sig);
        assert_eq!(got, code, "{err}");
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["f.seen".to_string()], "{names:?}");
    }
}

/// Mutated filter files (bit flips, resealed field changes, truncations,
/// extensions) never crash `seen`: exit 0, 1 or 2, no panic, no signal.
#[test]
fn corrupted_files_never_crash() {
    let cases = env_count("SEEN_FUZZ_CASES", 600);
    let d = tmp();
    let text: String = (0..3000).map(|i| format!("k{i}\n")).collect();
    write(&d, "in.txt", text.as_bytes());
    let st = seen(
        d.path(),
        [
            "build",
            "-n",
            "500",
            "-p",
            "0.01",
            "-o",
            "good.seen",
            "in.txt",
        ],
    )
    .code;
    assert_eq!(st, 0);
    let good = std::fs::read(d.path().join("good.seen")).unwrap();
    let mut rng = Rng(0xF022);
    let mut tally = [0u64; 3];
    for case in 0..cases {
        let mut b = good.clone();
        match rng.below(5) {
            0 => {
                for _ in 0..1 + rng.below(4) {
                    let bit = rng.below(b.len() as u64 * 8) as usize;
                    b[bit / 8] ^= 1 << (bit % 8);
                }
            }
            1 | 2 => {
                // A header field set to something random, checksum fixed up:
                // what a crafted file looks like.
                let at = rng.below(200) as usize & !3;
                let v = match rng.below(4) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => rng.below(1 << 20),
                    _ => rng.next(),
                };
                let n = if rng.below(2) == 0 { 4 } else { 8 };
                b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
                reseal(&mut b);
            }
            3 => b.truncate(rng.below(b.len() as u64) as usize),
            _ => b.extend(std::iter::repeat_n(0u8, 1 + rng.below(9000) as usize)),
        }
        write(&d, "x.seen", &b);
        let args: &[&str] = match case % 4 {
            0 => &["stats", "x.seen"],
            1 => &["query", "-c", "x.seen", "-f", "in.txt"],
            2 => &["dedup", "-f", "x.seen", "in.txt"],
            _ => &["build", "--add", "-o", "x.seen", "in.txt"],
        };
        // A raw command: a run killed by a signal is reported with its case.
        let o = command(d.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let code = o
            .status
            .code()
            .unwrap_or_else(|| panic!("case {case} {args:?}: killed by a signal: {err}"));
        assert!(code <= 2, "case {case} {args:?}: exit {code}: {err}");
        assert!(!err.contains("panicked"), "case {case} {args:?}: {err}");
        tally[code as usize] += 1;
    }
    println!(
        "corruption fuzzer: {cases} files, exit 0: {}, 1: {}, 2: {}, crashes: 0",
        tally[0], tally[1], tally[2]
    );
}

/// Locks are held per commit window, not per run: while one `dedup -f` waits on
/// a quiet input stream, another process records into the same file, and the
/// first one then sees those lines as seen.
#[test]
fn a_waiting_stream_does_not_block_other_writers() {
    let d = tmp();
    let mut a = command(d.path())
        .args(["dedup", "-f", "f.seen"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut a_in = a.stdin.take().unwrap();
    let mut a_out = std::io::BufReader::new(a.stdout.take().unwrap());
    let read_lines = |r: &mut std::io::BufReader<std::process::ChildStdout>, n: usize| {
        use std::io::BufRead;
        (0..n)
            .map(|_| {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                l
            })
            .collect::<Vec<_>>()
    };
    let first: String = (0..100).map(|i| format!("a{i}\n")).collect();
    a_in.write_all(first.as_bytes()).unwrap();
    a_in.flush().unwrap();
    assert_eq!(read_lines(&mut a_out, 100).concat(), first);
    // A second writer, while the first waits for input: it must finish.
    let b_input: String = (0..50)
        .map(|i| format!("a{i}\n"))
        .chain((0..100).map(|i| format!("b{i}\n")))
        .collect();
    write(&d, "b.txt", b_input.as_bytes());
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = d.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(seen(&dir, ["dedup", "-f", "f.seen", "b.txt"]));
    });
    let b = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(o) => o,
        Err(_) => {
            let _ = a.kill();
            panic!("the second writer waited for the first one's whole run");
        }
    };
    assert_eq!(b.code, 0);
    let want_b: String = (0..100).map(|i| format!("b{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&b.stdout), want_b);
    // The first writer sees what the second recorded.
    let more: String = (0..10)
        .map(|i| format!("b{i}\n"))
        .chain((0..10).map(|i| format!("c{i}\n")))
        .collect();
    a_in.write_all(more.as_bytes()).unwrap();
    drop(a_in);
    let rest = read_lines(&mut a_out, 10).concat();
    let want_c: String = (0..10).map(|i| format!("c{i}\n")).collect();
    assert_eq!(rest, want_c);
    assert_eq!(a.wait().unwrap().code(), Some(0));
}

/// A writer killed inside a window leaves the file dirty, its counters behind
/// its bits; the next writer says so and recounts them from the bits.
#[test]
fn dirty_file_counters_are_recounted_from_the_bits() {
    let d = tmp();
    let text: String = (0..5000).map(|i| format!("r{i}\n")).collect();
    write(&d, "in.txt", text.as_bytes());
    write(&d, "empty.txt", b"");
    let run = |args: &[&str]| seen(d.path(), args);
    let o = run(&[
        "build", "--fixed", "-n", "10000", "-p", "0.01", "-o", "f.seen", "in.txt",
    ]);
    assert_eq!(o.code, 0);
    let mut b = std::fs::read(d.path().join("f.seen")).unwrap();
    b[16] |= 1; // dirty
    b[128 + 40..128 + 48].copy_from_slice(&0u64.to_le_bytes()); // layer 0 inserts
    reseal(&mut b);
    write(&d, "f.seen", &b);
    let o = run(&["dedup", "-f", "f.seen", "empty.txt"]);
    let err = &o.stderr;
    assert_eq!(o.code, 0, "{err}");
    assert!(
        err.contains("not closed cleanly") && err.contains("recounts"),
        "{err}"
    );
    let s = run(&["stats", "--json", "f.seen"]).stdout_json();
    assert_eq!(s["clean"], true, "{s}");
    let inserts = s["inserts"].as_f64().unwrap();
    assert!(
        (inserts - 5000.0).abs() < 100.0,
        "recounted {inserts}, inserted 5000: {s}"
    );
}

/// `seen verify` checks every data segment against its checksum and names the
/// damaged ones (exit 1); a damaged header is exit 2; checksums stay current
/// through `build`, growth, `build --add` and `dedup -f`.
#[test]
fn verify_names_damaged_segments() {
    let d = tmp();
    let text: String = (0..200_000).map(|i| format!("v{i}\n")).collect();
    write(&d, "in.txt", text.as_bytes());
    let run = |args: &[&str]| seen(d.path(), args);
    // 1M lines at 1e-3, fixed: about 1.8 MiB of bits, two segments.
    let o = run(&[
        "build", "--fixed", "-n", "1M", "-p", "1e-3", "-o", "f.seen", "in.txt",
    ]);
    assert_eq!(o.code, 0);
    let o = run(&["verify", "f.seen"]);
    assert_eq!(o.code, 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ok (header and 2 data segments"),
        "{}",
        o.ctx()
    );
    let good = std::fs::read(d.path().join("f.seen")).unwrap();
    // A flipped bit in the second segment.
    let mut b = good.clone();
    b[4096 + (1 << 20) + 12345] ^= 0x10;
    write(&d, "bad.seen", &b);
    let o = run(&["verify", "bad.seen"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.code, 1, "{out}");
    assert!(
        out.contains("layer 0, bytes 1052672..") && out.contains("(segment 1)"),
        "{out}"
    );
    assert!(!out.contains("segment 0"), "{out}");
    assert!(o.stderr.contains("rebuild"), "{}", o.ctx());
    // A damaged checksum table names the segment too.
    let mut b = good.clone();
    let table = b.len() - 4096;
    b[table] ^= 1;
    write(&d, "table.seen", &b);
    let o = run(&["verify", "table.seen"]);
    assert_eq!(o.code, 1);
    assert!(String::from_utf8_lossy(&o.stdout).contains("(segment 0)"));
    // A damaged header: not a usable filter at all.
    let mut b = good.clone();
    b[60] ^= 1;
    write(&d, "header.seen", &b);
    let o = run(&["verify", "header.seen"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("checksum"), "{}", o.ctx());
    // Checksums follow every writer: growth, --add, dedup -f.
    let o = run(&[
        "build", "-n", "1000", "-p", "1e-3", "-o", "g.seen", "in.txt",
    ]);
    assert_eq!(o.code, 0);
    let more: String = (0..50_000).map(|i| format!("w{i}\n")).collect();
    write(&d, "more.txt", more.as_bytes());
    assert_eq!(run(&["build", "--add", "-o", "g.seen", "more.txt"]).code, 0);
    let newer: String = (0..50_000).map(|i| format!("x{i}\n")).collect();
    write(&d, "newer.txt", newer.as_bytes());
    assert_eq!(
        run(&["dedup", "--commit-every", "5k", "-f", "g.seen", "newer.txt"]).code,
        0
    );
    let o = run(&["verify", "g.seen"]);
    assert_eq!(o.code, 0, "{}", o.ctx());
    let s = run(&["stats", "--json", "g.seen"]).stdout_json();
    assert!(s["layers"].as_array().unwrap().len() >= 7, "{s}");
}
