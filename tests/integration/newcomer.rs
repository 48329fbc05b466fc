//! Issue 21: the surprises a first-time user hit, one test each.

use crate::common::{numbered, records, reference, seen, seen_env, seen_io, stats_json, tmp};

/// A filter far under its capacity has a tiny but non-zero false-positive
/// rate: `stats` and `--summary` must not round it to 0 by computing
/// `1 − (1 − p)` (it printed `estimated_fpp: 0` and `0.0e0`).
#[test]
fn tiny_rates_are_not_rounded_to_zero() {
    let dir = tmp();
    let lines = numbered("", 0..100_000);
    seen_io(
        dir.path(),
        ["build", "-n", "10M", "-o", "t.seen", "--summary", "--json"],
        &lines,
    )
    .code(0);
    let s = stats_json(dir.path(), "t.seen");
    let overall = s["estimated_fpp"].as_f64().unwrap();
    let layer = s["layers"][0]["estimated_fpp"].as_f64().unwrap();
    assert!(layer > 0.0 && layer < 1e-20, "layer rate {layer}");
    assert_eq!(overall, layer, "one layer: the overall rate is the layer's");
    let r = seen(dir.path(), ["stats", "t.seen"]);
    let text = r.stdout_str();
    assert!(!text.contains("0.000e0"), "{text}");
    let built = seen_io(
        dir.path(),
        ["build", "--add", "-o", "t.seen", "--summary", "--json"],
        b"one more\n",
    );
    let summary = built.stderr_json();
    let now = summary["fpp_now"].as_f64().unwrap();
    assert!(now > 0.0, "--summary's fpp_now is {now}");
    let expected = summary["expected_false_positives"].as_f64().unwrap();
    assert!(expected > 0.0 && expected < 1e-20, "{expected}");
}

/// `seen query F urls.txt` looks up the string "urls.txt": the answer stays
/// (exit 1, nothing printed), with a note that names `--file`.
#[test]
fn an_item_that_is_a_file_gets_a_note() {
    let dir = tmp();
    std::fs::write(dir.path().join("urls.txt"), b"https://a.example/\n").unwrap();
    seen(dir.path(), ["build", "-o", "u.seen", "urls.txt"]).ok();
    let r = seen(dir.path(), ["query", "u.seen", "urls.txt"]);
    r.code(1).no_stdout();
    r.stderr_has("--file urls.txt");
    r.stderr_has("looked up as an item");
    // An item that is no file: no note.
    seen(dir.path(), ["query", "u.seen", "https://a.example/"])
        .ok()
        .stdout(b"https://a.example/\n");
    // Reading the file is what the note suggests, and it finds the line.
    seen(dir.path(), ["query", "u.seen", "--file", "urls.txt"])
        .ok()
        .stdout(b"https://a.example/\n");
}

/// `dedup -f F -m N` hands out the next N new lines each run and records
/// exactly those, whatever the chunking: three runs over a frontier of 2,500
/// lines (with repeats) print awk's output in three consecutive slices, and a
/// fourth prints nothing.
#[test]
fn max_count_hands_out_the_next_lines_each_run() {
    let dir = tmp();
    let mut frontier = Vec::new();
    for i in 0..2_500u32 {
        // Every fifth line repeats an earlier one.
        let n = if i % 5 == 4 { i / 2 } else { i };
        frontier.extend_from_slice(format!("https://c.example/{n}\n").as_bytes());
    }
    std::fs::write(dir.path().join("frontier"), &frontier).unwrap();
    let want = reference(&frontier, b'\n', false);
    let want: Vec<&[u8]> = records(&want, b'\n');
    for chunk in ["4096", "1000000"] {
        let f = format!("f{chunk}.seen");
        let mut got: Vec<Vec<u8>> = Vec::new();
        for run in 0..4 {
            let r = seen_env(
                dir.path(),
                &[("SEEN_CHUNK_BYTES", chunk)],
                ["dedup", "-f", &f, "-n", "10k", "-m", "900", "frontier"],
                b"",
            );
            r.code(0);
            let lines = r.lines();
            let expect = want.len().saturating_sub(900 * run).min(900);
            assert_eq!(lines.len(), expect, "run {run}, chunk {chunk}");
            got.extend(lines.into_iter().map(|l| l.into_bytes()));
        }
        let want: Vec<Vec<u8>> = want.iter().map(|l| l.to_vec()).collect();
        assert!(
            got == want,
            "chunk {chunk}: the runs together are awk's output"
        );
    }
}

/// `-m` without a filter stops after N printed lines; with `-d` it counts
/// the repeats printed; `-m 0` reads, prints and creates nothing.
#[test]
fn max_count_stops_printing() {
    let dir = tmp();
    seen_io(dir.path(), ["dedup", "-m", "3"], b"a\nb\na\nc\nd\ne\n")
        .ok()
        .stdout(b"a\nb\nc\n");
    seen_io(
        dir.path(),
        ["dedup", "-d", "-m", "2"],
        b"a\na\nb\nb\na\nc\nc\n",
    )
    .ok()
    .stdout(b"a\nb\n");
    seen_io(dir.path(), ["dedup", "-m", "0", "-f", "none.seen"], b"a\n")
        .ok()
        .no_stdout();
    assert!(!dir.path().join("none.seen").exists());
}

