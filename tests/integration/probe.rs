//! `seen stats --probe FILE` (issue 24): the false-positive rate measured on
//! lines known never to have been inserted, with its 95 % Wilson interval,
//! next to the estimate; `--max-fpp` then compares the measured rate.
//!
//! Every sample is drawn from a fixed seed, with a tag of its own (`in-`,
//! `truth-`, `probe3-`), so no two samples share a line and every run sees
//! the same lines, counts and intervals.

use crate::common::{Rng, command, seen, seen_io, stderr, tmp, write};
use serde_json::Value;
use tempfile::TempDir;

/// `n` random lines `TAG-<16 hex digits>` from `seed`.
fn sample(tag: &str, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n * (tag.len() + 18));
    for _ in 0..n {
        out.extend_from_slice(format!("{tag}-{:016x}\n", rng.next()).as_bytes());
    }
    out
}

/// Lines inserted into the test filter.
const INSERTED: usize = 20_000;

/// `f.seen` in `d`: a fixed filter for 20k lines at 1 %, the 20k lines of
/// `in.txt` inserted (so about at capacity, where the rate is near 1 %).
fn filter(d: &TempDir) -> Vec<u8> {
    let data = sample("in", INSERTED, 1);
    write(d, "in.txt", &data);
    seen(
        d.path(),
        [
            "build", "--fixed", "-n", "20k", "-p", "0.01", "-o", "f.seen", "in.txt",
        ],
    )
    .ok();
    data
}

/// What `seen query -c --file FILE FILTER` counts present.
fn query_count(d: &TempDir, file: &str, filter: &str) -> u64 {
    let r = seen(d.path(), ["query", "-c", "--file", file, filter]);
    assert!(r.code == 0 || r.code == 1, "{}", r.ctx());
    r.stdout_str().trim().parse().unwrap()
}

/// `seen stats --json --probe FILE FILTER`: exit 0, and its object.
fn probe_json(d: &TempDir, file: &str, filter: &str) -> Value {
    let r = seen(d.path(), ["stats", "--json", "--probe", file, filter]);
    r.code(0);
    r.stdout_json()
}

/// The 95 % Wilson score interval, computed here independently of `seen`.
fn wilson(x: u64, n: u64) -> (f64, f64) {
    let (x, n) = (x as f64, n as f64);
    let z = 1.959_963_984_540_054_f64;
    let c = (x + z * z / 2.0) / (n + z * z);
    let h = z / (n + z * z) * (x * (n - x) / n + z * z / 4.0).sqrt();
    ((c - h).max(0.0), (c + h).min(1.0))
}

/// The fields of a `probe` object: `(lookups, present, measured, low, high)`,
/// checked against each other and the interval computed here.
fn fields(p: &Value) -> (u64, u64, f64, f64, f64) {
    let n = p["lookups"].as_u64().unwrap();
    let x = p["present"].as_u64().unwrap();
    let m = p["measured_fpp"].as_f64().unwrap();
    let (lo, hi) = (
        p["ci_low"].as_f64().unwrap(),
        p["ci_high"].as_f64().unwrap(),
    );
    assert!(n > 0, "{p}");
    assert!((m - x as f64 / n as f64).abs() <= 1e-15, "{p}");
    let (wl, wh) = wilson(x, n);
    assert!(
        (lo - wl).abs() <= 1e-12 && (hi - wh).abs() <= 1e-12,
        "{p}: want [{wl}, {wh}]"
    );
    assert!(lo <= m && m <= hi, "{p}");
    (n, x, m, lo, hi)
}

/// The seeded simulation: the "true" rate of the filter is the share of a
/// million absent lines `seen query -c` finds present (±1.3 % relative at
/// ~0.6 %); the 95 % interval `stats --probe` gives from a separate 20k-line
/// sample contains it, and so do at least 8 of 10 such samples (a 95 %
/// interval misses about one in twenty: 8 or more of 10 hold it with
/// probability 0.99). Each interval is checked to be exactly the Wilson one
/// (`fields`), so it holds the rate by being right, not by being wide.
#[test]
fn interval_contains_the_true_rate_in_a_seeded_simulation() {
    let d = tmp();
    filter(&d);
    const TRUTH: u64 = 1_000_000;
    write(&d, "truth.txt", &sample("truth", TRUTH as usize, 2));
    let truth = query_count(&d, "truth.txt", "f.seen") as f64 / TRUTH as f64;
    // A filter at its capacity, near its 1 % target: 20k probes find ~100.
    assert!((0.002..0.02).contains(&truth), "true rate {truth}");
    let mut held = 0;
    for i in 0..10u64 {
        let name = format!("probe{i}.txt");
        write(&d, &name, &sample(&format!("probe{i}"), 20_000, 100 + i));
        let s = probe_json(&d, &name, "f.seen");
        let p = &s["probe"];
        let (n, x, m, lo, hi) = fields(p);
        assert_eq!(n, 20_000, "{p}");
        assert_eq!(p["file"], name.as_str());
        // The very lookups `query` makes.
        assert_eq!(x, query_count(&d, &name, "f.seen"), "{p}");
        let contains = lo <= truth && truth <= hi;
        eprintln!("probe {i}: {x} of {n}: {m:.3e} [{lo:.3e}, {hi:.3e}] truth {truth:.3e}");
        if i == 0 {
            assert!(contains, "the interval misses the true rate {truth}: {p}");
        }
        held += u32::from(contains);
    }
    assert!(
        held >= 8,
        "only {held} of 10 intervals hold the true rate {truth}"
    );
}

