//! End-to-end tests of key options: `-k N -t C` (field keys, checked against
//! awk), `--ignore-case`, `--trim`, `--url` (+ `--url-sort-query`), `--raw-keys`;
//! key options recorded in a filter file and used by later runs; and the JSON
//! outputs (`dedup`/`build --summary --json`, `query --json`).
//!
//! Every test works in its own temporary directory, data is fixed or generated
//! from fixed seeds, and nothing sleeps.

use serde_json::Value;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use crate::common::{Rng, Run, seen, seen_env, seen_io, stats_json_quiet, tmp, write};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// `seen dedup FLAGS in.txt` on `data` (a file, so the filter is sized for it);
/// checks exit 0 and returns the run.
fn dedup(dir: &Path, flags: &[&str], data: &[u8]) -> Run {
    std::fs::write(dir.join("in.txt"), data).unwrap();
    let mut args = vec!["dedup"];
    args.extend_from_slice(flags);
    args.push("in.txt");
    let r = seen(dir, &args);
    r.code(0);
    r
}

/// Lines joined with `\n`, each terminated.
fn text(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

/// The names of a JSON object's members.
fn members(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// The members every `--summary --json` object has (`dedup` adds lines_written).
const SUMMARY: [&str; 7] = [
    "lines_read",
    "new",
    "duplicates",
    "expected_false_positives",
    "keys",
    "layers",
    "fpp_now",
];

/// Checks the types of a summary's members and returns it.
fn check_summary(v: &Value) -> &Value {
    for n in ["lines_read", "new", "duplicates", "layers"] {
        assert!(v[n].is_u64(), "{n} is not a count: {v}");
    }
    for n in ["lines_written", "missing_field", "not_url"] {
        if let Some(x) = v.get(n) {
            assert!(x.is_u64(), "{n} is not a count: {v}");
        }
    }
    for n in ["expected_false_positives", "fpp_now"] {
        let x = v[n]
            .as_f64()
            .unwrap_or_else(|| panic!("{n} not a number: {v}"));
        assert!(x.is_finite() && x >= 0.0, "{n} = {x}: {v}");
    }
    assert!(v["keys"].is_string(), "keys is not a string: {v}");
    assert!(v["layers"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(
        v["lines_read"].as_u64().unwrap(),
        v["new"].as_u64().unwrap() + v["duplicates"].as_u64().unwrap(),
        "read != new + duplicates: {v}"
    );
    v
}

/// Runs `awk -F DELIM PROGRAM FILE` and returns its standard output.
fn awk(dir: &Path, delim: &str, program: &str, file: &str) -> Vec<u8> {
    let out = std::process::Command::new("awk")
        .current_dir(dir)
        .arg("-F")
        .arg(delim)
        .arg(program)
        .arg(file)
        .output()
        .expect("awk is installed");
    assert!(out.status.success(), "awk failed: {out:?}");
    out.stdout
}

/// `n` records of 0–5 fields separated by `delim`, from `seed`: values from a
/// small set (so keys repeat), some fields empty, and short records (empty
/// lines, one field, a trailing delimiter).
fn csv_like(seed: u64, n: usize, delim: u8) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        let nf = match rng.below(12) {
            0 => 0,
            1 | 2 => 1,
            3..=6 => 2,
            _ => 3 + rng.below(3),
        };
        let fields: Vec<String> = (0..nf)
            .map(|_| match rng.below(10) {
                0 => String::new(),
                1 => format!("v {}", rng.below(5)),
                _ => format!("v{}", rng.below(60)),
            })
            .collect();
        out.extend_from_slice(fields.join(&(delim as char).to_string()).as_bytes());
        out.push(b'\n');
    }
    out
}

/// Records of `data` (newline-terminated) with fewer than `k` fields.
fn short_records(data: &[u8], delim: u8, k: usize) -> u64 {
    data.split(|&b| b == b'\n')
        .take(data.iter().filter(|&&b| b == b'\n').count())
        .filter(|r| r.iter().filter(|&&b| b == delim).count() + 1 < k)
        .count() as u64
}

// ---------------------------------------------------------------------------
// -k N -t C: field keys
// ---------------------------------------------------------------------------

#[test]
fn field_key_prints_whole_records_first_occurrence_in_order() {
    let d = tmp();
    let data = text(&[
        "id,name,city",
        "1,alice,paris",
        "2,bob,rome",
        "3,alice,oslo",
        "4,carol,paris",
        "5,bob,rome",
        "6,dave,oslo",
    ]);
    dedup(d.path(), &["-k", "2", "-t", ","], &data)
        .ok()
        .stdout(&text(&[
            "id,name,city",
            "1,alice,paris",
            "2,bob,rome",
            "4,carol,paris",
            "6,dave,oslo",
        ]));
    dedup(d.path(), &["-k", "3", "-t", ","], &data)
        .ok()
        .stdout(&text(&[
            "id,name,city",
            "1,alice,paris",
            "2,bob,rome",
            "3,alice,oslo",
        ]));
    // --repeated: every later record with a seen key, whole.
    dedup(d.path(), &["--all-repeated", "-k", "2", "-t", ","], &data)
        .ok()
        .stdout(&text(&["3,alice,oslo", "5,bob,rome"]));
    // Long flag names, and standard input.
    seen_io(
        d.path(),
        ["dedup", "-n", "100", "--key", "2", "--delimiter", ","],
        &data,
    )
    .ok()
    .stdout(&text(&[
        "id,name,city",
        "1,alice,paris",
        "2,bob,rome",
        "4,carol,paris",
        "6,dave,oslo",
    ]));
}

/// Without `-t`, fields are runs of blanks, as in awk and `sort -k`; `-t`
/// with a tab (in any of its forms) splits on every tab, as `cut` does.
#[test]
fn default_fields_are_runs_of_blanks() {
    let d = tmp();
    let data = b"1\tx,a\n2\tx,b\n3\tx,a\n4 x,a\n5  x,a\n";
    // Blank-separated: field 2 is `x,a` for the tab and the space records.
    dedup(d.path(), &["-k", "2"], data)
        .ok()
        .stdout(b"1\tx,a\n2\tx,b\n");
    // Tab-separated: the space-separated records have one field only (an
    // empty key: the first of them is new, the second not).
    for t in ["\\t", "\t", "tab", "0x09"] {
        dedup(d.path(), &["-k", "2", "-t", t], data)
            .code(0)
            .stderr_has("2 of 5 records had no field 2")
            .stdout(b"1\tx,a\n2\tx,b\n4 x,a\n");
    }
}

#[test]
fn short_records_have_an_empty_key_as_in_awk() {
    let d = tmp();
    // `a` and `` (empty line) have no field 2; `b,` has an empty field 2: all
    // three share the empty key.
    let data = b"a\nb,\n\nc,x\nd\ne,x\n";
    dedup(d.path(), &["-k", "2", "-t", ","], data)
        .code(0)
        .stderr_has("warning: 3 of 6 records had no field 2")
        .stdout(b"a\nc,x\n");
    assert_eq!(
        awk(d.path(), ",", "!seen[$2]++", "in.txt"),
        b"a\nc,x\n",
        "awk disagrees with this test's expectation"
    );
    // -k 1: every record has a field 1 (an empty line's is empty).
    dedup(d.path(), &["-k", "1", "-t", ","], data)
        .ok()
        .stdout(b"a\nb,\n\nc,x\nd\ne,x\n");
}

#[test]
fn field_keys_match_awk_on_generated_records() {
    let d = tmp();
    for (seed, delim, awk_delim, t) in [
        (0x5EE1_u64, b',', ",", ","),
        (0x5EE2, b'\t', "\t", "\\t"),
        (0x5EE3, b';', ";", ";"),
    ] {
        let data = csv_like(seed, 5000, delim);
        write(&d, "gen.txt", &data);
        for k in [1usize, 2, 3, 5] {
            let expected = awk(d.path(), awk_delim, &format!("!seen[${k}]++"), "gen.txt");
            let repeated = awk(d.path(), awk_delim, &format!("seen[${k}]++"), "gen.txt");
            assert!(expected.len() < data.len(), "no duplicates: a useless test");
            let ks = k.to_string();
            let r = seen(
                d.path(),
                [
                    "dedup",
                    "-k",
                    &ks,
                    "-t",
                    t,
                    "--summary",
                    "--json",
                    "gen.txt",
                ],
            );
            r.code(0).stdout(&expected);
            let s = r.stderr_json();
            check_summary(&s);
            assert_eq!(s["lines_read"], 5000, "{s}");
            assert_eq!(
                s["lines_written"].as_u64().unwrap(),
                expected.iter().filter(|&&b| b == b'\n').count() as u64,
                "{s}"
            );
            assert_eq!(
                s["missing_field"].as_u64().unwrap(),
                short_records(&data, delim, k),
                "k={k} delimiter {t:?}: {s}"
            );
            seen(d.path(), ["dedup", "-D", "-k", &ks, "-t", t, "gen.txt"])
                .code(0)
                .stdout(&repeated);
        }
    }
}

#[test]
fn field_keys_do_not_depend_on_threads_or_chunking() {
    let d = tmp();
    // Big enough (about 400 kB) for the default chunk to be hashed in
    // several pieces in parallel.
    let data = csv_like(0xC4A2, 60_000, b',');
    write(&d, "gen.txt", &data);
    let expected = awk(d.path(), ",", "!seen[$2]++", "gen.txt");
    let missing = short_records(&data, b',', 2);
    for (env, j) in [
        (&[][..], "1"),
        (&[][..], "4"),
        (&[("SEEN_CHUNK_BYTES", "1000")][..], "3"),
        (&[("SEEN_CHUNK_BYTES", "70000")][..], "8"),
    ] {
        let r = seen_env(
            d.path(),
            env,
            [
                "dedup",
                "-j",
                j,
                "-k",
                "2",
                "-t",
                ",",
                "--summary",
                "--json",
                "gen.txt",
            ],
            b"",
        );
        r.code(0).stdout(&expected);
        let s = r.stderr_json();
        assert_eq!(
            s["missing_field"].as_u64(),
            Some(missing),
            "{env:?} -j {j}: {s}"
        );
        // The same through a persistent filter (deferred recording), from stdin.
        let _ = std::fs::remove_file(d.path().join("p.seen"));
        let r = seen_env(
            d.path(),
            env,
            [
                "dedup",
                "-n",
                "100k",
                "-j",
                j,
                "-f",
                "p.seen",
                "-k",
                "2",
                "-t",
                ",",
                "--summary",
                "--json",
            ],
            &data,
        );
        r.code(0).stdout(&expected);
        assert_eq!(
            r.stderr_json()["missing_field"].as_u64(),
            Some(missing),
            "{}",
            r.ctx()
        );
    }
}

#[test]
fn delimiter_forms_accepted() {
    let d = tmp();
    let cases: [(&str, u8); 8] = [
        (",", b','),
        (";", b';'),
        ("|", b'|'),
        ("\\t", b'\t'),
        ("0x1f", 0x1f),
        ("0x1F", 0x1f),
        ("\\0", 0),
        ("\\\\", b'\\'),
    ];
    for (t, byte) in cases {
        let mut data = Vec::new();
        for r in [["1", "a"], ["2", "b"], ["3", "a"]] {
            data.extend_from_slice(r[0].as_bytes());
            data.push(byte);
            data.extend_from_slice(r[1].as_bytes());
            data.push(b'\n');
        }
        let mut expected = data.clone();
        expected.truncate(data.len() - 4); // drop "3?a\n"
        dedup(d.path(), &["-k", "2", "-t", t], &data)
            .ok()
            .stdout(&expected);
    }
}

#[test]
fn bad_delimiters_are_usage_errors() {
    let d = tmp();
    for t in [",,", "", "ab", "é", "0x", "0x100", "0xzz", "\\n\\n"] {
        let r = seen_io(
            d.path(),
            ["dedup", "-n", "10", "-k", "2", "-t", t],
            b"a,b\n",
        );
        r.fails("single-byte delimiter").no_stdout();
        assert!(r.stderr.contains(t), "the message names {t:?}\n{}", r.ctx());
    }
    for sub in [
        &["dedup", "-n", "10"][..],
        &["build", "-o", "f.seen"][..],
        &["query", "f.seen", "x"][..],
    ] {
        let mut args = sub.to_vec();
        args.extend(["-t", ","]);
        seen_io(d.path(), &args, b"a,b\n")
            .fails("--key")
            .no_stdout();
    }
    assert!(!d.path().join("f.seen").exists());
}

#[test]
fn key_flag_misuse_is_a_usage_error() {
    let d = tmp();
    for (args, needle) in [
        (&["-k", "0"][..], "0"),
        (&["-k", "x"][..], "x"),
        (&["-k", "65536"][..], "65536"),
        (&["--url-sort-query"][..], "--url"),
        (&["--raw-keys", "-k", "2"][..], "--raw-keys"),
        (&["--raw-keys", "--trim"][..], "--raw-keys"),
        (&["--raw-keys", "--url"][..], "--raw-keys"),
        (&["--raw-keys", "-i"][..], "--raw-keys"),
    ] {
        let mut a = vec!["dedup", "-n", "10"];
        a.extend_from_slice(args);
        seen_io(d.path(), &a, b"a\n").fails(needle).no_stdout();
    }
}

// ---------------------------------------------------------------------------
// --ignore-case, --trim
// ---------------------------------------------------------------------------

#[test]
fn ignore_case_folds_ascii_and_unicode() {
    let d = tmp();
    let data = text(&[
        "Hello",
        "HELLO",
        "hello",
        "hELLo",
        "ÉCOLE",
        "école",
        "École",
        "ecole",
        "ΑΒΓ",
        "αβγ",
        "ПРИВЕТ",
        "привет",
        "Straße",
        "STRASSE",
    ]);
    // Without -i every line is distinct.
    dedup(d.path(), &[], &data).ok().stdout(&data);
    let folded = text(&[
        "Hello",
        "ÉCOLE",
        "ecole",
        "ΑΒΓ",
        "ПРИВЕТ",
        "Straße",
        "STRASSE",
    ]);
    dedup(d.path(), &["-i"], &data).ok().stdout(&folded);
    dedup(d.path(), &["--ignore-case"], &data)
        .ok()
        .stdout(&folded);
    // Not UTF-8: ASCII letters fold, other bytes stay as they are.
    let latin1 = b"A\xc9B\na\xc9b\na\xe9b\n";
    dedup(d.path(), &["-i"], latin1)
        .ok()
        .stdout(b"A\xc9B\na\xe9b\n");
    // With a field key, only the field is folded; the record is printed as is.
    dedup(
        d.path(),
        &["-i", "-k", "2", "-t", ","],
        "X,ÉCOLE\nY,école\nx,Ecole\n".as_bytes(),
    )
    .ok()
    .stdout("X,ÉCOLE\nx,Ecole\n".as_bytes());
}

#[test]
fn trim_strips_spaces_tabs_and_cr() {
    let d = tmp();
    let data = b"a\n a\na \n\ta\t\na\r\n \t a \r\nb\r\nb\n";
    dedup(d.path(), &[], data).ok().stdout(data);
    dedup(d.path(), &["--trim"], data).ok().stdout(b"a\nb\r\n");
    // A CRLF file keyed by its last field: without --trim the CR is part of the key.
    let crlf = b"1,x\r\n2,y\r\n3,x\r\n4,x\n5,y \r\n";
    dedup(d.path(), &["-k", "2", "-t", ","], crlf)
        .ok()
        .stdout(b"1,x\r\n2,y\r\n4,x\n5,y \r\n");
    dedup(d.path(), &["--trim", "-k", "2", "-t", ","], crlf)
        .ok()
        .stdout(b"1,x\r\n2,y\r\n");
    // Whitespace inside the key stays.
    dedup(d.path(), &["--trim"], b"a b\n a  b \nab\n")
        .ok()
        .stdout(b"a b\n a  b \nab\n");
    // Trim and case folding together.
    dedup(d.path(), &["--trim", "-i"], b" Foo\r\nfoo\n\tFOO \n")
        .ok()
        .stdout(b" Foo\r\n");
}

/// `--help` and src/keys.rs say --trim strips VT and FF as well.
#[test]
fn trim_strips_vertical_tab_and_form_feed_as_documented() {
    let d = tmp();
    let help = seen(d.path(), ["dedup", "--help"]);
    help.ok();
    let help = String::from_utf8_lossy(&help.stdout).replace('\n', " ");
    let help: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("VT, FF"),
        "--help no longer promises VT: {help}"
    );
    dedup(d.path(), &["--trim"], b"a\n\x0ca\x0c\n")
        .ok()
        .stdout(b"a\n");
    dedup(d.path(), &["--trim"], b"a\n\x0ba\x0b\n")
        .ok()
        .stdout(b"a\n");
}

// ---------------------------------------------------------------------------
// --url, --url-sort-query
// ---------------------------------------------------------------------------

/// URL pairs with the same canonical key under `--url`.
const URL_SAME: [(&str, &str); 12] = [
    ("HTTP://Example.COM/a", "http://example.com/a"),
    ("http://a.com:80/", "http://a.com/"),
    ("https://a.com:443/x", "https://a.com/x"),
    ("HTTPS://A.COM:443/x", "https://a.com/x"),
    ("http://a.com/x#frag", "http://a.com/x"),
    ("http://a.com/x?q=1#f", "http://a.com/x?q=1"),
    ("http://a.com/a/./b/../c", "http://a.com/a/c"),
    ("http://a.com/a/b/../../c", "http://a.com/c"),
    ("http://a.com", "http://a.com/"),
    ("http://a.com:80", "http://a.com/"),
    ("http://café.example/", "http://xn--caf-dma.example/"),
    ("http://a.com/a b", "http://a.com/a%20b"),
];

/// URL pairs that keep different keys under `--url`.
const URL_DIFFERENT: [(&str, &str); 9] = [
    ("http://a.com/A", "http://a.com/a"),
    ("http://a.com/x?q=1", "http://a.com/x?q=2"),
    ("http://a.com/x?a=1", "http://a.com/x"),
    ("http://a.com/?b=2&a=1", "http://a.com/?a=1&b=2"),
    ("http://a.com:8080/", "http://a.com/"),
    ("https://a.com/", "http://a.com/"),
    ("http://a.com:443/", "https://a.com/"),
    ("http://a.com/", "http://b.com/"),
    ("http://a.com/", "http://www.a.com/"),
];

/// The keys `seen query --json` reports for `items` against `filter`.
fn query_keys(dir: &Path, filter: &str, items: &[&str]) -> Vec<(String, bool)> {
    let mut args = vec!["query", "--json", filter];
    args.extend_from_slice(items);
    let r = seen(dir, &args);
    let v = r.stdout_json_lines();
    assert_eq!(v.len(), items.len(), "{}", r.ctx());
    v.iter()
        .zip(items)
        .map(|(o, i)| {
            assert_eq!(o["item"], *i, "{}", r.ctx());
            (
                o["key"].as_str().expect("a key").to_owned(),
                o["present"].as_bool().expect("present"),
            )
        })
        .collect()
}

/// Checks that each pair has the same key (`same`) or not, under `flags`, by
/// dedup and by query against a filter built from the pairs' first members.
fn check_url_pairs(flags: &[&str], pairs: &[(&str, &str)], same: bool) {
    let d = tmp();
    for &(a, b) in pairs {
        let r = dedup(d.path(), flags, &text(&[a, b]));
        r.ok();
        let want = if same { text(&[a]) } else { text(&[a, b]) };
        assert_eq!(
            r.stdout,
            want,
            "{flags:?}: {a:?} and {b:?} should {}collide\n{}",
            if same { "" } else { "not " },
            r.ctx()
        );
    }
    let firsts: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    let seconds: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    write(&d, "firsts.txt", &text(&firsts));
    let mut args = vec!["build", "-o", "u.seen"];
    args.extend_from_slice(flags);
    args.push("firsts.txt");
    seen(d.path(), &args).ok();
    // The filter records the flags: query needs none to key the same way.
    let k1 = query_keys(d.path(), "u.seen", &firsts);
    let k2 = query_keys(d.path(), "u.seen", &seconds);
    for (((a, b), (ka, pa)), (kb, pb)) in pairs.iter().zip(&k1).zip(&k2) {
        assert!(*pa, "{a:?} was inserted");
        assert_eq!(
            ka == kb,
            same,
            "{flags:?}: {a:?} -> {ka:?}, {b:?} -> {kb:?}"
        );
        if same {
            assert!(pb, "{b:?} has the key of {a:?}");
        }
    }
    // Nothing in these tables is a non-URL.
    let mut args = vec!["dedup", "--summary", "--json"];
    args.extend_from_slice(flags);
    args.push("firsts.txt");
    let r = seen(d.path(), &args);
    r.code(0);
    assert_eq!(r.stderr_json()["not_url"], 0, "{}", r.ctx());
}

#[test]
fn url_pairs_that_must_collide() {
    check_url_pairs(&["--url"], &URL_SAME, true);
    check_url_pairs(&["--url", "--url-sort-query"], &URL_SAME, true);
}

#[test]
fn url_pairs_that_must_not_collide() {
    check_url_pairs(&["--url"], &URL_DIFFERENT, false);
    // Without --url, even the canonical-form pairs stay apart.
    let d = tmp();
    for (a, b) in URL_SAME {
        dedup(d.path(), &[], &text(&[a, b]))
            .ok()
            .stdout(&text(&[a, b]));
    }
}

#[test]
fn url_sort_query_makes_parameter_order_irrelevant() {
    let same = [
        ("http://a.com/?b=2&a=1", "http://a.com/?a=1&b=2"),
        ("http://a.com/p?z=1&y=2&x=3", "http://a.com/p?x=3&y=2&z=1"),
        ("HTTP://A.com:80/p?b=&a=#f", "http://a.com/p?a=&b="),
    ];
    check_url_pairs(&["--url", "--url-sort-query"], &same, true);
    // ... and only that: different values or names still differ.
    let different: Vec<_> = URL_DIFFERENT
        .iter()
        .copied()
        .filter(|(a, _)| !a.contains("b=2&a=1"))
        .chain([
            ("http://a.com/?a=1&b=2", "http://a.com/?a=1&b=3"),
            ("http://a.com/?a=1&b=2", "http://a.com/?a=1&c=2"),
            ("http://a.com/?a=1&b=2", "http://a.com/?a=1"),
        ])
        .collect();
    check_url_pairs(&["--url", "--url-sort-query"], &different, false);
    // The sorted key is visible in query --json.
    let d = tmp();
    write(&d, "e.txt", b"");
    seen(
        d.path(),
        [
            "build",
            "--url",
            "--url-sort-query",
            "-o",
            "u.seen",
            "e.txt",
        ],
    )
    .ok();
    assert_eq!(
        query_keys(d.path(), "u.seen", &["HTTP://A.COM:80/p?c=3&a=1&b=2#top"]),
        [("http://a.com/p?a=1&b=2&c=3".to_owned(), false)]
    );
}

#[test]
fn url_keys_are_canonical_in_query_json() {
    let d = tmp();
    write(&d, "e.txt", b"");
    seen(d.path(), ["build", "--url", "-o", "u.seen", "e.txt"]).ok();
    let got = query_keys(
        d.path(),
        "u.seen",
        &[
            "HTTP://Example.COM:80/a/./b/../c?q=1#x",
            "https://a.com:443",
            "http://a.com/?b=2&a=1",
            "example.com/x",
            "not a url",
        ],
    );
    let want = [
        "http://example.com/a/c?q=1",
        "https://a.com/",
        "http://a.com/?b=2&a=1",
        "example.com/x",
        "not a url",
    ];
    for ((k, present), w) in got.iter().zip(want) {
        assert_eq!(k, w);
        assert!(!present, "{k} in an empty filter");
    }
}

#[test]
fn non_urls_are_hashed_as_they_are_and_counted() {
    let d = tmp();
    let data = text(&[
        "example.com/x",
        "EXAMPLE.com/x",
        "example.com/x",
        "not a url",
        "not a url",
        "/a/./b/../c",
        "/a/c",
        "",
        "http://a.com/",
        "HTTP://A.COM",
    ]);
    std::fs::write(d.path().join("in.txt"), &data).unwrap();
    let r = seen(
        d.path(),
        ["dedup", "--url", "--summary", "--json", "in.txt"],
    );
    r.code(0).stdout(&text(&[
        "example.com/x",
        "EXAMPLE.com/x",
        "not a url",
        "/a/./b/../c",
        "/a/c",
        "",
        "http://a.com/",
    ]));
    let s = r.stderr_json();
    check_summary(&s);
    assert_eq!(s["not_url"], 8, "{s}");
    assert_eq!(s["lines_read"], 10, "{s}");
    assert_eq!(s["lines_written"], 7, "{s}");
    assert_eq!(s["keys"], "whole record, canonical URL", "{s}");
    assert!(s.get("missing_field").is_none(), "{s}");
    // With --ignore-case, non-URLs are folded too (after the URL step).
    dedup(d.path(), &["--url", "-i"], &data)
        .ok()
        .stdout(&text(&[
            "example.com/x",
            "not a url",
            "/a/./b/../c",
            "/a/c",
            "",
            "http://a.com/",
        ]));
}

#[test]
fn url_of_a_field_with_trim() {
    let d = tmp();
    let data =
        b"1\t HTTP://A.com:80/x#f \t9\n2\thttp://a.com/x\t8\n3\tnope\n4\n5\thttp://a.com/y\n";
    std::fs::write(d.path().join("in.txt"), data).unwrap();
    let r = seen(
        d.path(),
        [
            "dedup",
            "-k",
            "2",
            "-t",
            "\\t",
            "--trim",
            "--url",
            "--summary",
            "--json",
            "in.txt",
        ],
    );
    r.code(0)
        .stdout(b"1\t HTTP://A.com:80/x#f \t9\n3\tnope\n4\n5\thttp://a.com/y\n");
    let s = r.stderr_json();
    check_summary(&s);
    assert_eq!(s["missing_field"], 1, "{s}");
    // `nope` and the empty key of the short record.
    assert_eq!(s["not_url"], 2, "{s}");
    assert_eq!(
        s["keys"], "field 2 ('\\t'-separated), trimmed, canonical URL",
        "{s}"
    );
}

// ---------------------------------------------------------------------------
// Key options recorded in the filter file
// ---------------------------------------------------------------------------

const PEOPLE: &[u8] = b"1,alice\n2,bob\n3,alice\n4\n5,carol\n";

/// `build -k 2 -t , -o f.seen people.csv` in a fresh directory.
fn people_filter() -> tempfile::TempDir {
    let d = tmp();
    write(&d, "people.csv", PEOPLE);
    seen(
        d.path(),
        ["build", "-k", "2", "-t", ",", "-o", "f.seen", "people.csv"],
    )
    .code(0)
    .stderr_has("1 of 5 records had no field 2");
    d
}

#[test]
fn build_records_keys_and_query_uses_them() {
    let d = people_filter();
    // Items on the command line are keys (issue 21): `alice` and `bob` are
    // in it, `dave` is not, and `9,alice` is a key no record had.
    seen(
        d.path(),
        ["query", "f.seen", "alice", "dave", "9,alice", "bob"],
    )
    .ok()
    .stdout(b"alice\nbob\n");
    seen(d.path(), ["query", "-c", "f.seen", "alice", "bob", "zed"])
        .ok()
        .stdout(b"2\n");
    seen(d.path(), ["query", "f.seen", "alice,x", "zed"])
        .code(1)
        .stdout(b"");
    // Lines read are records: field 2 of each; `0` has no field 2 (the
    // empty key, which `4` put in the filter), and the warning says so.
    seen_io(
        d.path(),
        ["query", "f.seen"],
        b"0,bob\n0,erin\n0,carol,x\n0\n",
    )
    .code(0)
    .stderr_has("1 of 4 records had no field 2")
    .stdout(b"0,bob\n0,carol,x\n0\n");
    let r = seen(d.path(), ["query", "-f", "people.csv", "--all", "f.seen"]);
    r.code(0).stdout(PEOPLE);
    // --as-keys: lines read are keys, as items are.
    seen_io(
        d.path(),
        ["query", "--as-keys", "f.seen"],
        b"alice\nzed\n9,bob\n",
    )
    .ok()
    .stdout(b"alice\n");
    // The same flags as recorded, on records: no warning.
    seen_io(
        d.path(),
        ["query", "-k", "2", "-t", ",", "f.seen"],
        b"9,bob\n",
    )
    .ok()
    .stdout(b"9,bob\n");
    // -k with items asks for something items cannot have: refused, with the fix.
    seen(d.path(), ["query", "-k", "2", "-t", ",", "f.seen", "9,bob"])
        .error("items on the command line are keys already");
}

#[test]
fn stats_shows_recorded_keys() {
    let d = people_filter();
    let s = stats_json_quiet(d.path(), "f.seen");
    assert_eq!(s["keys"], "field 2 (','-separated)", "{s}");
    assert_eq!(s["key_flags"], "-k 2 -t ','", "{s}");
    let human = seen(d.path(), ["stats", "f.seen"]);
    human.ok();
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("-k 2 -t ','"),
        "{}",
        human.ctx()
    );
    write(&d, "e.txt", b"x\n");
    for (flags, keys, key_flags) in [
        (&[][..], "whole record", "--raw-keys"),
        (&["--raw-keys"][..], "whole record", "--raw-keys"),
        (&["-k", "3"][..], "field 3 (blank-separated)", "-k 3"),
        (
            &["-k", "3", "-t", "\\t"][..],
            "field 3 ('\\t'-separated)",
            "-k 3 -t '\\t'",
        ),
        (
            &["-k", "2", "-t", "0x1f"][..],
            "field 2 (0x1f-separated)",
            "-k 2 -t 0x1f",
        ),
        (&["-i"][..], "whole record, case-folded", "--ignore-case"),
        (&["--trim"][..], "whole record, trimmed", "--trim"),
        (&["--url"][..], "whole record, canonical URL", "--url"),
        (
            &[
                "-k",
                "1",
                "-t",
                ";",
                "--trim",
                "--url",
                "--url-sort-query",
                "-i",
            ][..],
            "field 1 (';'-separated), trimmed, canonical URL with sorted query, case-folded",
            "-k 1 -t ';' --trim --url --url-sort-query --ignore-case",
        ),
    ] {
        let mut args = vec!["build", "--force", "-o", "g.seen"];
        args.extend_from_slice(flags);
        args.push("e.txt");
        seen(d.path(), &args).code(0);
        let s = stats_json_quiet(d.path(), "g.seen");
        assert_eq!(s["keys"], keys, "{flags:?}: {s}");
        assert_eq!(s["key_flags"], key_flags, "{flags:?}: {s}");
        // The flags shown give the same filter keys again.
        let mut args: Vec<String> = ["build", "--force", "-o", "h.seen"]
            .map(String::from)
            .to_vec();
        let shown = key_flags.replace('\'', "");
        args.extend(shown.split(' ').map(String::from));
        args.push("e.txt".into());
        seen(d.path(), &args).code(0);
        assert_eq!(stats_json_quiet(d.path(), "h.seen")["key_flags"], key_flags);
    }
}

