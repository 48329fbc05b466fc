//! Filters in Redis (issue 22), against real servers: a standalone
//! `redis-server` and a 3-master Redis Cluster, started by
//! `scripts/with-redis.sh` (which `.ci/run` uses), found through
//! `SEEN_TEST_REDIS` and `SEEN_TEST_REDIS_CLUSTER`. Without them a test
//! says so and passes, except under CI (`CI` set), where it fails.
//!
//! Every test uses filter names of its own (test name, process id, time), so
//! tests run in parallel on the same servers and leave nothing that a later
//! run could trip on.

use crate::common::{
    Rng, command, distinct, reference, run_killed_blocked_env, run_killed_env, seen_env, tmp, write,
};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::process::Stdio;

use crate::common::redis_server as server;

/// A filter location on the standalone server, named for `test`.
pub(crate) fn standalone(test: &str) -> Option<String> {
    server("SEEN_TEST_REDIS").map(|a| format!("redis://{a}/{}", unique(test)))
}

/// A filter location on the Cluster, named for `test`.
pub(crate) fn cluster(test: &str) -> Option<String> {
    server("SEEN_TEST_REDIS_CLUSTER").map(|a| format!("redis+cluster://{a}/{}", unique(test)))
}

use crate::common::unique_name as unique;

/// Lines `u<i>` for i in 0..n with about a third repeated, shuffled by `seed`.
pub(crate) fn urls(n: u32, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        let i = rng.below(u64::from(n) * 2 / 3);
        out.extend_from_slice(format!("https://example.org/{i}/page\n").as_bytes());
    }
    out
}

/// The journal directory of a test (inside its temp dir).
fn journal(d: &tempfile::TempDir) -> String {
    d.path().join("journal").display().to_string()
}

#[test]
fn dedup_on_a_server_is_awk_and_remembers() {
    for loc in [standalone("awk"), cluster("awk")].into_iter().flatten() {
        let d = tmp();
        let j = journal(&d);
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        let data = urls(30_000, 1);
        let run = seen_env(
            d.path(),
            &env,
            ["dedup", "-n", "100k", "-p", "1e-9", "-f", &loc],
            &data,
        );
        run.ok().stdout(&reference(&data, b'\n', false));
        // A second run prints nothing; a third prints only the lines not seen.
        seen_env(d.path(), &env, ["dedup", "-f", &loc], &data)
            .ok()
            .no_stdout();
        let more = urls(30_000, 2);
        let mut known: HashSet<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let want = crate::common::reference_after(&mut known, &more, b'\n', false);
        seen_env(d.path(), &env, ["dedup", "-f", &loc], &more)
            .ok()
            .stdout(&want);
        // query and stats read it.
        let all: Vec<u8> = [data.clone(), more.clone()].concat();
        let c = seen_env(d.path(), &env, ["query", "-c", &loc], &all);
        c.ok()
            .stdout(format!("{}\n", all.iter().filter(|&&b| b == b'\n').count()).as_bytes());
        seen_env(
            d.path(),
            &env,
            ["query", &loc, "https://example.org/nowhere"],
            b"",
        )
        .code(1)
        .no_stdout();
        seen_env(
            d.path(),
            &env,
            ["query", &loc, "https://example.org/1/page"],
            b"",
        )
        .ok()
        .stdout(b"https://example.org/1/page\n");
        let s = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
        s.ok();
        let v = s.stdout_json();
        let inserts = v["inserts"].as_u64().unwrap();
        assert_eq!(inserts as usize, distinct(&all, b'\n'), "{v}");
        let est = v["estimated_items"].as_f64().unwrap();
        assert!((est - inserts as f64).abs() < 0.02 * inserts as f64, "{v}");
        assert_eq!(v["file"].as_str().unwrap(), loc);
        // Nothing is left in the journal after runs that went well.
        let left = std::fs::read_dir(&j).map(|r| {
            r.flatten()
                .flat_map(|e| std::fs::read_dir(e.path()).unwrap())
                .count()
        });
        assert_eq!(left.unwrap_or(0), 0);
    }
}