/// While another process holds a filter (a `query` coprocess waiting for
/// its next item), `dedup -f F --wait 300ms` gives up with exit 2 and a
/// message naming the filter, instead of waiting forever; without the
/// holder, the same command runs.
#[test]
fn lock_waits_can_give_up() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let dir = tmp();
    seen_io(dir.path(), ["build", "-o", "f.seen"], b"x\n").ok();
    let mut holder = crate::common::command(dir.path())
        .args(["query", "f.seen"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    stdin.write_all(b"x\n").unwrap();
    stdin.flush().unwrap();
    // Its answer comes once it has the filter open (and its shared lock).
    let mut answer = [0u8; 2];
    holder
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut answer)
        .unwrap();
    assert_eq!(&answer, b"x\n");
    let r = seen_io(
        dir.path(),
        ["dedup", "-f", "f.seen", "--wait", "300ms"],
        b"y\n",
    );
    r.code(2).no_stdout();
    r.stderr_has("gave up waiting 300ms for an exclusive lock on f.seen");
    r.stderr_has("--wait");
    // --wait 0 does not wait at all, and says so (it said "waiting 0ns").
    seen_io(dir.path(), ["dedup", "-f", "f.seen", "--wait", "0"], b"y\n")
        .code(2)
        .stderr_has("did not wait (--wait 0) for an exclusive lock on f.seen");
    drop(stdin);
    assert!(holder.wait().unwrap().success());
    seen_io(
        dir.path(),
        ["dedup", "-f", "f.seen", "--wait", "0"],
        b"y\nx\n",
    )
    .ok()
    .stdout(b"y\n");
    seen(dir.path(), ["dedup", "--wait", "soon"]).fails("not a duration");
}

/// `-d` is `uniq -d` for repeats anywhere: each repeated line once, at its
/// second occurrence (awk's `seen[$0]++ == 1`); `-D` is every repeat.
#[test]
fn repeated_prints_each_repeat_once() {
    let dir = tmp();
    let input = b"a\na\na\nb\nb\nc\n";
    seen_io(dir.path(), ["dedup", "-d"], input)
        .ok()
        .stdout(b"a\nb\n");
    seen_io(dir.path(), ["dedup", "-D"], input)
        .ok()
        .stdout(b"a\na\nb\n");
    // A larger input, in small chunks and on several threads.
    let mut data = Vec::new();
    let mut rng = crate::common::Rng(21);
    for _ in 0..50_000 {
        data.extend_from_slice(format!("k{}\n", rng.below(20_000)).as_bytes());
    }
    let mut count = std::collections::HashMap::new();
    let mut want = Vec::new();
    for r in records(&data, b'\n') {
        let n = count.entry(r).or_insert(0);
        *n += 1;
        if *n == 2 {
            want.extend_from_slice(r);
            want.push(b'\n');
        }
    }
    for (threads, chunk) in [("1", "1000000"), ("3", "4096")] {
        seen_env(
            dir.path(),
            &[("RAYON_NUM_THREADS", threads), ("SEEN_CHUNK_BYTES", chunk)],
            ["dedup", "-d", "-p", "1e-9"],
            &data,
        )
        .ok()
        .stdout(&want);
    }
    // With -f, a line of an earlier run repeats at its first occurrence now.
    seen_io(dir.path(), ["dedup", "-n", "1k", "-f", "p.seen"], b"x\ny\n").ok();
    seen_io(
        dir.path(),
        ["dedup", "-d", "-f", "p.seen"],
        b"x\nz\nx\nz\nz\n",
    )
    .ok()
    .stdout(b"x\nz\n");
    seen(dir.path(), ["dedup", "-d", "-D"]).fails("cannot be used with");
}

/// `seen --help > /dev/full` wrote nothing and exited 0; now it is an error.
#[test]
fn help_to_a_full_device_is_an_error() {
    let dir = tmp();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = crate::common::command(dir.path())
        .arg("--help")
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::common::stderr(&out).contains("cannot write output"));
    seen(dir.path(), ["--help"]).ok();
}

/// `-n 1,000,000`, the way `seen` prints counts, is accepted (it was "not a
/// count"); a decimal comma is refused with the reason.
#[test]
fn counts_take_thousands_commas() {
    let dir = tmp();
    let r = seen(dir.path(), ["plan", "-n", "1,000,000", "--fixed"]);
    r.ok();
    assert!(
        r.stdout_str().starts_with("capacity         1,000,000\n"),
        "{}",
        r.stdout_str()
    );
    seen(dir.path(), ["plan", "-n", "1,5"]).fails("commas may only group digits by three");
}

/// One rule for suffixes: a count's `m` is a million (`-n 10m`), a duration
/// says `min`; `--commit-every 1m` (a minute, or a million lines?) is
/// refused with both readings, and so is `--wait 5m`.
#[test]
fn an_ambiguous_m_is_refused_with_the_fix() {
    let dir = tmp();
    seen(
        dir.path(),
        ["dedup", "-f", "f.seen", "--commit-every", "1m"],
    )
    .fails("write 1min for minutes, or 1M for millions of lines");
    // --wait takes no count: its message names minutes and milliseconds only.
    let r = seen(dir.path(), ["dedup", "--wait", "5m"]);
    r.fails("write 5min for minutes (or 5ms for milliseconds)");
    assert!(!r.stderr.contains("millions"), "{}", r.ctx());
    seen_io(
        dir.path(),
        [
            "dedup",
            "-n",
            "1k",
            "-f",
            "f.seen",
            "--commit-every",
            "1min",
            "--wait",
            "1min",
        ],
        b"a\n",
    )
    .code(0)
    .stdout(b"a\n");
    let r = seen(dir.path(), ["plan", "-n", "10m", "--fixed"]);
    r.ok();
    assert!(r.stdout_str().starts_with("capacity         10,000,000\n"));
}