#[test]
fn dedup_with_filter_uses_recorded_keys() {
    let d = people_filter();
    let r = seen_io(
        d.path(),
        ["dedup", "-f", "f.seen"],
        b"7,bob\n8,dave\n9,dave\n10,erin\n11\n",
    );
    r.code(0)
        .stderr_has("1 of 5 records had no field 2")
        .stdout(b"8,dave\n10,erin\n");
    // What it printed was recorded by key.
    seen(d.path(), ["query", "f.seen", "dave", "erin", "frank"])
        .ok()
        .stdout(b"dave\nerin\n");
    // build --add uses them too.
    write(&d, "more.csv", b"12,frank\n");
    seen(d.path(), ["build", "--add", "-o", "f.seen", "more.csv"]).ok();
    seen(d.path(), ["query", "f.seen", "frank"])
        .ok()
        .stdout(b"frank\n");
    assert_eq!(
        stats_json_quiet(d.path(), "f.seen")["key_flags"],
        "-k 2 -t ','"
    );
}

#[test]
fn dedup_records_keys_in_a_new_filter() {
    let d = tmp();
    seen_io(
        d.path(),
        [
            "dedup", "-n", "1000", "-f", "n.seen", "-k", "2", "-t", ",", "-i",
        ],
        b"1,A\n2,a\n3,b\n",
    )
    .ok()
    .stdout(b"1,A\n3,b\n");
    assert_eq!(
        stats_json_quiet(d.path(), "n.seen")["key_flags"],
        "-k 2 -t ',' --ignore-case"
    );
    // The next run needs no flags.
    seen_io(d.path(), ["dedup", "-f", "n.seen"], b"4,B\n5,c\n6,C\n")
        .ok()
        .stdout(b"5,c\n");
}