#[test]
fn a_cluster_filter_spreads_over_every_master() {
    let Some(nodes) = server("SEEN_TEST_REDIS_CLUSTER") else {
        return;
    };
    let name = unique("spread");
    let loc = format!("redis+cluster://{nodes}/{name}");
    let d = tmp();
    let data = urls(20_000, 3);
    let input = write(&d, "in.txt", &data);
    seen_env(
        d.path(),
        &[],
        ["build", "-n", "1M", "-o", &loc, input.to_str().unwrap()],
        b"",
    )
    .ok();
    // Every master holds some of its shards.
    for addr in nodes.split(',') {
        let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
        let mut conn = client.get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("seen:{{{name}:*"))
            .query(&mut conn)
            .unwrap();
        assert!(
            keys.len() >= 8,
            "{addr} holds {} shards of {name}",
            keys.len()
        );
    }
    // Lines from the build are in it; others are not.
    seen_env(
        d.path(),
        &[],
        ["query", "-q", "--all", &loc, "-f", input.to_str().unwrap()],
        b"",
    )
    .ok();
    seen_env(d.path(), &[], ["query", &loc, "https://example.org/x"], b"").code(1);
}

/// Promise 2: while every writer lives, each distinct line is printed by
/// exactly one of them (4 writers, overlapping shuffled inputs, a Cluster).
#[test]
fn concurrent_writers_print_each_line_once() {
    let Some(loc) = cluster("four") else { return };
    let d = tmp();
    let j = journal(&d);
    // Create it first, so no writer's creation note is in the way.
    seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", j.as_str())],
        ["dedup", "-n", "200k", "-p", "1e-9", "-f", &loc],
        b"",
    )
    .ok();
    let inputs: Vec<Vec<u8>> = (0..4).map(|w| urls(40_000, 10 + w)).collect();
    let children: Vec<_> = inputs
        .iter()
        .enumerate()
        .map(|(w, data)| {
            let path = write(&d, &format!("in{w}"), data);
            command(d.path())
                .env("SEEN_JOURNAL_DIR", &j)
                .env("SEEN_CHUNK_BYTES", "32768")
                .args(["dedup", "-f", &loc])
                .arg(path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut printed: HashMap<Vec<u8>, usize> = HashMap::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for l in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            *printed.entry(l.to_vec()).or_default() += 1;
        }
    }
    let all: HashSet<&[u8]> = inputs
        .iter()
        .flat_map(|d| d.split(|&b| b == b'\n').filter(|l| !l.is_empty()))
        .collect();
    assert_eq!(printed.len(), all.len(), "every distinct line printed");
    let twice: Vec<_> = printed.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "{} lines printed by two writers",
        twice.len()
    );
}

