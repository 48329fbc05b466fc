//! `seen dedup --dups-out FILE` (issue 24): every record read and not
//! printed goes to FILE, in input order, the same bytes, in the same run;
//! with `-f` a line is recorded only after both outputs it goes to were
//! written, so SIGKILL at any moment loses nothing.
//!
//! Fixed seeds; at `-p 1e-9` over a few thousand distinct lines no new
//! line is taken for a seen one, so stdout is exactly the `awk '!seen[$0]++'`
//! reference and FILE exactly its complement (`awk 'seen[$0]++'`). Nothing
//! sleeps: a kill happens after reading a chosen number of output bytes.

use crate::common::{
    BIN, Rng, command, records, reference, reference_after, run_killed_env, seen, seen_env,
    seen_io, tmp, write,
};
use std::collections::HashSet;
use std::fs;
use std::process::Stdio;

/// `n` records from a universe of `n / 2`, raw bytes: some not UTF-8, some
/// empty, some with a CR or a NUL (with `-z`: a newline), every terminator
/// `term`; the last one unterminated when `open_end`.
fn corpus(seed: u64, n: usize, term: u8, open_end: bool) -> Vec<u8> {
    let mut rng = Rng(seed);
    let other = if term == b'\n' { 0 } else { b'\n' };
    let mut data = Vec::new();
    for _ in 0..n {
        let i = rng.below(n as u64 / 2);
        let mut r = format!("https://site-{}.example/{i}/page", i % 31).into_bytes();
        match i % 11 {
            0 => r.clear(),
            1 => r.extend_from_slice(b"\xff\xfe\r"),
            2 => r.push(other),
            _ => {}
        }
        data.extend_from_slice(&r);
        data.push(term);
    }
    if open_end {
        data.pop();
    }
    data
}

/// What `--dups-out` must hold: every record after its first occurrence,
/// terminated (`awk 'seen[$0]++'`).
fn complement(data: &[u8], term: u8) -> Vec<u8> {
    reference(data, term, true)
}

/// Walks the input and takes each record from the printed lines or from
/// the dups file, as `dedup` sends it: a record met for the first time in
/// this walk that is the next printed one is printed; any other is the next
/// line of the dups file. Returns how many records were taken (where the
/// walk stopped: a killed run may end anywhere) and the printed and dups
/// lines left over.
fn walk(input: &[&[u8]], out: &[&[u8]], dups: &[&[u8]]) -> (usize, usize, usize) {
    let (mut o, mut d) = (0, 0);
    let mut met = HashSet::new();
    let mut taken = 0;
    for &r in input {
        if met.insert(r) && out.get(o) == Some(&r) {
            o += 1;
        } else if dups.get(d) == Some(&r) {
            d += 1;
        } else {
            break;
        }
        taken += 1;
    }
    (taken, out.len() - o, dups.len() - d)
}

/// [`walk`], asserting that where it stops one of the two outputs is used
/// up (a run writes both parts of a chunk before the next chunk).
fn merge(input: &[&[u8]], out: &[&[u8]], dups: &[&[u8]]) -> (usize, usize, usize) {
    let (taken, out_left, dups_left) = walk(input, out, dups);
    assert!(
        out_left == 0 || dups_left == 0,
        "the outputs do not interleave into the input: the walk stopped at record {taken} \
         with {out_left} printed and {dups_left} dups lines left"
    );
    (taken, out_left, dups_left)
}

/// Whole records of a (maybe killed) run's output: a last one cut in the
/// middle of a write was not written.
fn whole(out: &[u8], term: u8) -> Vec<&[u8]> {
    let end = out.iter().rposition(|&b| b == term).map_or(0, |i| i + 1);
    records(&out[..end], term)
}

/// Asserts that printed `out` and `dups` are the reference split of `data`
/// (after `known` records), and that they interleave back into it.
fn assert_split(data: &[u8], term: u8, out: &[u8], dups: &[u8], ctx: &str) {
    assert!(
        out == reference(data, term, false),
        "printed lines differ from awk's: {ctx}"
    );
    assert!(
        dups == complement(data, term),
        "dups file is not the complement: {ctx}"
    );
    let input = records(data, term);
    let (o, d) = (records(out, term), records(dups, term));
    assert_eq!(o.len() + d.len(), input.len(), "{ctx}");
    assert_eq!(merge(&input, &o, &d), (input.len(), 0, 0), "{ctx}");
}