#[test]
fn other_key_flags_warn_and_are_used() {
    let d = people_filter();
    // query: -k 1 keys records by id; `alice,x` has key `alice`, which is in
    // the filter.
    let r = seen_io(
        d.path(),
        ["query", "-k", "1", "-t", ",", "f.seen"],
        b"1,alice\nalice,x\n",
    );
    r.code(0)
        .stdout(b"alice,x\n")
        .stderr_has("warning")
        .stderr_has("f.seen")
        .stderr_has("-k 2 -t ','")
        .stderr_has("-k 1 -t ','");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.ctx());
    // query --json shows the key it used.
    let r = seen(d.path(), ["query", "--json", "-i", "f.seen", "ALICE"]);
    r.code(0)
        .stderr_has("--ignore-case")
        .stderr_has("-k 2 -t ','");
    let v = r.stdout_json_lines();
    assert_eq!(v[0]["key"], "alice");
    assert_eq!(v[0]["present"], true);
    // dedup -f: keys by field 1; `alice` is in the filter.
    let r = seen_io(
        d.path(),
        ["dedup", "-f", "f.seen", "-k", "1", "-t", ","],
        b"alice,9\nzed,9\n",
    );
    r.code(0)
        .stdout(b"zed,9\n")
        .stderr_has("warning")
        .stderr_has("-k 2 -t ','")
        .stderr_has("-k 1 -t ','");
    // The recorded keys did not change.
    assert_eq!(
        stats_json_quiet(d.path(), "f.seen")["key_flags"],
        "-k 2 -t ','"
    );
    // build --add too.
    write(&d, "ids.csv", b"gus,1\n");
    seen(
        d.path(),
        [
            "build", "--add", "-k", "1", "-t", ",", "-o", "f.seen", "ids.csv",
        ],
    )
    .code(0)
    .stderr_has("-k 1 -t ','")
    .stderr_has("-k 2 -t ','");
    seen(d.path(), ["query", "f.seen", "gus"])
        .ok()
        .stdout(b"gus\n");
    // The same keys as recorded, spelled differently: no warning.
    seen_io(
        d.path(),
        ["query", "--key", "2", "--delimiter", "0x2c", "f.seen"],
        b"x,bob\n",
    )
    .ok()
    .stdout(b"x,bob\n");
}

