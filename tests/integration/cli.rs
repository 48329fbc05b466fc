//! End-to-end tests of the `seen` binary: every subcommand and flag of issue 2,
//! exit codes, `-z`, corrupt filter files, closed standard output and locks.
//!
//! Every test works in its own temporary directory (the binary runs with that
//! directory as its working directory, so messages name files as given), data is
//! generated in the test from fixed seeds, and nothing sleeps.

use crate::common::{
    Rng, command, distinct, numbered, read_lines_then_close, records, reference, reseal, seen,
    seen_env, seen_io, stats_json, tmp, write,
};
use serde_json::Value;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Names in `dir` starting with '.' (temporary files of an unfinished write).
fn dot_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn assert_no_temp_files(dir: &Path) {
    let dots = dot_files(dir);
    assert!(dots.is_empty(), "temporary files left behind: {dots:?}");
}

// ---------------------------------------------------------------------------
// seen, --help, --version
// ---------------------------------------------------------------------------

#[test]
fn no_arguments_prints_usage_and_exits_2() {
    let d = tmp();
    let r = seen(d.path(), [] as [&str; 0]);
    r.code(2).no_stdout().stderr_has("Usage: seen");
    for sub in [
        "build",
        "query",
        "dedup",
        "stats",
        "verify",
        "plan",
        "completions",
    ] {
        r.stderr_has(sub);
    }
    // Short: a few lines pointing at --help, not the whole help.
    assert!(r.stderr.lines().count() <= 8, "{}", r.ctx());
    r.stderr_has("--help");
}

#[test]
fn help_of_every_subcommand_exits_0() {
    let d = tmp();
    let r = seen(d.path(), ["--help"]);
    r.ok();
    assert!(r.stdout_str().contains("Exit status"), "{}", r.ctx());
    for (sub, flags) in [
        (
            "build",
            &[
                "--output",
                "--capacity",
                "--fpp",
                "--force",
                "--add",
                "--null",
            ][..],
        ),
        (
            "query",
            &[
                "--file",
                "--invert-match",
                "--count",
                "--quiet",
                "--all",
                "--null",
            ][..],
        ),
        (
            "dedup",
            &["--filter", "--capacity", "--fpp", "--repeated", "--null"][..],
        ),
        ("stats", &["--json"][..]),
    ] {
        let r = seen(d.path(), [sub, "--help"]);
        r.ok();
        let out = r.stdout_str();
        assert!(out.contains(&format!("Usage: seen {sub}")), "{}", r.ctx());
        for f in flags {
            assert!(out.contains(f), "{sub} --help lacks {f}\n{}", r.ctx());
        }
        seen(d.path(), ["help", sub]).ok();
    }
}

#[test]
fn version_exits_0() {
    let d = tmp();
    seen(d.path(), ["--version"])
        .ok()
        .stdout(format!("seen {}\n", env!("CARGO_PKG_VERSION")).as_bytes());
}

#[test]
fn unknown_subcommand_and_missing_required_flag_exit_2() {
    let d = tmp();
    seen(d.path(), ["frobnicate"])
        .fails("frobnicate")
        .no_stdout();
    seen(d.path(), ["build", "x.txt"])
        .fails("--output")
        .no_stdout();
    seen(d.path(), ["query"]).fails("FILTER").no_stdout();
    seen(d.path(), ["stats"]).fails("FILTER").no_stdout();
    seen(d.path(), ["query", "--file", "x", "f", "item"])
        .fails("cannot be used with")
        .no_stdout();
    seen(d.path(), ["build", "--add", "--force", "-o", "f"])
        .fails("cannot be used with")
        .no_stdout();
}

// ---------------------------------------------------------------------------
// dedup
// ---------------------------------------------------------------------------

const SMALL: &[u8] = b"apple\nbanana\napple\n\ncherry\nbanana\n\ndate\napple\ncherry\neggplant";

#[test]
fn dedup_keeps_first_occurrences_in_input_order() {
    let d = tmp();
    write(&d, "in.txt", SMALL);
    let expected = reference(SMALL, b'\n', false);
    assert_eq!(expected, b"apple\nbanana\n\ncherry\ndate\neggplant\n");
    seen(d.path(), ["dedup", "in.txt"]).ok().stdout(&expected);
    // Same through standard input (no FILE, and `-`).
    seen_io(d.path(), ["dedup"], SMALL).ok().stdout(&expected);
    seen_io(d.path(), ["dedup", "-"], SMALL)
        .ok()
        .stdout(&expected);
}

#[test]
fn dedup_repeated_prints_every_later_occurrence() {
    let d = tmp();
    write(&d, "in.txt", SMALL);
    let expected = reference(SMALL, b'\n', true);
    assert_eq!(expected, b"apple\nbanana\n\napple\ncherry\n");
    seen(d.path(), ["dedup", "-D", "in.txt"])
        .ok()
        .stdout(&expected);
    seen(d.path(), ["dedup", "--all-repeated", "in.txt"])
        .ok()
        .stdout(&expected);
    // Nothing repeated: no output, still exit 0.
    seen_io(d.path(), ["dedup", "-D"], b"a\nb\nc\n")
        .ok()
        .no_stdout();
}

#[test]
fn dedup_several_files_and_stdin_in_argument_order() {
    let d = tmp();
    write(&d, "a.txt", b"1\n2\n1\n");
    write(&d, "b.txt", b"3\n2\n4");
    let stdin = b"4\n5\n1\n6\n";
    // Order: a.txt, stdin, b.txt.
    let mut all = b"1\n2\n1\n".to_vec();
    all.extend_from_slice(stdin);
    all.extend_from_slice(b"3\n2\n4\n");
    let expected = reference(&all, b'\n', false);
    assert_eq!(expected, b"1\n2\n4\n5\n6\n3\n");
    seen_io(d.path(), ["dedup", "a.txt", "-", "b.txt"], stdin)
        .ok()
        .stdout(&expected);
    // A file's last line without newline does not glue to the next file's first.
    write(&d, "c.txt", b"x");
    write(&d, "e.txt", b"y\nx\n");
    seen(d.path(), ["dedup", "c.txt", "e.txt"])
        .ok()
        .stdout(b"x\ny\n");
}

#[test]
fn dedup_last_line_without_newline_gets_one() {
    let d = tmp();
    seen_io(d.path(), ["dedup"], b"a\nb").ok().stdout(b"a\nb\n");
    seen_io(d.path(), ["dedup"], b"only").ok().stdout(b"only\n");
    // The unterminated last line equals an earlier terminated one: a duplicate.
    seen_io(d.path(), ["dedup"], b"a\nb\na")
        .ok()
        .stdout(b"a\nb\n");
    seen_io(d.path(), ["dedup", "-D"], b"a\nb\na")
        .ok()
        .stdout(b"a\n");
}

#[test]
fn dedup_empty_lines_are_items() {
    let d = tmp();
    seen_io(d.path(), ["dedup"], b"\n\n\na\n\n")
        .ok()
        .stdout(b"\na\n");
    seen_io(d.path(), ["dedup", "-D"], b"\n\n\na\n\n")
        .ok()
        .stdout(b"\n\n\n");
    // `\r` is part of the line: "a\r" and "a" differ.
    seen_io(d.path(), ["dedup"], b"a\r\na\na\r\n")
        .ok()
        .stdout(b"a\r\na\n");
}

#[test]
fn dedup_raw_non_utf8_bytes() {
    let d = tmp();
    let input: &[u8] = b"\xff\xfe\n\xc3\x28\nplain\n\xff\xfe\n\x80\x00\x81\n\xc3\x28\n\x80\x00\x81";
    let expected = reference(input, b'\n', false);
    assert_eq!(expected, b"\xff\xfe\n\xc3\x28\nplain\n\x80\x00\x81\n");
    write(&d, "bin.txt", input);
    seen(d.path(), ["dedup", "bin.txt"]).ok().stdout(&expected);
    seen_io(d.path(), ["dedup"], input).ok().stdout(&expected);
}

#[test]
fn dedup_null_records() {
    let d = tmp();
    // Newlines inside records are kept; the last record gains a NUL.
    let input: &[u8] = b"a\nb\0c\0a\nb\0\0line\n\0c\0\0tail";
    let expected = reference(input, 0, false);
    assert_eq!(expected, b"a\nb\0c\0\0line\n\0tail\0");
    seen_io(d.path(), ["dedup", "-z"], input)
        .ok()
        .stdout(&expected);
    seen_io(d.path(), ["dedup", "--null"], input)
        .ok()
        .stdout(&expected);
    write(&d, "z.bin", input);
    seen(d.path(), ["dedup", "-z", "z.bin"])
        .ok()
        .stdout(&expected);
    seen(d.path(), ["dedup", "-z", "-D", "z.bin"])
        .ok()
        .stdout(b"a\nb\0c\0\0");
    // Without -z the same bytes are split on newlines only.
    seen(d.path(), ["dedup", "z.bin"])
        .ok()
        .stdout(&reference(input, b'\n', false));
}