#[test]
fn printed_and_dups_lines_are_the_input_split_in_order() {
    let d = tmp();
    let data = corpus(1, 40_000, b'\n', true);
    write(&d, "in.txt", &data);
    // Small chunks and several threads put runs across pieces and chunks;
    // a file is mapped, standard input read, --no-mmap reads the file.
    for (chunk, threads) in [("1000", "3"), ("65536", "2"), ("4194304", "1")] {
        let env = [("SEEN_CHUNK_BYTES", chunk)];
        for (args, input) in [
            (vec!["in.txt"], &b""[..]),
            (vec!["--no-mmap", "in.txt"], &b""[..]),
            (vec![], &data[..]),
        ] {
            let mut all = vec!["dedup", "-n", "100k", "-p", "1e-9", "-j", threads];
            all.extend(["--dups-out", "dups.txt"]);
            all.extend(&args);
            let r = seen_env(d.path(), &env, &all, input);
            r.ok();
            let dups = fs::read(d.path().join("dups.txt")).unwrap();
            assert_split(&data, b'\n', &r.stdout, &dups, &r.ctx());
        }
    }
}

#[test]
fn nul_terminated_records() {
    let d = tmp();
    let data = corpus(2, 20_000, 0, true);
    let r = seen_env(
        d.path(),
        &[("SEEN_CHUNK_BYTES", "4096")],
        [
            "dedup",
            "-z",
            "-n",
            "50k",
            "-p",
            "1e-9",
            "--dups-out",
            "d.bin",
        ],
        &data,
    );
    r.ok();
    let dups = fs::read(d.path().join("d.bin")).unwrap();
    assert_split(&data, 0, &r.stdout, &dups, &r.ctx());
}

/// With a filter file across runs: the second run sends what the first
/// recorded to the dups file. Its standard output is a regular file (synced
/// before recording) and the dups file existed (truncated).
#[test]
fn with_a_filter_file_across_two_runs() {
    let d = tmp();
    let first = corpus(3, 30_000, b'\n', false);
    let second = corpus(4, 30_000, b'\n', false);
    write(&d, "a.txt", &first);
    write(&d, "b.txt", &second);
    write(&d, "dups.txt", b"left over from an earlier run\n");
    let args = |input: &'static str| {
        [
            "dedup",
            "-n",
            "100k",
            "-p",
            "1e-9",
            "--commit-every",
            "5k",
            "-f",
            "f.seen",
            "--dups-out",
            "dups.txt",
            input,
        ]
    };
    let run = |input: &'static str| {
        let out = fs::File::create(d.path().join("out.txt")).unwrap();
        let st = command(d.path())
            .env("SEEN_CHUNK_BYTES", "16384")
            .args(args(input))
            .stdout(out)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "{input}");
        let read = |f: &str| fs::read(d.path().join(f)).unwrap();
        (read("out.txt"), read("dups.txt"))
    };
    let (out, dups) = run("a.txt");
    assert_split(&first, b'\n', &out, &dups, "first run");
    let mut known: HashSet<Vec<u8>> = records(&first, b'\n')
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    let (out, dups) = run("b.txt");
    assert!(out == reference_after(&mut known, &second, b'\n', false));
    // The dups file: every record of b.txt not printed, in order.
    let printed: HashSet<&[u8]> = records(&out, b'\n').into_iter().collect();
    let mut want = Vec::new();
    let mut met = HashSet::new();
    for r in records(&second, b'\n') {
        if !(printed.contains(r) && met.insert(r)) {
            want.extend_from_slice(r);
            want.push(b'\n');
        }
    }
    assert!(dups == want, "second run's dups file");
    // A third run prints nothing: every line goes to the dups file.
    let r = seen(d.path(), args("b.txt"));
    r.code(0).no_stdout();
    assert!(fs::read(d.path().join("dups.txt")).unwrap() == second);
}