#[test]
fn key_flags_on_a_raw_filter_warn() {
    let d = tmp();
    write(&d, "w.txt", b"Alice\nbob\n");
    seen(d.path(), ["build", "-o", "r.seen", "w.txt"]).ok();
    let r = seen(d.path(), ["query", "-i", "r.seen", "ALICE", "BOB"]);
    r.code(0)
        .stdout(b"BOB\n")
        .stderr_has("--raw-keys")
        .stderr_has("--ignore-case");
    seen(d.path(), ["query", "--raw-keys", "r.seen", "bob"])
        .ok()
        .stdout(b"bob\n");
}

#[test]
fn raw_keys_hash_whole_records() {
    let d = people_filter();
    // The filter holds the keys `alice`, `bob`, ``, `carol`: as whole records,
    // only those match. Items on the command line are keys anyway: the same
    // answer, and no warning.
    seen(
        d.path(),
        ["query", "--raw-keys", "f.seen", "alice", "1,alice", "carol"],
    )
    .ok()
    .stdout(b"alice\ncarol\n");
    let r = seen_io(
        d.path(),
        ["query", "--raw-keys", "f.seen"],
        b"alice\n1,alice\ncarol\n",
    );
    r.code(0)
        .stdout(b"alice\ncarol\n")
        .stderr_has("warning")
        .stderr_has("--raw-keys")
        .stderr_has("-k 2 -t ','");
    let r = seen(
        d.path(),
        ["query", "--raw-keys", "--json", "f.seen", "1,alice"],
    );
    r.code(1);
    let v = r.stdout_json_lines();
    // --raw-keys is no key option: no key member.
    assert_eq!(members(&v[0]), set(&["item", "present"]), "{}", r.ctx());
    let r = seen_io(
        d.path(),
        ["dedup", "--raw-keys", "-f", "f.seen"],
        b"bob\n9,bob\n9,bob\n",
    );
    r.code(0).stdout(b"9,bob\n").stderr_has("--raw-keys");
    // --raw-keys on a new filter records whole-record keys.
    seen_io(
        d.path(),
        ["dedup", "-n", "10", "--raw-keys", "-f", "r.seen"],
        b"a,1\nb,1\n",
    )
    .ok()
    .stdout(b"a,1\nb,1\n");
    assert_eq!(
        stats_json_quiet(d.path(), "r.seen")["key_flags"],
        "--raw-keys"
    );
}