#[test]
fn dedup_empty_input_gives_empty_output() {
    let d = tmp();
    write(&d, "empty.txt", b"");
    seen_io(d.path(), ["dedup"], b"").ok().no_stdout();
    seen(d.path(), ["dedup", "empty.txt"]).ok().no_stdout();
    seen(d.path(), ["dedup", "-z", "empty.txt"])
        .ok()
        .no_stdout();
    seen(d.path(), ["dedup", "-D", "empty.txt"])
        .ok()
        .no_stdout();
    seen(
        d.path(),
        ["dedup", "-n", "100", "-f", "p.seen", "empty.txt"],
    )
    .ok()
    .no_stdout();
    assert_eq!(stats_json(d.path(), "p.seen")["inserts"], 0);
}

#[test]
fn dedup_capacity_and_fpp_flags() {
    let d = tmp();
    let mut rng = Rng(7);
    let input: Vec<u8> = (0..5000)
        .flat_map(|_| format!("k{}\n", rng.below(1500)).into_bytes())
        .collect();
    let expected = reference(&input, b'\n', false);
    write(&d, "in.txt", &input);
    for args in [
        &["-n", "10k", "-p", "1e-9"][..],
        &["--capacity", "2000", "--fpp", "0.0001%"][..],
        &["-n", "1e4"][..],
        &["-p", "1e-7"][..],
    ] {
        let mut a = vec!["dedup"];
        a.extend_from_slice(args);
        a.push("in.txt");
        seen(d.path(), &a).ok().stdout(&expected);
    }
    // Fixed and sized far below the distinct count: still works, and says so on stderr.
    let r = seen(
        d.path(),
        ["dedup", "--fixed", "-n", "10", "-p", "0.01", "in.txt"],
    );
    r.code(0)
        .stderr_has("seen: warning:")
        .stderr_has("fixed filter");
    // A small filter may drop new lines (false positives), never print one twice.
    assert_subsequence(&r.stdout, &expected);
    // Bad values name the flag.
    for (flag, v, name) in [
        ("-n", "0", "--capacity"),
        ("-n", "abc", "--capacity"),
        ("-n", "1e30", "--capacity"),
        ("-p", "0", "--fpp"),
        ("-p", "1", "--fpp"),
        ("-p", "nan", "--fpp"),
        ("-p", "2", "--fpp"),
    ] {
        seen(d.path(), ["dedup", flag, v, "in.txt"])
            .fails(name)
            .no_stdout();
    }
}

/// Asserts that `got`'s records are a subsequence of `reference`'s.
fn assert_subsequence(got: &[u8], reference: &[u8]) {
    let r = records(reference, b'\n');
    let mut it = r.iter();
    for g in records(got, b'\n') {
        assert!(
            it.any(|x| *x == g),
            "output record {:?} is not in the reference order",
            String::from_utf8_lossy(g)
        );
    }
}

#[test]
fn dedup_persistent_filter_across_runs() {
    let d = tmp();
    let run1 = b"a\nb\nc\nb\n".to_vec();
    let run2 = b"b\nd\na\ne\nd\nc\nf".to_vec();
    write(&d, "r1.txt", &run1);
    write(&d, "r2.txt", &run2);
    assert!(!d.path().join("p.seen").exists());
    // Run 1 creates the file (sized by -n: nothing on stderr).
    seen(d.path(), ["dedup", "-n", "1000", "-f", "p.seen", "r1.txt"])
        .ok()
        .stdout(b"a\nb\nc\n");
    assert!(d.path().join("p.seen").is_file());
    // Run 2 prints only lines not seen in run 1 (nor earlier in run 2).
    seen(d.path(), ["dedup", "-f", "p.seen", "r2.txt"])
        .ok()
        .stdout(b"d\ne\nf\n");
    // Run 3 on the same input: nothing new.
    seen(
        d.path(),
        ["dedup", "--filter", "p.seen", "r1.txt", "r2.txt"],
    )
    .ok()
    .no_stdout();
    // --repeated with a persistent filter: every line was seen before.
    seen_io(d.path(), ["dedup", "-D", "-f", "p.seen"], b"a\nz\nz\n")
        .ok()
        .stdout(b"a\nz\n");
    // `query` finds every line printed, and the counter holds the distinct count.
    seen_io(
        d.path(),
        ["query", "--all", "p.seen"],
        b"a\nb\nc\nd\ne\nf\nz\n",
    )
    .ok()
    .stdout(b"a\nb\nc\nd\ne\nf\nz\n");
    seen(d.path(), ["query", "-q", "p.seen", "never-inserted"])
        .code(1)
        .no_stdout();
    let s = stats_json(d.path(), "p.seen");
    assert_eq!(s["inserts"], 7, "{s}");
    assert_eq!(s["capacity"], 1000, "{s}");
    assert_eq!(s["clean"], true, "{s}");
    assert_no_temp_files(d.path());
}

#[test]
fn dedup_persistent_filter_created_without_n_says_so() {
    let d = tmp();
    write(&d, "in.txt", b"x\ny\nx\n");
    let r = seen(
        d.path(),
        ["dedup", "-p", "0.01", "-f", "new.seen", "in.txt"],
    );
    r.code(0)
        .stdout(b"x\ny\n")
        .stderr_has("created new.seen")
        .stderr_has("-n");
    let s = stats_json(d.path(), "new.seen");
    assert_eq!(s["inserts"], 2, "{s}");
    // At least the documented 10M default for a new -f filter.
    assert!(s["capacity"].as_u64().unwrap() >= 10_000_000, "{s}");
    assert_eq!(s["target_fpp"], 0.01, "{s}");
}

#[test]
fn dedup_persistent_filter_every_printed_line_is_found_by_query() {
    let d = tmp();
    let mut rng = Rng(42);
    let mut all_printed = Vec::new();
    let mut union = HashSet::new();
    for run in 0..3 {
        let input: Vec<u8> = (0..3000)
            .flat_map(|_| format!("u{}\n", rng.below(4000)).into_bytes())
            .collect();
        // Expected: first occurrences not seen in any earlier run.
        let mut expected = Vec::new();
        for r in records(&input, b'\n') {
            if union.insert(r.to_vec()) {
                expected.extend_from_slice(r);
                expected.push(b'\n');
            }
        }
        let name = format!("run{run}.txt");
        write(&d, &name, &input);
        // Later runs ask for another size.
        let n = if run == 0 { "20k" } else { "30k" };
        let r = seen(
            d.path(),
            ["dedup", "-n", n, "-p", "1e-9", "-f", "p.seen", &name],
        );
        if run == 0 {
            r.ok();
        } else {
            // The file exists now: -n/-p are ignored, with a warning.
            r.code(0)
                .stderr_has("warning")
                .stderr_has("p.seen already exists");
        }
        r.stdout(&expected);
        all_printed.extend_from_slice(&r.stdout);
    }
    write(&d, "printed.txt", &all_printed);
    let r = seen(
        d.path(),
        ["query", "-c", "--all", "p.seen", "--file", "printed.txt"],
    );
    r.ok().stdout(format!("{}\n", union.len()).as_bytes());
    assert_eq!(stats_json(d.path(), "p.seen")["inserts"], union.len());
}

#[test]
fn dedup_existing_filter_with_n_or_p_warns() {
    let d = tmp();
    seen_io(d.path(), ["build", "-n", "100", "-o", "f.seen"], b"a\n").ok();
    for flags in [&["-n", "50"][..], &["-p", "0.1"][..]] {
        let mut a = vec!["dedup", "-f", "f.seen"];
        a.extend_from_slice(flags);
        seen_io(d.path(), &a, b"a\nb\n")
            .code(0)
            .stderr_has("seen: warning: f.seen already exists")
            .stderr_has("ignored");
    }
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["capacity"], 100, "{s}");
}

#[test]
fn compressed_input_files_are_warned_about() {
    let d = tmp();
    // A gzip member header, then bytes that happen to contain newlines.
    let gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\na\nb\na\n";
    write(&d, "logs.gz", gz);
    write(&d, "logs.zst", b"\x28\xb5\x2f\xfdx\n");
    write(&d, "plain.txt", b"\x1f\nb\n");
    for (file, kind, tool) in [("logs.gz", "gzip", "zcat"), ("logs.zst", "zstd", "zstdcat")] {
        let r = seen(d.path(), ["dedup", file]);
        r.code(0)
            .stderr_has(&format!("{file} looks {kind}-compressed"))
            .stderr_has(tool);
    }
    // The data is still processed as it is (the warning is advice).
    let r = seen(d.path(), ["dedup", "logs.gz"]);
    assert_eq!(r.stdout, &gz[..gz.len() - 2]);
    seen(d.path(), ["dedup", "plain.txt"]).ok();
}