/// Item 2: without `-t`, `-k N` splits on runs of blanks as awk does (it
/// split on tabs, so `printf 'x 1\ny 2\nz 1\n' | seen dedup -k 2` printed
/// only `x 1`). The rule is recorded in the filter: a `-k` file made with
/// the old default (a tab, byte 9 in the key options, format 1.4) keeps
/// splitting on tabs, and a new one says 1.5 so older readers refuse it.
#[test]
fn fields_without_t_are_runs_of_blanks() {
    let dir = tmp();
    let d = dir.path();
    seen_io(d, ["dedup", "-k", "2"], b"x 1\ny 2\nz 1\n")
        .ok()
        .stdout(b"x 1\ny 2\n");
    // Leading and repeated blanks, tabs and spaces mixed, as awk '{print $2}'.
    let data = b"  a  1\nb\t1\n\tc \t 2  \nd\n\n";
    seen_io(d, ["dedup", "-k", "2"], data)
        .code(0)
        .stderr_has("2 of 5 records had no field 2")
        .stdout(b"  a  1\n\tc \t 2  \nd\n");
    // `-t ' '` keeps the exact split of cut: field 2 of "  a  1" is empty,
    // like the missing field 2 of an empty line.
    seen_io(d, ["dedup", "-k", "2", "-t", " "], b"  a  1\nb 1\n\n")
        .code(0)
        .stdout(b"  a  1\nb 1\n");

    // A filter made with blank-separated keys records it, and later runs
    // split the same way with no key flags.
    seen_io(d, ["build", "-k", "2", "-o", "b.seen"], b"x 1\ny 2\n").ok();
    let s = stats_json(d, "b.seen");
    assert_eq!(s["keys"], "field 2 (blank-separated)", "{s}");
    assert_eq!(s["key_flags"], "-k 2", "{s}");
    assert_eq!(s["format_version"], "1.5", "{s}");
    seen_io(d, ["dedup", "-f", "b.seen"], b"p   1\nq\t3\n")
        .ok()
        .stdout(b"q\t3\n");

    // The old default's file: key options = field 2, delimiter tab (what
    // `-k 2` wrote before; `-t '\t'` writes it now), format 1.4.
    seen_io(
        d,
        ["build", "-k", "2", "-t", "\\t", "-o", "t.seen"],
        b"x\t1 a\n",
    )
    .ok();
    let head = std::fs::read(d.join("t.seen")).unwrap();
    assert_eq!(u16::from_le_bytes([head[10], head[11]]), 4, "format 1.4");
    assert_eq!(head[44..48], [2, 0, 9, 0], "key options: field 2, tab");
    let s = stats_json(d, "t.seen");
    assert_eq!(s["key_flags"], "-k 2 -t '\\t'", "{s}");
    // It keeps its meaning: `1 a` is field 2 of `y\t1 a`; blanks would say `1`.
    seen_io(d, ["dedup", "-f", "t.seen"], b"y\t1 a\nz 1\tq\n")
        .ok()
        .stdout(b"z 1\tq\n");
}

/// Item 1: a command-line item is a key. The issue's CSV with a blank line
/// put the empty key in a `-k 2 -t ,` filter, and `seen query ids.seen
/// anything` applied `-k 2` to the item (field 2 of `anything` is empty):
/// it printed `anything`, exit 0. Now items are keys (trim, URL and case
/// rules apply; field selection does not), lines read stay records unless
/// `--as-keys`, and `build` warns that records lacked the field.
#[test]
fn command_line_items_are_keys() {
    let dir = tmp();
    let d = dir.path();
    std::fs::write(d.join("u.csv"), b"id,email\n1,a@x\n\n").unwrap();
    seen(
        d,
        ["build", "-k", "2", "-t", ",", "-o", "ids.seen", "u.csv"],
    )
    .code(0)
    .stderr_has("warning: 1 of 3 records had no field 2 (keys `-k 2 -t ','`)");
    seen(d, ["query", "ids.seen", "anything"])
        .code(1)
        .no_stdout();
    // A query of records without the field looks them up as the empty key
    // (which the blank line put in this filter), and says so.
    seen_io(d, ["query", "ids.seen"], b"anything\n")
        .code(0)
        .stderr_has("1 of 1 records had no field 2 (keys `-k 2 -t ','`): each was looked up as the empty key")
        .stdout(b"anything\n");
    seen(d, ["query", "ids.seen", "a@x", "b@x"])
        .ok()
        .stdout(b"a@x\n");
    // Lines read are records, field 2 selected...
    seen_io(d, ["query", "ids.seen"], b"7,a@x\n8,b@x\n")
        .ok()
        .stdout(b"7,a@x\n");
    // ...unless they are said to be keys.
    seen_io(
        d,
        ["query", "--as-keys", "ids.seen"],
        b"a@x\n7,a@x\nanything\n",
    )
    .ok()
    .stdout(b"a@x\n");
    // Recorded normalisation still applies to items: trim and case.
    std::fs::write(d.join("n.csv"), b"1, Alice \n2,Bob\n").unwrap();
    seen(
        d,
        [
            "build", "-k", "2", "-t", ",", "--trim", "-i", "-o", "n.seen", "n.csv",
        ],
    )
    .ok();
    seen(d, ["query", "n.seen", "  ALICE", "bob", "carol", "1,Alice"])
        .ok()
        .stdout(b"  ALICE\nbob\n");
    // -k with items cannot apply: refused, saying what to do.
    seen(d, ["query", "-k", "2", "-t", ",", "ids.seen", "1,a@x"])
        .error("items on the command line are keys already");
    seen(d, ["query", "--as-keys", "-k", "2", "ids.seen"]).code(2);
}

