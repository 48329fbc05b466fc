//! `seen forget` on a Redis filter of fingerprint sets (issue 41), against
//! real servers (`scripts/with-redis.sh`): a standalone server and a
//! Cluster. A forgotten key's 128-bit hash goes on its set's forget list
//! (a Redis set in the same hash slot); a writer that finds a key there
//! takes it off with `SREM`, which Redis answers 1 to exactly one writer.

use crate::common::{
    command, numbered, redis_server, run_killed_blocked_env, seen_env, tmp, unique_name, write,
};
use crate::redis::{cluster, standalone};
use crate::redis_edges::{exactly_once, tally};
use std::process::Stdio;

/// The test's filter on the standalone server and on the Cluster.
fn locations(test: &str) -> impl Iterator<Item = String> {
    [standalone(test), cluster(test)].into_iter().flatten()
}

/// The keys on the filter's forget lists, as `stats --json` counts them.
fn listed(dir: &std::path::Path, env: &[(&str, &str)], loc: &str) -> u64 {
    let v = seen_env(dir, env, ["stats", "--json", loc], b"")
        .ok()
        .stdout_json();
    v["forget"]["entries"]
        .as_u64()
        .unwrap_or_else(|| panic!("{v}"))
}

/// Runs `dedup -f loc` on each input at once; returns each one's output.
fn writers(
    d: &tempfile::TempDir,
    env: &[(&str, &str)],
    loc: &str,
    inputs: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let children: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(w, data)| {
            let path = write(d, &format!("w{w}.txt"), data);
            command(d.path())
                .envs(env.iter().copied())
                .env("SEEN_CHUNK_BYTES", "16384")
                .args(["dedup", "-f", loc])
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
            let o = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "{err}");
            o.stdout
        })
        .collect()
}

/// Forgotten keys are absent to `query` and counted by `stats`; four
/// writers at once, each given every forgotten line and lines never seen,
/// print each of them exactly once between them, and the lists are empty
/// after. A key not present is not forgotten (exit 1), and no other key
/// changes its answer.
#[test]
fn forgotten_lines_are_absent_then_printed_once_across_writers() {
    for loc in locations("fg") {
        let d = tmp();
        let j = d.path().join("j").display().to_string();
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let run = |args: &[&str], input: &[u8]| seen_env(d.path(), &env, args, input);
        let old = numbered("https://o.example/", 0..20_000);
        run(&["dedup", "-q", "-n", "100k", "-f", &loc], &old)
            .ok()
            .stdout(&old);
        let gone = numbered("https://o.example/", 5_000..7_000);
        write(&d, "gone.txt", &gone);
        let s = run(
            &["forget", "--summary", "--json", &loc, "--file", "gone.txt"],
            b"",
        );
        s.code(0).no_stdout();
        let v: serde_json::Value = serde_json::from_str(s.stderr.trim()).unwrap();
        assert_eq!(
            (v["forgotten"].as_u64(), v["absent"].as_u64()),
            (Some(2000), Some(0)),
            "{v}"
        );
        assert_eq!(v["list_entries"], 2000, "{v}");
        // Forgotten already, and never recorded: nothing present, exit 1.
        run(&["forget", &loc, "--file", "gone.txt"], b"").code(1);
        run(&["forget", &loc, "https://o.example/nowhere"], b"").code(1);
        run(&["query", "-c", &loc], &old).ok().stdout(b"18000\n");
        run(&["query", "-c", &loc], &gone).code(1).stdout(b"0\n");
        run(&["query", &loc, "https://o.example/4999"], b"").code(0);
        assert_eq!(listed(d.path(), &env, &loc), 2000);
        run(&["verify", &loc], b"").code(0);
        // Four writers, each with every forgotten line, 3,000 new ones (a
        // third of them each writer's own) and some old ones, in orders of
        // their own.
        let new = numbered("https://n.example/", 0..3_000);
        let inputs: Vec<Vec<u8>> = (0..4u32)
            .map(|w| {
                let mut v = Vec::new();
                v.extend(numbered(
                    "https://o.example/",
                    (w * 1000)..(w * 1000 + 4000),
                ));
                v.extend(numbered("https://n.example/", 0..2_000));
                v.extend(numbered(
                    "https://n.example/",
                    (2000 + w * 250)..(2250 + w * 250),
                ));
                v.extend_from_slice(&gone);
                v
            })
            .collect();
        let outs = writers(&d, &env, &loc, &inputs);
        let outs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
        exactly_once(&outs, &[gone.clone(), new.clone()].concat(), &loc);
        assert_eq!(listed(d.path(), &env, &loc), 0);
        let all = [old.clone(), new.clone()].concat();
        run(&["query", "-c", &loc], &all).ok().stdout(b"23000\n");
    }
}