#[test]
fn dedup_directory_or_missing_input_exits_2_naming_it() {
    let d = tmp();
    fs::create_dir(d.path().join("adir")).unwrap();
    write(&d, "ok.txt", b"a\n");
    seen(d.path(), ["dedup", "adir"])
        .error("adir")
        .stderr_has("directory");
    seen(d.path(), ["dedup", "-n", "10", "adir"])
        .error("adir")
        .stderr_has("directory");
    seen(d.path(), ["dedup", "missing.txt"])
        .error("missing.txt")
        .no_stdout();
    seen(d.path(), ["dedup", "-n", "10", "missing.txt"])
        .error("missing.txt")
        .no_stdout();
    // The good file before the missing one is still printed.
    seen(d.path(), ["dedup", "-n", "10", "ok.txt", "missing.txt"])
        .error("missing.txt")
        .stdout(b"a\n");
    seen(
        d.path(),
        ["dedup", "-f", "p.seen", "-n", "10", "missing.txt"],
    )
    .error("missing.txt");
    assert_no_temp_files(d.path());
}

/// Differential test against the HashSet reference on random raw data with many
/// duplicates, at p = 1e-9. The hash seed is fixed, so the result is deterministic:
/// the output must be a subsequence of the reference always, and equal to it
/// unless a false positive dropped a line; with about 6,000 distinct records at
/// p = 1e-9 the chance of that is about 6e-6, so equality is asserted.
#[test]
fn dedup_matches_hashset_reference_on_random_data() {
    let d = tmp();
    for (seed, term) in [(1u64, b'\n'), (2, b'\n'), (3, 0u8)] {
        let mut rng = Rng(seed);
        let pool: Vec<Vec<u8>> = (0..6000)
            .map(|_| {
                let len = rng.below(12) as usize;
                rng.bytes(len).into_iter().filter(|&b| b != term).collect()
            })
            .collect();
        let mut input = Vec::new();
        for _ in 0..30_000 {
            input.extend_from_slice(&pool[rng.below(pool.len() as u64) as usize]);
            input.push(term);
        }
        if seed == 2 {
            input.pop(); // unterminated last record
        }
        let z: &[&str] = if term == 0 { &["-z"] } else { &[] };
        for repeated in [false, true] {
            let expected = reference(&input, term, repeated);
            let mut args = vec!["dedup", "-p", "1e-9", "in.bin"];
            args.extend_from_slice(z);
            if repeated {
                args.push("-D");
            }
            write(&d, "in.bin", &input);
            let r = seen(d.path(), &args);
            r.ok();
            if term == b'\n' && !repeated {
                assert_subsequence(&r.stdout, &expected);
            }
            assert!(
                r.stdout == expected,
                "seed {seed}: output differs from the reference ({} vs {} bytes)",
                r.stdout.len(),
                expected.len()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Closed standard output
// ---------------------------------------------------------------------------

/// Spawns `seen ARGS` with stdout piped, reads one line, closes the pipe and
/// returns (exit code, the line, stderr).
fn read_one_line_then_close(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let (code, mut lines, err) = read_lines_then_close(dir, &[], args, 1);
    (code, lines.remove(0), err)
}

#[test]
fn closed_stdout_ends_quietly() {
    let d = tmp();
    // ~1.5 MB of output: far more than a pipe buffer holds.
    let big = numbered("line-", 0..200_000);
    write(&d, "big.txt", &big);
    let (code, line, err) = read_one_line_then_close(d.path(), &["dedup", "big.txt"]);
    assert_eq!(line, "line-0\n");
    assert_eq!(err, "", "stderr not empty");
    assert_eq!(code, 0);

    // Same with a persistent filter: exit 0, the file is left clean, and only
    // what was written before the pipe closed is recorded: a rerun prints the
    // rest (nothing is lost to the closed output).
    let (code, line, err) = read_one_line_then_close(
        d.path(),
        &[
            "dedup", "-n", "300k", "-p", "0.01", "-f", "p.seen", "big.txt",
        ],
    );
    assert_eq!(line, "line-0\n");
    assert_eq!(err, "", "stderr not empty");
    assert_eq!(code, 0);
    let r = seen(d.path(), ["stats", "--json", "p.seen"]);
    r.ok();
    let s: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(s["clean"], true, "{s}");
    assert!(s["inserts"].as_u64().unwrap() < 200_000, "{s}");
    let rerun = seen(d.path(), ["dedup", "-f", "p.seen", "big.txt"]);
    rerun.ok();
    let recorded = s["inserts"].as_u64().unwrap() as usize;
    let reprinted = rerun.stdout.iter().filter(|&&b| b == b'\n').count();
    // Every line not recorded comes out (minus rare false positives at p = 0.01).
    assert!(
        reprinted + recorded >= 200_000 - 200_000 / 50,
        "{reprinted} + {recorded}"
    );
    assert!(reprinted + recorded <= 200_000, "{reprinted} + {recorded}");

    // And `query`, which prints every present item.
    seen(d.path(), ["build", "-p", "0.01", "-o", "q.seen", "big.txt"]).ok();
    let (code, line, err) =
        read_one_line_then_close(d.path(), &["query", "q.seen", "--file", "big.txt"]);
    assert_eq!(line, "line-0\n");
    assert_eq!(err, "", "stderr not empty");
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------
// build
// ---------------------------------------------------------------------------

#[test]
fn build_from_files_is_sized_by_counting() {
    let d = tmp();
    let a = b"one\ntwo\nthree\ntwo\n";
    let b = b"four\none\nfive"; // unterminated last line counts
    write(&d, "a.txt", a);
    write(&d, "b.txt", b);
    seen(d.path(), ["build", "-o", "f.seen", "a.txt", "b.txt"])
        .ok()
        .no_stdout();
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["capacity"], 7, "{s}");
    assert_eq!(s["inserts"], 5, "{s}");
    assert_eq!(s["target_fpp"], 1e-6, "{s}");
    seen(
        d.path(),
        [
            "query", "--all", "f.seen", "one", "two", "three", "four", "five",
        ],
    )
    .ok()
    .stdout(b"one\ntwo\nthree\nfour\nfive\n");
    assert_no_temp_files(d.path());
}

#[test]
fn build_from_stdin_grows_or_needs_n_when_fixed() {
    let d = tmp();
    let input = b"x\ny\nz\n";
    seen_io(d.path(), ["build", "--fixed", "-o", "f.seen"], input)
        .error("-n")
        .no_stdout();
    seen_io(d.path(), ["build", "--fixed", "-o", "f.seen", "-"], input).error("-n");
    assert!(!d.path().join("f.seen").exists());
    assert_no_temp_files(d.path());

    // Without --fixed: a growing filter with the default first capacity.
    seen_io(d.path(), ["build", "-o", "g.seen"], input).ok();
    let s = stats_json(d.path(), "g.seen");
    assert_eq!(s["capacity"], 10_000_000, "{s}");
    assert_eq!(s["growth"]["factor"], 2, "{s}");
    assert_eq!(s["inserts"], 3, "{s}");

    seen_io(d.path(), ["build", "-n", "1000", "-o", "f.seen"], input)
        .ok()
        .no_stdout();
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["capacity"], 1000, "{s}");
    assert_eq!(s["inserts"], 3, "{s}");
    seen(d.path(), ["query", "--all", "-q", "f.seen", "x", "y", "z"]).ok();
    assert_no_temp_files(d.path());
}

#[test]
fn build_accepts_number_forms() {
    let d = tmp();
    for (form, n) in [
        ("10k", 10_000u64),
        ("1e3", 1_000),
        ("1M", 1_000_000),
        ("50K", 50_000),
        ("1_500", 1_500),
    ] {
        let name = format!("f{n}.seen");
        seen_io(d.path(), ["build", "-n", form, "-o", &name], b"a\n").ok();
        let s = stats_json(d.path(), &name);
        assert_eq!(s["capacity"], n, "{form}: {s}");
    }
    for (form, p) in [("1e-3", 1e-3), ("0.01", 0.01), ("0.1%", 0.001)] {
        seen_io(
            d.path(),
            ["build", "-n", "100", "-p", form, "-o", "p.seen", "--force"],
            b"a\n",
        )
        .ok();
        let s = stats_json(d.path(), "p.seen");
        assert!(
            (s["target_fpp"].as_f64().unwrap() - p).abs() < 1e-15,
            "{form}: {s}"
        );
    }
}

#[test]
fn build_refuses_to_overwrite_without_force() {
    let d = tmp();
    write(&d, "a.txt", b"alpha\nbeta\n");
    write(&d, "b.txt", b"gamma\ndelta\nepsilon\n");
    seen(d.path(), ["build", "-o", "f.seen", "a.txt"]).ok();
    let before = fs::read(d.path().join("f.seen")).unwrap();
    seen(d.path(), ["build", "-o", "f.seen", "b.txt"])
        .error("--force")
        .stderr_has("f.seen")
        .no_stdout();
    assert_eq!(fs::read(d.path().join("f.seen")).unwrap(), before);
    assert_no_temp_files(d.path());

    // --force replaces it: the old lines are gone, the new ones present.
    seen(d.path(), ["build", "--force", "-o", "f.seen", "b.txt"]).ok();
    seen(d.path(), ["query", "f.seen", "alpha", "beta"])
        .code(1)
        .no_stdout();
    seen(
        d.path(),
        ["query", "--all", "f.seen", "gamma", "delta", "epsilon"],
    )
    .ok()
    .stdout(b"gamma\ndelta\nepsilon\n");
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["inserts"], 3, "{s}");
    assert_eq!(s["capacity"], 3, "{s}");
    assert_no_temp_files(d.path());
}

#[test]
fn build_force_with_missing_input_keeps_the_old_file() {
    let d = tmp();
    write(&d, "a.txt", b"alpha\n");
    seen(d.path(), ["build", "-o", "f.seen", "a.txt"]).ok();
    let before = fs::read(d.path().join("f.seen")).unwrap();
    for args in [
        &["build", "--force", "-o", "f.seen", "missing.txt"][..],
        &[
            "build",
            "--force",
            "-n",
            "10",
            "-o",
            "f.seen",
            "a.txt",
            "missing.txt",
        ][..],
    ] {
        seen(d.path(), args).error("missing.txt");
        assert_eq!(fs::read(d.path().join("f.seen")).unwrap(), before);
        assert_no_temp_files(d.path());
    }
}

#[test]
fn build_add_inserts_into_existing_filter() {
    let d = tmp();
    write(&d, "a.txt", b"alpha\nbeta\n");
    write(&d, "b.txt", b"beta\ngamma\ndelta\n");
    seen(d.path(), ["build", "-n", "100", "-o", "f.seen", "a.txt"]).ok();
    seen(d.path(), ["query", "f.seen", "gamma"]).code(1);
    seen(d.path(), ["build", "--add", "-o", "f.seen", "b.txt"])
        .ok()
        .no_stdout();
    seen(
        d.path(),
        [
            "query", "--all", "f.seen", "alpha", "beta", "gamma", "delta",
        ],
    )
    .ok()
    .stdout(b"alpha\nbeta\ngamma\ndelta\n");
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["inserts"], 4, "{s}");
    assert_eq!(s["capacity"], 100, "{s}");
    // From stdin, no -n needed; -n/-p given anyway are ignored with a warning.
    seen_io(
        d.path(),
        ["build", "--add", "-n", "5", "-o", "f.seen"],
        b"epsilon\n",
    )
    .code(0)
    .stderr_has("seen: warning:")
    .stderr_has("ignored with --add");
    seen(d.path(), ["query", "-q", "f.seen", "epsilon"]).ok();
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["inserts"], 5, "{s}");
    assert_eq!(s["capacity"], 100, "{s}");
    assert_no_temp_files(d.path());
}

