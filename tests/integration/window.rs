//! Filters that forget (issue 23): `--window W` in `--slices S`. A line
//! recorded at time t is seen at any time in [t, t + W] and new again from
//! t + W·(1 + 1/S) on; time comes from `--now`, so every test is exact and
//! nothing sleeps. Lines are drawn from fixed seeds or numbered.

use crate::common::{
    Rng, assert_same, numbered, run_killed_env, seen, seen_io, stats_json, tmp, write,
};
use std::collections::HashSet;
use tempfile::TempDir;

/// 2025-12-01T00:00:00Z: in the past, so that no `--now` of a test is far
/// ahead of the system clock (a writer would warn).
const T0: u64 = 1_764_547_200;
const DAY: u64 = 86_400;
const HOUR: u64 = 3_600;

/// `--now` for Unix seconds `t`.
fn at(t: u64) -> String {
    format!("--now=@{t}")
}

/// `seen dedup -f F --now @t` of `input`: exit 0, its output.
fn dedup_at(d: &TempDir, f: &str, t: u64, extra: &[&str], input: &[u8]) -> Vec<u8> {
    let mut args = vec!["dedup".to_string(), "-f".into(), f.into(), at(t)];
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = seen_io(d.path(), &args, input);
    r.code(0);
    assert!(!r.stderr.contains("warning"), "{}", r.ctx());
    r.stdout.clone()
}

/// How many lines of `input` `seen query -c` finds in `f` at time `t`.
fn present_at(d: &TempDir, f: &str, t: u64, input: &[u8]) -> usize {
    write(d, "q.txt", input);
    let r = seen(d.path(), ["query", "-c", f, "--file", "q.txt", &at(t)]);
    assert!(r.code == 0 || r.code == 1, "{}", r.ctx());
    assert!(!r.stderr.contains("warning"), "{}", r.ctx());
    r.stdout_str().trim().parse().unwrap()
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect()
}

/// The popup: each user is shown a popup once per 6 days. Users
/// shown on day 0 are not shown on day 3, and are shown again on day 8.
#[test]
fn popup_once_per_six_days() {
    let d = tmp();
    let f = "popup.seen";
    let day0 = numbered("user-", 0..3000);
    let day3 = numbered("user-", 2000..5000);
    let args = ["--window", "6d", "-n", "30k", "-p", "1e-9"];
    assert_eq!(dedup_at(&d, f, T0, &args, &day0), day0, "day 0: all new");
    assert_eq!(
        dedup_at(&d, f, T0 + 3 * DAY, &[], &day3),
        numbered("user-", 3000..5000),
        "day 3: those shown on day 0 are not shown again"
    );
    // Day 8: day 0's users (8 days ago) again, those seen on day 3 too (a
    // duplicate does not refresh a line's time); day 3's new ones (5 days
    // ago) not.
    let day8 = numbered("user-", 0..5000);
    assert_same(
        &dedup_at(&d, f, T0 + 8 * DAY, &[], &day8),
        &numbered("user-", 0..3000),
        "day 8: shown again are those shown on day 0",
    );
    // Users shown on day 8 are now remembered until day 14, the others
    // are forgotten by then.
    let t = T0 + 14 * DAY - 1;
    assert_eq!(present_at(&d, f, t, &numbered("user-", 0..3000)), 3000);
    assert_eq!(present_at(&d, f, t, &numbered("user-", 3000..5000)), 0);
}

/// A crawler's recrawl interval with URL keys: a page fetched on day 0 is not
/// fetched again under another spelling of its URL within 7 days, and is
/// due again on day 8 (7 days and at most an eighth more).
#[test]
fn crawler_recrawls_after_seven_days_with_url_keys() {
    let d = tmp();
    let f = "crawled.seen";
    let day0 = b"https://Example.COM/a#top\nhttps://example.com/b?x=1\n";
    let out = dedup_at(
        &d,
        f,
        T0,
        &["--url", "--window", "7d", "-n", "1M", "-p", "1e-9"],
        day0,
    );
    assert_eq!(out, day0, "day 0: both fetched, printed as they came");
    // The filter records --url: later runs use it without the flag.
    let again = b"https://example.com/a\nHTTPS://EXAMPLE.com:443/b?x=1#f\nhttps://example.com/c\n";
    assert_eq!(
        dedup_at(&d, f, T0 + 2 * DAY, &[], again),
        b"https://example.com/c\n",
        "day 2: a and b are the same pages"
    );
    // 7 days after day 0, not yet due (7·(1 + 1/8) days is the latest).
    assert_eq!(
        dedup_at(&d, f, T0 + 7 * DAY - 1, &[], b"https://example.com/a\n"),
        b"",
    );
    // Day 8: a and b are due again, c (day 2) not.
    assert_eq!(
        dedup_at(&d, f, T0 + 8 * DAY, &[], again),
        b"https://example.com/a\nHTTPS://EXAMPLE.com:443/b?x=1#f\n",
    );
}

