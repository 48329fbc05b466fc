//! Growing (layered) filters and the statistics `seen` reports about a filter:
//! compound false-positive rate after growth, estimates against measured values
//! at several fill levels, the run summary's expected false positives, and the
//! command-line side (persistent growth across runs, --fixed warnings,
//! --summary, stats --max-fpp/--max-fill, the JSON schema against its document,
//! `seen plan`). Fixed seeds throughout; nothing is timed.

use seen::file::MemFilter;
use seen::filter::sizing::{Growth, Spec, expected_false_positives, plan, plan_with_spread};
use seen::filter::{Scheme, occupancy};
use seen::hash::{DEFAULT_SEED, Hash128, hash};
use seen::pipeline::Store;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

use crate::common::{self, Rng, Run, stats_json, tmp, write};

fn key(i: u64) -> Hash128 {
    hash(&i.to_le_bytes(), DEFAULT_SEED)
}

/// Inserts keys `range` in batches of `batch`; returns how many were judged
/// already present (for distinct keys: false positives).
fn insert(f: &mut MemFilter, range: std::ops::Range<u64>, batch: usize) -> u64 {
    let keys: Vec<Hash128> = range.map(key).collect();
    let mut v = Vec::new();
    let mut seen = 0;
    for b in keys.chunks(batch) {
        f.insert_batch(b, &mut v).unwrap();
        assert_eq!(v.len(), b.len());
        seen += v.iter().filter(|&&s| s).count() as u64;
    }
    seen
}

/// Queries keys `range` (never inserted); returns how many are reported present.
fn false_positives(f: &mut MemFilter, range: std::ops::Range<u64>) -> u64 {
    let keys: Vec<Hash128> = range.map(key).collect();
    let mut v = Vec::new();
    let mut n = 0;
    for b in keys.chunks(1 << 16) {
        f.contains_batch(b, &mut v).unwrap();
        n += v.iter().filter(|&&s| s).count() as u64;
    }
    n
}

fn assert_no_false_negatives(f: &mut MemFilter, range: std::ops::Range<u64>) {
    let keys: Vec<Hash128> = range.clone().map(key).collect();
    let mut v = Vec::new();
    f.contains_batch(&keys, &mut v).unwrap();
    if let Some(i) = v.iter().position(|&p| !p) {
        panic!("false negative for key {}", range.start + i as u64);
    }
}

fn growing(c0: u64, p: f64, factor: u32) -> MemFilter {
    MemFilter::with_spec(
        &Spec {
            capacity: c0,
            target_fpp: p,
            growth: Some(Growth::new(factor)),
            window: None,
        },
        DEFAULT_SEED,
    )
    .unwrap()
}

/// False positives among `q` independent absent keys are ~Binomial(q, f): allow
/// four standard deviations over `f·q`.
fn under(measured: u64, f: f64, q: u64) -> bool {
    let mean = f * q as f64;
    measured as f64 <= mean + 4.0 * mean.sqrt() + 1.0
}

/// The compound false-positive rate of a grown filter stays under the target at
/// 10x and 100x its first capacity (the target), with no false negative.
#[test]
fn compound_fpp_after_growing_10x_and_100x_stays_under_target() {
    for (p, factor) in [(1e-2, 2), (1e-3, 2), (1e-2, 4)] {
        let c0 = 5_000;
        let mut f = growing(c0, p, factor);
        let q = 2_000_000;
        let mut inserted = 0;
        for times in [10, 100] {
            insert(&mut f, inserted..c0 * times, 10_000);
            inserted = c0 * times;
            assert_no_false_negatives(&mut f, 0..inserted);
            let fp = false_positives(&mut f, 1 << 40..(1 << 40) + q);
            let layers = f.header().layers.len();
            println!(
                "p {p} growth {factor}: {times}x -> {layers} layers, measured fpp {:.3e}",
                fp as f64 / q as f64
            );
            assert!(layers > 1, "did not grow");
            assert!(
                under(fp, p, q),
                "p {p} growth {factor} at {times}x: {fp} false positives in {q} ({layers} layers)"
            );
        }
    }
}