#[test]
fn build_add_on_missing_file_exits_2() {
    let d = tmp();
    write(&d, "a.txt", b"alpha\n");
    seen(d.path(), ["build", "--add", "-o", "nope.seen", "a.txt"])
        .error("nope.seen")
        .no_stdout();
    assert!(!d.path().join("nope.seen").exists());
    assert_no_temp_files(d.path());
}

#[test]
fn build_null_records() {
    let d = tmp();
    let input: &[u8] = b"a\nb\0c\0\0last";
    write(&d, "in.z", input);
    seen(d.path(), ["build", "-z", "-o", "z.seen", "in.z"]).ok();
    let s = stats_json(d.path(), "z.seen");
    assert_eq!(s["capacity"], 4, "{s}");
    assert_eq!(s["inserts"], 4, "{s}");
    // Items with a newline inside; -z output ends each with NUL.
    seen_io(
        d.path(),
        ["query", "-z", "z.seen"],
        b"a\nb\0c\0\0last\0zz\0",
    )
    .ok()
    .stdout(b"a\nb\0c\0\0last\0");
    seen(
        d.path(),
        ["query", "-z", "--all", "z.seen", "a\nb", "c", "", "last"],
    )
    .ok()
    .stdout(b"a\nb\0c\0\0last\0");
    // "a" alone was never a record.
    seen(d.path(), ["query", "-z", "z.seen", "a", "b"])
        .code(1)
        .no_stdout();
    // Keys do not include the terminator: a filter built from lines answers -z queries.
    seen_io(d.path(), ["build", "-n", "10", "-o", "nl.seen"], b"a\nb\n").ok();
    seen(d.path(), ["query", "-z", "--all", "nl.seen", "a", "b"])
        .ok()
        .stdout(b"a\0b\0");
    // Built from stdin with -z too.
    seen_io(
        d.path(),
        ["build", "-z", "-n", "10", "-o", "z2.seen"],
        input,
    )
    .ok();
    seen(
        d.path(),
        [
            "query", "-z", "--all", "-q", "z2.seen", "a\nb", "c", "", "last",
        ],
    )
    .ok();
}

#[test]
fn build_bad_fpp_and_capacity_name_the_flag() {
    let d = tmp();
    write(&d, "a.txt", b"a\n");
    for v in ["0", "1", "nan", "-1", "2", "1e-16", "abc", "100%"] {
        let flag = format!("--fpp={v}");
        seen(d.path(), ["build", "-o", "f.seen", &flag, "a.txt"])
            .fails("--fpp")
            .stderr_has(v)
            .no_stdout();
        let short = format!("-p={v}");
        seen(d.path(), ["build", "-o", "f.seen", &short, "a.txt"])
            .fails("--fpp")
            .no_stdout();
    }
    for v in ["0", "1", "nan"] {
        seen(d.path(), ["build", "-o", "f.seen", "-p", v, "a.txt"])
            .fails("--fpp")
            .stderr_has(v)
            .no_stdout();
    }
    for v in ["0", "1e30", "abc", "-5", "10X", "inf"] {
        let flag = format!("--capacity={v}");
        seen(d.path(), ["build", "-o", "f.seen", &flag, "a.txt"])
            .fails("--capacity")
            .stderr_has(v)
            .no_stdout();
    }
    for v in ["0", "1e30", "abc"] {
        seen(d.path(), ["build", "-o", "f.seen", "-n", v, "a.txt"])
            .fails("--capacity")
            .stderr_has(v)
            .no_stdout();
    }
    // The largest capacity at the smallest p would exceed the size limit.
    seen(
        d.path(),
        [
            "build", "-o", "f.seen", "-n", "1e15", "-p", "1e-15", "a.txt",
        ],
    )
    .error("-n/--capacity")
    .no_stdout();
    assert!(!d.path().join("f.seen").exists());
    assert_no_temp_files(d.path());
}

#[test]
fn build_negative_fpp_as_separate_argument_names_the_flag() {
    let d = tmp();
    write(&d, "a.txt", b"a\n");
    seen(d.path(), ["build", "-o", "f.seen", "-p", "-1", "a.txt"])
        .fails("--fpp")
        .no_stdout();
}

#[test]
fn build_leaves_no_temporary_files() {
    let d = tmp();
    write(&d, "a.txt", &numbered("x", 0..1000));
    seen(d.path(), ["build", "-o", "ok.seen", "a.txt"]).ok();
    assert_no_temp_files(d.path());
    // Failure while reading input, after the temporary file was created (-n skips
    // counting, so the missing file is found while inserting).
    seen(
        d.path(),
        [
            "build",
            "-n",
            "1000",
            "-o",
            "bad.seen",
            "a.txt",
            "missing.txt",
        ],
    )
    .error("missing.txt");
    assert!(!d.path().join("bad.seen").exists());
    assert_no_temp_files(d.path());
    // Failure while counting.
    seen(
        d.path(),
        ["build", "-o", "bad.seen", "a.txt", "missing.txt"],
    )
    .error("missing.txt");
    assert_no_temp_files(d.path());
    // A directory as input.
    fs::create_dir(d.path().join("adir")).unwrap();
    seen(d.path(), ["build", "-n", "10", "-o", "bad.seen", "adir"])
        .error("adir")
        .stderr_has("directory");
    assert!(!d.path().join("bad.seen").exists());
    assert_no_temp_files(d.path());
    // A directory as output.
    seen(d.path(), ["build", "-n", "10", "-o", "adir", "a.txt"])
        .error("adir")
        .stderr_has("directory");
    assert_no_temp_files(d.path());
    assert_no_temp_files(&d.path().join("adir"));
    // An output in a missing directory.
    seen(
        d.path(),
        ["build", "-n", "10", "-o", "nodir/f.seen", "a.txt"],
    )
    .error("nodir");
    assert_no_temp_files(d.path());
}

/// The process umask (Linux: from /proc/self/status).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Umask:"))
        .expect("Umask line");
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