/// Promise 3: SIGKILL at any moment loses no line: what a killed run had
/// judged new and not written is printed by the next run on the machine
/// (from its journal), or was printed already; a line may be printed twice
/// only around a kill.
#[test]
fn sigkill_at_random_moments_loses_no_line() {
    let Some(base) = standalone("kill") else {
        return;
    };
    let mut rng = Rng(0x00C0_FFEE);
    let data = urls(40_000, 4);
    let want: HashSet<Vec<u8>> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let total: usize = want.iter().map(|l| l.len() + 1).sum();
    let mut kills = 0;
    for trial in 0..6 {
        let d = tmp();
        let j = journal(&d);
        let env = [("SEEN_JOURNAL_DIR", j.as_str())];
        write(&d, "in.txt", &data);
        let loc = format!("{base}-{trial}");
        let mut printed: Vec<Vec<u8>> = Vec::new();
        for _ in 0..3 {
            let at = rng.below(total as u64) as usize;
            let (out, killed) = run_killed_env(
                d.path(),
                &env,
                &["dedup", "-n", "100k", "-p", "1e-9", "-f", &loc, "in.txt"],
                at,
            );
            kills += usize::from(killed);
            let whole = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            printed.extend(
                out[..whole]
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
        // A last run to the end.
        let last = seen_env(d.path(), &env, ["dedup", "-f", &loc, "in.txt"], b"");
        last.code(0);
        printed.extend(
            last.stdout
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
        let got: HashSet<Vec<u8>> = printed.iter().cloned().collect();
        let lost: Vec<_> = want.difference(&got).collect();
        assert!(lost.is_empty(), "trial {trial}: {} lines lost", lost.len());
        assert!(
            got.is_subset(&want),
            "trial {trial}: printed a line not in the input"
        );
        // And the filter holds them all now.
        seen_env(d.path(), &env, ["dedup", "-f", &loc, "in.txt"], b"")
            .ok()
            .no_stdout();
    }
    assert!(kills >= 6, "only {kills} runs were killed");
}

/// A writer killed with lines judged new and not written, then another
/// writer meeting the same lines: the other does not print them (the filter
/// holds them), the killed writer's next run on its machine does.
#[test]
fn a_killed_writers_lines_come_back_with_its_next_run() {
    let Some(loc) = standalone("other") else {
        return;
    };
    let d = tmp();
    let (ja, jb) = (
        d.path().join("a").display().to_string(),
        d.path().join("b").display().to_string(),
    );
    let data = urls(40_000, 5);
    write(&d, "in.txt", &data);
    let want: HashSet<Vec<u8>> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    // Writer A: killed blocked on a full pipe, with lines judged new and
    // not written (killed after some bytes, it could die between chunks
    // owing nothing: CI saw that once).
    let (a1, killed) = run_killed_blocked_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", ja.as_str())],
        &["dedup", "-n", "100k", "-p", "1e-9", "-f", &loc, "in.txt"],
    );
    assert!(killed);
    // Writer B (another machine: another journal) meets every line.
    let b = seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", jb.as_str())],
        ["dedup", "-f", &loc, "in.txt"],
        b"",
    );
    b.code(0);
    // A's next run, with nothing new to read, prints what it owed.
    let a2 = seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", ja.as_str())],
        ["dedup", "-f", &loc],
        b"",
    );
    a2.code(0);
    let owed = a2
        .stdout
        .split(|&x| x == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(owed > 0, "the killed run owed nothing: {}", a2.stderr);
    a2.stderr_has("and not written (it was killed");
    let mut got: HashSet<Vec<u8>> = HashSet::new();
    let whole = a1.iter().rposition(|&x| x == b'\n').map_or(0, |i| i + 1);
    for out in [&a1[..whole], &b.stdout[..], &a2.stdout[..]] {
        got.extend(
            out.split(|&x| x == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    let lost = want.difference(&got).count();
    assert_eq!(lost, 0, "{lost} lines lost");
}

#[test]
fn a_server_that_is_not_there_is_named() {
    let d = tmp();
    for loc in ["redis://127.0.0.1:1/x", "redis+cluster://127.0.0.1:1/x"] {
        let r = seen_env(d.path(), &[], ["query", loc, "a"], b"");
        r.code(2)
            .stderr_has("127.0.0.1:1")
            .stderr_has("cannot connect");
        let r = seen_env(
            d.path(),
            &[("SEEN_JOURNAL_DIR", "j")],
            ["dedup", "-f", loc],
            b"a\n",
        );
        r.code(2).no_stdout().stderr_has("127.0.0.1:1");
    }
    // A password never shows.
    let r = seen_env(
        d.path(),
        &[],
        ["stats", "redis://u:hunter2@127.0.0.1:1/x"],
        b"",
    );
    r.code(2);
    assert!(!r.stderr.contains("hunter2"), "{}", r.stderr);
}

#[test]
fn writers_must_key_lines_alike() {
    let Some(loc) = standalone("keys") else {
        return;
    };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    seen_env(
        d.path(),
        &env,
        ["dedup", "-n", "1000", "-k", "2", "-t", ",", "-f", &loc],
        b"1,a\n2,a\n3,b\n",
    )
    .ok()
    .stdout(b"1,a\n3,b\n");
    let r = seen_env(
        d.path(),
        &env,
        ["dedup", "-k", "1", "-t", ",", "-f", &loc],
        b"4,c\n",
    );
    r.code(2)
        .no_stdout()
        .stderr_has("writers sharing a filter must key lines alike");
    let r = seen_env(
        d.path(),
        &env,
        ["build", "--add", "--url", "-o", &loc],
        b"4,c\n",
    );
    r.code(2).stderr_has("must key lines alike");
    // Its own keys, without flags, are used.
    seen_env(d.path(), &env, ["dedup", "-f", &loc], b"5,a\n6,c\n")
        .ok()
        .stdout(b"6,c\n");
}

#[test]
fn build_makes_and_replaces_only_when_told() {
    let Some(loc) = standalone("build") else {
        return;
    };
    let d = tmp();
    let a = write(&d, "a", b"x\ny\n");
    let b = write(&d, "b", b"z\n");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    seen_env(d.path(), &[], ["build", "-n", "1000", "-o", &loc, a], b"").ok();
    seen_env(d.path(), &[], ["build", "-o", &loc, b], b"")
        .code(2)
        .stderr_has("already exists: pass --force");
    seen_env(d.path(), &[], ["build", "--add", "-o", &loc, b], b"").ok();
    seen_env(
        d.path(),
        &[],
        ["query", "--all", "-q", &loc, "x", "y", "z"],
        b"",
    )
    .ok();
    seen_env(
        d.path(),
        &[],
        ["build", "--force", "-n", "1000", "-o", &loc, b],
        b"",
    )
    .ok();
    seen_env(d.path(), &[], ["query", &loc, "x", "z"], b"")
        .code(0)
        .stdout(b"z\n");
    let v = seen_env(d.path(), &[], ["stats", "--json", &loc], b"");
    assert_eq!(v.ok().stdout_json()["inserts"], 1);
    // A filter that is not there.
    seen_env(d.path(), &[], ["query", &format!("{loc}-none"), "x"], b"")
        .code(2)
        .stderr_has("no such filter");
}

/// MOVED and ASK during a run. A writer reads the slot map when it starts;
/// after its first third is printed, 1500 slots move to another master
/// (`redis-cli --cluster reshard`), so its next commands to them are
/// answered MOVED (the test checks that shard keys did move); during the
/// second third, slots move back while it runs (MOVED and ASK). Its output
/// is still exactly awk's.
#[test]
fn resharding_during_a_run_changes_nothing() {
    reshard_during_a_run(&["-n", "600k", "-p", "1e-9"]);
}

/// The same with a filter that grows (generations: a script call per
/// group, over keys that move with their slot).
#[test]
fn resharding_during_a_run_of_a_growing_filter_changes_nothing() {
    reshard_during_a_run(&["--growth", "2", "-n", "100k"]);
}

/// A run of `dedup -f` with the sizing flags `size` on the Cluster while
/// slots move away and back (see `resharding_during_a_run_changes_nothing`).
fn reshard_during_a_run(size: &[&str]) {
    // One reshard of the Cluster at a time.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(nodes) = server("SEEN_TEST_REDIS_CLUSTER") else {
        return;
    };
    let name = unique("reshard");
    let loc = format!("redis+cluster://{nodes}/{name}");
    let d = tmp();
    let j = journal(&d);
    // Big chunks (the default), so each batch goes out in several parts
    // with more than one in flight when a node redirects.
    let data = urls(600_000, 6);
    let cut = |n: usize| {
        data.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(n)
            .unwrap()
            .0
            + 1
    };
    let (one, two) = (cut(199_999), cut(399_999));
    let parts = [
        data[..one].to_vec(),
        data[one..two].to_vec(),
        data[two..].to_vec(),
    ];
    let first = nodes.split(',').next().unwrap().to_string();
    let conn = |addr: &str| {
        redis::Client::open(format!("redis://{addr}/"))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let id = |addr: &str| -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut conn(addr))
            .unwrap()
    };
    // The filter's keys that `addr` holds.
    let keys_on = |addr: &str| -> usize {
        let k: Vec<String> = redis::cmd("KEYS")
            .arg(format!("seen:{{{name}:*"))
            .query(&mut conn(addr))
            .unwrap();
        k.len()
    };
    let addrs: Vec<&str> = nodes.split(',').collect();
    let (from, to) = (id(addrs[0]), id(addrs[2]));
    let reshard = |a: &str, b: &str| {
        let st = std::process::Command::new("redis-cli")
            .args([
                "--cluster",
                "reshard",
                &first,
                "--cluster-from",
                a,
                "--cluster-to",
                b,
            ])
            .args(["--cluster-slots", "1500", "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    };
    let mut writer = command(d.path())
        .env("SEEN_JOURNAL_DIR", &j)
        .arg("dedup")
        .args(size)
        .args(["-f", &loc])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    let (go, gate) = std::sync::mpsc::channel::<()>();
    let feeder = std::thread::spawn(move || {
        for (i, p) in parts.iter().enumerate() {
            if i > 0 && gate.recv().is_err() {
                return;
            }
            stdin.write_all(p).unwrap();
            stdin.flush().unwrap();
        }
    });
    // The first third, all printed: nothing is in flight. (Read in a
    // thread: a writer that prints less must fail the test, not hang it.)
    let mut out = writer.stdout.take().unwrap();
    let want_first = reference(&data[..one], b'\n', false);
    let (tx, rx) = std::sync::mpsc::channel();
    let len = want_first.len();
    std::thread::spawn(move || {
        let mut got = vec![0u8; len];
        let r = out.read_exact(&mut got).map(|()| (got, out));
        let _ = tx.send(r);
    });
    let Ok(Ok((mut got, mut out))) = rx.recv_timeout(std::time::Duration::from_secs(120)) else {
        let _ = writer.kill();
        panic!("the writer did not print the first third's lines");
    };
    crate::common::assert_same(&got, &want_first, "first third");
    let before = keys_on(addrs[0]);
    reshard(&from, &to);
    let after = keys_on(addrs[0]);
    assert!(after < before, "no shard key moved ({before} -> {after})");
    let reader = std::thread::spawn(move || {
        out.read_to_end(&mut got).unwrap();
        got
    });
    go.send(()).unwrap();
    reshard(&to, &from);
    go.send(()).unwrap();
    feeder.join().unwrap();
    let got = reader.join().unwrap();
    let mut err = String::new();
    writer
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(writer.wait().unwrap().success(), "{err}");
    crate::common::assert_same(&got, &reference(&data, b'\n', false), "reshard");
}

/// A `redis-server` of a test's own, on a free port, in `dir`; killed when
/// dropped.
pub(crate) struct Private {
    pub(crate) child: std::process::Child,
    pub(crate) addr: String,
}

impl Private {
    pub(crate) fn start(dir: &std::path::Path) -> Private {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("127.0.0.1:{port}");
        for _ in 0..400 {
            if let Ok(c) = redis::Client::open(format!("redis://{addr}/"))
                && let Ok(mut c) = c.get_connection()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return Private { child, addr };
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        panic!("redis-server did not start");
    }

    pub(crate) fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://{}/", self.addr))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server that dies during a run: exit 2, naming it; what was printed
/// was never printed twice.
#[test]
fn a_server_lost_mid_run_stops_the_run() {
    if server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    // A server of this test's own.
    let mut srv = Private::start(d.path());
    let addr = srv.addr.clone();
    let loc = format!("redis://{addr}/lost");
    // The Bloom layout knows the bits it read: `first` again costs the
    // server nothing, so it is not printed twice even though the reply of
    // the batch with it is lost. (The fingerprint-set layout keeps nothing
    // of the filter: a lost reply prints every line of its batch, some
    // perhaps twice, as docs/REDIS.md says; `a_lost_reply_loses_no_line`
    // checks that layout.)
    let mut w = command(d.path())
        .env("SEEN_JOURNAL_DIR", d.path().join("j"))
        .args([
            "dedup",
            "--redis-timeout",
            "300ms",
            "-n",
            "10k",
            "--redis-layout",
            "bloom",
        ])
        .args(["-f", &loc])
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
    let _ = stdin.write_all(b"second\nfirst\n");
    drop(stdin);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = w.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains(&addr), "{err}");
    assert!(
        !rest.windows(6).any(|x| x == b"first\n"),
        "first printed twice"
    );
}

/// File → Redis → file is byte for byte the same file; the Redis copy
/// answers as the file does; verify checks the shards.
#[test]
fn copies_between_a_file_and_redis_are_exact() {
    for loc in [standalone("copy"), cluster("copy")].into_iter().flatten() {
        let d = tmp();
        let data = urls(20_000, 7);
        let input = write(&d, "in.txt", &data);
        let input = input.to_str().unwrap();
        // A growing filter of several layers, keyed by URL.
        seen_env(
            d.path(),
            &[],
            ["build", "--url", "-n", "3000", "-o", "a.seen", input],
            b"",
        )
        .ok();
        seen_env(d.path(), &[], ["copy", "a.seen", &loc], b"")
            .ok()
            .no_stdout();
        seen_env(d.path(), &[], ["copy", &loc, "b.seen"], b"").ok();
        let (a, b) = (
            std::fs::read(d.path().join("a.seen")).unwrap(),
            std::fs::read(d.path().join("b.seen")).unwrap(),
        );
        assert!(a == b, "{loc}: the round trip changed the file");
        // Same answers from the copy in Redis, on lines in and out of it.
        let probe: Vec<u8> = [data.clone(), urls(5_000, 8)].concat();
        let from_file = seen_env(d.path(), &[], ["query", "--json", "a.seen"], &probe);
        let from_redis = seen_env(d.path(), &[], ["query", "--json", &loc], &probe);
        assert_eq!(from_file.ok().stdout, from_redis.ok().stdout);
        // Neither target is overwritten without --force.
        seen_env(d.path(), &[], ["copy", "a.seen", &loc], b"")
            .code(2)
            .stderr_has("--force");
        seen_env(d.path(), &[], ["copy", &loc, "b.seen"], b"")
            .code(2)
            .stderr_has("--force");
        seen_env(d.path(), &[], ["copy", "--force", "a.seen", &loc], b"").ok();
        // verify: every shard there; one deleted is named.
        let v = seen_env(d.path(), &[], ["verify", &loc], b"");
        v.ok();
        assert!(v.stdout_str().contains(": ok ("), "{}", v.stdout_str());
        let name = loc.rsplit('/').next().unwrap();
        let key = format!("seen:{{{name}:0:3}}:b");
        let nodes = loc
            .trim_start_matches("redis+cluster://")
            .trim_start_matches("redis://");
        let nodes = nodes.rsplit_once('/').unwrap().0;
        let mut gone = 0;
        for addr in nodes.split(',') {
            let mut c = redis::Client::open(format!("redis://{addr}/"))
                .unwrap()
                .get_connection()
                .unwrap();
            let n: i64 = redis::cmd("DEL").arg(&key).query(&mut c).unwrap_or(0);
            gone += n;
        }
        assert_eq!(gone, 1, "{key}");
        let v = seen_env(d.path(), &[], ["verify", &loc], b"");
        v.code(1).stderr_has("1 of");
        assert!(v.stdout_str().contains(&key), "{}", v.stdout_str());
    }
}

/// A filter in Redis does not grow: past its capacity, the run says so.
#[test]
fn a_full_filter_says_so() {
    let Some(loc) = standalone("full") else {
        return;
    };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let data = crate::common::numbered("line", 0..2000);
    seen_env(
        d.path(),
        &env,
        ["dedup", "-n", "1000", "-f", &loc],
        &data[..data.len() / 4],
    )
    .ok();
    let r = seen_env(d.path(), &env, ["dedup", "-f", &loc], &data);
    r.code(0).stderr_has("past the 1,000 it was sized for");
    let v = seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
    assert_eq!(v.code(0).stdout_json()["growth"], serde_json::Value::Null);
}

/// Lines recorded and not printed because the output closed early (`| head`)
/// are printed by the next run; `-m` is refused (its lines would be owed).
#[test]
fn a_closed_output_owes_its_lines_to_the_next_run() {
    let Some(loc) = standalone("head") else {
        return;
    };
    let d = tmp();
    let j = journal(&d);
    let data = crate::common::numbered("l", 0..50_000);
    write(&d, "in.txt", &data);
    // `seen dedup … | head -c 100`: the reader goes away after 100 bytes.
    let mut child = command(d.path())
        .env("SEEN_JOURNAL_DIR", &j)
        .env("SEEN_CHUNK_BYTES", "16384")
        .args(["dedup", "-n", "100k", "-p", "1e-9", "-f", &loc, "in.txt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = vec![0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = first.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let next = seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", j.as_str())],
        ["dedup", "-f", &loc, "in.txt"],
        b"",
    );
    next.code(0).stderr_has("its output closed early");
    let mut got: HashSet<&[u8]> = next
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    got.extend(
        first[..whole]
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty()),
    );
    assert_eq!(got.len(), 50_000, "{}", next.stderr);
    seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", j.as_str())],
        ["dedup", "-m", "3", "-f", &loc],
        b"x\n",
    )
    .code(2)
    .no_stdout()
    .stderr_has("-m 3 does not work with a Redis filter");
}

/// The certificates `scripts/with-redis.sh` made for its TLS servers, as
/// the environment a run needs: (CA, client certificate, client key).
fn tls_env() -> Option<[(&'static str, String); 3]> {
    let dir = server("SEEN_TEST_REDIS_TLS_DIR")?;
    let f = |name: &str| format!("{dir}/{name}");
    Some([
        ("SEEN_REDIS_CA", f("ca.crt")),
        ("SEEN_REDIS_CERT", f("client.crt")),
        ("SEEN_REDIS_KEY", f("client.key")),
    ])
}

/// `rediss://` and `rediss+cluster://`: the same filter over TLS, checked
/// against the test CA, with the client certificate Redis asks for; each
/// missing piece is named in the error.
#[test]
fn tls_locations_dedup_and_say_what_is_missing() {
    let (Some(tls), Some(tcluster), Some(certs)) = (
        server("SEEN_TEST_REDIS_TLS"),
        server("SEEN_TEST_REDIS_TLS_CLUSTER"),
        tls_env(),
    ) else {
        return;
    };
    let all: Vec<(&str, &str)> = certs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for loc in [
        format!("rediss://{tls}/{}", unique("tls")),
        format!("rediss+cluster://{tcluster}/{}", unique("tls")),
    ] {
        let d = tmp();
        let j = journal(&d);
        let mut env = all.clone();
        env.push(("SEEN_JOURNAL_DIR", j.as_str()));
        let data = urls(20_000, 11);
        seen_env(d.path(), &env, ["dedup", "-n", "50k", "-f", &loc], &data)
            .ok()
            .stdout(&reference(&data, b'\n', false));
        seen_env(d.path(), &env, ["dedup", "-f", &loc], &data)
            .ok()
            .no_stdout();
        let lines = data.iter().filter(|&&b| b == b'\n').count();
        seen_env(d.path(), &env, ["query", "-c", &loc], &data)
            .ok()
            .stdout(format!("{lines}\n").as_bytes());
        // Without the CA: the server's certificate is not trusted.
        let no_ca: Vec<(&str, &str)> = env
            .iter()
            .map(|&(k, v)| (k, if k == "SEEN_REDIS_CA" { "" } else { v }))
            .collect();
        seen_env(d.path(), &no_ca, ["stats", &loc], b"").error("SEEN_REDIS_CA");
        // Without a client certificate: the server asks for one.
        let no_cert: Vec<(&str, &str)> = env
            .iter()
            .filter(|(k, _)| !k.starts_with("SEEN_REDIS_CERT") && !k.starts_with("SEEN_REDIS_KEY"))
            .copied()
            .collect();
        seen_env(d.path(), &no_cert, ["stats", &loc], b"")
            .error("SEEN_REDIS_CERT and SEEN_REDIS_KEY");
        // A key without its certificate, and a CA file with no certificate.
        let half: Vec<(&str, &str)> = env
            .iter()
            .filter(|(k, _)| *k != "SEEN_REDIS_CERT")
            .copied()
            .collect();
        seen_env(d.path(), &half, ["stats", &loc], b"").error("go together");
        let key_as_ca: Vec<(&str, &str)> = env
            .iter()
            .map(|&(k, v)| (k, if k == "SEEN_REDIS_CA" { all[2].1 } else { v }))
            .collect();
        seen_env(d.path(), &key_as_ca, ["stats", &loc], b"").error("holds no certificate");
    }
    // Plain redis:// to a TLS port: the error points to rediss://.
    let d = tmp();
    seen_env(
        d.path(),
        &[],
        [
            "stats",
            "--redis-timeout",
            "2s",
            &format!("redis://{tls}/x"),
        ],
        b"",
    )
    .error("rediss://");
}

/// `--redis-wait N`: a batch's lines are printed only once N replicas hold
/// its bits, so the replica answers for every printed line; asking for more
/// replicas than there are stops the run with exit 2 after printing what
/// was judged, and nothing is lost.
#[test]
fn redis_wait_holds_lines_until_replicas_have_them() {
    let (Some(primary), Some(replica)) = (
        server("SEEN_TEST_REDIS_REPLICATED"),
        server("SEEN_TEST_REDIS_REPLICA"),
    ) else {
        return;
    };
    let d = tmp();
    let j = journal(&d);
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let name = unique("wait");
    let loc = format!("redis://{primary}/{name}");
    let data = urls(40_000, 13);
    seen_env(
        d.path(),
        &env,
        ["dedup", "--redis-wait", "1", "-n", "100k", "-f", &loc],
        &data,
    )
    .ok()
    .stdout(&reference(&data, b'\n', false));
    // The replica already holds every bit of every printed line.
    let lines = data.iter().filter(|&&b| b == b'\n').count();
    seen_env(
        d.path(),
        &env,
        ["query", "-c", &format!("redis://{replica}/{name}")],
        &data,
    )
    .ok()
    .stdout(format!("{lines}\n").as_bytes());

    // Two replicas asked for, one there: exit 2, naming the shortfall.
    let loc = format!("redis://{primary}/{}", unique("wait2"));
    let run = seen_env(
        d.path(),
        &env,
        [
            "dedup",
            "--redis-wait",
            "2",
            "--redis-timeout",
            "1s",
            "-n",
            "100k",
            "-f",
            &loc,
        ],
        &data,
    );
    run.error("of the 2 replicas asked for (--redis-wait) acknowledged");
    // What it printed plus what the next run prints: every line, once.
    let next = seen_env(d.path(), &env, ["dedup", "-f", &loc], &data);
    next.ok();
    let got: Vec<&[u8]> = run
        .stdout
        .split(|&b| b == b'\n')
        .chain(next.stdout.split(|&b| b == b'\n'))
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got.len(), distinct(&data, b'\n'));
    assert_eq!(
        got.iter().collect::<HashSet<_>>().len(),
        got.len(),
        "a line printed twice"
    );
}