/// Where a layer ends depends only on the keys, not on how they were batched
/// (so output is the same for any chunk size or thread count).
#[test]
fn growth_points_do_not_depend_on_batch_size() {
    let run = |batch: usize| {
        let mut f = growing(300, 1e-3, 2);
        let keys: Vec<Hash128> = (0..20_000u64).map(|i| key(i % 7_000)).collect();
        let mut all = Vec::new();
        let mut v = Vec::new();
        for b in keys.chunks(batch) {
            f.insert_batch(b, &mut v).unwrap();
            all.extend_from_slice(&v);
        }
        let counts: Vec<u64> = f.header().layers.iter().map(|l| l.inserts).collect();
        (all, counts)
    };
    let want = run(20_000);
    assert!(want.1.len() > 3, "{:?}", want.1);
    // Every full layer holds exactly its capacity.
    let mut f = growing(300, 1e-3, 2);
    insert(&mut f, 0..7_000, 7_000);
    for l in &f.header().layers[..f.header().layers.len() - 1] {
        assert_eq!(l.inserts, l.capacity);
    }
    for batch in [1, 7, 299, 300, 301, 4096] {
        assert_eq!(run(batch), want, "batch {batch}");
    }
}

/// `stats`' estimates (distinct items from the bits, current false-positive
/// rate from the per-block occupancy) against measured values, from 1 % to
/// 200 % of capacity, for one and two blocks per key.
///
/// Items: always within 10 %. Rate: within 10 % wherever the measurement can
/// tell (at least 1,600 expected false positives among the queries, so four
/// standard deviations are under 10 %); below that the rate is too small to
/// measure with a few million queries (at 1 % full it is ~1e-9), and the
/// measured count must only be consistent with the estimate (within four
/// standard deviations).
#[test]
fn estimates_match_measurements_from_1_to_200_percent_full() {
    let q = 3_000_000u64;
    for (name, plan) in [
        (
            "x=1 p=0.1",
            plan_with_spread(50_000, 0.1, 1, Scheme::Scattered).unwrap(),
        ),
        (
            "x=2 p=0.01",
            plan_with_spread(50_000, 0.01, 2, Scheme::Scattered).unwrap(),
        ),
        (
            "sectored x=1 p=0.01",
            plan_with_spread(50_000, 0.01, 1, Scheme::Sectored).unwrap(),
        ),
        (
            "sectored x=3 p=0.01",
            plan_with_spread(50_000, 0.01, 3, Scheme::Sectored).unwrap(),
        ),
    ] {
        let mut f = MemFilter::new(&plan, DEFAULT_SEED).unwrap();
        let mut inserted = 0;
        let mut measured_some = 0;
        for pct in [1u64, 10, 50, 100, 150, 200] {
            let n = plan.capacity * pct / 100;
            insert(&mut f, inserted..n, 8192);
            inserted = n;
            let o = occupancy(f.layer_bits(0), &plan.layout);
            let err = (o.estimated_items - n as f64).abs() / n as f64;
            let fp = false_positives(&mut f, 1 << 40..(1 << 40) + q);
            let expected = o.current_fpp * q as f64;
            println!(
                "{name} {pct}%: items {n} est {:.0} ({:.1}%), fpp measured {:.3e} est {:.3e}",
                o.estimated_items,
                100.0 * err,
                fp as f64 / q as f64,
                o.current_fpp
            );
            assert!(
                err < 0.10,
                "{name} at {pct}%: estimated {} items, inserted {n}",
                o.estimated_items
            );
            if expected >= 1600.0 {
                measured_some += 1;
                let rel = (fp as f64 - expected).abs() / expected;
                assert!(
                    rel < 0.10,
                    "{name} at {pct}%: estimated rate {:.3e}, measured {:.3e}",
                    o.current_fpp,
                    fp as f64 / q as f64
                );
            } else {
                assert!(
                    under(fp, o.current_fpp, q),
                    "{name} at {pct}%: {fp} false positives, estimate {expected:.1}"
                );
            }
        }
        assert!(
            measured_some >= 3,
            "{name}: the rate was checked at too few fill levels"
        );
    }
}