#[test]
fn build_file_modes() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp();
    let mode = |name: &str| {
        fs::metadata(d.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let mask = umask();
    // A new filter is created like any shell-created file (not tempfile's 0600).
    seen_io(d.path(), ["build", "-n", "10", "-o", "f.seen"], b"a\n").ok();
    assert_eq!(mode("f.seen"), 0o666 & !mask);
    seen_io(d.path(), ["dedup", "-n", "10", "-f", "p.seen"], b"a\n").ok();
    assert_eq!(mode("p.seen"), 0o666 & !mask);
    // A replaced filter keeps its mode.
    for m in [0o600, 0o644, 0o640] {
        fs::set_permissions(d.path().join("f.seen"), fs::Permissions::from_mode(m)).unwrap();
        seen_io(
            d.path(),
            ["build", "--force", "-n", "10", "-o", "f.seen"],
            b"b\n",
        )
        .ok();
        assert_eq!(mode("f.seen"), m & !mask, "{m:o}");
    }
}

/// A fixed filter warns when its false-positive rate passes its target and
/// again past 10 times it (`-n 10` is rounded up to a 4 KiB page, which
/// keeps the default 1e-6 up to about 550 lines).
#[test]
fn build_over_capacity_warns() {
    let d = tmp();
    write(&d, "hundred.txt", &numbered("item", 0..1000));
    let r = seen(
        d.path(),
        [
            "build",
            "--fixed",
            "-n",
            "10",
            "-o",
            "small.seen",
            "hundred.txt",
        ],
    );
    r.code(0)
        .no_stdout()
        .stderr_has("seen: warning: small.seen is a fixed filter")
        .stderr_has("has passed its target 1e-6")
        .stderr_has("has passed 10 times its target 1e-6")
        .stderr_has("of the 10 it was sized for): results are no longer reliable");
    // A growing filter (the default) adds layers instead, silently.
    seen(
        d.path(),
        ["build", "-n", "10", "-o", "grown.seen", "hundred.txt"],
    )
    .ok();
    let s = stats_json(d.path(), "grown.seen");
    assert!(s["layers"].as_array().unwrap().len() > 1, "{s}");
}

// ---------------------------------------------------------------------------
// query
// ---------------------------------------------------------------------------

/// A filter holding `alpha`, `beta`, `gamma` (at p = 1e-6, so the absent probes
/// below are absent with overwhelming probability, and the hash seed is fixed).
fn greek(d: &TempDir) {
    write(d, "greek.txt", b"alpha\nbeta\ngamma\n");
    seen(d.path(), ["build", "-o", "g.seen", "greek.txt"]).ok();
}

#[test]
fn query_items_from_arguments() {
    let d = tmp();
    greek(&d);
    seen(d.path(), ["query", "g.seen", "alpha", "zeta", "gamma"])
        .ok()
        .stdout(b"alpha\ngamma\n");
    seen(d.path(), ["query", "g.seen", "zeta", "eta"])
        .code(1)
        .no_stdout();
    // An empty argument is an item (the empty line), absent here.
    seen(d.path(), ["query", "g.seen", ""]).code(1).no_stdout();
    seen(d.path(), ["query", "-v", "g.seen", ""])
        .ok()
        .stdout(b"\n");
}

#[test]
fn query_items_from_stdin_and_files() {
    let d = tmp();
    greek(&d);
    let probes = b"zeta\nalpha\n\nbeta\neta\nalpha";
    seen_io(d.path(), ["query", "g.seen"], probes)
        .ok()
        .stdout(b"alpha\nbeta\nalpha\n");
    write(&d, "probes.txt", probes);
    write(&d, "more.txt", b"gamma\ntheta\n");
    seen(d.path(), ["query", "g.seen", "--file", "probes.txt"])
        .ok()
        .stdout(b"alpha\nbeta\nalpha\n");
    seen(
        d.path(),
        ["query", "-f", "probes.txt", "g.seen", "-f", "more.txt"],
    )
    .ok()
    .stdout(b"alpha\nbeta\nalpha\ngamma\n");
    seen_io(
        d.path(),
        ["query", "g.seen", "--file", "more.txt", "--file", "-"],
        probes,
    )
    .ok()
    .stdout(b"gamma\nalpha\nbeta\nalpha\n");
    seen(d.path(), ["query", "g.seen", "--file", "missing.txt"]).error("missing.txt");
    // Empty input: nothing selected.
    seen_io(d.path(), ["query", "g.seen"], b"")
        .code(1)
        .no_stdout();
    seen_io(d.path(), ["query", "-c", "g.seen"], b"")
        .code(1)
        .stdout(b"0\n");
}

#[test]
fn query_invert_count_quiet() {
    let d = tmp();
    greek(&d);
    let probes: &[u8] = b"zeta\nalpha\nbeta\neta\n";
    seen_io(d.path(), ["query", "-v", "g.seen"], probes)
        .ok()
        .stdout(b"zeta\neta\n");
    seen_io(d.path(), ["query", "--invert-match", "g.seen"], b"alpha\n")
        .code(1)
        .no_stdout();
    seen_io(d.path(), ["query", "-c", "g.seen"], probes)
        .ok()
        .stdout(b"2\n");
    seen_io(d.path(), ["query", "-c", "-v", "g.seen"], b"zeta\n")
        .ok()
        .stdout(b"1\n");
    seen_io(d.path(), ["query", "--count", "g.seen"], b"zeta\n")
        .code(1)
        .stdout(b"0\n");
    seen_io(d.path(), ["query", "-q", "g.seen"], probes)
        .ok()
        .no_stdout();
    seen_io(d.path(), ["query", "--quiet", "g.seen"], b"zeta\n")
        .code(1)
        .no_stdout();
    seen_io(d.path(), ["query", "--silent", "-v", "g.seen"], b"alpha\n")
        .code(1)
        .no_stdout();
    seen_io(d.path(), ["query", "-q", "-c", "g.seen"], probes)
        .ok()
        .no_stdout();
    seen(d.path(), ["query", "-q", "g.seen", "beta"])
        .ok()
        .no_stdout();
}

#[test]
fn query_all_requires_every_item() {
    let d = tmp();
    greek(&d);
    seen(d.path(), ["query", "--all", "g.seen", "alpha", "beta"])
        .ok()
        .stdout(b"alpha\nbeta\n");
    seen(d.path(), ["query", "--all", "g.seen", "alpha", "zeta"])
        .code(1)
        .stdout(b"alpha\n");
    seen(
        d.path(),
        ["query", "--all", "-q", "g.seen", "alpha", "zeta"],
    )
    .code(1)
    .no_stdout();
    seen(
        d.path(),
        ["query", "--all", "-q", "g.seen", "alpha", "beta", "gamma"],
    )
    .ok();
    seen(d.path(), ["query", "--all", "-v", "g.seen", "zeta", "eta"])
        .ok()
        .stdout(b"zeta\neta\n");
    seen(d.path(), ["query", "--all", "-c", "g.seen", "alpha", "eta"])
        .code(1)
        .stdout(b"1\n");
    // No items at all is not "every item".
    seen_io(d.path(), ["query", "--all", "g.seen"], b"")
        .code(1)
        .no_stdout();
    seen_io(d.path(), ["query", "--all", "g.seen"], b"alpha\ngamma\n")
        .ok()
        .stdout(b"alpha\ngamma\n");
}

#[test]
fn query_raw_bytes_in_arguments_and_stdin() {
    let d = tmp();
    let input: &[u8] = b"\xff\xfe\nok\n";
    write(&d, "bin.txt", input);
    seen(d.path(), ["build", "-o", "b.seen", "bin.txt"]).ok();
    let item = OsStr::from_bytes(b"\xff\xfe");
    seen(d.path(), [OsStr::new("query"), OsStr::new("b.seen"), item])
        .ok()
        .stdout(b"\xff\xfe\n");
    seen_io(d.path(), ["query", "b.seen"], b"\xff\xfe\n\xff\n")
        .ok()
        .stdout(b"\xff\xfe\n");
}

#[test]
fn query_null_records() {
    let d = tmp();
    seen_io(
        d.path(),
        ["build", "-z", "-n", "10", "-o", "z.seen"],
        b"one\0two\nlines\0",
    )
    .ok();
    seen_io(
        d.path(),
        ["query", "-z", "z.seen"],
        b"two\nlines\0one\0two\0",
    )
    .ok()
    .stdout(b"two\nlines\0one\0");
    seen_io(
        d.path(),
        ["query", "-z", "-v", "z.seen"],
        b"two\nlines\0one\0two",
    )
    .ok()
    .stdout(b"two\0");
    seen_io(d.path(), ["query", "-z", "-c", "z.seen"], b"one\0two\0")
        .ok()
        .stdout(b"1\n");
    // Without -z, the record "two\nlines" reads as two lines, neither present.
    seen_io(d.path(), ["query", "z.seen"], b"two\nlines\n")
        .code(1)
        .no_stdout();
}

#[test]
fn query_missing_or_unusable_filter_exits_2() {
    let d = tmp();
    seen(d.path(), ["query", "missing.seen", "a"])
        .error("missing.seen")
        .no_stdout();
    seen(d.path(), ["query", "-q", "missing.seen", "a"]).error("missing.seen");
    seen(d.path(), ["query", "-c", "missing.seen", "a"])
        .error("missing.seen")
        .no_stdout();
    write(&d, "text.txt", b"just some text\n");
    seen(d.path(), ["query", "text.txt", "a"])
        .error("text.txt")
        .no_stdout();
}

// ---------------------------------------------------------------------------
// stats
// ---------------------------------------------------------------------------

#[test]
fn stats_human_output() {
    let d = tmp();
    write(&d, "in.txt", &numbered("s", 0..500));
    seen(
        d.path(),
        [
            "build", "-n", "1000", "-p", "0.01", "-o", "f.seen", "in.txt",
        ],
    )
    .ok();
    let r = seen(d.path(), ["stats", "f.seen"]);
    r.ok();
    let out = r.stdout_str();
    let row = |key: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key:?} row\n{out}"))
            .to_string()
    };
    assert!(row("capacity").contains("1,000"), "{out}");
    assert!(row("capacity").contains("1.0e-2"), "{out}");
    assert!(row("inserts").contains("500"), "{out}");
    assert!(row("inserts").contains("50.0% of capacity"), "{out}");
    assert!(row("bits set").contains("fill"), "{out}");
    assert!(out.contains("est. fpp"), "{out}");
    assert!(row("est. items").len() > "est. items".len(), "{out}");
    assert!(row("file").contains("f.seen"), "{out}");
    assert!(row("growth").contains("x2 per layer"), "{out}");
    assert!(
        row("headroom").contains("next layer after 500 more"),
        "{out}"
    );
    // The per-layer table: a header and one row for the one layer.
    let head = row("layer ");
    for col in [
        "x",
        "k",
        "positions",
        "capacity",
        "inserts",
        "fill",
        "fpp now",
    ] {
        assert!(head.contains(col), "{out}");
    }
    let l0 = row("0 ");
    let l0: Vec<&str> = l0.split_whitespace().collect();
    // A growing 1e-2 filter's first layer is sized at 2e-3: sectored.
    assert_eq!(l0[3], "sectored", "{out}");
    assert_eq!(l0[6], "1,000", "{out}"); // size is two words: "4.00 KiB"
    assert_eq!(l0[7], "500", "{out}");
    assert!(row("state").contains("clean"), "{out}");
}