/// `-m N`: the run stops at the N-th printed line; the lines before it that
/// were not printed are in the dups file, those after it were not read and
/// are nowhere. With -f, the next run picks up from there.
#[test]
fn max_count_stops_both_outputs_at_the_same_record() {
    let d = tmp();
    let r = seen_io(
        d.path(),
        ["dedup", "-m", "3", "--dups-out", "d.txt"],
        b"a\na\nb\na\nc\nc\nd\na\n",
    );
    r.ok().stdout(b"a\nb\nc\n");
    assert_eq!(fs::read(d.path().join("d.txt")).unwrap(), b"a\na\n");
    // Across chunks and runs: each run hands out the next `m` new lines.
    let data = corpus(5, 20_000, b'\n', false);
    write(&d, "in.txt", &data);
    let input = records(&data, b'\n');
    let mut known: HashSet<&[u8]> = HashSet::new();
    for (run, m) in [1500usize, 1, 2500, 100_000].into_iter().enumerate() {
        let m_arg = m.to_string();
        let r = seen_env(
            d.path(),
            &[("SEEN_CHUNK_BYTES", "8192")],
            [
                "dedup",
                "-n",
                "50k",
                "-p",
                "1e-9",
                "-f",
                "f.seen",
                "-m",
                &m_arg,
                "--dups-out",
                "d.txt",
                "in.txt",
            ],
            b"",
        );
        // (Warned from the second run on: -n and -p only size a new filter.)
        r.code(0);
        let (mut want_out, mut want_dups, mut printed) = (Vec::new(), Vec::new(), 0);
        for &rec in &input {
            if printed == m {
                break;
            }
            let to = if known.insert(rec) {
                printed += 1;
                &mut want_out
            } else {
                &mut want_dups
            };
            to.extend_from_slice(rec);
            to.push(b'\n');
        }
        assert!(r.stdout == want_out, "run {run}: printed lines");
        let dups = fs::read(d.path().join("d.txt")).unwrap();
        assert!(dups == want_dups, "run {run}: dups file");
    }
    // -m 0 reads nothing, and leaves the dups file empty.
    seen(
        d.path(),
        ["dedup", "-m", "0", "--dups-out", "d.txt", "in.txt"],
    )
    .ok()
    .no_stdout();
    assert_eq!(fs::read(d.path().join("d.txt")).unwrap(), b"");
}

#[test]
fn summary_counts_the_lines_written_to_the_dups_file() {
    let d = tmp();
    let r = seen_io(
        d.path(),
        ["dedup", "--dups-out", "d.txt", "--summary", "--json"],
        b"a\nb\na\na\nc\n",
    );
    r.code(0).stdout(b"a\nb\nc\n");
    let v = r.stderr_json();
    assert_eq!(v["lines_written"], 3, "{v}");
    assert_eq!(v["dups_written"], 2, "{v}");
    let r = seen_io(d.path(), ["dedup", "--summary"], b"a\na\n");
    assert!(!r.stderr.contains("dups-out"), "{}", r.stderr);
    let r = seen_io(
        d.path(),
        ["dedup", "--dups-out", "d.txt", "--summary"],
        b"a\na\n",
    );
    r.code(0).stderr_has("to --dups-out");
}