/// A writer killed while it owes lines it took off the forget lists (every
/// line of its input was forgotten, so each is new only by its `SREM`):
/// its next run prints them, and no line is lost. A line is printed twice
/// only around the kill, as docs/REDIS.md says (by the killed run, whose
/// last write was cut short, and by the replay), never by a later run.
#[test]
fn a_killed_writers_unforgotten_lines_come_back() {
    for loc in locations("fgk") {
        let d = tmp();
        let ja = d.path().join("a").display().to_string();
        let env = [("SEEN_JOURNAL_DIR", ja.as_str())];
        let data = numbered("https://k.example/page/", 0..40_000);
        write(&d, "in.txt", &data);
        seen_env(
            d.path(),
            &env,
            ["dedup", "-q", "-n", "100k", "-f", &loc, "in.txt"],
            b"",
        )
        .ok();
        seen_env(d.path(), &env, ["forget", &loc, "--file", "in.txt"], b"").code(0);
        let (a1, killed) = run_killed_blocked_env(d.path(), &env, &["dedup", "-f", &loc, "in.txt"]);
        assert!(killed);
        let a2 = seen_env(d.path(), &env, ["dedup", "-f", &loc], b"");
        a2.code(0).stderr_has("and not written (it was killed");
        let whole = a1.iter().rposition(|&x| x == b'\n').map_or(0, |i| i + 1);
        // The rest of the input, by a run that did not die.
        let a3 = seen_env(d.path(), &env, ["dedup", "-f", &loc, "in.txt"], b"");
        a3.code(0);
        let n = tally(&[&a1[..whole], &a2.stdout, &a3.stdout]);
        assert_eq!(n.len(), 40_000, "{loc}: lines printed");
        let before = tally(&[&a1[..whole], &a2.stdout]);
        let after = tally(&[&a3.stdout]);
        assert!(
            after.keys().all(|l| !before.contains_key(l)),
            "{loc}: a line printed around the kill was printed again later"
        );
        assert!(
            !after.is_empty() && !a2.stdout.is_empty(),
            "{loc}: the kill owed nothing"
        );
        assert_eq!(listed(d.path(), &env, &loc), 0);
    }
}