#[test]
fn stats_json_has_the_documented_keys() {
    let d = tmp();
    let mut rng = Rng(99);
    let input: Vec<u8> = (0..2000)
        .flat_map(|_| format!("j{}\n", rng.below(700)).into_bytes())
        .collect();
    let n_distinct = distinct(&input, b'\n');
    write(&d, "in.txt", &input);
    seen(
        d.path(),
        [
            "build", "-n", "1000", "-p", "1e-3", "-o", "f.seen", "in.txt",
        ],
    )
    .ok();
    let s = stats_json(d.path(), "f.seen");
    for key in [
        "capacity",
        "target_fpp",
        "inserts",
        "bits_set",
        "fill_ratio",
        "estimated_items",
        "estimated_fpp",
        "layers",
    ] {
        assert!(s.get(key).is_some(), "missing {key}: {s}");
    }
    assert_eq!(s["capacity"], 1000);
    assert_eq!(s["target_fpp"], 1e-3);
    assert_eq!(s["inserts"].as_u64().unwrap(), n_distinct as u64, "{s}");
    let fill = s["fill_ratio"].as_f64().unwrap();
    assert!(fill > 0.0 && fill < 1.0, "{s}");
    let bits_set = s["bits_set"].as_u64().unwrap();
    assert!(bits_set > 0, "{s}");
    let est = s["estimated_items"].as_f64().unwrap();
    assert!(
        (est - n_distinct as f64).abs() < 0.1 * n_distinct as f64,
        "estimated {est} vs {n_distinct}: {s}"
    );
    let fpp = s["estimated_fpp"].as_f64().unwrap();
    assert!(fpp > 0.0 && fpp < 1e-3, "{s}");
    let layers = s["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{s}");
    let l = &layers[0];
    for key in ["k", "blocks_per_key", "bits", "bits_set", "inserts"] {
        assert!(l.get(key).is_some(), "missing layers[0].{key}: {s}");
    }
    assert!(l["k"].as_u64().unwrap() >= 1, "{s}");
    assert!(
        (1..=4).contains(&l["blocks_per_key"].as_u64().unwrap()),
        "{s}"
    );
    assert!(
        ["sectored", "scattered"].contains(&l["positions"].as_str().unwrap()),
        "{s}"
    );
    assert_eq!(l["bits_set"], bits_set);
    assert_eq!(l["inserts"].as_u64().unwrap(), n_distinct as u64);
    assert!(s["warnings"].as_array().unwrap().is_empty(), "{s}");
}

#[test]
fn stats_inserts_counts_distinct_lines_over_dedup_runs() {
    let d = tmp();
    let a = numbered("x", 0..300);
    let b = numbered("x", 200..450);
    write(&d, "a.txt", &a);
    write(&d, "b.txt", &b);
    seen(
        d.path(),
        ["dedup", "-n", "1000", "-f", "p.seen", "a.txt", "a.txt"],
    )
    .ok();
    assert_eq!(stats_json(d.path(), "p.seen")["inserts"], 300);
    seen(d.path(), ["dedup", "-f", "p.seen", "b.txt"]).ok();
    assert_eq!(stats_json(d.path(), "p.seen")["inserts"], 450);
}

/// `stats` warns when the estimated rate passes the target (here far past
/// 10 times it), not when the insert count passes the capacity.
#[test]
fn stats_warns_when_over_capacity() {
    let d = tmp();
    write(&d, "hundred.txt", &numbered("item", 0..1000));
    seen(
        d.path(),
        [
            "build",
            "--fixed",
            "-n",
            "10",
            "-o",
            "small.seen",
            "hundred.txt",
        ],
    )
    .code(0);
    let r = seen(d.path(), ["stats", "small.seen"]);
    r.code(0)
        .stderr_has("seen: warning: small.seen: estimated false-positive rate")
        .stderr_has("is more than 10 times its target 1e-6: results are no longer reliable");
    let r = seen(d.path(), ["stats", "--json", "small.seen"]);
    r.code(0).stderr_has("seen: warning:");
    let s: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(s["inserts"], 1000, "{s}");
    assert_eq!(s["capacity"], 10, "{s}");
    assert!(!s["warnings"].as_array().unwrap().is_empty(), "{s}");
    // Within capacity: no warning.
    seen(
        d.path(),
        ["build", "-n", "1000", "-o", "fits.seen", "hundred.txt"],
    )
    .ok();
    seen(d.path(), ["stats", "fits.seen"]).ok();
}

#[test]
fn stats_missing_filter_exits_2() {
    let d = tmp();
    seen(d.path(), ["stats", "nope.seen"])
        .error("nope.seen")
        .no_stdout();
    seen(d.path(), ["stats", "--json", "nope.seen"])
        .error("nope.seen")
        .no_stdout();
}

// ---------------------------------------------------------------------------
// Corrupt filter files
// ---------------------------------------------------------------------------

const CHECKSUM: usize = 120;
const LAYER: usize = 128;

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A valid filter of several pages, as bytes.
fn good_filter(d: &TempDir) -> Vec<u8> {
    write(d, "good.txt", &numbered("g", 0..10_000));
    seen(
        d.path(),
        ["build", "-p", "0.01", "-o", "good.seen", "good.txt"],
    )
    .ok();
    let b = fs::read(d.path().join("good.seen")).unwrap();
    assert_eq!(&b[..8], b"\x89SEEN\r\n\x1a");
    assert_eq!(u16::from_le_bytes([b[8], b[9]]), 1);
    assert!(b.len() >= 3 * 4096, "{} bytes", b.len());
    let sealed = b.clone();
    let mut resealed = b.clone();
    reseal(&mut resealed);
    assert_eq!(
        resealed, sealed,
        "checksum recipe differs from the binary's"
    );
    b
}

/// Every reader and writer refuses the file with exit 2 and `needle`, names it,
/// never panics, prints nothing on stdout and leaves the file unchanged.
fn assert_rejected(d: &TempDir, name: &str, needle: &str) {
    let path = d.path().join(name);
    let before = fs::read(&path).ok();
    for args in [
        &["stats", name][..],
        &["stats", "--json", name][..],
        &["query", name, "g1"][..],
        &["query", "-q", name, "g1"][..],
        &["dedup", "-f", name][..],
        &["build", "--add", "-o", name][..],
    ] {
        let r = seen_io(d.path(), args, b"g1\nnew\n");
        r.error(name).no_stdout();
        let lower = r.stderr.to_lowercase();
        assert!(
            lower.contains(&needle.to_lowercase()),
            "stderr lacks {needle:?}\n{}",
            r.ctx()
        );
        assert_eq!(
            fs::read(&path).ok(),
            before,
            "{args:?} changed the rejected file"
        );
    }
    // --force replaces a corrupt filter (it is not read) or an empty file,
    // but not a file without a filter's magic (issue 19): that may be
    // anything, and is left as it is.
    if let Some(before) = before.filter(|_| path.is_file()) {
        let copy = format!("{name}.copy");
        fs::copy(&path, d.path().join(&copy)).unwrap();
        let r = seen_io(
            d.path(),
            ["build", "--force", "-n", "10", "-o", &copy],
            b"a\n",
        );
        if before.is_empty() || before.starts_with(b"\x89SEEN\r\n\x1a") {
            r.ok();
            seen(d.path(), ["query", "-q", &copy, "a"]).ok();
        } else {
            r.error(&copy).no_stdout();
            assert!(r.stderr.contains("not a seen filter"), "{}", r.ctx());
            assert_eq!(fs::read(d.path().join(&copy)).unwrap(), before);
        }
    }
}