/// The ETA of `--progress` lines comes from the rate since the work started
/// and is shown whenever the total is known: the plain lines written off a
/// terminal had bytes, percent, lines and rate but no ETA (and the bar's
/// came from indicatif's estimator, which said 0s for most of a run).
#[test]
fn progress_lines_carry_an_eta_when_the_total_is_known() {
    let dir = tmp();
    let lines = numbered("https://example.com/", 0..20_000);
    std::fs::write(dir.path().join("in.txt"), &lines).unwrap();
    let now = [("SEEN_PROGRESS_DELAY_MS", "0")];
    let progress_lines = |args: &[&str], input: &[u8]| {
        let r = seen_env(dir.path(), &now, args, input);
        r.code(0);
        let lines: Vec<String> = r.stderr.lines().map(str::to_string).collect();
        assert!(!lines.is_empty(), "{args:?}: no progress: {}", r.ctx());
        lines
    };
    // A regular file: its size is the total, so every line ends with an ETA,
    // unknown (`?`) before any byte is done, else a duration (`6s`, `1m 05s`).
    for args in [
        &["build", "--progress", "-o", "f.seen", "in.txt"][..],
        &["dedup", "--progress", "in.txt"],
        &["query", "--progress", "-c", "f.seen", "-f", "in.txt"],
        &["stats", "--progress", "f.seen"],
    ] {
        for line in progress_lines(args, b"") {
            assert!(line.starts_with("seen: ") && line.contains('%'), "{line}");
            let (_, eta) = line
                .rsplit_once(", ETA ")
                .unwrap_or_else(|| panic!("{args:?}: no ETA field: {line}"));
            // Words of digits and one unit: `6s`, `1m 05s`, `2h 03m`.
            let duration = eta.split(' ').all(|w| {
                let (digits, unit) = w.split_at(w.len().saturating_sub(1));
                !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && ["d", "h", "m", "s"].contains(&unit)
            });
            assert!(eta == "?" || duration, "{args:?}: ETA `{eta}` in {line}");
        }
    }
    // Standard input has no known total: no percent, no ETA.
    for line in progress_lines(&["build", "--progress", "-o", "g.seen"], &lines) {
        assert!(line.contains("lines") && !line.contains("ETA"), "{line}");
    }
}

/// `query -c` (and other runs that print nothing per line) on a terminal
/// showed no progress for all of a long run: the bar was held back as if
/// lines were printed to the terminal. Now `-c` shows the bar as `build`
/// does; printing lines still shows none, and `-q` (nothing at all, as
/// `grep -q`) none either.
#[test]
fn query_count_shows_a_bar_on_a_terminal() {
    use crate::common::BIN;
    use crate::progress::under_script;
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let dir = tmp();
    let lines = numbered("https://example.com/", 0..20_000);
    std::fs::write(dir.path().join("in.txt"), &lines).unwrap();
    seen(dir.path(), ["build", "-o", "f.seen", "in.txt"]).ok();
    // stdout is the terminal too: the count waits for the end, the bar shows.
    let t = under_script(dir.path(), &format!("'{BIN}' query -c f.seen -f in.txt"));
    assert!(t.contains("20000"), "{t:?}");
    assert!(t.contains("lines") && t.contains("ETA"), "no bar: {t:?}");
    // Printed lines are the progress: no bar between them.
    let t = under_script(dir.path(), &format!("'{BIN}' query f.seen -f in.txt"));
    assert!(t.contains("https://example.com/19999"), "{t:?}");
    assert!(!t.contains("lines") && !t.contains("ETA"), "{t:?}");
    // -q: nothing at all on the terminal.
    let t = under_script(
        dir.path(),
        &format!("'{BIN}' query -q --all f.seen -f in.txt"),
    );
    assert!(!t.contains("lines") && !t.contains("ETA"), "{t:?}");
}

/// `build --help` and `plan --help` described -n with `dedup`'s rules (and
/// `plan`, which reads no input, with "input files"): each command now says
/// its own default.
#[test]
fn capacity_help_is_each_commands_own() {
    let dir = tmp();
    // The -n entry of `seen CMD FLAG`: its first line and the ones indented
    // under it (deeper than the flags' column), up to a blank line.
    let n_help = |cmd: &str, flag: &str| {
        let out = seen(dir.path(), [cmd, flag]).stdout_str();
        let mut entry = Vec::new();
        for line in out
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("-n, --capacity"))
        {
            let indent = line.len() - line.trim_start().len();
            if !entry.is_empty() && (line.trim().is_empty() || indent < 8) {
                break;
            }
            entry.push(line.trim());
        }
        assert!(!entry.is_empty(), "{cmd} {flag}: no -n entry in {out}");
        entry.join(" ")
    };
    for flag in ["-h", "--help"] {
        let build = n_help("build", flag);
        assert!(!build.contains("dedup"), "build {flag}: {build}");
        assert!(build.contains("input files"), "build {flag}: {build}");
        let plan = n_help("plan", flag);
        assert!(
            !plan.contains("dedup") && !plan.contains("input files"),
            "plan {flag}: {plan}"
        );
        assert!(plan.contains("10M"), "plan {flag}: {plan}");
        let dedup = n_help("dedup", flag);
        assert!(dedup.contains("input files"), "dedup {flag}: {dedup}");
    }
    // dedup still explains its own rule in full: sampling, and -f files.
    let dedup = n_help("dedup", "--help");
    assert!(dedup.contains("sampled") && dedup.contains("-f"), "{dedup}");
    assert!(dedup.contains("at least 10M"), "{dedup}");
}