// ---------------------------------------------------------------------------
// JSON outputs
// ---------------------------------------------------------------------------

#[test]
fn dedup_summary_json_members() {
    let d = tmp();
    let data = b"a,1\nb,1\nc\nd,2\nhttp://x.com/,9\nHTTP://X.COM,9\n";
    let base: Vec<&str> = SUMMARY.iter().copied().chain(["lines_written"]).collect();
    for (flags, extra, keys) in [
        (&[][..], &[][..], "whole record"),
        (
            &["-k", "2", "-t", ","][..],
            &["missing_field"][..],
            "field 2 (','-separated)",
        ),
        (
            &["--url"][..],
            &["not_url"][..],
            "whole record, canonical URL",
        ),
        (
            &["-k", "1", "-t", ",", "--url"][..],
            &["missing_field", "not_url"][..],
            "field 1 (','-separated), canonical URL",
        ),
        (
            &["--trim", "-i"][..],
            &[][..],
            "whole record, trimmed, case-folded",
        ),
    ] {
        let mut args = vec!["--summary", "--json"];
        args.extend_from_slice(flags);
        let r = dedup(d.path(), &args, data);
        let s = r.stderr_json();
        check_summary(&s);
        let want: Vec<&str> = base.iter().chain(extra).copied().collect();
        assert_eq!(members(&s), set(&want), "{flags:?}: {s}");
        assert_eq!(s["keys"], keys, "{s}");
        assert_eq!(s["lines_read"], 6, "{s}");
        assert_eq!(
            s["lines_written"].as_u64().unwrap(),
            r.lines().len() as u64,
            "{s}"
        );
        assert_eq!(s["new"], s["lines_written"], "{s}");
    }
    // The counts for -k 2 -t ,: `c` has no field 2; a, c, d, http are new.
    let s = dedup(
        d.path(),
        &["--summary", "--json", "-k", "2", "-t", ","],
        data,
    )
    .stderr_json();
    assert_eq!(
        (&s["new"], &s["duplicates"], &s["missing_field"]),
        (&4.into(), &2.into(), &1.into()),
        "{s}"
    );
    // --url on whole records: 4 non-URLs; the two URLs differ (one has the
    // path `/,9`, the other the host `x.com,9`).
    let s = dedup(d.path(), &["--summary", "--json", "--url"], data).stderr_json();
    assert_eq!(
        (&s["new"], &s["duplicates"], &s["not_url"]),
        (&6.into(), &0.into(), &4.into()),
        "{s}"
    );
    // --url on field 1: the same 4 non-URLs; the two URLs collide.
    let s = dedup(
        d.path(),
        &["--summary", "--json", "--url", "-k", "1", "-t", ","],
        data,
    )
    .stderr_json();
    assert_eq!(
        (
            &s["new"],
            &s["duplicates"],
            &s["not_url"],
            &s["missing_field"]
        ),
        (&5.into(), &1.into(), &4.into(), &0.into()),
        "{s}"
    );
    // --repeated: lines_written counts the repeats printed.
    let r = dedup(
        d.path(),
        &["--summary", "--json", "-D", "-k", "2", "-t", ","],
        data,
    );
    r.stdout(b"b,1\nHTTP://X.COM,9\n");
    assert_eq!(r.stderr_json()["lines_written"], 2);
    // With -f on an existing filter: the same members, and the commit
    // windows (one, for 3 lines).
    let d = people_filter();
    let r = seen_io(
        d.path(),
        ["dedup", "-f", "f.seen", "--summary", "--json"],
        b"x,bob\ny,zed\nw\n",
    );
    r.code(0).stdout(b"y,zed\n");
    let s = r.stderr_json();
    check_summary(&s);
    let windows = ["missing_field", "commit_windows", "held_windows"];
    let want: Vec<&str> = base.iter().copied().chain(windows).collect();
    assert_eq!(members(&s), set(&want), "{s}");
    assert_eq!(s["missing_field"], 1, "{s}");
    assert_eq!(s["commit_windows"], 1, "{s}");
    assert_eq!(s["keys"], "field 2 (','-separated)", "{s}");
}