#[test]
fn corrupt_random_bytes() {
    let d = tmp();
    write(&d, "random.seen", &Rng(5).bytes(3 * 4096 + 17));
    assert_rejected(&d, "random.seen", "wrong magic");
    // Shorter than a header.
    write(&d, "short.seen", &Rng(6).bytes(1000));
    assert_rejected(&d, "short.seen", "shorter than the 4096-byte header");
}

#[test]
fn corrupt_empty_file() {
    let d = tmp();
    write(&d, "empty.seen", b"");
    assert_rejected(
        &d,
        "empty.seen",
        "0 bytes is shorter than the 4096-byte header",
    );
}

#[test]
fn corrupt_wrong_magic() {
    let d = tmp();
    let mut b = good_filter(&d);
    b[1] = b'X';
    reseal(&mut b);
    write(&d, "magic.seen", &b);
    assert_rejected(&d, "magic.seen", "wrong magic");
}

#[test]
fn corrupt_unsupported_version() {
    let d = tmp();
    let good = good_filter(&d);
    let mut b = good.clone();
    b[8..10].copy_from_slice(&2u16.to_le_bytes());
    b[10..12].copy_from_slice(&7u16.to_le_bytes());
    write(&d, "v2.seen", &b);
    assert_rejected(&d, "v2.seen", "version 2.7 is not supported");
    reseal(&mut b);
    write(&d, "v2sealed.seen", &b);
    assert_rejected(&d, "v2sealed.seen", "version 2.7 is not supported");
    let mut b = good;
    b[8..10].copy_from_slice(&0u16.to_le_bytes());
    reseal(&mut b);
    write(&d, "v0.seen", &b);
    assert_rejected(&d, "v0.seen", "version 0.4 is not supported");
}

#[test]
fn corrupt_header_byte_fails_checksum() {
    let d = tmp();
    let good = good_filter(&d);
    // Capacity field, a layer-table byte, an unused layer entry, the checksum itself.
    for (i, at) in [48usize, LAYER + 40, 4000, CHECKSUM + 3]
        .into_iter()
        .enumerate()
    {
        let mut b = good.clone();
        b[at] ^= 0x10;
        let name = format!("flip{i}.seen");
        write(&d, &name, &b);
        assert_rejected(&d, &name, "checksum mismatch");
    }
    // A flipped bit in the data area is not detectable and is not an error.
    let mut b = good;
    let last = b.len() - 1;
    b[last] ^= 1;
    write(&d, "dataflip.seen", &b);
    seen(d.path(), ["stats", "dataflip.seen"]).ok();
}

#[test]
fn corrupt_truncated_file() {
    let d = tmp();
    let good = good_filter(&d);
    let len = good.len();
    write(&d, "trunc.seen", &good[..len - 4096]);
    assert_rejected(&d, "trunc.seen", "truncated");
    let r = seen(d.path(), ["stats", "trunc.seen"]);
    r.stderr_has(&format!("needs {len} bytes but it has {}", len - 4096));
    // Cut inside the header.
    write(&d, "cut.seen", &good[..4095]);
    assert_rejected(
        &d,
        "cut.seen",
        "4095 bytes is shorter than the 4096-byte header",
    );
    // Header only.
    write(&d, "hdr.seen", &good[..4096]);
    assert_rejected(&d, "hdr.seen", "truncated");
}

#[test]
fn corrupt_extended_file() {
    let d = tmp();
    let mut b = good_filter(&d);
    let len = b.len();
    b.extend_from_slice(&[0u8; 4096]);
    write(&d, "ext.seen", &b);
    assert_rejected(&d, "ext.seen", "4096 unexpected bytes after its last layer");
    let mut b2 = b.clone();
    b2.truncate(len + 1);
    write(&d, "ext1.seen", &b2);
    assert_rejected(&d, "ext1.seen", "1 unexpected bytes");
}

#[test]
fn corrupt_oversized_block_count() {
    let d = tmp();
    let good = good_filter(&d);
    let len = good.len() as u64;
    // Far more blocks than the file holds: reported as truncation.
    let mut b = good.clone();
    put_u64(&mut b, LAYER + 8, 1 << 40);
    // (its checksum table moved along: right after the bits, 8 bytes per MiB)
    put_u64(&mut b, LAYER + 48, 4096 + (1 << 46));
    reseal(&mut b);
    write(&d, "huge.seen", &b);
    assert_rejected(&d, "huge.seen", "truncated");
    seen(d.path(), ["stats", "huge.seen"]).stderr_has(&format!(
        "needs {} bytes but it has {len}",
        4096 + (1u64 << 46) + (1u64 << 29)
    ));
    // The same without moving the table: the table is where it cannot be.
    let mut b = good.clone();
    put_u64(&mut b, LAYER + 8, 1 << 40);
    reseal(&mut b);
    write(&d, "table.seen", &b);
    assert_rejected(&d, "table.seen", "checksum table offset");
    // A block count whose byte size overflows 64 bits.
    let mut b = good.clone();
    put_u64(&mut b, LAYER + 8, u64::MAX - 63);
    reseal(&mut b);
    write(&d, "overflow.seen", &b);
    assert_rejected(&d, "overflow.seen", "too large");
    // Not a multiple of a page of blocks.
    let mut b = good.clone();
    put_u64(&mut b, LAYER + 8, 65);
    reseal(&mut b);
    write(&d, "odd.seen", &b);
    assert_rejected(&d, "odd.seen", "block count 65");
    // Zero blocks.
    let mut b = good.clone();
    put_u64(&mut b, LAYER + 8, 0);
    reseal(&mut b);
    write(&d, "zero.seen", &b);
    assert_rejected(&d, "zero.seen", "block count 0");
    // A layer offset pointing past the end of the file.
    let mut b = good;
    put_u64(&mut b, LAYER, u64::MAX - 4095);
    reseal(&mut b);
    write(&d, "offset.seen", &b);
    assert_rejected(&d, "offset.seen", "corrupt header: layer");
}

#[test]
fn corrupt_k_and_blocks_per_key() {
    let d = tmp();
    let good = good_filter(&d);
    let positions = u32::from_le_bytes(good[LAYER + 56..LAYER + 60].try_into().unwrap());
    assert_eq!(positions, 0, "the cases below expect a scattered layer");
    for (name, at, v, needle) in [
        ("k0.seen", LAYER + 16, 0u32, "k = 0 is outside"),
        ("k65.seen", LAYER + 16, 65, "k = 65 is outside"),
        ("kbig.seen", LAYER + 16, u32::MAX, "is outside"),
        ("x5.seen", LAYER + 20, 5, "blocks per key = 5"),
        // The good filter's layer is scattered: 3 blocks per key are sectored only.
        ("x3.seen", LAYER + 20, 3, "blocks per key = 3"),
        (
            "positions.seen",
            LAYER + 56,
            2,
            "bit positions of layer 0 = 2 is unknown",
        ),
        ("reserved.seen", LAYER + 60, 1, "layer reserved bytes"),
        ("x0.seen", LAYER + 20, 0, "blocks per key = 0"),
        ("layers0.seen", 36, 0, "layer count"),
        ("layers2.seen", 36, 2, "layer 1: block count 0"),
        ("layers63.seen", 36, 63, "layer count"),
        ("hash.seen", 20, 77, "hash algorithm"),
        ("flags.seen", 16, 4, "flags"),
    ] {
        let mut b = good.clone();
        put_u32(&mut b, at, v);
        reseal(&mut b);
        write(&d, name, &b);
        assert_rejected(&d, name, needle);
    }
    // Sectored bit positions (layer bytes 56..60 = 1) need k a multiple of 8.
    let mut b = good.clone();
    put_u32(&mut b, LAYER + 56, 1);
    put_u32(&mut b, LAYER + 16, 12);
    reseal(&mut b);
    write(&d, "k12.seen", &b);
    assert_rejected(&d, "k12.seen", "k = 12 is not a multiple of 8");
    // NaN target fpp.
    let mut b = good;
    put_u64(&mut b, 56, f64::NAN.to_bits());
    reseal(&mut b);
    write(&d, "nan.seen", &b);
    assert_rejected(&d, "nan.seen", "target fpp");
}

/// Runs every subcommand on a crafted (checksum-valid) file and asserts each ends
/// with exit 0 or 2 and no panic or abort.
fn assert_no_crash(d: &TempDir, name: &str) {
    for args in [
        &["stats", name][..],
        &["stats", "--json", name][..],
        &["query", name, "g1"][..],
        &["dedup", "-f", name][..],
        &["build", "--add", "-o", name][..],
    ] {
        let r = seen_io(d.path(), args, b"g1\nnew\n");
        assert!(matches!(r.code, 0 | 2), "{}", r.ctx());
        assert!(!r.stderr.contains("panicked"), "{}", r.ctx());
    }
}