/// The `probe` object: every field, the same numbers from a file and from
/// standard input (`-`), only the name differs; the table shows them in a
/// `measured fpp` row under the estimate.
#[test]
fn json_and_table_report_the_probe() {
    let d = tmp();
    let inserted = filter(&d);
    // 40 inserted lines among 20k absent ones: at least 40 present.
    let mut probe = sample("absent", 20_000, 7);
    probe.extend(inserted.split_inclusive(|&b| b == b'\n').take(40).flatten());
    write(&d, "probe.txt", &probe);
    let s = probe_json(&d, "probe.txt", "f.seen");
    let p = &s["probe"];
    let (n, x, _, _, _) = fields(p);
    assert_eq!(n, 20_040);
    assert!(x >= 40, "{p}");
    assert_eq!(x, query_count(&d, "probe.txt", "f.seen"));
    assert_eq!(p["file"], "probe.txt");
    let mut keys: Vec<&String> = p.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "ci_high",
            "ci_low",
            "file",
            "lookups",
            "measured_fpp",
            "present"
        ]
    );
    // The rest of the object is what `stats --json` prints without --probe.
    let mut without = seen(d.path(), ["stats", "--json", "f.seen"]).stdout_json();
    without["probe"] = p.clone();
    assert_eq!(s, without);

    let r = seen_io(
        d.path(),
        ["stats", "--json", "--probe", "-", "f.seen"],
        &probe,
    );
    r.code(0);
    let mut from_stdin = r.stdout_json();
    assert_eq!(from_stdin["probe"]["file"], "-");
    from_stdin["probe"]["file"] = "probe.txt".into();
    assert_eq!(from_stdin, s);

    let r = seen(d.path(), ["stats", "--probe", "probe.txt", "f.seen"]);
    r.ok();
    let lines = r.lines();
    let at = lines
        .iter()
        .position(|l| l.starts_with("measured fpp "))
        .unwrap_or_else(|| panic!("no measured fpp row\n{}", r.ctx()));
    assert!(lines[at - 1].starts_with("est. fpp now "), "{}", r.ctx());
    let (lo, hi) = wilson(x, n);
    let want = format!(
        "measured fpp     {:.2e} (95% CI {lo:.2e} to {hi:.2e}, {x} of 20,040 probes)",
        x as f64 / n as f64
    );
    assert_eq!(lines[at], want);
    // Without --probe, no such row.
    let r = seen(d.path(), ["stats", "f.seen"]);
    assert!(!r.stdout_str().contains("measured"), "{}", r.ctx());
}

/// The probe's lines are looked up as `query` looks them up: the filter's
/// recorded key options apply (here field 2 of comma-separated records).
#[test]
fn probe_applies_the_filters_key_options() {
    let d = tmp();
    let mut rng = Rng(5);
    let keys: Vec<String> = (0..2_000).map(|_| format!("{:x}", rng.next())).collect();
    let records: String = keys.iter().map(|k| format!("a,{k},z\n")).collect();
    write(&d, "in.csv", records.as_bytes());
    seen(
        d.path(),
        ["build", "-k", "2", "-t", ",", "-o", "k.seen", "in.csv"],
    )
    .ok();
    // Other records, the same keys in field 2: all present.
    let probe: String = keys.iter().map(|k| format!("other,{k}\n")).collect();
    write(&d, "probe.csv", probe.as_bytes());
    let s = probe_json(&d, "probe.csv", "k.seen");
    let (n, x, m, lo, hi) = fields(&s["probe"]);
    assert_eq!((n, x, m, hi), (2_000, 2_000, 1.0, 1.0));
    assert_eq!(x, query_count(&d, "probe.csv", "k.seen"));
    assert!((lo - 2_000.0 / (2_000.0 + 1.96f64.powi(2))).abs() < 1e-4);
}