#[test]
fn build_summary_json_members() {
    let d = tmp();
    write(&d, "p.csv", PEOPLE);
    for (flags, extra) in [
        (&[][..], &[][..]),
        (&["-k", "2", "-t", ","][..], &["missing_field"][..]),
        (&["--url"][..], &["not_url"][..]),
    ] {
        let mut args = vec!["build", "--force", "-o", "b.seen", "--summary", "--json"];
        args.extend_from_slice(flags);
        args.push("p.csv");
        let r = seen(d.path(), &args);
        r.code(0).stdout(b"");
        let s = r.stderr_json();
        check_summary(&s);
        let want: Vec<&str> = SUMMARY.iter().chain(extra).copied().collect();
        assert_eq!(members(&s), set(&want), "{flags:?}: {s}");
        assert!(s.get("lines_written").is_none(), "{s}");
        assert_eq!(s["lines_read"], 5, "{s}");
    }
    let r = seen(
        d.path(),
        [
            "build",
            "--force",
            "-o",
            "b.seen",
            "--summary",
            "--json",
            "-k",
            "2",
            "-t",
            ",",
            "p.csv",
        ],
    );
    let s = r.stderr_json();
    assert_eq!(
        (&s["new"], &s["duplicates"], &s["missing_field"]),
        (&4.into(), &1.into(), &1.into()),
        "{s}"
    );
    // --add: the recorded keys, counted against what is already there.
    write(&d, "q.csv", b"6,alice\n7,zed\n8\n");
    let r = seen(
        d.path(),
        [
            "build",
            "--add",
            "-o",
            "b.seen",
            "--summary",
            "--json",
            "q.csv",
        ],
    );
    let s = r.stderr_json();
    check_summary(&s);
    assert_eq!(
        (&s["new"], &s["duplicates"], &s["missing_field"]),
        (&1.into(), &2.into(), &1.into()),
        "{s}"
    );
    assert_eq!(s["keys"], "field 2 (','-separated)", "{s}");
}