#[test]
fn crafted_huge_layer_capacity_is_not_a_crash() {
    let d = tmp();
    let mut b = good_filter(&d);
    put_u64(&mut b, LAYER + 24, u64::MAX);
    reseal(&mut b);
    write(&d, "cap.seen", &b);
    assert_no_crash(&d, "cap.seen");
}

#[test]
fn crafted_huge_insert_counter_is_not_a_crash() {
    let d = tmp();
    let mut b = good_filter(&d);
    put_u64(&mut b, LAYER + 40, 1 << 62);
    reseal(&mut b);
    write(&d, "ins.seen", &b);
    assert_no_crash(&d, "ins.seen");
}

#[test]
fn crafted_max_insert_counter_is_not_a_panic() {
    let d = tmp();
    let mut b = good_filter(&d);
    put_u64(&mut b, LAYER + 40, u64::MAX);
    reseal(&mut b);
    write(&d, "ins.seen", &b);
    assert_no_crash(&d, "ins.seen");
    // The same as a fixed filter (no growth fields): no endless loop either.
    put_u32(&mut b, 80, 0);
    put_u64(&mut b, 88, 0);
    reseal(&mut b);
    write(&d, "fixed.seen", &b);
    assert_no_crash(&d, "fixed.seen");
}

#[test]
fn corrupt_directory_as_filter() {
    let d = tmp();
    fs::create_dir(d.path().join("dir.seen")).unwrap();
    assert_rejected(&d, "dir.seen", "directory");
    // -f pointing at a directory must not be "created" either.
    seen_io(d.path(), ["dedup", "-n", "10", "-f", "dir.seen"], b"a\n")
        .fails("dir.seen")
        .stderr_has("seen: error: ")
        .no_stdout();
    // And build -o a directory, even with --force.
    seen_io(
        d.path(),
        ["build", "--force", "-n", "10", "-o", "dir.seen"],
        b"a\n",
    )
    .error("dir.seen")
    .stderr_has("directory");
    assert!(d.path().join("dir.seen").is_dir());
}

#[test]
fn dirty_filter_still_works_with_a_warning() {
    let d = tmp();
    let mut b = good_filter(&d);
    put_u32(&mut b, 16, 1); // FLAG_DIRTY
    reseal(&mut b);
    write(&d, "dirty.seen", &b);
    let r = seen(d.path(), ["query", "dirty.seen", "g1"]);
    r.code(0)
        .stdout(b"g1\n")
        .stderr_has("seen: warning: dirty.seen was not closed cleanly");
    let r = seen(d.path(), ["stats", "--json", "dirty.seen"]);
    r.code(0).stderr_has("not closed cleanly");
    let s: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(s["clean"], false, "{s}");
    // A writer that finishes clears the flag.
    seen_io(d.path(), ["dedup", "-f", "dirty.seen"], b"g1\nfresh\n")
        .code(0)
        .stdout(b"fresh\n");
    assert_eq!(stats_json(d.path(), "dirty.seen")["clean"], true);
}

// ---------------------------------------------------------------------------
// Locks
// ---------------------------------------------------------------------------

/// Runs `seen ARGS` while this process holds a lock on `filter`; waits (with a
/// generous failure timeout, never a sleep) for the "waiting for … lock" line on
/// stderr, then releases the lock and returns the finished run.
fn run_while_locked(
    dir: &Path,
    filter: &str,
    exclusive: bool,
    args: &[&str],
    input: &[u8],
    expect: &str,
) -> (i32, Vec<u8>, String) {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(filter))
        .unwrap();
    if exclusive {
        f.lock().unwrap();
    } else {
        f.lock_shared().unwrap();
    }
    let mut child = command(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
    }
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    let mut stdout = child.stdout.take().unwrap();
    let first = rx.recv_timeout(Duration::from_secs(60));
    match first {
        Ok(line) if line.contains(expect) => {}
        other => {
            let _ = child.kill();
            panic!("expected {expect:?} on stderr while locked, got {other:?}");
        }
    }
    f.unlock().unwrap();
    drop(f);
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).unwrap();
    let status = child.wait().unwrap();
    let err = reader.join().unwrap();
    (status.code().unwrap(), out, err)
}

#[test]
fn reader_waits_for_a_writer_and_says_so() {
    let d = tmp();
    greek(&d);
    let (code, out, err) = run_while_locked(
        d.path(),
        "g.seen",
        true,
        &["query", "g.seen", "alpha", "zeta"],
        b"",
        "waiting for a shared lock on g.seen",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, b"alpha\n");
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn writer_waits_for_a_reader_and_says_so() {
    let d = tmp();
    greek(&d);
    let (code, out, err) = run_while_locked(
        d.path(),
        "g.seen",
        false,
        &["dedup", "-f", "g.seen"],
        b"alpha\ndelta\ndelta\n",
        "waiting for an exclusive lock on g.seen",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, b"delta\n");
    assert_eq!(stats_json(d.path(), "g.seen")["inserts"], 4);
}

/// A pseudo-file reports a size of 0 whatever it holds: sizing the filter from
/// a count of its lines must read it to its end, or the filter is sized for no
/// lines and drops most of them as false positives (the counting pass once did:
/// 2,693 lines of /proc/kallsyms printed instead of 122,165).
#[test]
fn dedup_of_a_pseudo_file_sizes_for_its_real_length() {
    let Ok(data) = fs::read("/proc/kallsyms") else {
        eprintln!("skipped: /proc/kallsyms is not readable");
        return;
    };
    let want = reference(&data, b'\n', false);
    assert!(records(&data, b'\n').len() > 10_000, "too short to tell");
    let d = tmp();
    let r = seen(d.path(), ["dedup", "/proc/kallsyms"]);
    r.ok();
    // The file can change between the two reads (a module loaded): compare
    // the line counts, which a filter sized for 0 lines misses by far.
    let got = r.stdout.iter().filter(|&&b| b == b'\n').count();
    let want = want.iter().filter(|&&b| b == b'\n').count();
    assert!(
        got.abs_diff(want) < 100,
        "printed {got} lines, expected {want}"
    );
}

/// `query -c` (with and without -v) and `query -q --all` over many chunks give
/// what the printing run gives: counts of the lines it prints, and an exit
/// status that says whether it printed every line. (Counting looks at the
/// chunks' verdicts only, not at each record.)
#[test]
fn query_counts_agree_with_printed_lines() {
    let d = tmp();
    let mut rng = Rng(11);
    let members: String = (0..4000).map(|i| format!("m{i}\n")).collect();
    write(&d, "members.txt", members.as_bytes());
    seen(d.path(), ["build", "-o", "f.seen", "members.txt"]).ok();
    let items: String = (0..20_000)
        .map(|_| format!("m{}\n", rng.below(6000)))
        .collect();
    write(&d, "items.txt", items.as_bytes());
    let env = [("SEEN_CHUNK_BYTES", "4096")];
    let run = |args: &[&str]| seen_env(d.path(), &env, args, b"");
    let present = run(&["query", "f.seen", "--file", "items.txt"])
        .lines()
        .len();
    let absent = run(&["query", "-v", "f.seen", "--file", "items.txt"])
        .lines()
        .len();
    assert_eq!(present + absent, 20_000);
    // About 2/3 present: the two counts differ.
    assert!(present > 12_000 && absent > 5000, "{present} {absent}");
    run(&["query", "-c", "f.seen", "--file", "items.txt"])
        .ok()
        .stdout(format!("{present}\n").as_bytes());
    run(&["query", "-c", "-v", "f.seen", "--file", "items.txt"])
        .ok()
        .stdout(format!("{absent}\n").as_bytes());
    run(&["query", "-q", "--all", "f.seen", "--file", "items.txt"])
        .code(1)
        .no_stdout();
    run(&["query", "-q", "--all", "f.seen", "--file", "members.txt"])
        .ok()
        .no_stdout();
}

/// A malformed Redis location is a usage error (exit 2) from the argument
/// parser, before anything runs, naming the argument and what is wrong,
/// with the password kept out of the message; a path is never one.
#[test]
fn a_malformed_location_is_a_usage_error_naming_the_argument() {
    let dir = tmp();
    for (args, arg) in [
        (
            vec!["dedup", "-f", "redis://host:6379/"],
            "--filter <FILTER>",
        ),
        (
            vec!["query", "redis://u:hunter2@host:6379/", "x"],
            "<FILTER>",
        ),
        (
            vec!["build", "-o", "redis+cluster://host:1/", "x"],
            "--output <FILTER>",
        ),
        (vec!["merge", "-o", "x.seen", "redis://h/"], "<FILTER>..."),
    ] {
        let r = seen(dir.path(), &args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("for '{arg}'")) && r.stderr.contains("filter name"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("hunter2"), "{}", r.stderr);
    }
    // Nothing was made.
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}
