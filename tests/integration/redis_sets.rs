//! The fingerprint-set layout of a Redis filter (issue 39), against real
//! servers (`scripts/with-redis.sh`): a run costs the server and the network
//! per line, not per filter; sets past their compact encoding are found by
//! `stats` and `verify`; keys of another type are damage; the Bloom layout
//! of seen 0.2 still works beside it. The promises every layout keeps
//! (exactness, concurrent writers, kills, faults, resharding, TLS) are the
//! tests of `redis.rs`, which run on this layout, the default.

use crate::common::{command, reference, seen_env, tmp};
use crate::redis::Private;
use std::io::{Read, Write};
use std::process::Stdio;

/// `INFO stats` field `name` of the server behind `c`.
fn info(c: &mut redis::Connection, name: &str) -> u64 {
    let text: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// Bytes the server sent and received, and commands it ran, so far.
fn traffic(c: &mut redis::Connection) -> [u64; 3] {
    [
        info(c, "total_net_output_bytes"),
        info(c, "total_net_input_bytes"),
        info(c, "total_commands_processed"),
    ]
}

/// Runs `cmd` (a `dedup` reading standard input) on `input`, and once it
/// has printed `output` whole (its work on `input` done) and while it waits
/// for more, reads its peak RSS in KiB (`VmHWM`); then ends its input.
/// (`ru_maxrss` would count the test process's pages the child shared
/// until it ran `seen`: one test binary holds a gigabyte at times.)
fn peak_rss_kib(cmd: &mut std::process::Command, input: &[u8], output: &[u8]) -> u64 {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    stdin.flush().unwrap();
    let mut got = vec![0u8; output.len()];
    child.stdout.take().unwrap().read_exact(&mut got).unwrap();
    assert!(got == output, "the run printed other lines");
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    kib
}

/// Lines `https://<prefix>.example/<i>` for i in `range`.
fn lines(prefix: &str, range: std::ops::Range<u32>) -> Vec<u8> {
    range
        .flat_map(|i| format!("https://{prefix}.example/{i}/a/b?q={i}\n").into_bytes())
        .collect()
}

/// A run of 1,000 lines against a filter sized for 30M costs about what its
/// lines cost, not what the filter holds (the Bloom layout of 0.2 read
/// every shard a run touched, whole: ~160 MB for this filter), and its
/// memory stays under 64 MiB; a one-item `query` is one command on one key.
#[test]
fn a_short_run_costs_per_line_not_per_filter() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/short", srv.addr);
    let env = [("SEEN_JOURNAL_DIR", d.path().join("j").display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let first = lines("a", 0..50_000);
    seen_env(
        d.path(),
        &env,
        ["dedup", "-q", "-n", "30M", "-f", &loc],
        &first,
    )
    .ok()
    .stdout(&first);
    // 1,000 lines, half of them seen before.
    let mut run = lines("a", 49_500..50_000);
    run.extend(lines("b", 0..500));
    let before = traffic(&mut c);
    seen_env(d.path(), &env, ["dedup", "-f", &loc], &run)
        .ok()
        .stdout(&lines("b", 0..500));
    let after = traffic(&mut c);
    let (sent, received) = (after[0] - before[0], after[1] - before[1]);
    // And the writer's memory: the peak RSS of a run of 1,000 more lines,
    // 500 of them new, read while it waits for more input.
    let mut more = lines("a", 49_000..49_500);
    more.extend(lines("c", 0..500));
    let kib = peak_rss_kib(
        command(d.path())
            .env("SEEN_JOURNAL_DIR", d.path().join("j"))
            .args(["dedup", "-f", &loc]),
        &more,
        &lines("c", 0..500),
    );
    assert!(kib < 64 << 10, "a 1,000-line run peaked at {kib} KiB");
    // About 60 bytes each way per line, and a few hundred for the meta key
    // and counters: 256 per line each way leaves room, and is a hundredth
    // of what a whole-filter read costs.
    assert!(
        sent < 256 * 1000 && received < 256 * 1000,
        "a 1,000-line run moved {sent} bytes out of the server and {received} into it"
    );
    let commands = after[2] - before[2];
    assert!(
        (1000..1100).contains(&commands),
        "{commands} commands for 1,000 lines"
    );
    // One item, one key: the meta key and counters are read first.
    let before = traffic(&mut c);
    seen_env(
        d.path(),
        &env,
        ["query", &loc, "https://b.example/7/a/b?q=7"],
        b"",
    )
    .ok()
    .stdout(b"https://b.example/7/a/b?q=7\n");
    let after = traffic(&mut c);
    // PING (on connecting), GET meta, HGETALL counters, SISMEMBER, and the
    // three INFO of `traffic`.
    assert!(after[2] - before[2] <= 7, "{:?} {:?}", before, after);
    assert!(after[0] - before[0] < 16 << 10, "{:?} {:?}", before, after);
}

/// A set pushed past `set-max-intset-entries` still answers right, and
/// `stats` and `verify` say so with what to do; a key of another type
/// where a set should be is damage.
#[test]
fn sets_past_their_compact_form_are_reported() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = tmp();
    let loc = format!("redis://{addr}/{}", crate::common::unique_name("intset"));
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    // -n 100: one set (204 a set at capacity); 700 lines push it past 512.
    let data = lines("c", 0..700);
    seen_env(
        d.path(),
        &env,
        ["dedup", "-q", "-n", "100", "-f", &loc],
        &data,
    )
    .code(0)
    .stderr_has("past the 100 it was sized for");
    let s = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
    let v = s.code(0).stdout_json();
    let sets = &v["sets"];
    assert_eq!(sets["sets"], 1, "{v}");
    assert_eq!(sets["past_limit"], 1, "{v}");
    assert_eq!(sets["fingerprints"], 700, "{v}");
    assert_eq!(v["inserts"], 700, "{v}");
    s.stderr_has("past set-max-intset-entries");
    let set = sets["first_set"].as_str().unwrap().to_string();
    let r = seen_env(d.path(), &env, ["verify", &loc], b"");
    r.code(1).stderr_has("lost their compact form");
    assert!(
        r.stdout_str().contains(&set) && r.stdout_str().contains("hashtable"),
        "{}",
        r.stdout_str()
    );
    // It still answers: every line present, and a new one absent.
    seen_env(d.path(), &env, ["query", "-c", &loc], &data)
        .ok()
        .stdout(b"700\n");
    // Another program writes a string where the set was: damage.
    let mut c = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("SET").arg(&set).arg("x").query(&mut c).unwrap();
    let r = seen_env(d.path(), &env, ["verify", &loc], b"");
    r.code(1).stderr_has("are not sets");
    assert!(
        r.stdout_str().contains("is not a set"),
        "{}",
        r.stdout_str()
    );
    let v = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
    assert_eq!(v.code(0).stdout_json()["sets"]["not_sets"], 1);
    // A writer meeting it stops (exit 2), naming the error; the lines whose
    // test-and-set was refused were not recorded: not printed, kept in the
    // journal for the next run to ask the filter about.
    seen_env(d.path(), &env, ["dedup", "-f", &loc], &lines("c", 0..5))
        .code(2)
        .stderr_has("WRONGTYPE")
        .no_stdout();
}

/// A healthy filter verifies, on a server and on a Cluster; `stats` of it
/// reads counts, not data; `copy` to a file says why it cannot; and the
/// Bloom layout (`--redis-layout bloom`) still works and copies to a file.
#[test]
fn both_layouts_work_and_say_what_they_cannot() {
    let locs = [
        crate::common::redis_server("SEEN_TEST_REDIS")
            .map(|a| format!("redis://{a}/{}", crate::common::unique_name("layouts"))),
        crate::common::redis_server("SEEN_TEST_REDIS_CLUSTER").map(|a| {
            format!(
                "redis+cluster://{a}/{}",
                crate::common::unique_name("layouts")
            )
        }),
    ];
    for loc in locs.into_iter().flatten() {
        let d = tmp();
        let j = d.path().join("j").display().to_string();
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let data = lines("d", 0..20_000);
        let mut twice = data.clone();
        twice.extend_from_slice(&data);
        seen_env(d.path(), &env, ["build", "-n", "1M", "-o", &loc], &twice).ok();
        seen_env(d.path(), &env, ["verify", &loc], b"").ok().stdout(
            format!("{loc}: ok (meta key and 4,902 sets, each compact or empty)\n").as_bytes(),
        );
        let v = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
        let v = v.ok().stdout_json();
        assert_eq!(v["inserts"], 20_000, "{v}");
        assert_eq!(v["sets"]["fingerprints"], 20_000, "{v}");
        assert_eq!(v["sets"]["fingerprint_bits"], 32, "{v}");
        // The `sets` object has the members docs/STATS.md lists.
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/STATS.md"),
        )
        .unwrap();
        let documented: std::collections::BTreeSet<String> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `sets."))
            .map(|l| l.split('`').next().unwrap().to_string())
            .collect();
        let got: std::collections::BTreeSet<String> =
            v["sets"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(got, documented, "`sets` members against docs/STATS.md");
        let fpp = v["estimated_fpp"].as_f64().unwrap();
        assert!(fpp > 0.0 && fpp < 1e-8, "{v}");
        let file = d.path().join("f.seen");
        seen_env(d.path(), &env, ["copy", &loc, file.to_str().unwrap()], b"")
            .code(2)
            .stderr_has("--redis-layout bloom");
        assert!(!file.exists());
        // The same lines in the Bloom layout: same answers, and a copy.
        let bloom = format!("{loc}-bloom");
        seen_env(
            d.path(),
            &env,
            ["dedup", "-n", "1M", "--redis-layout", "bloom", "-f", &bloom],
            &twice,
        )
        .ok()
        .stdout(&reference(&twice, b'\n', false));
        seen_env(
            d.path(),
            &env,
            ["copy", &bloom, file.to_str().unwrap()],
            b"",
        )
        .ok();
        let probe = lines("e", 0..2_000);
        for f in [loc.as_str(), bloom.as_str(), file.to_str().unwrap()] {
            seen_env(d.path(), &env, ["query", "-c", f], &data)
                .ok()
                .stdout(b"20000\n");
            seen_env(d.path(), &env, ["query", "-c", f], &probe)
                .code(1)
                .stdout(b"0\n");
        }
        // A Bloom-layout filter is still opened as one by a writer that
        // asks for sets: the layout is the filter's, not the run's.
        seen_env(d.path(), &env, ["dedup", "-f", &bloom], &probe)
            .ok()
            .stdout(&probe);
        let v = seen_env(d.path(), &env, ["stats", "--json", &bloom], b"");
        assert!(v.ok().stdout_json()["sets"].is_null());
    }
}

/// A server that dies during a run of the set layout: exit 2, naming it.
#[test]
fn a_server_lost_mid_run_stops_a_sets_run() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let mut srv = Private::start(d.path());
    let addr = srv.addr.clone();
    let loc = format!("redis://{addr}/lost");
    let mut w = command(d.path())
        .env("SEEN_JOURNAL_DIR", d.path().join("j"))
        .args(["dedup", "--redis-timeout", "300ms", "-n", "10k", "-f", &loc])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = w.stdin.take().unwrap();
    let mut stdout = w.stdout.take().unwrap();
    stdin.write_all(b"first\n").unwrap();
    stdin.flush().unwrap();
    let mut buf = [0u8; 6];
    stdout.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"first\n");
    srv.child.kill().unwrap();
    srv.child.wait().unwrap();
    let _ = stdin.write_all(b"second\n");
    drop(stdin);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(2), "{err}");
    assert!(err.contains(&addr), "{err}");
}