/// Issue 21, item 7: warnings follow the estimated false-positive rate, not
/// the insert count. `-n 200 -p 1%` is rounded up to one 4 KiB page, so 400
/// lines leave its rate near 2e-11: `build` warned twice anyway ("more than
/// 150% … results are no longer reliable") and `stats` a third time ("200% of
/// capacity"); now neither says a word. Past the target, one warning each;
/// past 10 times it, the stronger one, with the rate and the target.
#[test]
fn overfill_warnings_follow_the_estimated_rate() {
    let dir = tmp();
    let sized = ["build", "-n", "200", "-p", "1%", "--fixed", "-o"];
    let build = |file: &str, lines: u32| {
        let mut args = sized.to_vec();
        args.push(file);
        seen_io(dir.path(), args, &numbered("", 1..lines + 1))
    };
    build("s.seen", 400).ok();
    let r = seen(dir.path(), ["stats", "--json", "s.seen"]);
    r.ok();
    let s = r.stdout_json();
    assert_eq!(s["inserts"], 400, "{s}");
    assert!(s["estimated_fpp"].as_f64().unwrap() < 1e-6, "{s}");
    assert_eq!(s["warnings"].as_array().unwrap().len(), 0, "{s}");
    seen(dir.path(), ["stats", "s.seen"]).ok();
    // Past the target (about 2,200 lines), not yet 10 times it: one warning.
    let r = build("m.seen", 2500);
    r.code(0)
        .stderr_has("seen: warning: m.seen is a fixed filter, and its false-positive rate has passed its target 1e-2 (about 1.0e-2 at ")
        .stderr_has("of the 200 it was sized for): rebuild it larger (or growing) before it degrades further");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    let r = seen(dir.path(), ["stats", "m.seen"]);
    r.code(0)
        .stderr_has("seen: warning: m.seen: estimated false-positive rate ")
        .stderr_has("is above its target 1e-2: rebuild it larger (or growing)");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    // Far past it: both warnings from build, the stronger one from stats.
    let r = build("f.seen", 5000);
    r.code(0)
        .stderr_has("has passed its target 1e-2")
        .stderr_has("has passed 10 times its target 1e-2 (about 1.0e-1 at ")
        .stderr_has("): results are no longer reliable; rebuild it larger (or growing)");
    assert_eq!(r.stderr.lines().count(), 2, "{}", r.stderr);
    let r = seen(dir.path(), ["stats", "--json", "f.seen"]);
    r.code(0);
    let s = r.stdout_json();
    let rate = format!("{:.2e}", s["estimated_fpp"].as_f64().unwrap());
    let warning = format!(
        "estimated false-positive rate {rate} is more than 10 times its target 1e-2: \
         results are no longer reliable; rebuild it larger (or growing)"
    );
    assert_eq!(s["warnings"], serde_json::json!([warning]), "{s}");
    r.stderr_has(&format!("seen: warning: f.seen: {warning}"));
}

/// Issue 21, item 8: an over-full fixed filter counts fewer inserts than the
/// distinct lines it was given (new lines taken for seen ones are not
/// counted), and `stats` showed `inserts 6,948` after 100,000 lines without a
/// word why. Now a `note` row says so and `--json` gives the number
/// (`estimated_uncounted`); a healthy filter has neither.
#[test]
fn stats_explains_inserts_below_the_lines_added() {
    let dir = tmp();
    let build = |file: &str, lines: u32| {
        seen_io(
            dir.path(),
            ["build", "-n", "1000", "-p", "1%", "--fixed", "-o", file],
            &numbered("", 1..lines + 1),
        )
    };
    build("b.seen", 100_000).code(0);
    let r = seen(dir.path(), ["stats", "b.seen"]);
    r.code(0);
    let text = r.stdout_str();
    let note = text
        .lines()
        .find(|l| l.starts_with("note "))
        .unwrap_or_else(|| panic!("no note: {text}"));
    assert!(
        note.contains("inserts counts only lines judged new: at least ")
            && note.ends_with(" more were taken for seen ones (false positives)"),
        "{note}"
    );
    let s = stats_json(dir.path(), "b.seen");
    let inserts = s["inserts"].as_u64().unwrap();
    let uncounted = s["estimated_uncounted"].as_u64().unwrap();
    assert!(inserts < 10_000 && uncounted > 5_000, "{s}");
    assert!(note.contains(&format!(
        "at least {} more",
        indicatif::HumanCount(uncounted)
    )));
    // A healthy filter, and the small one over its capacity but not its
    // target: no note, nothing uncounted.
    build("h.seen", 1000).ok();
    build("s.seen", 2000).ok();
    for f in ["h.seen", "s.seen"] {
        let r = seen(dir.path(), ["stats", f]);
        r.ok();
        assert!(!r.stdout_str().contains("note"), "{}", r.stdout_str());
        assert_eq!(stats_json(dir.path(), f)["estimated_uncounted"], 0);
    }
}

/// Item 8: each option under its own heading. `query --help` listed `-z`,
/// `-j` and `--no-mmap` under "Progress and waiting", and `dedup`/`build`
/// put their `[FILE]...` argument there (a flattened group's heading
/// carried over to what followed it).
#[test]
fn help_headings_hold_their_own_options() {
    let dir = tmp();
    for cmd in ["query", "dedup", "build"] {
        let help = seen(dir.path(), [cmd, "--help"]).stdout_str();
        let section = help
            .split("Progress and waiting:")
            .nth(1)
            .unwrap_or_else(|| panic!("{cmd}: no progress heading\n{help}"));
        // Up to the next heading (a line that starts with no blank).
        let end = section
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&i| section[i..].starts_with(|c: char| c.is_ascii_alphabetic()))
            .unwrap_or(section.len());
        let section = &section[..end];
        for stray in ["--null", "--threads", "--no-mmap", "[FILE]", "--key"] {
            assert!(
                !section.contains(stray),
                "{cmd}: {stray} under progress:\n{section}"
            );
        }
        assert!(
            section.contains("--wait") && section.contains("--progress"),
            "{cmd}: {section}"
        );
        if cmd != "query" {
            let args = help.split("Options:").next().unwrap();
            assert!(
                args.contains("Arguments:") && args.contains("[FILE]..."),
                "{cmd}: {args}"
            );
        }
    }
}