/// No false negative inside the window, forgotten past it: batches of lines
/// recorded at many times (some exactly on slice boundaries) are all seen at
/// t + W − 1 s and at t + W, and new again (false positives aside) at
/// t + W·(1 + 1/S) and one second later. Events run in time order, as a
/// real clock would.
#[test]
fn seen_for_the_window_and_forgotten_after_it() {
    let d = tmp();
    let f = "w.seen";
    let (w, s) = (8 * HOUR, 8u64);
    let late = w + w / s;
    let mut rng = Rng(0x23_0001);
    // (time, 0 = record / 1 = check seen / 2 = check forgotten, batch)
    let mut events = Vec::new();
    let mut batches = Vec::new();
    for b in 0..24u64 {
        let t = if b % 3 == 0 {
            // On a slice boundary (slices are hours from the epoch).
            T0 + b * 2 * HOUR
        } else {
            T0 + b * 2 * HOUR + rng.below(HOUR)
        };
        let data = numbered(&format!("b{b}-"), 0..300);
        batches.push((t, data));
        events.push((t, 0, b as usize));
        events.push((t + w - 1, 1, b as usize));
        events.push((t + w, 1, b as usize));
        events.push((t + late, 2, b as usize));
        events.push((t + late + 1, 2, b as usize));
    }
    events.sort();
    let mut first = true;
    let mut false_positives = 0;
    for (t, what, b) in events {
        let data = &batches[b].1;
        match what {
            0 => {
                let extra: &[&str] = if first {
                    &["--window", "8h", "--slices", "8", "-n", "10k", "-p", "1e-6"]
                } else {
                    &[]
                };
                first = false;
                assert_eq!(&dedup_at(&d, f, t, extra, data), data, "batch {b}: new");
            }
            1 => assert_eq!(
                present_at(&d, f, t, data),
                300,
                "batch {b} recorded at {} is forgotten at {t}",
                batches[b].0
            ),
            _ => false_positives += present_at(&d, f, t, data),
        }
    }
    // 24 · 2 · 300 lookups at a compound rate of at most 1e-6.
    assert!(
        false_positives <= 1,
        "{false_positives} lines remembered past the window"
    );
}

/// Rotation under SIGKILL: a run that clears the oldest slice for a new one
/// is killed at random moments; a rerun completes it. Every line recorded in
/// the last W stays seen (0 lost), and each day's runs print every line due.
#[test]
fn sigkill_during_rotation_loses_nothing_the_window_holds() {
    let d = tmp();
    let f = "k.seen";
    let mut rng = Rng(0x23_0002);
    // 4-day window in 4 slices: every day starts a slice and clears the
    // one that left the window (from day 5 on, a layer is reused).
    let mut recorded: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut kills = 0;
    for day in 0..10u64 {
        let t = T0 + day * DAY + rng.below(DAY / 2);
        let today = numbered(&format!("d{day}-"), 0..3000);
        // Today's lines, and yesterday's again (still inside the window).
        let mut input = today.clone();
        if let Some((_, y)) = recorded.last() {
            input.extend_from_slice(y);
        }
        write(&d, "in.txt", &input);
        let now = at(t);
        let mut args = vec!["dedup", "-f", f, &now, "--commit-every", "500", "in.txt"];
        if day == 0 {
            args.extend(["--window", "4d", "--slices", "4", "-n", "40k", "-p", "1e-9"]);
        }
        let mut printed = HashSet::new();
        for _ in 0..2 {
            let kill_after = rng.below(today.len() as u64) as usize;
            let (out, killed) = run_killed_env(d.path(), &[], &args, kill_after);
            kills += usize::from(killed);
            printed.extend(lines(&out).into_iter().map(<[u8]>::to_vec));
            if day == 0 {
                // The filter exists now (a kill before its rename leaves
                // none: the next run makes it again).
                args.truncate(7);
                args.extend(["--window", "4d", "--slices", "4", "-n", "40k", "-p", "1e-9"]);
            }
        }
        let (out, killed) = run_killed_env(d.path(), &[], &args, usize::MAX);
        assert!(!killed);
        printed.extend(lines(&out).into_iter().map(<[u8]>::to_vec));
        // Every line of today was due, printed by one run or another.
        for l in lines(&today) {
            assert!(printed.contains(l), "day {day}: {:?} never printed", l);
        }
        recorded.push((t, today));
        // Everything recorded in the last 4 days is still seen.
        for (when, data) in &recorded {
            if t - when <= 4 * DAY {
                assert_eq!(
                    present_at(&d, f, t, data),
                    3000,
                    "day {day}: lines of {when} lost"
                );
            }
        }
    }
    assert!(kills >= 10, "only {kills} runs were killed");
    let s = stats_json(d.path(), f);
    assert!(
        s["layers"].as_array().unwrap().len() <= 5 + 1,
        "layers are reused, not added: {s}"
    );
    seen(d.path(), ["verify", f, &at(T0 + 10 * DAY)]).ok();
}