#[test]
fn query_json_objects() {
    let d = people_filter();
    // Items on the command line, in order, one object each. They are keys
    // (issue 21): with field selection only, nothing changes them, so there
    // is no key member.
    let r = seen(
        d.path(),
        ["query", "--json", "f.seen", "alice", "zed", "9,alice"],
    );
    r.ok();
    let v = r.stdout_json_lines();
    assert_eq!(v.len(), 3, "{}", r.ctx());
    for o in &v {
        assert_eq!(members(o), set(&["item", "present"]), "{o}");
    }
    let answers: Vec<_> = v.iter().map(|o| (&o["item"], &o["present"])).collect();
    assert_eq!(
        answers,
        [
            (&"alice".into(), &true.into()),
            (&"zed".into(), &false.into()),
            (&"9,alice".into(), &false.into())
        ]
    );
    // Records read are keyed by field 2; `9` has none (the empty key, in
    // the filter through the record `4`).
    let r = seen_io(
        d.path(),
        ["query", "--json", "f.seen"],
        b"9,alice\n9,zed\n9\n",
    );
    r.code(0).stderr_has("1 of 3 records had no field 2");
    let v = r.stdout_json_lines();
    for o in &v {
        assert_eq!(members(o), set(&["item", "key", "present"]), "{o}");
    }
    assert_eq!(
        (&v[0]["item"], &v[0]["key"], &v[0]["present"]),
        (&"9,alice".into(), &"alice".into(), &true.into())
    );
    assert_eq!(
        (&v[1]["item"], &v[1]["key"], &v[1]["present"]),
        (&"9,zed".into(), &"zed".into(), &false.into())
    );
    assert_eq!(
        (&v[2]["item"], &v[2]["key"], &v[2]["present"]),
        (&"9".into(), &"".into(), &true.into())
    );
    // Items from standard input, the last one without newline; a non-UTF-8 one.
    let r = seen_io(
        d.path(),
        ["query", "--json", "f.seen"],
        b"x,bob\ny,\xffzed\xfe\nz,carol",
    );
    r.ok();
    let v = r.stdout_json_lines();
    assert_eq!(v.len(), 3, "{}", r.ctx());
    assert_eq!(v[0]["item"], "x,bob");
    assert_eq!(v[0]["present"], true);
    assert_eq!(
        members(&v[1]),
        set(&["item", "item_hex", "key", "present"]),
        "{}",
        v[1]
    );
    assert_eq!(v[1]["item"], "y,\u{fffd}zed\u{fffd}");
    assert_eq!(v[1]["item_hex"], "792cff7a6564fe");
    assert_eq!(v[1]["key"], "\u{fffd}zed\u{fffd}");
    assert_eq!(v[1]["present"], false);
    assert_eq!(members(&v[2]), set(&["item", "key", "present"]));
    assert_eq!(v[2]["item"], "z,carol");
    assert_eq!(v[2]["present"], true);
    // -z: records may hold newlines.
    let r = seen_io(
        d.path(),
        ["query", "-z", "--json", "f.seen"],
        b"a,al\nice\0b,bob\0",
    );
    r.ok();
    let v = r.stdout_json_lines();
    assert_eq!(v.len(), 2, "{}", r.ctx());
    assert_eq!(v[0]["item"], "a,al\nice");
    assert_eq!(v[0]["key"], "al\nice");
    assert_eq!(v[1]["item"], "b,bob");
    assert_eq!(v[1]["present"], true);
}

#[test]
fn query_json_without_key_options_has_no_key() {
    let d = tmp();
    write(&d, "w.txt", b"a\n\xff\n");
    seen(d.path(), ["build", "-o", "r.seen", "w.txt"]).ok();
    let r = seen_io(d.path(), ["query", "--json", "r.seen"], b"a\nb\n\xff\n");
    r.ok();
    let v = r.stdout_json_lines();
    assert_eq!(v.len(), 3);
    assert_eq!(members(&v[0]), set(&["item", "present"]));
    assert_eq!(
        (&v[0]["item"], &v[0]["present"]),
        (&"a".into(), &true.into())
    );
    assert_eq!(members(&v[1]), set(&["item", "present"]));
    assert_eq!(
        (&v[1]["item"], &v[1]["present"]),
        (&"b".into(), &false.into())
    );
    assert_eq!(members(&v[2]), set(&["item", "item_hex", "present"]));
    assert_eq!(
        (&v[2]["item"], &v[2]["item_hex"], &v[2]["present"]),
        (&"\u{fffd}".into(), &"ff".into(), &true.into())
    );
    // A key flag adds the key (and a warning).
    let r = seen(d.path(), ["query", "--json", "--trim", "r.seen", " a "]);
    r.code(0).stderr_has("--trim");
    let v = r.stdout_json_lines();
    assert_eq!(members(&v[0]), set(&["item", "key", "present"]));
    assert_eq!(
        (&v[0]["key"], &v[0]["present"]),
        (&"a".into(), &true.into())
    );
}