/// Issue 43, item 7: `build --force` over a `--url` filter, without key
/// flags, made a whole-record filter, and `HTTPS://WWW.EXAMPLE.NET:443/…`
/// went from present to absent. The replaced filter's key options are now
/// kept, and said; `--raw-keys` still changes them.
#[test]
fn a_filter_built_again_keeps_its_key_options() {
    let d = tmp();
    let p = d.path();
    let lines = b"https://www.example.net/a\n";
    let other = "HTTPS://WWW.EXAMPLE.NET:443/a";
    seen_io(p, ["build", "-q", "--url", "-o", "u.seen"], lines).ok();
    seen_io(p, ["build", "-q", "--force", "-o", "u.seen"], lines)
        .code(0)
        .stderr_has("key options it records (--url)");
    seen(p, ["query", "u.seen", other]).code(0);
    seen_io(
        p,
        ["build", "-q", "--force", "--raw-keys", "-o", "u.seen"],
        lines,
    )
    .ok();
    seen(p, ["query", "u.seen", other]).code(1);
    // Nothing to keep: no note.
    seen_io(p, ["build", "-q", "--force", "-o", "new.seen"], lines).ok();
    seen_io(p, ["build", "-q", "--force", "-o", "new.seen"], lines).ok();
}

/// Issue 43, item 5: the README's daily window job (`dedup -f popup.seen
/// --window 6d -n 30M -p 1e-2`) was warned on every run after the first
/// that its sizing flags and --window were ignored. Flags the filter was
/// made with are no longer warned about; others still are.
#[test]
fn the_flags_a_filter_was_made_with_are_not_warned_about() {
    let d = tmp();
    let p = d.path();
    let job = [
        "dedup",
        "-f",
        "popup.seen",
        "--window",
        "6d",
        "-n",
        "30M",
        "-p",
        "1e-2",
    ];
    seen_io(p, job, b"u1\n").ok().stdout(b"u1\n");
    seen_io(p, job, b"u1\nu2\n").ok().stdout(b"u2\n");
    seen_io(p, ["dedup", "-f", "popup.seen", "-n", "30M"], b"u3\n")
        .ok()
        .stdout(b"u3\n");
    seen_io(p, ["dedup", "-f", "popup.seen", "--window", "7d"], b"u4\n")
        .code(0)
        .stderr_has("--window too");
    seen_io(p, ["dedup", "-f", "popup.seen", "-p", "1e-3"], b"u5\n")
        .code(0)
        .stderr_has("sizing flags are ignored");
}

/// Whether `tool` runs (`tool --version`); a test that needs it skips
/// without it, except in CI, which must have installed `package`.
fn installed(tool: &str, package: &str) -> bool {
    let runs = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs || std::env::var_os("CI").is_none(),
        "CI needs {tool} ({package})"
    );
    runs
}

