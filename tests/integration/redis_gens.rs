//! Redis filters that grow (`--growth`) and forget after a time window
//! (`--window`), issue 42, against real servers (`scripts/with-redis.sh`):
//! exact output across generations, each line printed by exactly one of
//! four concurrent writers across a growth step and a slice boundary (with
//! clocks apart), the window's rule, expiry by Redis itself, and a writer
//! whose clock is too far behind refused.

use crate::common::{
    Rng, assert_same, command, numbered, reference, run_killed_env, seen_env, tmp, write,
};
use crate::redis::{Private, cluster, standalone, urls};
use crate::redis_edges::exactly_once;
use std::collections::HashSet;
use std::process::Stdio;

/// The journal directory of a test (inside its temp dir).
fn journal(d: &tempfile::TempDir) -> String {
    d.path().join("journal").display().to_string()
}

/// The generations hash of the filter named `name` on the server at
/// `addr` (one node of a Cluster holds it), as (field, value) pairs.
fn generations(nodes: &str, name: &str) -> Vec<(String, String)> {
    for addr in nodes.split(',') {
        let mut c = redis::Client::open(format!("redis://{addr}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("seen:{{{name}}}:gens:*"))
            .query(&mut c)
            .unwrap();
        if let Some(k) = keys.first() {
            return redis::cmd("HGETALL").arg(k).query(&mut c).unwrap();
        }
    }
    panic!("no generations hash for {name}");
}

/// The newest generation's number.
fn top(nodes: &str, name: &str) -> u64 {
    generations(nodes, name)
        .iter()
        .find(|(k, _)| k == "top")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap()
}

/// The nodes and the name of a location.
fn parts(loc: &str) -> (String, String) {
    let rest = loc.split_once("://").unwrap().1;
    let (nodes, name) = rest.rsplit_once('/').unwrap();
    (nodes.to_string(), name.to_string())
}

/// A filter that grows keeps awk's output as it adds generations (1,000
/// lines the first, doubling): a second run prints nothing, `query` finds
/// every line, and the filter has grown to five generations or more.
#[test]
fn a_growing_filter_is_awk_across_generations() {
    for loc in [standalone("grow"), cluster("grow")].into_iter().flatten() {
        let d = tmp();
        let j = journal(&d);
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let data = urls(40_000, 21);
        let want = reference(&data, b'\n', false);
        let make = ["dedup", "-q", "--growth", "2", "-n", "1000", "-f", &loc];
        seen_env(d.path(), &env, make, &data).ok().stdout(&want);
        seen_env(d.path(), &env, ["dedup", "-f", &loc], &data)
            .ok()
            .stdout(b"");
        let n = want.iter().filter(|&&b| b == b'\n').count();
        seen_env(d.path(), &env, ["query", "-c", &loc], &data)
            .ok()
            .stdout(format!("{}\n", data.iter().filter(|&&b| b == b'\n').count()).as_bytes());
        let (nodes, name) = parts(&loc);
        // 1,000 + 2,000 + 4,000 + 8,000 < n: five generations at least.
        assert!(n > 15_000, "{n}");
        assert!(top(&nodes, &name) >= 4, "{:?}", generations(&nodes, &name));
        seen_env(d.path(), &env, ["verify", &loc], b"").ok();
        seen_env(d.path(), &env, ["forget", &loc, "x"], b"")
            .fails("grows or has a time window cannot forget keys yet");
        // Made by a first writer, not by `build -o`; added to by `--add`.
        let other = format!("{loc}-b");
        seen_env(
            d.path(),
            &env,
            ["build", "-o", &other, "--growth", "2"],
            b"x\n",
        )
        .fails("made by its first writer");
        seen_env(
            d.path(),
            &env,
            ["build", "--add", "-o", &loc],
            b"new line\n",
        )
        .ok();
        seen_env(d.path(), &env, ["query", &loc, "new line"], b"").ok();
        // `stats` counts each live generation's sets.
        let s = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
        let v: serde_json::Value = serde_json::from_slice(&s.ok().stdout).unwrap();
        let gens = v["generations"].as_array().unwrap();
        assert!(gens.len() >= 5, "{v}");
        // Each entry has the members docs/STATS.md lists, no more.
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/STATS.md"),
        )
        .unwrap();
        let documented: std::collections::BTreeSet<String> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `generations[]."))
            .map(|l| l.split('`').next().unwrap().to_string())
            .collect();
        let got: std::collections::BTreeSet<String> =
            gens[0].as_object().unwrap().keys().cloned().collect();
        assert_eq!(got, documented);
        let sum = |f: &str| gens.iter().map(|g| g[f].as_u64().unwrap()).sum::<u64>();
        // Every line once, and the one `build --add` recorded.
        let n = n + 1;
        assert_eq!(
            (sum("inserts"), v["inserts"].as_u64()),
            (n as u64, Some(n as u64))
        );
        // Fingerprints: each line one, bar a collision or two in a set.
        assert!(sum("fingerprints") + 2 >= n as u64, "{v}");
        assert_eq!(
            gens[1]["capacity"],
            2 * gens[0]["capacity"].as_u64().unwrap()
        );
        assert_eq!(v["growth"]["can_grow"], true, "{v}");
        assert!(v["estimated_fpp"].as_f64().unwrap() < 1e-6, "{v}");
    }
}

/// Promise 2 across growth: four writers at once on the Cluster, with
/// overlapping inputs, add generations as they go, and between them print
/// every distinct line exactly once.
#[test]
fn four_writers_crossing_growth_print_each_line_once() {
    let Some(loc) = cluster("grow4") else { return };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    seen_env(
        d.path(),
        &env,
        ["dedup", "-q", "--growth", "2", "-n", "500", "-f", &loc],
        b"",
    )
    .ok();
    let inputs: Vec<Vec<u8>> = (0..4).map(|w| urls(30_000, 30 + w)).collect();
    let outs = run_writers(&d, &[&j], &loc, &inputs, |_| Vec::new());
    let all: Vec<u8> = inputs.concat();
    let outs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
    exactly_once(&outs, &reference(&all, b'\n', false), "growth");
    let (nodes, name) = parts(&loc);
    assert!(top(&nodes, &name) >= 3, "{:?}", generations(&nodes, &name));
}

/// Runs a writer per input at once (`dedup -f loc`, small chunks, with the
/// extra arguments `extra(w)`; writer w keeps its journal in
/// `journals[w % journals.len()]`), and returns their outputs once all
/// ended well.
fn run_writers(
    d: &tempfile::TempDir,
    journals: &[&str],
    loc: &str,
    inputs: &[Vec<u8>],
    extra: impl Fn(usize) -> Vec<String>,
) -> Vec<Vec<u8>> {
    let children: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(w, data)| {
            let path = write(d, &format!("in{w}"), data);
            command(d.path())
                .env("SEEN_JOURNAL_DIR", journals[w % journals.len()])
                .env("SEEN_CHUNK_BYTES", "32768")
                .args(["dedup", "-f", loc])
                .args(extra(w))
                .arg(path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        })
        .collect()
}

/// A slice boundary of a 7-day window in 8 slices (21 hours each), in
/// December 2026.
const BOUNDARY: u64 = 23_765 * 21 * 3600;

/// Promise 2 across a slice boundary: four writers whose clocks (`--now`)
/// are up to a minute apart, two before the boundary and two after, print
/// every distinct line exactly once between them; a writer more than a
/// minute behind the latest is refused, saying what to do.
#[test]
fn four_writers_across_a_slice_boundary_with_clocks_apart() {
    let Some(loc) = cluster("slice4") else { return };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let at = |t: u64| format!("@{t}");
    seen_env(
        d.path(),
        &env,
        [
            "dedup",
            "-q",
            "--window",
            "7d",
            "-n",
            "200k",
            "-f",
            &loc,
            "--now",
            &at(BOUNDARY - 30),
        ],
        b"",
    )
    .ok();
    // Three boundaries, a slice apart, with lines of their own.
    let slice = 21 * 3600;
    for r in 0..3u64 {
        let b = BOUNDARY + r * slice;
        let inputs: Vec<Vec<u8>> = (0..4)
            .map(|w| {
                let text = String::from_utf8(urls(20_000, 40 + w)).unwrap();
                text.replace("example.org", &format!("r{r}.example.org"))
                    .into_bytes()
            })
            .collect();
        let times = [b - 30, b - 10, b + 10, b + 29];
        let outs = run_writers(&d, &[&j], &loc, &inputs, |w| {
            vec!["--now".into(), at(times[w])]
        });
        let all: Vec<u8> = inputs.concat();
        let outs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
        exactly_once(&outs, &reference(&all, b'\n', false), "slice boundary");
    }
    let (nodes, name) = parts(&loc);
    let g = generations(&nodes, &name);
    assert!(top(&nodes, &name) >= 3, "no new slices: {g:?}");
    // A round's lines are many more than the first slice's first
    // generation takes (half its 25k share): the writers also crossed a
    // slice's own growth point (a generation of rank 1).
    let ranks: Vec<u32> = g
        .iter()
        .filter(|(k, _)| k.starts_with("g:"))
        .map(|(_, v)| v.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(ranks.iter().any(|&r| r >= 1), "no growth in a slice: {g:?}");
    // More than a minute behind the filter's clock (the latest writer's).
    seen_env(
        d.path(),
        &env,
        ["dedup", "-f", &loc, "--now", &at(BOUNDARY + 2 * slice - 40)],
        b"x\n",
    )
    .code(2)
    .stderr_has("behind the filter's")
    .stderr_has("--now");
}

/// The window's rule on Redis, as for a file (the popup case, with
/// `--url`): with a 6-day window, a URL seen on day 0 is not shown on day
/// 3, and is shown again on day 8, its spelling aside.
#[test]
fn the_popup_case_on_redis() {
    for loc in [standalone("popup"), cluster("popup")]
        .into_iter()
        .flatten()
    {
        let d = tmp();
        let j = journal(&d);
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let day = |n: u64| format!("@{}", BOUNDARY + n * 86_400);
        let run = |n: u64, line: &[u8]| {
            seen_env(
                d.path(),
                &env,
                [
                    "dedup",
                    "-q",
                    "--url",
                    "--window",
                    "6d",
                    "-f",
                    &loc,
                    "--now",
                    &day(n),
                ],
                line,
            )
        };
        run(0, b"https://Example.com/popup\n")
            .ok()
            .stdout(b"https://Example.com/popup\n");
        run(3, b"https://example.com/popup\n").ok().stdout(b"");
        run(8, b"https://EXAMPLE.com/popup\n")
            .ok()
            .stdout(b"https://EXAMPLE.com/popup\n");
        // Left idle for weeks, past its window: the next writer goes on.
        run(
            40,
            b"https://example.com/popup\nhttps://example.com/other\n",
        )
        .ok()
        .stdout(b"https://example.com/popup\nhttps://example.com/other\n");
        run(41, b"https://example.com/other\n").ok().stdout(b"");
        // Live on day 41: the slices of day 40's run and day 41's; those of
        // days 0 to 8 are not (their lines count no more).
        let s = seen_env(
            d.path(),
            &env,
            ["stats", "--json", &loc, "--now", &day(41)],
            b"",
        );
        let v: serde_json::Value = serde_json::from_slice(&s.ok().stdout).unwrap();
        let live = v["window"]["live"].as_array().unwrap();
        assert_eq!(v["inserts"], 2, "{v}");
        assert_eq!(live.len(), 2, "{v}");
        let gens = v["generations"].as_array().unwrap();
        assert!(gens.iter().all(|g| g["index"].as_u64() >= Some(3)), "{v}");
        assert!(live[1]["forgotten_at"].as_u64().unwrap() > BOUNDARY + 41 * 86_400 + 6 * 86_400);
    }
}

/// A window's first slice starts with a generation of half its share of
/// the lines; each later slice with what the slice before took, a quarter
/// more, between an eighth of its share and the share; a slice that takes
/// more doubles up to its share. A window sized far above its lines keeps
/// them in fewer, fuller sets. The lines stay awk's throughout.
#[test]
fn a_slice_starts_at_what_the_slice_before_took() {
    let Some(loc) = standalone("sized") else {
        return;
    };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let slice = 21 * 3600;
    // -n 800k: a share of 100k a slice, the first slice from 50k.
    let run = |k: u64, data: &[u8]| {
        let now = format!("@{}", BOUNDARY + k * slice + 60);
        seen_env(
            d.path(),
            &env,
            [
                "dedup", "--window", "7d", "-n", "800k", "--now", &now, "-f", &loc,
            ],
            data,
        )
        .ok()
        .stdout
        .clone()
    };
    let (a, b, c) = (
        numbered("a", 0..20_000),
        numbered("b", 0..100_000),
        numbered("c", 0..130_000),
    );
    assert_same(&run(0, &a), &a, "first slice");
    assert_same(&run(1, &b), &b, "second slice");
    assert_same(&run(2, &c), &c, "third slice");
    let all = [a.as_slice(), &b, &c].concat();
    assert_eq!(run(2, &all), b"", "every line is present");
    // After two idle slices, a slice starts after the newest that took
    // lines (the third, past its share: the share); the one after it,
    // which took 1,000, at an eighth of the share.
    let (e, f) = (numbered("e", 0..1_000), numbered("f", 0..1_000));
    assert_same(&run(5, &e), &e, "after an idle gap");
    assert_same(&run(6, &f), &f, "after a quiet slice");
    let now = format!("@{}", BOUNDARY + 6 * slice + 60);
    let s = seen_env(
        d.path(),
        &env,
        ["stats", "--json", &loc, "--now", &now],
        b"",
    );
    let v: serde_json::Value = serde_json::from_slice(&s.ok().stdout).unwrap();
    let sizes: Vec<(u64, u64, u64)> = v["generations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_u64().unwrap();
            (n("slice") - BOUNDARY / slice, n("rank"), n("capacity"))
        })
        .collect();
    // The first slice: 50k (20k lines). The second from 25k (20k and a
    // quarter): 25k, 50k, 100k, the last of a slice without growth, as the
    // 100k lines fill it past its share. The third from the share: 100k,
    // which takes the 130k lines past it. Then as above.
    assert_eq!(
        sizes,
        [
            (0, 0, 50_000),
            (1, 0, 25_000),
            (1, 1, 50_000),
            (1, 2, 100_000),
            (2, 0, 100_000),
            (5, 0, 100_000),
            (6, 0, 12_500),
        ],
        "{v}"
    );
    assert_eq!(v["inserts"], 252_000, "{v}");
}

/// Redis removes expired slices itself: every data key of a windowed
/// filter (its sets, its groups' top keys) has a time to live no longer
/// than W·(1 + 1/S) from now, so a fleet that stops writing leaves nothing
/// of its lines behind; only the meta key, the counters and the
/// generations hash (a few fields) stay.
#[test]
fn a_windowed_filters_data_expires_by_itself() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/expire", srv.addr);
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    // Two runs in one slice: the second adds behind the fence (each
    // group's top is the newest generation), into sets it makes.
    let now = format!(
        "@{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    );
    let data = urls(5_000, 50);
    let more: Vec<u8> = String::from_utf8(urls(5_000, 51))
        .unwrap()
        .lines()
        .map(|l| format!("more-{l}\n"))
        .collect::<String>()
        .into_bytes();
    for input in [&data, &more] {
        seen_env(
            d.path(),
            &env,
            [
                "dedup", "-q", "--window", "40s", "--slices", "4", "--now", &now, "-f", &loc,
            ],
            input,
        )
        .ok()
        .stdout(&reference(input, b'\n', false));
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("seen:*").query(&mut c).unwrap();
    let mut data_keys = 0;
    for k in &keys {
        let ttl: i64 = redis::cmd("TTL").arg(k).query(&mut c).unwrap();
        if k == "seen:{expire}:meta"
            || k == "seen:{expire}:count"
            || k.starts_with("seen:{expire}:gens:")
        {
            assert_eq!(ttl, -1, "{k}");
            continue;
        }
        data_keys += 1;
        // W·(1 + 1/S) = 50 s at most.
        assert!((1..=50).contains(&ttl), "{k}: TTL {ttl}");
    }
    assert!(data_keys > 16, "{keys:?}");
}

/// A set keeps its time to live until its slice expires, so a run does not
/// send an `EXPIRE` for a set that a run before it on this machine gave
/// one: a second run in the slice sends few, a run on another machine (its
/// own journal directory) as many as the first; every data key still has
/// its time to live.
#[test]
fn a_later_run_in_a_slice_does_not_expire_a_set_again() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/ttls", srv.addr);
    let here = journal(&d);
    let there = d.path().join("there").to_string_lossy().into_owned();
    let now = format!(
        "@{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    );
    // About 1,300 sets a slice: 2,500 lines, about two a set (behind the
    // fence), leave few untouched; then runs of 1,000 lines.
    let mut sent = Vec::new();
    for (lines, n, dir) in [(2_500, 70, &here), (1_000, 71, &here), (1_000, 72, &there)] {
        let input: Vec<u8> = String::from_utf8(urls(lines, n))
            .unwrap()
            .lines()
            .map(|l| format!("{n}-{l}\n"))
            .collect::<String>()
            .into_bytes();
        let before = crate::common::redis_calls(&mut c, "expire");
        seen_env(
            d.path(),
            &[("SEEN_JOURNAL_DIR", dir.as_str())],
            [
                "dedup", "-q", "--window", "7d", "--slices", "8", "-n", "1600000", "--now", &now,
                "-f", &loc,
            ],
            &input,
        )
        .ok()
        .stdout(&reference(&input, b'\n', false));
        sent.push(crate::common::redis_calls(&mut c, "expire") - before);
    }
    // The third run's sets were all given one by the others (no `EXPIRE`
    // for a top either: theirs are raised): it sends one a set it adds to.
    assert!(sent[2] > 300, "{sent:?}");
    assert!(sent[1] * 3 < sent[2], "{sent:?}");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("seen:{ttls:*")
        .query(&mut c)
        .unwrap();
    assert!(keys.len() > 300, "{}", keys.len());
    for k in &keys {
        let ttl: i64 = redis::cmd("TTL").arg(k).query(&mut c).unwrap();
        assert!(ttl > 0, "{k}: TTL {ttl}");
    }
}

/// Lines that fall tens to a set (a filter at its working size, a chunk of
/// thousands of lines) go behind the fence as sparse ones do: an `SADD` a
/// line and no script call, in a slice's first run and in the next slice's,
/// which looks the lines up in the slice before. (The script they went to
/// cost a cron job's runs about twice a fixed filter's Redis CPU.)
#[test]
fn lines_dense_in_their_sets_go_behind_the_fence() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/dense", srv.addr);
    let here = journal(&d);
    let t0 = 1_796_634_000_u64; // a slice boundary of 7 days in 8 slices
    let old = urls(20_000, 74);
    let fresh: Vec<u8> = String::from_utf8(urls(10_000, 75))
        .unwrap()
        .lines()
        .map(|l| format!("n-{l}\n"))
        .collect::<String>()
        .into_bytes();
    let half = old.len() / 2
        + old[old.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    let second = [&old[half..], &fresh[..]].concat();
    let before = crate::common::redis_calls(&mut c, "evalsha");
    let sadd = crate::common::redis_calls(&mut c, "sadd");
    // About 630 sets a slice: 20,000 lines put about 30 in each.
    for (input, expect, t) in [
        (&old, reference(&old, b'\n', false), t0),
        (&second, reference(&fresh, b'\n', false), t0 + 75_600),
    ] {
        seen_env(
            d.path(),
            &[("SEEN_JOURNAL_DIR", here.as_str())],
            [
                "dedup",
                "-q",
                "--window",
                "7d",
                "--slices",
                "8",
                "-n",
                "1000000",
                "--now",
                &format!("@{t}"),
                "-f",
                &loc,
            ],
            input,
        )
        .ok()
        .stdout(&expect);
    }
    let distinct = reference(&old, b'\n', false).split(|&b| b == b'\n').count()
        + reference(&fresh, b'\n', false)
            .split(|&b| b == b'\n')
            .count();
    let scripts = crate::common::redis_calls(&mut c, "evalsha") - before;
    let sadds = crate::common::redis_calls(&mut c, "sadd") - sadd;
    assert_eq!(scripts, 0, "no line went to the script");
    assert!(
        sadds as usize >= distinct - 2,
        "{sadds} SADDs, {distinct} lines"
    );
}
/// Short runs on one machine copy a sealed slice between them: runs of
/// 2,000 lines (about 8 a group) each look too few lines up in the slice
/// before to pay for copying it (about 24 a group), but the runs of a
/// journal directory count their lookups together, so a later run looks
/// nothing up on the server. A run from another directory starts from
/// nothing; one from the directory that wrote the slice copies it before
/// its first lookup (its adds there count as lookups to come).
#[test]
fn short_runs_on_a_machine_copy_a_sealed_slice_between_them() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/cron", srv.addr);
    let here = journal(&d);
    let there = d.path().join("there").to_string_lossy().into_owned();
    let writer = d.path().join("writer").to_string_lossy().into_owned();
    let t0 = 1_796_634_000_u64; // a slice boundary of 7 days in 8 slices
    let data = urls(40_000, 73);
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let run = |input: &[u8], t: u64, dir: &str, c: &mut redis::Connection| -> (Vec<u8>, u64) {
        let before = crate::common::redis_calls(c, "smismember");
        let now = format!("@{t}");
        let out = seen_env(
            d.path(),
            &[("SEEN_JOURNAL_DIR", dir)],
            [
                "dedup", "-q", "--window", "7d", "--slices", "8", "-n", "1600000", "--now", &now,
                "-f", &loc,
            ],
            input,
        )
        .ok()
        .stdout
        .clone();
        (out, crate::common::redis_calls(c, "smismember") - before)
    };
    let (out, _) = run(&data, t0, &writer, &mut c);
    assert_eq!(out, reference(&data, b'\n', false));
    // The next slice: runs of 2,000 of those lines, all present.
    let mut sent = Vec::new();
    for (i, part) in lines.chunks(2_000).take(8).enumerate() {
        let input: Vec<u8> = part.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
        let (out, n) = run(&input, t0 + 75_600 + 60 * i as u64, &here, &mut c);
        assert!(out.is_empty(), "run {i} printed {} bytes", out.len());
        sent.push(n);
    }
    assert!(sent[0] > 200, "the first run looks its lines up: {sent:?}");
    assert_eq!(sent[7], 0, "the slice is copied by then: {sent:?}");
    assert!(copy_files(std::path::Path::new(&here)) > 0);
    let input: Vec<u8> = lines[16_000..18_000]
        .iter()
        .flat_map(|l| [*l, b"\n"].concat())
        .collect();
    let (out, n) = run(&input, t0 + 75_600 + 600, &there, &mut c);
    assert!(out.is_empty());
    assert!(n > 200, "another machine's run looks its lines up: {n}");
    let (out, n) = run(&input, t0 + 75_600 + 660, &writer, &mut c);
    assert!(out.is_empty());
    assert_eq!(n, 0, "the slice's writer copies it first");
}

/// Promise 2 with copies made between short runs: two machines (journal
/// directories) each send 4 runs a slice for 3 slices, at once, of 1,500
/// lines overlapping the other's; a sealed slice costs them about a run
/// and a half of lookups to copy, so later runs take the copies their
/// earlier runs' counts made due. Every distinct line is printed once.
#[test]
fn two_machines_of_short_runs_print_each_line_once() {
    let Some(loc) = cluster("cron2") else { return };
    let d = tmp();
    let dirs = [d.path().join("a"), d.path().join("b")];
    let journals: Vec<&str> = dirs.iter().map(|p| p.to_str().unwrap()).collect();
    let text = String::from_utf8(urls(14_000, 80)).unwrap();
    let pool: Vec<&str> = text.lines().collect();
    let slice = 21 * 3600;
    let (mut outs, mut all) = (Vec::new(), Vec::new());
    for r in 0..3u64 {
        for i in 0..4u64 {
            let at = (r * 4 + i) as usize * 1000;
            let now = format!("@{}", BOUNDARY + r * slice + i * 60);
            let inputs: Vec<Vec<u8>> = (0..2)
                .map(|w| {
                    let lines = &pool[at + 500 * w..at + 500 * w + 1500];
                    lines
                        .iter()
                        .map(|l| format!("{l}\n"))
                        .collect::<String>()
                        .into_bytes()
                })
                .collect();
            all.extend(inputs.concat());
            outs.extend(run_writers(&d, &journals, &loc, &inputs, |_| {
                ["-q", "--window", "7d", "-n", "2M", "--now", &now]
                    .map(String::from)
                    .to_vec()
            }));
        }
    }
    let outs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
    exactly_once(&outs, &reference(&all, b'\n', false), "short runs");
    for dir in &dirs {
        assert!(copy_files(dir) > 0, "{} took no copy", dir.display());
    }
}

/// The files of kept copies in the journal directory `dir`, over every
/// filter's `….copies` directory.
fn copy_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.to_string_lossy().ends_with(".copies").then_some(p)
        })
        .flat_map(|p| std::fs::read_dir(p).unwrap())
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_string_lossy().starts_with("copy-")
        })
        .count()
}