/// Every file the run reads or writes is refused as the dups file (it would
/// be truncated before it is read, or mixed into the printed lines), by
/// device and inode, and left as it was; `-` and an unwritable path are
/// refused before anything is read.
#[test]
fn refuses_a_dups_file_that_is_another_file_of_the_run() {
    let d = tmp();
    let data = b"a\nb\na\n";
    write(&d, "in.txt", data);
    fs::hard_link(d.path().join("in.txt"), d.path().join("link.txt")).unwrap();
    seen(d.path(), ["dedup", "--dups-out", "in.txt", "in.txt"]).error("is also an input (in.txt)");
    seen(
        d.path(),
        ["dedup", "--dups-out", "link.txt", "x.txt", "in.txt"],
    )
    .error("--dups-out link.txt is also an input (in.txt)");
    // Standard input redirected from it.
    let o = command(d.path())
        .args(["dedup", "--dups-out", "in.txt"])
        .stdin(fs::File::open(d.path().join("in.txt")).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is also an input (standard input)"), "{err}");
    // Standard output redirected to it.
    let o = command(d.path())
        .args(["dedup", "--dups-out", "out.txt", "in.txt"])
        .stdout(fs::File::create(d.path().join("out.txt")).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--dups-out out.txt is standard output"),
        "{err}"
    );
    // The filter, existing or about to be made.
    seen(d.path(), ["dedup", "-f", "f.seen", "in.txt"]).code(0);
    let filter = fs::read(d.path().join("f.seen")).unwrap();
    seen(
        d.path(),
        ["dedup", "-f", "f.seen", "--dups-out", "f.seen", "in.txt"],
    )
    .error("--dups-out f.seen is the filter (f.seen)");
    assert!(fs::read(d.path().join("f.seen")).unwrap() == filter);
    seen(
        d.path(),
        [
            "dedup",
            "-f",
            "new.seen",
            "--dups-out",
            "new.seen",
            "in.txt",
        ],
    )
    .error("is the filter (new.seen)");
    assert!(
        !d.path().join("new.seen").exists(),
        "the refused run left a file"
    );
    // Nothing was truncated.
    assert_eq!(fs::read(d.path().join("in.txt")).unwrap(), data);
    // `-`: standard output is taken.
    seen_io(d.path(), ["dedup", "--dups-out", "-"], data).error("--dups-out -: standard output");
    // A path that cannot be written: before anything is read (stdin here
    // would be consumed otherwise) or made.
    seen_io(
        d.path(),
        ["dedup", "-f", "g.seen", "--dups-out", "no/such/d.txt"],
        data,
    )
    .error("cannot create --dups-out file no/such/d.txt");
    assert!(!d.path().join("g.seen").exists());
    // A device may be shared with standard output: /dev/null.
    let o = command(d.path())
        .args(["dedup", "--dups-out", "/dev/null", "in.txt"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Not with -d/-D (clap).
    seen(d.path(), ["dedup", "-d", "--dups-out", "d.txt", "in.txt"]).fails("cannot be used with");
}

/// A dups file that cannot take the lines (a full disk, a reader that
/// went away) fails the run (exit 2, naming it), and no line is recorded
/// that was not written to both outputs.
#[test]
fn a_failed_dups_file_fails_the_run_and_records_nothing_unwritten() {
    let d = tmp();
    let data = corpus(6, 60_000, b'\n', false);
    write(&d, "in.txt", &data);
    // A full disk: the first chunk with a duplicate fails.
    let r = seen(
        d.path(),
        [
            "dedup",
            "-n",
            "100k",
            "-p",
            "1e-9",
            "-f",
            "f.seen",
            "--dups-out",
            "/dev/full",
            "in.txt",
        ],
    );
    r.error("cannot write to --dups-out file /dev/full: No space left on device");
    let q = seen_io(d.path(), ["query", "-c", "f.seen"], &data);
    q.code(1).stdout(b"0\n");
    // A reader that closes its end: some chunks went out, then the pipe broke.
    let script = format!(
        "'{BIN}' dedup -n 100k -p 1e-9 --commit-every 1k -f g.seen --dups-out /dev/fd/3 in.txt \
         3>&1 >out.txt 2>err.txt | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}"
    );
    let o = std::process::Command::new("bash")
        .current_dir(d.path())
        .env("SEEN_CHUNK_BYTES", "16384")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "2\n");
    let err = fs::read_to_string(d.path().join("err.txt")).unwrap();
    assert!(
        err.contains("cannot write to --dups-out file /dev/fd/3: its reader has closed it"),
        "{err}"
    );
    // Everything recorded was printed.
    let out = fs::read(d.path().join("out.txt")).unwrap();
    let printed: HashSet<&[u8]> = records(&out, b'\n').into_iter().collect();
    let q = seen_io(d.path(), ["query", "g.seen"], &data);
    let recorded: HashSet<&[u8]> = records(&q.stdout, b'\n').into_iter().collect();
    assert!(
        recorded.is_subset(&printed),
        "a line was recorded and not printed"
    );
    assert!(
        recorded.len() < records(&reference(&data, b'\n', false), b'\n').len(),
        "the run did not stop early: {} recorded",
        recorded.len()
    );
}

/// Lines `0..n` of a URL-like universe, each 1 to 3 times, shuffled.
fn shuffled(n: u64, rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::new();
    for i in 0..n {
        for _ in 0..1 + rng.below(3) {
            lines.push(format!("https://site-{}.example/{i}/page", i % 97));
        }
    }
    for i in (1..lines.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        lines.swap(i, j);
    }
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// SIGKILL at random moments with a filter file: each trial feeds the same
/// input to runs killed after a random number of output bytes, then one run
/// to the end. Every run's printed and dups lines interleave into a prefix
/// of the input (plus the cut chunk), no run prints a line twice, every
/// line a killed run recorded lies in the part both its outputs covered,
/// every distinct line is printed by some run, and the last run's two
/// outputs are the whole input.
#[test]
fn sigkill_at_random_moments_loses_no_line() {
    let mut rng = Rng(0xD0D5);
    let data = shuffled(12_000, &mut rng);
    let input = records(&data, b'\n');
    let distinct: HashSet<&[u8]> = input.iter().copied().collect();
    let first_at: std::collections::HashMap<&[u8], usize> = input
        .iter()
        .enumerate()
        .rev()
        .map(|(i, &r)| (r, i))
        .collect();
    let (mut kills, mut checked) = (0, 0);
    for trial in 0..8 {
        let d = tmp();
        write(&d, "in.txt", &data);
        let mut printed: HashSet<Vec<u8>> = HashSet::new();
        for run in 0..4 {
            let last = run == 3;
            let _ = fs::remove_file(d.path().join("dups.txt"));
            // Anywhere from the first byte to past the end of what is left
            // to print.
            let left: usize = distinct
                .iter()
                .filter(|l| !printed.contains(**l))
                .map(|l| l.len() + 1)
                .sum();
            let at = if last {
                usize::MAX >> 1
            } else {
                rng.below(left as u64 * 11 / 10 + 1) as usize
            };
            let (out, killed) = run_killed_env(
                d.path(),
                &[("SEEN_CHUNK_BYTES", "8192")],
                &[
                    "dedup",
                    "-p",
                    "1e-9",
                    "-n",
                    "6000",
                    "--commit-every",
                    "700",
                    "-f",
                    "f.seen",
                    "--dups-out",
                    "dups.txt",
                    "in.txt",
                ],
                at,
            );
            assert!(!(last && killed));
            kills += usize::from(killed);
            // A run killed before it opened the file left none.
            let dups_bytes = fs::read(d.path().join("dups.txt")).unwrap_or_default();
            let (o, dd) = (whole(&out, b'\n'), whole(&dups_bytes, b'\n'));
            let unique: HashSet<&[u8]> = o.iter().copied().collect();
            assert_eq!(
                unique.len(),
                o.len(),
                "trial {trial} run {run}: a line printed twice"
            );
            let (taken, out_left, dups_left) = merge(&input, &o, &dd);
            if last {
                assert_eq!(
                    (taken, out_left, dups_left),
                    (input.len(), 0, 0),
                    "trial {trial}"
                );
            }
            // What the run recorded was written to both outputs: it lies
            // before the point where their interleaving stops.
            let q = seen_io(d.path(), ["query", "f.seen"], &data);
            let recorded: HashSet<&[u8]> = records(&q.stdout, b'\n').into_iter().collect();
            for &line in &o {
                if recorded.contains(line) {
                    checked += usize::from(killed);
                    assert!(
                        first_at[line] < taken,
                        "trial {trial} run {run}: {} recorded at record {} but the outputs \
                         stop at {taken}",
                        String::from_utf8_lossy(line),
                        first_at[line]
                    );
                }
            }
            printed.extend(o.iter().map(|l| l.to_vec()));
        }
        let lost = distinct.iter().filter(|l| !printed.contains(**l)).count();
        assert_eq!(lost, 0, "trial {trial}: lines never printed");
    }
    println!("dups-out kill test: {kills} runs killed, {checked} recorded lines checked");
    assert!(
        kills >= 16,
        "too few runs were killed to test anything: {kills}"
    );
    assert!(checked > 0, "no killed run had recorded anything");
}

/// A filter in Redis (`SEEN_TEST_REDIS`; skipped without it, a failure
/// under CI): the same split, across runs, and after kills (the journal
/// prints what a killed run recorded and did not write).
#[test]
fn with_a_redis_filter() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let run = crate::common::unique_name("dups");
    let loc = |name: &str| format!("redis://{addr}/{run}-{name}");
    let d = tmp();
    let j = d.path().join("journal").display().to_string();
    let env = [
        ("SEEN_JOURNAL_DIR", j.as_str()),
        ("SEEN_CHUNK_BYTES", "16384"),
    ];
    let data = corpus(7, 30_000, b'\n', false);
    write(&d, "in.txt", &data);
    let split = loc("split");
    let args = |l: &str| -> Vec<String> {
        [
            "dedup",
            "-n",
            "100k",
            "-p",
            "1e-9",
            "-f",
            l,
            "--dups-out",
            "d.txt",
            "in.txt",
        ]
        .map(String::from)
        .to_vec()
    };
    let r = seen_env(d.path(), &env, args(&split), b"");
    r.ok();
    assert_split(
        &data,
        b'\n',
        &r.stdout,
        &fs::read(d.path().join("d.txt")).unwrap(),
        &r.ctx(),
    );
    // The second run prints nothing: everything goes to the dups file.
    seen_env(d.path(), &env, args(&split), b"").ok().no_stdout();
    assert!(fs::read(d.path().join("d.txt")).unwrap() == data);
    // -m is refused with a Redis filter (it records before printing), and
    // the dups file is left alone.
    seen_env(
        d.path(),
        &env,
        [args(&split), vec!["-m".into(), "5".into()]].concat(),
        b"",
    )
    .error("-m 5 does not work with a Redis filter");
    assert!(fs::read(d.path().join("d.txt")).unwrap() == data);
    // Kills: every distinct line printed by some run (the journal replays
    // what a killed run recorded and did not write), every run's outputs
    // interleave into the input, and the last run's are all of it.
    let mut rng = Rng(99);
    let input = records(&data, b'\n');
    let distinct: HashSet<&[u8]> = input.iter().copied().collect();
    let total: usize = distinct.iter().map(|l| l.len() + 1).sum();
    let mut kills = 0;
    for trial in 0..3 {
        let l = loc(&format!("kill{trial}"));
        let mut printed: HashSet<Vec<u8>> = HashSet::new();
        for run in 0..3 {
            let last = run == 2;
            let at = if last {
                usize::MAX >> 1
            } else {
                rng.below(total as u64) as usize
            };
            let _ = fs::remove_file(d.path().join("d.txt"));
            let a = args(&l);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let (out, killed) = run_killed_env(d.path(), &env, &a, at);
            assert!(!(last && killed));
            kills += usize::from(killed);
            let dups = fs::read(d.path().join("d.txt")).unwrap_or_default();
            let (o, dd) = (whole(&out, b'\n'), whole(&dups, b'\n'));
            printed.extend(o.iter().map(|l| l.to_vec()));
            if last {
                // The lines replayed from the journal come first; the rest
                // and the dups file are the whole input.
                let replayed = (0..=o.len())
                    .find(|&k| walk(&input, &o[k..], &dd) == (input.len(), 0, 0))
                    .unwrap_or_else(|| {
                        panic!("trial {trial}: the last run's outputs are not the input")
                    });
                println!("redis trial {trial}: {replayed} lines replayed");
            } else if run == 0 {
                // Later killed runs may begin with lines replayed from the
                // journal, whose number is not known here.
                merge(&input, &o, &dd);
            }
        }
        let lost = distinct.iter().filter(|l| !printed.contains(**l)).count();
        assert_eq!(lost, 0, "trial {trial}: lines never printed");
    }
    assert!(kills >= 2, "only {kills} runs killed");
}