/// A clock that steps back (an older --now, a system clock set back) works
/// at the filter's latest time, says so, and neither loses nor brings back
/// a line.
#[test]
fn time_never_goes_back_in_a_filter() {
    let d = tmp();
    let f = "c.seen";
    let a = numbered("a-", 0..500);
    let b = numbered("b-", 0..500);
    let win = ["--window", "2d", "--slices", "8", "-n", "10k", "-p", "1e-9"];
    dedup_at(&d, f, T0 + 10 * DAY, &win, &a);
    // Two days earlier: b is recorded as at day 10, and said so.
    let r = seen_io(d.path(), ["dedup", "-f", f, &at(T0 + 8 * DAY)], &b);
    r.code(0).stdout(&b).stderr_has("does not go back");
    // Recorded "at day 10", b is seen until day 12 (not just day 10).
    assert_eq!(present_at(&d, f, T0 + 12 * DAY - 1, &b), 500);
    // A query from before the filter's time answers as of its time.
    let r = seen(d.path(), ["query", "-c", f, "--file", "q.txt", &at(T0)]);
    r.code(0).stderr_has("does not go back");
    assert_eq!(r.stdout_str().trim(), "500");
    // Day 13: a writer moves the clock; a and b are forgotten.
    dedup_at(&d, f, T0 + 13 * DAY, &[], b"c\n");
    assert_eq!(present_at(&d, f, T0 + 13 * DAY, &a), 0);
    // Back to day 10 again: still forgotten, not brought back.
    let r = seen_io(d.path(), ["dedup", "-f", f, &at(T0 + 10 * DAY)], &a);
    r.code(0).stdout(&a).stderr_has("does not go back");
}