/// Promise 3 across growth and rotation: writers killed at random moments
/// while they add generations (a growing filter, 500 lines the first) or
/// start a new slice (each run a slice later), then a last run to the
/// end: no line of the input is lost, and the filter holds them all.
#[test]
fn sigkill_during_growth_and_rotation_loses_no_line() {
    let Some(base) = standalone("gkill") else {
        return;
    };
    let mut rng = Rng(0x0BAD_CAFE);
    let data = urls(20_000, 60);
    let want: HashSet<Vec<u8>> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let total: usize = want.iter().map(|l| l.len() + 1).sum();
    let slice = 21 * 3600;
    let mut kills = 0;
    for (trial, windowed) in [false, true, false, true].into_iter().enumerate() {
        let d = tmp();
        let j = journal(&d);
        let env = [
            ("SEEN_JOURNAL_DIR", j.as_str()),
            ("SEEN_CHUNK_BYTES", "32768"),
        ];
        write(&d, "in.txt", &data);
        let loc = format!("{base}-{trial}");
        let args = |run: u64| -> Vec<String> {
            let mut a: Vec<String> = vec!["dedup".into(), "-q".into(), "-f".into(), loc.clone()];
            if windowed {
                let now = format!("@{}", BOUNDARY + run * slice);
                a.extend(["--window".into(), "7d".into(), "--now".into(), now]);
            } else {
                a.extend(["--growth".into(), "2".into(), "-n".into(), "500".into()]);
            }
            a.push("in.txt".into());
            a
        };
        let mut printed: Vec<Vec<u8>> = Vec::new();
        let lines = |out: &[u8], into: &mut Vec<Vec<u8>>| {
            let whole = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            into.extend(
                out[..whole]
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        };
        for run in 0..3 {
            let at = rng.below(total as u64 / 2) as usize;
            let a = args(run);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let (out, killed) = run_killed_env(d.path(), &env, &a, at);
            kills += usize::from(killed);
            lines(&out, &mut printed);
        }
        let a = args(3);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let last = seen_env(d.path(), &env, &a, b"");
        last.code(0);
        lines(&last.stdout, &mut printed);
        let got: HashSet<Vec<u8>> = printed.iter().cloned().collect();
        let lost = want.difference(&got).count();
        assert_eq!(lost, 0, "trial {trial}: lines lost");
        assert!(got.is_subset(&want), "trial {trial}");
        seen_env(d.path(), &env, &a, b"").ok().no_stdout();
    }
    assert!(kills >= 6, "only {kills} runs were killed");
}