/// `--max-fpp P` with `--probe` compares the measured rate, not the
/// estimate, both ways: a probe of inserted lines (measured 1) trips it
/// where the estimate (~0.6 %) does not, naming the measured rate (and a
/// warning says inserted lines count as false positives); a probe of lines
/// `query -v` found absent (measured 0) passes where the estimate trips it.
#[test]
fn max_fpp_compares_the_measured_rate() {
    let d = tmp();
    let inserted = filter(&d);
    let est = seen(d.path(), ["stats", "--json", "f.seen"]).stdout_json()["estimated_fpp"]
        .as_f64()
        .unwrap();
    assert!(est > 0.002 && est < 0.01, "estimated {est}");

    write(&d, "seen.txt", &inserted[..inserted.len() / 4]);
    seen(d.path(), ["stats", "--max-fpp", "0.5", "f.seen"]).ok();
    let r = seen(
        d.path(),
        ["stats", "--max-fpp", "0.5", "--probe", "seen.txt", "f.seen"],
    );
    r.code(1)
        .stderr_has(
            "measured false-positive rate 1.000e0 (5,000 of 5,000 lines of seen.txt present",
        )
        .stderr_has("is above --max-fpp 5e-1")
        .stderr_has("unless some lines of seen.txt were inserted");
    assert!(!r.stderr.contains("estimated"), "{}", r.ctx());
    // The statistics are printed either way.
    assert!(r.stdout_str().contains("measured fpp     1.00e0 (95% CI"));

    write(&d, "absent.txt", &sample("absent", 5_000, 9));
    let clean = seen(d.path(), ["query", "-v", "--file", "absent.txt", "f.seen"]);
    clean.ok();
    write(&d, "clean.txt", &clean.stdout);
    let max = format!("{:e}", est / 2.0);
    seen(d.path(), ["stats", "--max-fpp", &max, "f.seen"])
        .code(1)
        .stderr_has("estimated false-positive rate");
    let r = seen(
        d.path(),
        [
            "stats",
            "--json",
            "--max-fpp",
            &max,
            "--probe",
            "clean.txt",
            "f.seen",
        ],
    );
    r.ok();
    let (n, x, m, lo, hi) = fields(&r.stdout_json()["probe"]);
    assert!(n > 4_900, "{n}");
    assert_eq!((x, m, lo), (0, 0.0, 0.0));
    assert!(hi > 0.0 && hi < 1e-3, "{hi}");
}

/// A probe without a line is an error that says what to give (exit 2,
/// nothing on stdout), from a file or standard input; a probe that is a
/// filter file (or standard input redirected from one) is refused as every
/// input of lines is; a missing one is named.
#[test]
fn empty_missing_and_filter_probes_are_errors() {
    let d = tmp();
    filter(&d);
    write(&d, "empty.txt", b"");
    for json in [false, true] {
        let mut args = vec!["stats", "--probe", "empty.txt", "f.seen"];
        if json {
            args.push("--json");
        }
        let r = seen(d.path(), &args);
        r.error("the probe (empty.txt) has no lines")
            .stderr_has("give --probe a file of lines known never to have been inserted")
            .no_stdout();
    }
    seen_io(d.path(), ["stats", "--probe", "-", "f.seen"], b"")
        .error("the probe (standard input) has no lines")
        .no_stdout();
    seen(d.path(), ["stats", "--probe", "f.seen", "f.seen"])
        .error("f.seen is a seen filter, not a file of lines")
        .no_stdout();
    // `--probe - < f.seen`: standard input is the filter file (as for every
    // input of lines, a pipe is not looked into).
    let out = command(d.path())
        .args(["stats", "--probe", "-", "f.seen"])
        .stdin(std::fs::File::open(d.path().join("f.seen")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("standard input is a seen filter, not a file of lines"),
        "{}",
        stderr(&out)
    );
    seen(d.path(), ["stats", "--probe", "nowhere.txt", "f.seen"])
        .error("nowhere.txt")
        .no_stdout();
}

/// A filter in Redis is probed as the same filter in a file: `f.seen`
/// copied to the server gives the same `probe` object, and `query -c` on
/// the server agrees.
#[test]
fn a_redis_filter_is_probed_as_a_file() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let loc = format!("redis://{addr}/{}", crate::common::unique_name("probe"));
    let d = tmp();
    filter(&d);
    seen(d.path(), ["copy", "f.seen", &loc]).ok();
    write(&d, "probe.txt", &sample("probe", 20_000, 11));
    let file = probe_json(&d, "probe.txt", "f.seen");
    let redis = probe_json(&d, "probe.txt", &loc);
    assert_eq!(redis["file"], loc.as_str());
    assert_eq!(redis["probe"], file["probe"]);
    let (_, x, ..) = fields(&redis["probe"]);
    assert!(x > 0, "{redis}");
    assert_eq!(x, query_count(&d, "probe.txt", &loc));
    // --max-fpp trips on the measured rate there too.
    seen(
        d.path(),
        ["stats", "--max-fpp", "1e-9", "--probe", "probe.txt", &loc],
    )
    .code(1)
    .stderr_has("measured false-positive rate");
}