/// `stats` shows the window, its live slices with their times, fill and
/// items, and the rate now; `--json` too; `verify` checks a filter whose
/// layers were cleared and reused; `plan --window` says what it costs.
#[test]
fn stats_verify_and_plan_know_the_window() {
    let d = tmp();
    let f = "s.seen";
    let win = [
        "--window", "6d", "--slices", "6", "-n", "60k", "-p", "1e-4", "--fixed",
    ];
    for day in 0..9u64 {
        let extra: &[&str] = if day == 0 { &win } else { &[] };
        let data = numbered(&format!("d{day}-"), 0..(1000 + 100 * day as u32));
        dedup_at(&d, f, T0 + day * DAY, extra, &data);
    }
    let now = T0 + 8 * DAY + HOUR;
    let r = seen(d.path(), ["stats", "--json", f, &at(now)]);
    r.ok();
    let s = r.stdout_json();
    let w = &s["window"];
    assert_eq!(w["seconds"], 6 * DAY);
    assert_eq!(w["slices"], 6);
    assert_eq!(w["now"], now);
    assert_eq!(w["clock"], T0 + 8 * DAY);
    let live = w["live"].as_array().unwrap();
    assert_eq!(live.len(), 7, "S + 1 live slices");
    // Day-long slices: days 2..=8, each with its day's lines.
    for (i, sl) in live.iter().enumerate() {
        let day = 2 + i as u64;
        assert_eq!(sl["start"], T0 + day * DAY);
        assert_eq!(sl["end"], T0 + (day + 1) * DAY);
        assert_eq!(sl["forgotten_at"], T0 + (day + 7) * DAY);
        assert_eq!(sl["inserts"], 1000 + 100 * day, "{sl}");
        let est = sl["estimated_items"].as_f64().unwrap();
        assert!((est - (1000.0 + 100.0 * day as f64)).abs() < 50.0, "{sl}");
    }
    // Totals count the live slices only; 7 layers in all (day 0's and
    // day 1's were reused for days 7 and 8).
    assert_eq!(s["layers"].as_array().unwrap().len(), 7);
    let live_inserts: u64 = (2..=8).map(|d| 1000 + 100 * d).sum();
    assert_eq!(s["inserts"], live_inserts);
    assert_eq!(s["capacity"], 60_000);
    assert_eq!(s["format_version"], "2.0");
    let fpp = s["estimated_fpp"].as_f64().unwrap();
    assert!(fpp > 0.0 && fpp < 1e-4, "{fpp}");
    // The table.
    let r = seen(d.path(), ["stats", f, &at(now)]);
    r.ok();
    let t = r.stdout_str();
    for want in [
        "window           6d in 6 slices of 1d",
        "new again 7d after at most",
        "60,000 per window",
        "current  2025-12-09 00:00:00 UTC  2025-12-10 00:00:00 UTC  2025-12-16 00:00:00 UTC",
    ] {
        assert!(t.contains(want), "{want:?} not in\n{t}");
    }
    seen(d.path(), ["verify", f, &at(now)]).ok();
    // A day later, the oldest slice has left: 6 live slices hold lines.
    let s = stats_json(d.path(), f);
    let sys = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let now = s["window"]["now"].as_u64().unwrap();
    assert!(
        now.abs_diff(sys) <= 60 && now > T0 + 8 * DAY,
        "no --now: the system clock, past the filter's time: {now}"
    );
    let r = seen(d.path(), ["stats", "--json", f, &at(T0 + 9 * DAY)]);
    let s = r.stdout_json();
    let live = s["window"]["live"].as_array().unwrap();
    assert_eq!(
        live.last().unwrap()["inserts"],
        0,
        "the new day has nothing yet"
    );
    assert_eq!(live[0]["start"], T0 + 3 * DAY);
    // plan: the space of a window against a filter that never forgets.
    let r = seen(
        d.path(),
        [
            "plan", "--window", "6d", "-n", "30M", "-p", "1e-6", "--fixed",
        ],
    );
    r.ok();
    let p = r.stdout_str();
    assert!(p.contains("30,000,000 per window"), "{p}");
    assert!(
        p.contains("for 7 live slices") || p.contains("for 9 live slices"),
        "{p}"
    );
    assert!(p.contains("x a filter for 30,000,000 lines"), "{p}");
}