/// A `forget` running while writers record the same keys: each key's forget
/// is one step, before or after a writer's test-and-set of it. So a
/// forgotten key is printed at most once, and it is present after exactly
/// when a writer printed it (taken off the list by the writer that printed
/// it, or never listed because the writer came first is impossible: the
/// keys were all present before).
#[test]
fn a_forget_beside_running_writers_is_seen_key_by_key() {
    for loc in locations("fgc") {
        let d = tmp();
        let j = d.path().join("j").display().to_string();
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let keys = numbered("https://c.example/", 0..30_000);
        write(&d, "keys.txt", &keys);
        seen_env(
            d.path(),
            &env,
            ["dedup", "-q", "-n", "100k", "-f", &loc, "keys.txt"],
            b"",
        )
        .ok();
        let children: Vec<_> = (0..2)
            .map(|w| {
                command(d.path())
                    .envs(env.iter().copied())
                    .env("SEEN_CHUNK_BYTES", "4096")
                    .args(["dedup", "-f", &loc, "keys.txt"])
                    .env("SEEN_JOURNAL_DIR", format!("{j}{w}"))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let f = seen_env(
            d.path(),
            &[("SEEN_FORGET_BATCH", "1000")],
            ["forget", &loc, "--file", "keys.txt"],
            b"",
        );
        f.code(0);
        let outs: Vec<Vec<u8>> = children
            .into_iter()
            .map(|c| {
                let o = c.wait_with_output().unwrap();
                assert_eq!(
                    o.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&o.stderr)
                );
                o.stdout
            })
            .collect();
        let n = tally(&outs.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert_eq!(
            n.values().filter(|&&c| c > 1).count(),
            0,
            "{loc}: printed twice"
        );
        // Present now: exactly the keys printed (the rest are still listed).
        let q = seen_env(d.path(), &env, ["query", &loc, "--file", "keys.txt"], b"");
        let present = tally(&[&q.stdout]);
        assert_eq!(present.len(), n.len(), "{loc}: present vs printed");
        assert!(present.keys().all(|k| n.contains_key(k)), "{loc}");
        assert_eq!(listed(d.path(), &env, &loc), 30_000 - n.len() as u64);
    }
}

/// The Bloom layout keeps no forget lists: `forget` refuses, saying what
/// can; a filter of sets replaced with `build --force` leaves no lists.
#[test]
fn the_bloom_layout_refuses_and_a_replaced_filter_leaves_no_lists() {
    let Some(addr) = redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = tmp();
    let name = unique_name("fgb");
    let loc = format!("redis://{addr}/{name}");
    let lines = numbered("b", 0..1000);
    write(&d, "l.txt", &lines);
    seen_env(
        d.path(),
        &[],
        [
            "build",
            "-q",
            "--redis-layout",
            "bloom",
            "-n",
            "10k",
            "-o",
            &loc,
            "l.txt",
        ],
        b"",
    )
    .ok();
    seen_env(d.path(), &[], ["forget", &loc, "b1"], b"")
        .code(2)
        .stderr_has("Bloom layout");
    let sets = format!("redis://{addr}/{name}s");
    seen_env(
        d.path(),
        &[],
        ["build", "-q", "-n", "10k", "-o", &sets, "l.txt"],
        b"",
    )
    .ok();
    seen_env(d.path(), &[], ["forget", &sets, "--file", "l.txt"], b"").code(0);
    let mut c = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let count = |c: &mut redis::Connection| -> usize {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("seen:{{{name}s:*}}:*:f"))
            .query(c)
            .unwrap();
        keys.len()
    };
    assert!(count(&mut c) > 0);
    seen_env(
        d.path(),
        &[],
        ["build", "-q", "--force", "-n", "10k", "-o", &sets, "l.txt"],
        b"",
    )
    .ok();
    assert_eq!(count(&mut c), 0);
    seen_env(
        d.path(),
        &[],
        ["query", "-c", &sets, "--file", "l.txt"],
        b"",
    )
    .ok()
    .stdout(b"1000\n");
}

/// What lists cost a writer: nothing while no key was ever forgotten (one
/// `SADD` a line), then an `SREM` only for lines whose set has a forget
/// list (one key forgotten, of a filter of about 490 sets: a few lines of
/// 5,000), and nothing again once every listed key was recorded again.
#[test]
fn a_writer_pays_for_lists_only_where_keys_are_listed() {
    if redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = crate::redis::Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/cost", srv.addr);
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let lines = numbered("https://cost.example/", 0..5_000);
    write(&d, "l.txt", &lines);
    seen_env(
        d.path(),
        &env,
        ["build", "-q", "-n", "100k", "-o", &loc, "l.txt"],
        b"",
    )
    .ok();
    let run = |c: &mut redis::Connection| {
        let (sadd, srem) = (
            crate::common::redis_calls(c, "sadd"),
            crate::common::redis_calls(c, "srem"),
        );
        seen_env(d.path(), &env, ["dedup", "-f", &loc, "l.txt"], b"").code(0);
        (
            crate::common::redis_calls(c, "sadd") - sadd,
            crate::common::redis_calls(c, "srem") - srem,
        )
    };
    assert_eq!(run(&mut c), (5_000, 0));
    seen_env(
        d.path(),
        &env,
        ["forget", &loc, "https://cost.example/77"],
        b"",
    )
    .code(0);
    let (sadd, srem) = run(&mut c);
    assert_eq!(sadd, 5_000);
    assert!((1..=60).contains(&srem), "{srem} SREMs for one listed key");
    // That run recorded the key again: the lists are empty, and cost
    // nothing.
    assert_eq!(run(&mut c), (5_000, 0));
}