/// The summary's expected false positives (integrated over the inserts, across
/// layers) match the false positives counted while inserting distinct keys.
#[test]
fn expected_false_positives_match_counted_ones() {
    let mut f = growing(20_000, 5e-2, 2);
    let n = 600_000;
    let counted = insert(&mut f, 0..n, 50_000);
    let spans: Vec<_> = f
        .header()
        .layers
        .iter()
        .map(|l| (l.layout, 0, l.inserts))
        .collect();
    let expected = expected_false_positives(&spans);
    println!("counted {counted}, expected {expected:.1}");
    assert!(expected > 1000.0, "{expected}");
    assert!(
        (counted as f64 - expected).abs() <= 0.1 * expected + 4.0 * expected.sqrt(),
        "counted {counted}, expected {expected:.1}"
    );
    // A fixed filter: the same integral over one layer.
    let p = plan(100_000, 0.05).unwrap();
    let mut f = MemFilter::new(&p, DEFAULT_SEED).unwrap();
    let counted = insert(&mut f, 0..100_000, 10_000);
    let expected = expected_false_positives(&[(p.layout, 0, f.inserts())]);
    assert!(
        (counted as f64 - expected).abs() <= 0.1 * expected + 4.0 * expected.sqrt(),
        "fixed: counted {counted}, expected {expected:.1}"
    );
}

// ---------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------

/// `seen ARGS` in `dir`; whatever its exit status, never a panic.
fn seen(dir: &Path, args: &[&str]) -> Run {
    let out = common::seen(dir, args);
    assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    out
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect()
}