/// What a window cannot do is refused up front, saying why.
#[test]
fn window_refusals() {
    let d = tmp();
    write(&d, "in.txt", b"a\nb\n");
    seen(d.path(), ["dedup", "--slices", "4", "in.txt"]).fails("--window");
    seen(
        d.path(),
        [
            "build", "-o", "x.seen", "--window", "5s", "--slices", "8", "in.txt",
        ],
    )
    .fails("a slice lasts at least a second");
    seen(
        d.path(),
        ["build", "-o", "x.seen", "--window", "5m", "in.txt"],
    )
    .fails("5min");
    seen(d.path(), ["query", "x.seen", "a", "--now", "yesterday"]).fails("RFC 3339");
    seen(
        d.path(),
        ["build", "-o", "w.seen", "--window", "1d", "in.txt"],
    )
    .ok();
    seen(d.path(), ["build", "-o", "p.seen", "in.txt"]).ok();
    // A window given for a filter that exists does not change it.
    seen(
        d.path(),
        ["dedup", "-f", "p.seen", "--window", "1d", "in.txt"],
    )
    .code(0)
    .stderr_has("a filter keeps the window it was made with");
    let s = stats_json(d.path(), "p.seen");
    assert!(s["window"].is_null(), "{s}");
    seen(d.path(), ["merge", "-o", "m.seen", "w.seen", "p.seen"]).fails("time window");
    // A Redis filter of Bloom layers does not forget: refused before any
    // server is asked (a filter of fingerprint sets does: redis_gens.rs).
    seen_io(
        d.path(),
        [
            "dedup",
            "-f",
            "redis://127.0.0.1:1/x",
            "--window",
            "1d",
            "--redis-layout",
            "bloom",
        ],
        b"a\n",
    )
    .fails("cannot be kept in Redis in the Bloom layout");
    seen_io(
        d.path(),
        [
            "dedup",
            "-f",
            "redis://127.0.0.1:1/x",
            "--growth",
            "2",
            "--redis-layout",
            "bloom",
        ],
        b"a\n",
    )
    .fails("Bloom layout does not grow");
    seen(d.path(), ["copy", "w.seen", "redis://127.0.0.1:1/x"])
        .fails("cannot be kept in Redis in the Bloom layout");
    assert!(!d.path().join("m.seen").exists()); // A time in milliseconds is refused, not taken for the year 58,884.
    seen(
        d.path(),
        ["query", "w.seen", "a", "--now", "@1796083200000"],
    )
    .fails("milliseconds");
    // One-second slices numbered from the creation run out after 2^32
    // of them: a run past that fails, and leaves the filter's time as it
    // was (a later run at the right time still records).
    let win = ["--window", "8s", "--slices", "8", "-n", "100"];
    dedup_at(&d, "s.seen", T0, &win, b"a\n");
    let r = seen_io(
        d.path(),
        ["dedup", "-f", "s.seen", &at(T0 + (1 << 32) + 10)],
        b"b\n",
    );
    r.code(2);
    assert!(r.stderr.contains("past the last"), "{}", r.ctx());
    assert_eq!(dedup_at(&d, "s.seen", T0 + 20, &[], b"a\nc\n"), b"a\nc\n");
}

/// A window of many slices whose slices all take more than their share
/// grows each one while S + 1 layers stay free for the slices to come, then
/// lets a full slice take more, never failing for want of a layer; every
/// line of the window stays seen; `stats` counts what a writer does next.
#[test]
fn many_growing_slices_never_run_out_of_layers() {
    let d = tmp();
    let f = "g.seen";
    // 32 slices of 100 s, sized for one line each; 4 lines per slice.
    for i in 0..80u64 {
        let mut args = vec!["dedup".to_string(), "-f".into(), f.into(), at(T0 + 100 * i)];
        if i == 0 {
            args.extend(["--window", "3200s", "--slices", "32", "-n", "32"].map(String::from));
        }
        let data = numbered(&format!("s{i}-"), 0..4);
        let r = seen_io(d.path(), &args, &data);
        r.code(0).stdout(&data);
        // Every line of the last 32 slices is still seen.
        if i % 20 == 19 {
            for j in i.saturating_sub(31)..=i {
                let old = numbered(&format!("s{j}-"), 0..4);
                assert_eq!(present_at(&d, f, T0 + 100 * i, &old), 4, "slice {j} at {i}");
            }
        }
    }
    let r = seen(d.path(), ["stats", "--json", f, &at(T0 + 7900)]);
    let s = r.stdout_json();
    let layers = s["layers"].as_array().unwrap();
    assert!(layers.len() <= 62, "{}", layers.len());
    // The slice of the last run: next_layer_in is its largest layer's room.
    let cur = s["window"]["live"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let top = cur["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &layers[i.as_u64().unwrap() as usize])
        .max_by_key(|l| l["capacity"].as_u64().unwrap())
        .unwrap();
    let room = top["capacity"]
        .as_u64()
        .unwrap()
        .saturating_sub(top["inserts"].as_u64().unwrap());
    assert_eq!(s["growth"]["next_layer_in"], room, "{cur}");
    // Long after the last line: nothing is live, and the figures say so.
    let r = seen(d.path(), ["stats", "--json", f, &at(T0 + 100_000)]);
    let s = r.stdout_json();
    assert_eq!(s["fill_ratio"], 0.0);
    assert_eq!(s["inserts"], 0);
}

/// Without a file, `dedup --window` keeps the window in memory: with a fixed
/// time it is a plain dedup, whatever the thread count.
#[test]
fn in_memory_window_dedups() {
    let d = tmp();
    let mut data = numbered("x", 0..20_000);
    data.extend_from_slice(&numbered("x", 5_000..25_000));
    for j in ["1", "2"] {
        let r = seen_io(
            d.path(),
            ["dedup", "--window", "1h", "-j", j, &at(T0)],
            &data,
        );
        r.ok().stdout(&numbered("x", 0..25_000));
    }
}