#[test]
fn query_json_exit_status_follows_presence() {
    let d = people_filter();
    let cases: [(&[&str], i32); 5] = [
        (&["1,alice"], 0),
        (&["1,zed"], 1),
        (&["1,zed", "2,yan"], 1),
        (&["1,zed", "2,bob"], 0),
        (&["1,bob", "2,zed"], 0),
    ];
    for (items, code) in cases {
        // On the command line, the keys (field 2) of the records.
        let mut args = vec!["query", "--json", "f.seen"];
        args.extend(items.iter().map(|i| i.split_once(',').unwrap().1));
        let r = seen(d.path(), &args);
        r.code(code);
        // Every item is reported, present or not.
        assert_eq!(r.stdout_json_lines().len(), items.len(), "{}", r.ctx());
        let input = text(items);
        let r = seen_io(d.path(), ["query", "--json", "f.seen"], &input);
        r.code(code);
        assert_eq!(r.stdout_json_lines().len(), items.len(), "{}", r.ctx());
    }
    seen(
        d.path(),
        ["query", "--json", "--all", "f.seen", "bob", "zed"],
    )
    .code(1);
    seen(
        d.path(),
        ["query", "--json", "--all", "f.seen", "bob", "carol"],
    )
    .code(0);
    // No items at all: nothing present.
    seen(d.path(), ["query", "--json", "f.seen"])
        .code(1)
        .stdout(b"");
}

#[test]
fn json_flag_misuse_is_a_usage_error() {
    let d = people_filter();
    seen_io(d.path(), ["dedup", "-n", "10", "--json"], b"a\n")
        .fails("--summary")
        .no_stdout();
    seen_io(d.path(), ["build", "-o", "j.seen", "--json"], b"a\n")
        .fails("--summary")
        .no_stdout();
    assert!(!d.path().join("j.seen").exists());
    for flag in ["-c", "--count", "-q", "--quiet", "-v", "--invert-match"] {
        seen(d.path(), ["query", "--json", flag, "f.seen", "1,alice"])
            .fails("--json")
            .no_stdout();
    }
    // `--summary` without --json prints a table, not JSON.
    let r = dedup(d.path(), &["--summary", "-k", "2", "-t", ","], PEOPLE);
    r.stderr_has("no key field")
        .stderr_has("field 2 (','-separated)");
    assert!(serde_json::from_str::<Value>(r.stderr.trim()).is_err());
}

#[test]
fn field_trim_and_case_keys_match_a_reference() {
    // `-k 2 -t , --trim -i` against a HashSet of trimmed, lower-cased second
    // fields, on generated records with Unicode, padding and CRLF.
    let d = tmp();
    let mut rng = Rng(0x1CA5E);
    let words = ["Straße", "ÉCOLE", "école", "Ωmega", "ωMEGA", "abc", "ABC"];
    let mut data = Vec::new();
    for i in 0..3000 {
        let w = words[rng.below(words.len() as u64) as usize];
        let pad = [" ", "", "\t", ""][rng.below(4) as usize];
        let eol = if rng.below(3) == 0 { "\r\n" } else { "\n" };
        data.extend_from_slice(format!("{i},{pad}{w}{pad}{eol}").as_bytes());
    }
    let r = dedup(d.path(), &["-k", "2", "-t", ",", "--trim", "-i"], &data);
    r.ok();
    let mut seen_keys = HashSet::new();
    let mut expected = Vec::new();
    for line in data.split_inclusive(|&b| b == b'\n') {
        let s = std::str::from_utf8(line).unwrap();
        let key = s.split(',').nth(1).unwrap().trim().to_lowercase();
        if seen_keys.insert(key) {
            expected.extend_from_slice(line);
        }
    }
    r.stdout(&expected);
    assert_eq!(seen_keys.len(), 4, "straße, école, ωmega, abc");
}

/// The keys documented in docs/JSON.md (`| `key` |` rows under each `## `
/// heading), by heading.
fn documented_json_keys() -> Vec<(String, BTreeSet<String>)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/JSON.md"))
        .unwrap();
    let mut sections: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            sections.push((h.to_owned(), BTreeSet::new()));
        } else if line.starts_with("| `")
            && let Some((_, keys)) = sections.last_mut()
        {
            keys.insert(line.split('`').nth(1).unwrap().to_owned());
        }
    }
    sections
}

/// Every key `--summary --json` and `query --json` can print is documented in
/// docs/JSON.md, and every documented key is printed when it applies.
#[test]
fn json_outputs_match_their_documented_schemas() {
    let sections = documented_json_keys();
    let doc = |prefix: &str| -> BTreeSet<String> {
        sections
            .iter()
            .find(|(h, _)| h.starts_with(prefix))
            .unwrap_or_else(|| panic!("no section `{prefix}` in docs/JSON.md"))
            .1
            .clone()
    };
    let d = tmp();
    let data = text(&["http://A.com/x,1", "b", "http://a.com/x#y,2", "c,3"]);
    // dedup with every optional member: -k (missing_field), --url (not_url),
    // --dups-out (dups_written) and -f (commit_windows, held_windows).
    let r = seen_io(
        d.path(),
        [
            "dedup",
            "-n",
            "1k",
            "-f",
            "d.seen",
            "-k",
            "1",
            "-t",
            ",",
            "--url",
            "--dups-out",
            "dups.txt",
            "--summary",
            "--json",
        ],
        &data,
    );
    r.code(0);
    let summary = doc("`seen dedup --summary --json`");
    assert_eq!(members(&r.stderr_json()), summary, "dedup summary vs docs");
    // build: everything but lines_written.
    write(&d, "in.txt", &data);
    let r = seen(
        d.path(),
        [
            "build",
            "-k",
            "1",
            "-t",
            ",",
            "--url",
            "--summary",
            "--json",
            "-o",
            "f.seen",
            "in.txt",
        ],
    );
    r.code(0);
    let mut built = summary.clone();
    for dedup_only in [
        "lines_written",
        "dups_written",
        "commit_windows",
        "held_windows",
    ] {
        built.remove(dedup_only);
    }
    assert_eq!(members(&r.stderr_json()), built, "build summary vs docs");
    // query: a non-UTF-8 item (item_hex) through key options (key).
    write(&d, "items.txt", b"http://a.com/x,9\n\xff\n");
    let r = seen(d.path(), ["query", "--json", "f.seen", "-f", "items.txt"]);
    r.ok();
    let all: BTreeSet<String> = r.stdout_json_lines().iter().flat_map(members).collect();
    assert_eq!(all, doc("`seen query --json`"), "query --json vs docs");
}