/// A persistent filter fed by several `dedup -f` runs grows past its first
/// capacity; nothing recorded by an earlier run is ever printed again (no false
/// negatives), and new lines are printed minus a few false positives.
#[test]
fn persistent_filter_grows_across_runs_without_false_negatives() {
    let d = tmp();
    let mut rng = Rng(2026);
    let mut recorded: Vec<String> = Vec::new();
    let mut dropped = 0usize;
    let mut layers = Vec::new();
    for run in 0..6u64 {
        let fresh: Vec<String> = (run * 2_500..(run + 1) * 2_500)
            .map(|i| format!("https://example.org/{i}"))
            .collect();
        // Fresh lines (some twice) mixed with lines of earlier runs.
        let mut input = Vec::new();
        for (i, l) in fresh.iter().enumerate() {
            input.push(l.clone());
            if !recorded.is_empty() && i % 2 == 0 {
                input.push(recorded[rng.below(recorded.len() as u64) as usize].clone());
            }
            if i % 5 == 0 {
                input.push(l.clone());
            }
        }
        write(&d, "in.txt", (input.join("\n") + "\n").as_bytes());
        let args = [
            "dedup", "-n", "1000", "-p", "1e-4", "-f", "c.seen", "in.txt",
        ];
        let o = seen(d.path(), &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let out: Vec<String> = lines(&o.stdout)
            .iter()
            .map(|l| String::from_utf8(l.to_vec()).unwrap())
            .collect();
        let old: HashSet<&String> = recorded.iter().collect();
        assert!(
            out.iter().all(|l| !old.contains(l)),
            "run {run} printed a line recorded by an earlier run"
        );
        let printed: HashSet<&String> = out.iter().collect();
        assert_eq!(printed.len(), out.len(), "run {run} printed a line twice");
        dropped += fresh.iter().filter(|l| !printed.contains(l)).count();
        recorded.extend(fresh);
        // Every line recorded so far is in the filter.
        write(&d, "all.txt", (recorded.join("\n") + "\n").as_bytes());
        let o = seen(d.path(), &["query", "-c", "c.seen", "-f", "all.txt"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            recorded.len().to_string(),
            "run {run}: a recorded line is missing from the filter"
        );
        let s = stats_json(d.path(), "c.seen");
        layers.push(s["layers"].as_array().unwrap().len());
        assert!(s["estimated_fpp"].as_f64().unwrap() <= 1e-4, "{s}");
        assert!(s["headroom"].is_null(), "{s}");
    }
    // 15,000 lines at 1e-4: a false positive or two at most.
    assert!(dropped <= 5, "{dropped} new lines dropped");
    assert_eq!(layers.first(), Some(&2), "{layers:?}");
    assert!(layers.last().unwrap() >= &4, "{layers:?}");
    assert!(layers.windows(2).all(|w| w[0] <= w[1]), "{layers:?}");
}

/// `--fixed` never grows and warns once when its false-positive rate passes
/// the target and once more past 10 times it, at the same count whatever the
/// batching; the default grows and says nothing. (`-n 200 -p 0.01` is one
/// 4 KiB page: the rate passes 1 % near 2,200 lines, 10 % near 3,100.)
#[test]
fn fixed_filter_warns_past_its_target_and_ten_times_it() {
    let d = tmp();
    let input: String = (0..4000).map(|i| format!("line {i}\n")).collect();
    write(&d, "in.txt", input.as_bytes());
    let mut warnings = vec![];
    for chunk in ["1", "4194304"] {
        let o = common::seen_env(
            d.path(),
            &[("SEEN_CHUNK_BYTES", chunk)],
            ["dedup", "--fixed", "-n", "200", "-p", "0.01", "in.txt"],
            b"",
        );
        let err = &o.stderr;
        assert_eq!(o.code, 0, "{err}");
        assert_eq!(
            err.matches("has passed its target 1e-2").count(),
            1,
            "{err}"
        );
        assert_eq!(err.matches("has passed 10 times").count(), 1, "{err}");
        assert_eq!(err.lines().count(), 2, "{err}");
        warnings.push(err.clone());
    }
    assert_eq!(warnings[0], warnings[1]);
    let o = seen(d.path(), &["dedup", "-n", "200", "-p", "0.01", "in.txt"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // Under 1 % false positives, as the target says.
    assert!(lines(&o.stdout).len() > 3960, "{}", lines(&o.stdout).len());
    // --no-grow is the same flag; --growth and --fixed contradict each other.
    let o = seen(d.path(), &["dedup", "--no-grow", "-n", "10", "in.txt"]);
    assert!(o.stderr.contains("has passed 10 times"), "{}", o.stderr);
    let o = seen(d.path(), &["dedup", "--fixed", "--growth", "4", "in.txt"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--growth"), "{}", o.stderr);
    let o = seen(d.path(), &["dedup", "--growth", "1", "in.txt"]);
    assert_eq!(o.code, 2);
}

/// `--summary` on stderr: lines read, new, duplicates, written, expected false
/// positives; stdout is unchanged.
#[test]
fn summary_reports_the_run() {
    let d = tmp();
    let mut rng = Rng(5);
    let input: String = (0..3000)
        .map(|_| format!("k{}\n", rng.below(1000)))
        .collect();
    let distinct: HashSet<&str> = input.lines().collect();
    write(&d, "in.txt", input.as_bytes());
    let plain = seen(d.path(), &["dedup", "in.txt"]);
    let o = seen(d.path(), &["dedup", "--summary", "in.txt"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, plain.stdout);
    let field = |name: &str| -> String {
        o.stderr
            .lines()
            .find(|l| l.starts_with(&format!("seen: {name} ")))
            .unwrap_or_else(|| panic!("no {name}: {}", o.stderr))
            .trim_start_matches(&format!("seen: {name}"))
            .split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
    };
    let n = distinct.len();
    assert_eq!(field("lines read"), "3000");
    assert_eq!(field("new"), n.to_string());
    assert_eq!(field("duplicates"), (3000 - n).to_string());
    assert_eq!(field("lines written"), n.to_string());
    let fp: f64 = field("false positives").parse().unwrap();
    assert!((0.0..0.01).contains(&fp), "{fp}");
    // build --summary: no "lines written".
    let o = seen(d.path(), &["build", "--summary", "-o", "f.seen", "in.txt"]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.is_empty());
    assert!(o.stderr.contains("seen: new "), "{}", o.stderr);
    assert!(!o.stderr.contains("lines written"), "{}", o.stderr);
    // With a persistent filter the second run finds nothing new.
    seen(d.path(), &["dedup", "-f", "p.seen", "in.txt"]);
    let o = seen(d.path(), &["dedup", "--summary", "-f", "p.seen", "in.txt"]);
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("seen: new                           0"),
        "{}",
        o.stderr
    );
}

/// `stats --max-fpp` / `--max-fill` exit 1 when the filter is past the limit
/// (and still print the statistics), 0 when not, 2 for a bad limit.
#[test]
fn stats_limits_set_the_exit_status() {
    let d = tmp();
    let input: String = (0..20_000).map(|i| format!("{i}\n")).collect();
    write(&d, "in.txt", input.as_bytes());
    let o = seen(
        d.path(),
        &[
            "build", "--fixed", "-n", "5000", "-p", "0.01", "-o", "f.seen", "in.txt",
        ],
    );
    assert_eq!(o.code, 0);
    let s = stats_json(d.path(), "f.seen");
    let fpp = s["estimated_fpp"].as_f64().unwrap();
    let fill = s["fill_ratio"].as_f64().unwrap();
    assert!(fpp > 0.01, "{s}");
    let cases: [(&str, String, i32); 6] = [
        ("--max-fpp", format!("{:e}", fpp * 2.0), 0),
        ("--max-fpp", format!("{:e}", fpp / 2.0), 1),
        ("--max-fpp", "0.01".into(), 1),
        ("--max-fill", format!("{}", (fill + 0.01).min(1.0)), 0),
        ("--max-fill", format!("{}", fill - 0.01), 1),
        ("--max-fill", "1".into(), 0),
    ];
    for (flag, v, code) in cases {
        for json in [false, true] {
            let mut args = vec!["stats", flag, &v, "f.seen"];
            if json {
                args.insert(1, "--json");
            }
            let o = seen(d.path(), &args);
            assert_eq!(o.code, code, "{args:?}: {}", o.stderr);
            assert!(!o.stdout.is_empty(), "{args:?}");
            if code == 1 {
                assert!(o.stderr.contains(&format!("above {flag}")), "{}", o.stderr);
            }
        }
    }
    for (flag, v) in [("--max-fill", "2"), ("--max-fpp", "0"), ("--max-fpp", "x")] {
        let o = seen(d.path(), &["stats", flag, v, "f.seen"]);
        assert_eq!(o.code, 2, "{flag} {v}");
        assert!(o.stderr.contains(flag), "{}", o.stderr);
    }
}

/// Keys documented in docs/STATS.md (`| `key` |` rows, and the per-layer list)
/// are exactly the keys `stats --json` prints, for fixed and growing filters.
#[test]
fn stats_json_matches_its_documented_schema() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/STATS.md"))
        .unwrap();
    let mut top: HashSet<String> = HashSet::new();
    let mut layer: HashSet<String> = HashSet::new();
    let mut growth: HashSet<String> = HashSet::new();
    let mut probe: HashSet<String> = HashSet::new();
    let mut window: HashSet<String> = HashSet::new();
    let mut slice: HashSet<String> = HashSet::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').collect();
        let names: Vec<String> = cells[1]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect();
        let into = if names.iter().all(|n| n.starts_with("sets.")) {
            // The `sets` object of a Redis filter of fingerprint sets:
            // checked by `redis_sets::both_layouts_work_and_say_what_they_cannot`.
            continue;
        } else if names.iter().all(|n| n.starts_with("generations[].")) {
            // A Redis filter in generations: checked by
            // `redis_gens::a_growing_filter_is_awk_across_generations`.
            continue;
        } else if names.iter().all(|n| n.starts_with("layers[].")) {
            &mut layer
        } else if names.iter().all(|n| n.starts_with("growth.")) {
            &mut growth
        } else if names.iter().all(|n| n.starts_with("probe.")) {
            &mut probe
        } else if names.iter().all(|n| n.starts_with("window.live[].")) {
            &mut slice
        } else if names.iter().all(|n| n.starts_with("window.")) {
            &mut window
        } else {
            &mut top
        };
        for n in names {
            let n = n.rsplit('.').next().unwrap().to_string();
            into.insert(n);
        }
    }
    // Only a Redis filter of fingerprint sets has a `sets` object.
    assert!(top.remove("sets"), "docs/STATS.md documents `sets`");
    assert!(
        top.remove("generations"),
        "docs/STATS.md documents `generations`"
    );
    let d = tmp();
    write(&d, "in.txt", b"a\nb\nc\n");
    seen(
        d.path(),
        &["build", "--fixed", "-o", "fixed.seen", "in.txt"],
    );
    seen(d.path(), &["build", "-n", "1", "-o", "grow.seen", "in.txt"]);
    let keys = |v: &Value| -> HashSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    for f in ["fixed.seen", "grow.seen"] {
        let s = stats_json(d.path(), f);
        assert_eq!(
            keys(&s),
            top,
            "{f}: top-level keys differ from docs/STATS.md"
        );
        for l in s["layers"].as_array().unwrap() {
            assert_eq!(keys(l), layer, "{f}: layer keys differ from docs/STATS.md");
        }
        if f == "grow.seen" {
            assert_eq!(
                keys(&s["growth"]),
                growth,
                "growth keys differ from docs/STATS.md"
            );
            assert!(s["headroom"].is_null());
            assert!(s["layers"].as_array().unwrap().len() >= 2);
        } else {
            assert!(s["growth"].is_null());
            assert!(s["headroom"].as_f64().unwrap() > 0.0);
        }
        assert!(s["probe"].is_null(), "{f}: probe without --probe");
    }
    write(&d, "absent.txt", b"x\ny\n");
    let r = seen(
        d.path(),
        &["stats", "--json", "--probe", "absent.txt", "fixed.seen"],
    );
    r.code(0);
    let s = r.stdout_json();
    assert_eq!(keys(&s), top, "top-level keys differ from docs/STATS.md");
    assert_eq!(
        keys(&s["probe"]),
        probe,
        "probe keys differ from docs/STATS.md"
    );
    assert!(s["window"].is_null(), "a window without --window");
    // A filter with a window.
    seen(
        d.path(),
        &[
            "build",
            "--window",
            "1d",
            "-o",
            "w.seen",
            "in.txt",
            "--now=@1796083200",
        ],
    )
    .ok();
    let r = seen(
        d.path(),
        &["stats", "--json", "w.seen", "--now=@1796083200"],
    );
    r.ok();
    let s = r.stdout_json();
    assert_eq!(keys(&s), top, "top-level keys differ from docs/STATS.md");
    assert_eq!(
        keys(&s["window"]),
        window,
        "window keys differ from docs/STATS.md"
    );
    for sl in s["window"]["live"].as_array().unwrap() {
        assert_eq!(
            keys(sl),
            slice,
            "window.live[] keys differ from docs/STATS.md"
        );
    }
}

/// `seen plan` reproduces the seed tables for the classic layout, shows the
/// blocked layout it would use, and for a growing filter a row per layer with
/// the space against a fixed filter; it writes no file.
#[test]
fn plan_shows_layouts_and_reproduces_the_seed_tables() {
    let d = tmp();
    let text = |args: &[&str]| {
        let o = seen(d.path(), args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        String::from_utf8(o.stdout).unwrap()
    };
    let t = text(&["plan", "--fixed", "-n", "1M", "-p", "1%", "--classic"]);
    assert!(t.contains("9,585,059 bits"), "{t}");
    assert!(t.contains("k = 7,"), "{t}");
    let t = text(&["plan", "--fixed", "-n", "100M", "-p", "0.01", "--classic"]);
    assert!(t.contains("958,505,838 bits"), "{t}");
    let t = text(&["plan", "--fixed", "-n", "10M", "-p", "0.1%", "--classic"]);
    assert!(t.contains("143,775,876 bits"), "{t}");
    assert!(t.contains("k = 10,"), "{t}");
    let t = text(&["plan", "--fixed", "-n", "10M", "-p", "1e-6"]);
    assert!(
        t.contains("2 blocks/key, k = 8 bits per block, sectored bit positions"),
        "{t}"
    );
    let t = text(&["plan", "--fixed", "-n", "10M", "-p", "0.1"]);
    assert!(
        t.contains("1 block/key, k = 3 bits per block, scattered bit positions"),
        "{t}"
    );
    assert!(t.contains("expected fpp"), "{t}");
    let t = text(&["plan", "-n", "1M", "-p", "1e-3", "--layers", "5"]);
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(rows.len(), 5, "{t}");
    assert!(
        rows[4].contains("16,000,000") && rows[4].contains("31,000,000"),
        "{t}"
    );
    assert!(
        std::fs::read_dir(d.path()).unwrap().next().is_none(),
        "plan wrote a file"
    );
    let o = seen(d.path(), &["plan", "-p", "0"]);
    assert_eq!(o.code, 2);
}

/// A file from before format 1.4 (every layer scattered, made here with the
/// `SEEN_SCATTERED_ONLY` knob) keeps working: its bits are read with the rule
/// they were written with, and when it grows the new layers are sectored. No
/// line recorded under either rule is lost. (That a sectored layer makes an
/// older file 1.4 is a unit test of the header.)
#[test]
fn scattered_file_grows_with_sectored_layers() {
    let d = tmp();
    let first: Vec<String> = (0..3_000)
        .map(|i| format!("https://old.example/{i}"))
        .collect();
    let more: Vec<String> = (0..12_000)
        .map(|i| format!("https://new.example/{i}"))
        .collect();
    write(&d, "first.txt", (first.join("\n") + "\n").as_bytes());
    write(&d, "more.txt", (more.join("\n") + "\n").as_bytes());
    common::seen_env(
        d.path(),
        &[("SEEN_SCATTERED_ONLY", "1")],
        [
            "build",
            "-n",
            "3000",
            "-p",
            "1e-6",
            "-o",
            "f.seen",
            "first.txt",
        ],
        b"",
    )
    .ok();
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["layers"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["layers"][0]["positions"], "scattered", "{s}");

    let o = seen(d.path(), &["build", "--add", "-o", "f.seen", "more.txt"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s = stats_json(d.path(), "f.seen");
    assert_eq!(s["format_version"], "1.4", "{s}");
    let layers = s["layers"].as_array().unwrap();
    assert!(layers.len() >= 3, "{s}");
    assert_eq!(layers[0]["positions"], "scattered", "{s}");
    for l in &layers[1..] {
        assert_eq!(l["positions"], "sectored", "{s}");
    }
    // Every line of both files is present (query prints the present ones),
    // and dedup -f of all of them prints nothing.
    let all = [first.clone(), more.clone()].concat();
    let o = seen(
        d.path(),
        &["query", "-c", "f.seen", "-f", "first.txt", "-f", "more.txt"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        all.len().to_string()
    );
    let o = seen(
        d.path(),
        &["dedup", "-f", "f.seen", "more.txt", "first.txt"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.is_empty(),
        "{} lines printed",
        lines(&o.stdout).len()
    );
    let o = seen(d.path(), &["verify", "f.seen"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// An in-memory filter for a large input file is sized from a sample of its
/// lines, not a count (forced here for a small file with
/// `SEEN_SAMPLE_MIN_BYTES`). When the samples see too few lines, the filter
/// grows: the output stays exact and the rate stays under the target. Here
/// the first 5,000 short lines lie in the first 30 KB, which only the first of
/// the 256 evenly spaced 64 KiB windows reads, while the windows overlap twice
/// over the 8 MB of long lines after them: the estimate is about 10,900 of the
/// 14,000 lines (13,000 distinct).
#[test]
fn sampled_line_counts_grow_when_they_are_low() {
    let d = tmp();
    let mut input = String::new();
    for i in 0..5_000 {
        input += &format!("{i:05}\n");
    }
    for i in 0..8_000 {
        input += &format!("{}{i:05}\n", "y".repeat(995));
    }
    // Repeats of the first lines, at the end.
    for i in 0..1_000 {
        input += &format!("{i:05}\n");
    }
    write(&d, "in.txt", input.as_bytes());
    let mut distinct = HashSet::new();
    let want: String = input
        .lines()
        .filter(|l| distinct.insert(*l))
        .map(|l| format!("{l}\n"))
        .collect();
    let run = |sample: &str, flags: &[&str]| {
        let args = [&["dedup", "--summary", "--json", "in.txt"][..], flags].concat();
        let o = common::seen_env(d.path(), &[("SEEN_SAMPLE_MIN_BYTES", sample)], args, b"");
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(String::from_utf8(o.stdout).unwrap(), want);
        let s: Value = serde_json::from_str(&o.stderr).unwrap();
        assert!(s["fpp_now"].as_f64().unwrap() <= 1e-6, "{s}");
        s["layers"].as_u64().unwrap()
    };
    // Sampled: grown past the estimate.
    assert!(run("1", &[]) >= 2);
    // Counted (8 MB is under the default threshold): one fixed layer.
    assert_eq!(run(&(64u64 << 20).to_string(), &[]), 1);
    // Counted too, whatever the size, for a fixed filter, and for a rate
    // under 1e-7 (the layers past a low estimate could not all be made). A
    // fixed filter sized from the low estimate would warn that it is past its
    // capacity, and its stderr would not be the JSON summary alone.
    assert_eq!(run("1", &["--fixed"]), 1);
    assert_eq!(run("1", &["-p", "9e-8"]), 1);
    assert!(run("1", &["-p", "1e-7"]) >= 2);
}

/// Whatever a sample estimates (at least one record per 4 KiB), the layers of
/// a sampled filter can be made until they hold one record per byte, down to
/// the smallest rate sampling is used for.
#[test]
fn sampled_growth_holds_one_record_per_byte() {
    use seen::filter::sizing::policy::{SAMPLED_GROWTH, SAMPLED_MIN_FPP};
    let len: u64 = 1 << 40;
    let est = len / 4096 + 1;
    let spec = Spec {
        capacity: est + est / 20,
        target_fpp: SAMPLED_MIN_FPP,
        growth: Some(SAMPLED_GROWTH),
        window: None,
    };
    let (mut held, mut i) = (0u64, 0);
    while held <= len {
        let layer = spec
            .layer(i)
            .unwrap_or_else(|e| panic!("layer {i} after {held}: {e}"));
        held += layer.capacity;
        i += 1;
    }
    // One to spare.
    assert!(spec.layer(i).is_ok(), "no layer {i}");
    assert!(i <= 7, "{i} layers");
}