/// A line given again within a batch sends nothing more: a writer sends
/// one `SADD` per distinct line of a batch, and `forget` one list `SADD`
/// per distinct key. Two commands on one key could otherwise run out of
/// order while a Cluster reshards (the first redirected and sent again
/// after the second ran): the line was then printed at its second place,
/// not its first (seen once in `redis::resharding_during_a_run_changes_nothing`).
#[test]
fn a_line_repeated_in_a_batch_is_sent_once() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let mut c = srv.conn();
    let loc = format!("redis://{}/repeats", srv.addr);
    // 500 lines, each three times, interleaved; 33 KB, one batch.
    let input: Vec<u8> = (0..1500u32)
        .flat_map(|k| format!("https://r.example/{}\n", k * 7919 % 500).into_bytes())
        .collect();
    let before = crate::common::redis_calls(&mut c, "sadd");
    seen_env(d.path(), &[], ["dedup", "-n", "10k", "-f", &loc], &input)
        .ok()
        .stdout(&reference(&input, b'\n', false));
    assert_eq!(crate::common::redis_calls(&mut c, "sadd") - before, 500);
    // Ten keys, each twice: forgotten at both places, listed once.
    let keys: Vec<u8> = (0..20u32)
        .flat_map(|k| format!("https://r.example/{}\n", k % 10).into_bytes())
        .collect();
    let before = crate::common::redis_calls(&mut c, "sadd");
    let s = seen_env(
        d.path(),
        &[],
        ["forget", "--summary", "--json", &loc],
        &keys,
    );
    s.code(0);
    let v: serde_json::Value = serde_json::from_str(s.stderr.trim()).unwrap();
    assert_eq!(v["forgotten"].as_u64(), Some(20), "{v}");
    assert_eq!(v["list_entries"], 10, "{v}");
    assert_eq!(crate::common::redis_calls(&mut c, "sadd") - before, 10);
    seen_env(d.path(), &[], ["query", "-c", &loc], &keys)
        .code(1)
        .stdout(b"0\n");
}