/// Issue 43, item 8: after the README's install step (`cp man/*.1
/// ~/.local/share/man/man1/`, the binary in `~/.cargo/bin`) `man seen` said
/// "No manual entry". The README's command, run as written in a home of its
/// own with `~/.cargo/bin` on the `PATH` and no `MANPATH`, now lets `man`
/// find every page. (Skipped where `man` is not installed, except in CI.)
#[test]
fn the_readme_man_install_step_works_as_written() {
    if !installed("man", "man-db") {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let step = readme
        .lines()
        .find(|l| l.starts_with("mkdir -p ~/") && l.contains("cp man/*.1"))
        .expect("the README's man install step");
    let home = tmp();
    let bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(crate::common::BIN, bin.join("seen")).unwrap();
    let st = std::process::Command::new("sh")
        .args(["-c", step])
        .current_dir(root)
        .env("HOME", home.path())
        .status()
        .unwrap();
    assert!(st.success(), "{step}");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    for page in ["seen", "seen-dedup", "seen-forget"] {
        let o = std::process::Command::new("man")
            .args(["-w", page])
            .env_remove("MANPATH")
            .env("HOME", home.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        let at = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && at.trim().starts_with(&home.path().display().to_string()),
            "man -w {page}: {at} {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Issue 43, item 6 (in part): `--now` on a filter without a time window
/// was silently ignored; it is now said. A filter with a window takes it
/// without a note.
#[test]
fn now_on_a_filter_without_a_window_is_said_to_be_ignored() {
    let d = tmp();
    let p = d.path();
    let now = "2026-12-01T09:00:00Z";
    seen_io(
        p,
        ["dedup", "-q", "-n", "1k", "-f", "plain.seen", "--now", now],
        b"a\n",
    )
    .code(0)
    .stderr_has("--now is ignored: plain.seen has no time window");
    seen_io(p, ["dedup", "--now", now], b"a\n")
        .code(0)
        .stderr_has("--now is ignored: the in-memory filter has no time window");
    seen_io(
        p,
        [
            "dedup", "-n", "1k", "--window", "6d", "-f", "w.seen", "--now", now,
        ],
        b"a\n",
    )
    .ok()
    .stdout(b"a\n");
    seen_io(p, ["query", "w.seen", "--now", now], b"a\n").ok();
}

/// Issue 43, item 9: help and version into a pipe whose reader is gone
/// (`seen dedup --help | head -3` once `head` has its lines) end quietly
/// with exit 0, as the README promises; it was exit 2, "cannot write
/// output: Broken pipe", whenever the reader left first. The reader here is
/// gone before `seen` starts, so every run meets the closed pipe.
#[test]
fn help_into_a_closed_pipe_is_a_quiet_exit_0() {
    let d = tmp();
    for args in [
        &["dedup", "--help"][..],
        &["plan", "--help"],
        &["--version"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = crate::common::command(d.path())
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
    }
}

/// Issue 43, item 9: a filter given as lines (`seen dedup < f.seen`) is
/// refused with what to do, and that names `merge`, which exists, rather
/// than saying filters "cannot be combined yet".
#[test]
fn a_filter_given_as_lines_points_to_merge() {
    let d = tmp();
    seen_io(d.path(), ["build", "-q", "-o", "f.seen"], b"a\nb\n").ok();
    let out = crate::common::command(d.path())
        .arg("dedup")
        .stdin(std::fs::File::open(d.path().join("f.seen")).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "{err}");
    assert!(
        err.contains("standard input is a seen filter, not a file of lines")
            && err.contains("seen merge A B -o BOTH"),
        "{err}"
    );
}

/// Issue 43, item 11: docs/REDIS.md's recipe for trying a Cluster on one
/// machine works as written (on free ports instead of 7000-7002): it makes
/// the Cluster, dedups 100,000 lines on it twice (all new, then none), and
/// stops the servers. Needs `redis-server` (CI installs it).
#[test]
fn the_cluster_recipe_works_as_written() {
    if !installed("redis-server", "redis-server") {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/REDIS.md")).unwrap();
    let block = doc
        .split("the_cluster_recipe_works_as_written runs this block")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("\n```").next())
        .expect("docs/REDIS.md's Cluster recipe");
    // Three free ports whose bus ports (+10000) are free too.
    let free = |p: u16| {
        std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
            && std::net::TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok()
    };
    let base = (20_000..29_000)
        .step_by(7)
        .map(|b| b + (std::process::id() % 7) as u16)
        .find(|&b| (b..b + 3).all(free))
        .expect("three free ports");
    let script = (0..3).fold(block.to_string(), |s, i| {
        s.replace(&format!("700{i}"), &(base + i).to_string())
    });
    /// Stops the servers however the test ends.
    struct Stop(u16);
    impl Drop for Stop {
        fn drop(&mut self) {
            for p in self.0..self.0 + 3 {
                let _ = std::process::Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "shutdown", "nosave"])
                    .output();
            }
        }
    }
    let _stop = Stop(base);
    let bin = std::path::Path::new(crate::common::BIN).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let home = tmp();
    let out = std::process::Command::new("bash")
        .args(["-e", "-c", &script])
        .env("PATH", path)
        .env("TMPDIR", home.path())
        .env("SEEN_JOURNAL_DIR", home.path().join("j"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script}\n{out:?}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["100000", "0"], "{text}");
    assert!(
        lines[2].starts_with("inserts") && lines[2].contains("100,000"),
        "{text}"
    );
}

/// Issue 43, item 1: a filter travels through a pipe (`seen copy F - |
/// seen copy - G`, as over ssh), plain or zstd-compressed (`--zstd`, or a
/// file named `.zst`), and arrives byte for byte, forget list and all. It
/// wrote a file named `-` before. A stream cut short or empty is refused,
/// naming standard input.
#[test]
fn a_filter_travels_through_a_pipe_plain_or_compressed() {
    let d = tmp();
    let p = d.path();
    // Young (1 % of its capacity): zstd pays.
    let lines = numbered("https://example.com/", 0..10_000);
    seen_io(p, ["build", "-q", "-n", "1M", "-o", "f.seen"], &lines).ok();
    seen_io(p, ["forget", "f.seen", "https://example.com/7"], b"").ok();
    let f = std::fs::read(p.join("f.seen")).unwrap();
    let plain = seen(p, ["copy", "f.seen", "-"]);
    plain.ok();
    assert!(!p.join("-").exists(), "a file named - was written");
    let plain = plain.stdout;
    assert_eq!(plain, f, "the plain stream is the file");
    let packed = seen(p, ["copy", "--zstd", "f.seen", "-"]);
    let packed = packed.ok().stdout.clone();
    assert!(
        packed.len() * 4 < f.len(),
        "{} compressed bytes for a {}-byte filter at 1 % of capacity",
        packed.len(),
        f.len()
    );
    for (stream, name) in [(&plain, "g.seen"), (&packed, "h.seen")] {
        seen_io(p, ["copy", "-", name], stream).ok();
        assert_eq!(std::fs::read(p.join(name)).unwrap(), f, "{name}");
        seen_io(p, ["query", "-c", name], &lines)
            .ok()
            .stdout(b"9999\n");
    }
    // By the destination's name, and back.
    seen(p, ["copy", "f.seen", "f.seen.zst"]).ok();
    let zst = std::fs::read(p.join("f.seen.zst")).unwrap();
    assert!(zst.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) && zst.len() * 4 < f.len());
    seen(p, ["copy", "f.seen", "f.seen.zst"])
        .code(2)
        .stderr_has("--force");
    seen(p, ["copy", "f.seen.zst", "k.seen"]).ok();
    assert_eq!(std::fs::read(p.join("k.seen")).unwrap(), f);
    // Damage in transit.
    seen_io(p, ["copy", "-", "x.seen"], &packed[..packed.len() / 2])
        .code(2)
        .stderr_has("standard input: not a whole zstd stream");
    seen_io(p, ["copy", "-", "x.seen"], &plain[..1000])
        .code(2)
        .stderr_has("standard input is not a usable filter");
    seen_io(p, ["copy", "-", "x.seen"], b"")
        .code(2)
        .stderr_has("standard input is empty");
    assert!(!p.join("x.seen").exists());
}

/// Issue 43, item 3: the summary of a run on an over-full filter counts the
/// new lines it took for seen ones as they were. A false positive sets no
/// bit, so the filter's bits (and rate) are those of more keys than it
/// counted; the summary used the count and said 4,342 where 26,025 were
/// dropped (file), 3,839 where 4,520 were (Redis).
#[test]
fn an_over_full_filters_summary_counts_its_false_positives() {
    let d = tmp();
    crate::common::write(&d, "old.txt", &numbered("o", 0..53_000));
    crate::common::write(&d, "new.txt", &numbered("n", 0..30_000));
    let check = |filter: &str, made: &[&str], slack: f64| {
        let mut args = vec!["build", "--fixed", "-n", "10k", "-o", filter, "old.txt"];
        args.extend_from_slice(made);
        // Named as where it is, not "the in-memory filter" a Redis one is
        // built in first.
        seen(d.path(), args)
            .code(0)
            .stderr_has(&format!("{filter} is a fixed filter"));
        let run = seen(
            d.path(),
            ["dedup", "-f", filter, "--summary", "--json", "new.txt"],
        );
        run.code(0);
        // The summary is the last line, after the filter's warnings.
        let last = run.stderr.lines().last().unwrap_or_default();
        let s: serde_json::Value = serde_json::from_str(last).expect(&run.stderr);
        let dropped = 30_000.0 - s["new"].as_f64().unwrap();
        let said = s["expected_false_positives"].as_f64().unwrap();
        assert!(dropped > 4_000.0, "{filter}: only {dropped} dropped");
        assert!(
            (said - dropped).abs() <= slack * dropped,
            "{filter}: {said} false positives said, {dropped} dropped"
        );
        // Its rate now is the one `stats` counts from the bits.
        let now = s["fpp_now"].as_f64().unwrap();
        let stats = seen(d.path(), ["stats", "--json", filter])
            .code(0)
            .stdout_json()["estimated_fpp"]
            .as_f64()
            .unwrap();
        assert!(
            (now - stats).abs() <= 0.05 * stats,
            "{filter}: {now} {stats}"
        );
    };
    check("a.seen", &["-p", "1e-2"], 0.1);
    if let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") {
        let r = format!("redis://{addr}/{}", crate::common::unique_name("overfull"));
        check(&r, &["--redis-layout", "bloom"], 0.1);
    }
}

/// Issue 43, item 6: a `--now` far ahead of the system clock moved a
/// filter's time for good, silently, and every later run warned with no
/// way back. Now the writer that moves it is warned, and `seen verify
/// --set-clock` sets it back, saying what that did.
#[test]
fn a_far_future_now_is_warned_and_can_be_set_back() {
    let d = tmp();
    let p = d.path();
    let sys = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let day = 86_400;
    let at = |t: u64| format!("--now=@{t}");
    for (f, forgets) in [("w.seen", false), ("f.seen", true)] {
        let make = ["dedup", "-f", f, "--window", "6d", "-n", "1k"];
        seen_io(
            p,
            make.iter().copied().chain([at(sys - 2 * day).as_str()]),
            b"a\n",
        )
        .ok();
        seen_io(p, ["dedup", "-f", f, &at(sys - day)], b"b\nx\n").ok();
        if forgets {
            seen(p, ["forget", f, "x", &at(sys - day)]).ok();
        }
        // Ten years ahead: said by the run that moves the time there.
        let ahead = seen_io(p, ["dedup", "-f", f, &at(sys + 3651 * day)], b"c\n");
        ahead.code(0).stdout(b"c\n");
        ahead
            .stderr_has("10 years ahead of this machine's clock")
            .stderr_has(&format!("`seen verify --set-clock now {f}` sets it back"));
        // Every later run at the system clock works at that time, and says
        // how to set it back: a and b expired.
        let q = seen_io(p, ["query", "-c", f], b"a\nb\nc\n");
        q.stdout(b"1\n")
            .stderr_has("before the latest time lines were recorded")
            .stderr_has("--set-clock now");
        let back = seen(p, ["verify", "--set-clock", "now", f]);
        back.code(0)
            .stderr_has("time set back from")
            .stderr_has("1 line in 1 layer recorded after it now count as recorded at");
        // a's layer held c's slice: a is gone. b's expired with the jump:
        // seen again, unless the filter forgot keys (its list may have let
        // go of keys there, x here, which must not come back).
        let (said, new) = if forgets {
            ("were cleared, not brought back", "a\nb\nd\nx\n")
        } else {
            ("are seen again", "a\nd\n")
        };
        back.stderr_has(&format!(
            "2 lines in 1 layer that expired when its time moved ahead {said}"
        ));
        seen_io(p, ["dedup", "-f", f], b"a\nb\nc\nd\nx\n")
            .ok()
            .stdout(new.as_bytes());
        seen(p, ["verify", f]).ok();
        seen(p, ["verify", "--set-clock", "now", f]).stderr_has("nothing to set back");
    }
    // A filter made at a mistyped time: warned as it is made, and set back
    // with its lines (before: refused as before the filter was made, and
    // the failed attempt left the file dirty).
    let made = seen_io(
        p,
        [
            "dedup",
            "-f",
            "made.seen",
            "--window",
            "6d",
            "-n",
            "1k",
            &at(sys + 3651 * day),
        ],
        b"a\n",
    );
    made.code(0).stdout(b"a\n").stderr_has("10 years ahead");
    seen(p, ["verify", "--set-clock", "now", "made.seen"])
        .code(0)
        .stderr_has("1 line in 1 layer recorded after it");
    seen_io(p, ["dedup", "-f", "made.seen"], b"a\nb\n")
        .ok()
        .stdout(b"b\n");
    seen(p, ["verify", "made.seen"]).ok();
    // A layer recorded a slice ahead (20 h: not far), expired by the jump:
    // counted once, as expired (it was also counted as moved).
    let w = ["dedup", "-f", "h.seen", "--window", "6d", "-n", "1k"];
    seen_io(p, w.iter().copied().chain([at(sys - day).as_str()]), b"a\n").ok();
    seen_io(p, ["dedup", "-f", "h.seen", &at(sys + 20 * 3600)], b"b\n").ok();
    seen_io(p, ["dedup", "-f", "h.seen", &at(sys + 3651 * day)], b"c\n").code(0);
    seen(p, ["verify", "--set-clock", "now", "h.seen"])
        .code(0)
        .stderr_has("1 line in 1 layer recorded after it")
        .stderr_has("1 line in 1 layer that expired when its time moved ahead are seen again");
    seen_io(p, ["dedup", "-f", "h.seen"], b"a\nb\nc\n")
        .ok()
        .stdout(b"a\n");
    // Only a filter with a window has a clock, and a refusal leaves the
    // file clean.
    seen_io(p, ["dedup", "-f", "plain.seen", "-n", "1k"], b"a\n").ok();
    seen(p, ["verify", "--set-clock", "now", "plain.seen"]).error("no time window");
    seen(p, ["verify", "plain.seen"]).ok();
}
