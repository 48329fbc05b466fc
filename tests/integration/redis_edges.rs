//! Redis filters at the edges (issue 40), against real servers started by
//! `scripts/with-redis.sh`: what a fleet's network does to a writer's
//! connections between its batches.

use crate::common::command;
use crate::redis::Private;
use std::io::{Read, Write};
use std::process::Stdio;

/// Connections to `srv` other than the asking one (`CLIENT LIST`).
fn other_clients(c: &mut redis::Connection) -> usize {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(c).unwrap();
    list.lines().count().saturating_sub(1)
}

/// A `seen dedup -n N --redis-layout LAYOUT -f LOC` fed through a pipe
/// (its journal in `journal`), after its first batch was written and what
/// it printed of it read back (`got`).
struct Streaming {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    got: Vec<u8>,
}

impl Streaming {
    fn start(
        dir: &std::path::Path,
        journal: &std::path::Path,
        (n, layout): (&str, &str),
        loc: &str,
        first: &[u8],
    ) -> Streaming {
        let mut child = command(dir)
            .env("SEEN_JOURNAL_DIR", journal)
            .args(["dedup", "-n", n, "--redis-layout", layout, "-f", loc])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        stdin.write_all(first).unwrap();
        stdin.flush().unwrap();
        let mut got = vec![0u8; first.len()];
        stdout.read_exact(&mut got).unwrap();
        Streaming {
            child,
            stdin,
            stdout,
            got,
        }
    }

    /// Writes `more` (it may be refused: the run may have stopped), closes
    /// the input, and gives what was printed after the first batch, stderr
    /// and the exit code.
    fn finish(mut self, more: &[u8]) -> (Vec<u8>, String, Option<i32>) {
        let _ = self.stdin.write_all(more);
        drop(self.stdin);
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest).unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (rest, err, self.child.wait().unwrap().code())
    }
}

/// Issue 40, item 5: a server that closes idle connections (`timeout 1`,
/// as proxies and NATs do too) does not end a streaming writer that paused
/// between batches: it reconnects and goes on, exit 0, every line once.
/// (Before: exit 2, "unexpected end of file", after the first batch.)
#[test]
fn a_writer_idle_past_the_servers_timeout_goes_on() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    for layout in ["sets", "bloom"] {
        let d = crate::common::tmp();
        let srv = Private::start(d.path());
        let mut c = srv.conn();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("timeout")
            .arg("1")
            .query(&mut c)
            .unwrap();
        let loc = format!("redis://{}/idle", srv.addr);
        let first = crate::common::numbered("a", 0..1000);
        let w = Streaming::start(d.path(), &d.path().join("j"), ("10k", layout), &loc, &first);
        assert_eq!(w.got, first, "{layout}");
        // The server closes the writer's connection: wait until it has.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while other_clients(&mut c) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{layout}: the server did not close the idle connection"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let second = crate::common::numbered("b", 0..1000);
        let mut both = second.clone();
        both.extend_from_slice(&first);
        let (rest, err, code) = w.finish(&both);
        assert_eq!(code, Some(0), "{layout}: {err}");
        assert_eq!(rest, second, "{layout}: {err}");
    }
}

/// Issue 40, item 2, for the fingerprint-set layout: a filter whose meta
/// key was lost is damage: a writer refuses to make a filter there (exit
/// 2, nothing printed) and says what to remove. Once removed, the filter
/// made again adopts nothing of the old: neither its sets (their keys
/// carry the old filter's tag) nor its count, so no new line is dropped
/// and `stats` counts only what the new filter holds. (Before: the writer
/// made a new filter silently, so every old line was new again; before
/// the count was tagged, the new filter started at the old one's 3,000.)
#[test]
fn a_filter_made_again_adopts_nothing_of_the_old() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = crate::common::tmp();
    let name = crate::common::unique_name("again");
    let loc = format!("redis://{addr}/{name}");
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let old = crate::common::numbered("old", 0..3000);
    let run = |args: &[&str], input: &[u8]| crate::common::seen_env(d.path(), &env, args, input);
    run(&["dedup", "-q", "-n", "2000", "-f", &loc], &old).code(0);
    let mut c = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(format!("seen:{{{name}}}:meta"))
        .query(&mut c)
        .unwrap();
    let new = crate::common::numbered("new", 0..1500);
    let mut both = new.clone();
    both.extend_from_slice(&old);
    run(&["dedup", "-q", "-n", "2000", "-f", &loc], &both)
        .code(2)
        .no_stdout()
        .stderr_has("has no meta key");
    run(&["verify", &loc], b"").code(1);
    // As the advice says: the count key goes. The old sets are left, as
    // they would be if the advice's pattern missed one: the new filter
    // must not read them.
    let _: () = redis::cmd("DEL")
        .arg(format!("seen:{{{name}}}:count"))
        .query(&mut c)
        .unwrap();
    // 4,500 lines into a filter made for 2,000: the old one's 3,000 would
    // have been past it; the new one holds 4,500 and says so.
    let r = run(&["dedup", "-q", "-n", "2000", "-f", &loc], &both);
    r.code(0).stdout(&both).stderr_has("holds 4,500 keys");
    let v = run(&["stats", "--json", &loc], b"");
    let v = v.code(0).stdout_json();
    assert_eq!(v["inserts"], 4500, "{v}");
    assert_eq!(v["sets"]["fingerprints"], 4500, "{v}");
}

/// Issue 40, item 7: a server at an IPv6 address, written in brackets as
/// in a URL (`redis://[::1]:PORT/NAME`), is reached. (Before: "failed to
/// lookup address".) Skipped where the machine has no IPv6 loopback.
#[test]
fn an_ipv6_server_is_reached() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let Ok(l) = std::net::TcpListener::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here: skipped");
        return;
    };
    let port = l.local_addr().unwrap().port();
    drop(l);
    let d = crate::common::tmp();
    /// Kills the server however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Killed(
        std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "::1", "--save", ""])
            .args(["--appendonly", "no"])
            .arg("--dir")
            .arg(d.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("redis://[::1]:{port}/");
    let up = (0..400).any(|_| {
        let ok = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        ok
    });
    assert!(up, "redis-server on [::1]:{port} did not start");
    let loc = format!("redis://[::1]:{port}/v6");
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let lines = crate::common::numbered("v", 0..500);
    let r = crate::common::seen_env(
        d.path(),
        &env,
        ["dedup", "-q", "-n", "1k", "-f", &loc],
        &lines,
    );
    r.ok().stdout(&lines);
    let q = crate::common::seen_env(d.path(), &env, ["query", "-c", &loc], &lines);
    q.ok().stdout(b"500\n");
    let v = crate::common::seen_env(d.path(), &env, ["stats", "--json", &loc], b"");
    assert_eq!(v.ok().stdout_json()["file"], loc.as_str());
}

/// A server that accepts connections and never answers (a hung server, a
/// wrong service, a black-holing proxy) is given up after `--redis-timeout`,
/// not after one timeout per set-up command (it was twice, three times with
/// a password), saying that it did not answer. No Redis server needed.
#[test]
fn a_server_that_never_answers_is_given_up_after_the_timeout() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c);
        }
    });
    let d = crate::common::tmp();
    let j = d.path().join("j").display().to_string();
    let loc = format!("redis://127.0.0.1:{port}/silent");
    let plain = [("SEEN_JOURNAL_DIR", j.as_str())];
    let password = [
        ("SEEN_JOURNAL_DIR", j.as_str()),
        ("SEEN_REDIS_PASSWORD", "pw"),
    ];
    let runs = [(&["dedup", "-f"][..], &plain[..]), (&["query"], &password)];
    for (args, env) in runs {
        let start = std::time::Instant::now();
        let mut all: Vec<&str> = args.to_vec();
        all.extend([loc.as_str(), "--redis-timeout", "1500ms"]);
        let r = crate::common::seen_env(d.path(), env, &all, b"a\n");
        let took = start.elapsed();
        r.code(2)
            .stderr_has("no answer within 1.5s (--redis-timeout)");
        assert!(
            took < std::time::Duration::from_millis(2400),
            "{args:?} gave up after {took:?}, not the 1.5 s asked"
        );
    }
}

/// The lines printed over several outputs, each line with how many times.
pub(crate) fn tally(outs: &[&[u8]]) -> std::collections::HashMap<Vec<u8>, usize> {
    let mut n = std::collections::HashMap::new();
    for out in outs {
        for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            *n.entry(l.to_vec()).or_insert(0) += 1;
        }
    }
    n
}

/// Asserts that `outs` together print every line of `want` exactly once.
pub(crate) fn exactly_once(outs: &[&[u8]], want: &[u8], ctx: &str) {
    let n = tally(outs);
    let lines: Vec<&[u8]> = want
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let twice = n.values().filter(|&&c| c > 1).count();
    let lost = lines.iter().filter(|l| !n.contains_key(**l)).count();
    assert_eq!(
        (lost, twice, n.len()),
        (0, 0, lines.len()),
        "{ctx}: (lost, printed twice, distinct)"
    );
}

/// Issue 40, item 1: a run that fails while it reads a Bloom filter's shards
/// (here a shard that another program made a list: every read of it fails)
/// leaves a journal chunk of which some pieces were never judged. Nothing
/// of them was sent: the next run, with no input at all, prints nothing,
/// and one with the same input prints each line once. (Before: the
/// unjudged pieces were replayed as new: the empty run printed lines and
/// exited 0, and the run after printed them a second time.)
#[test]
fn a_run_that_failed_reading_shards_replays_nothing_it_did_not_judge() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = crate::common::tmp();
    let srv = Private::start(d.path());
    let loc = format!("redis://{}/shards", srv.addr);
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let run = |args: &[&str], input: &[u8]| crate::common::seen_env(d.path(), &env, args, input);
    let old = crate::common::numbered("old", 0..50_000);
    run(
        &[
            "dedup",
            "-q",
            "--redis-layout",
            "bloom",
            "-n",
            "5M",
            "-f",
            &loc,
        ],
        &old,
    )
    .code(0);
    let mut c = srv.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("seen:{shards:*")
        .query(&mut c)
        .unwrap();
    let shard = keys
        .iter()
        .find(|k| k.ends_with(":b"))
        .expect("a shard")
        .clone();
    let bytes: Vec<u8> = redis::cmd("GET").arg(&shard).query(&mut c).unwrap();
    let _: () = redis::cmd("DEL").arg(&shard).query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(&shard)
        .arg("x")
        .query(&mut c)
        .unwrap();
    let new = crate::common::numbered("new", 0..300_000);
    let first = run(&["dedup", "-f", &loc], &new);
    first.code(2).stderr_has("WRONGTYPE");
    // Repaired: the shard as it was.
    let _: () = redis::cmd("DEL").arg(&shard).query(&mut c).unwrap();
    let _: () = redis::cmd("SET")
        .arg(&shard)
        .arg(bytes)
        .query(&mut c)
        .unwrap();
    let empty = run(&["dedup", "-f", &loc], b"");
    empty.code(0).no_stdout();
    let again = run(&["dedup", "-f", &loc], &new);
    again.code(0);
    exactly_once(
        &[&first.stdout, &again.stdout],
        &new,
        "after a failed shard read",
    );
}

/// Issue 40, item 1: a test-and-set the server refuses (here over its
/// `maxmemory`) recorded nothing. The run stops (exit 2) without printing
/// the refused lines; its journal marks them unknown, and the next run asks
/// the filter: none is held, so each is printed once, by that run. (Before:
/// the refused lines were printed as new by the failing run and again by
/// the next.) This also covers what the older `a_server_error_mid_run_
/// loses_no_line` checked (no line lost after a refused write).
#[test]
fn a_refused_test_and_set_prints_each_line_once() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    for layout in ["sets", "bloom"] {
        let d = crate::common::tmp();
        let srv = Private::start(d.path());
        let loc = format!("redis://{}/refused", srv.addr);
        let j = d.path().join("j").display().to_string();
        let first = crate::common::numbered("a", 0..20_000);
        let second = crate::common::numbered("b", 0..20_000);
        let w = Streaming::start(
            d.path(),
            std::path::Path::new(&j),
            ("100k", layout),
            &loc,
            &first,
        );
        let mut c = srv.conn();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg("1")
            .query(&mut c)
            .unwrap();
        let got = w.got.clone();
        let (rest, err, code) = w.finish(&second);
        assert_eq!(code, Some(2), "{layout}: {err}");
        assert!(err.contains("OOM"), "{layout}: {err}");
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg("0")
            .query(&mut c)
            .unwrap();
        let all = [first.clone(), second.clone()].concat();
        let next = crate::common::seen_env(
            d.path(),
            &[("SEEN_JOURNAL_DIR", j.as_str())],
            ["dedup", "-f", &loc],
            &all,
        );
        next.code(0);
        exactly_once(&[&got, &rest, &next.stdout], &all, layout);
        assert!(
            !std::path::Path::new(&j)
                .read_dir()
                .is_ok_and(|mut e| e.next().is_some()),
            "{layout}: the journal directory is left"
        );
    }
}

/// Issue 40, item 6: a journal that cannot be written (its file system
/// full; here the file-size limit, `ulimit -f`, that fails writes the same
/// way) stops the run before it judges the chunk it could not write down:
/// the chunks judged before, printed after, are still marked written, and
/// the next run prints each remaining line once. (Before: those marks were
/// appended after the record the failed write cut short, where no reader
/// looks: the next run printed those chunks again.)
#[test]
fn a_full_journal_stops_the_run_before_it_prints() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = crate::common::tmp();
    let srv = Private::start(d.path());
    let loc = format!("redis://{}/full", srv.addr);
    let j = d.path().join("j").display().to_string();
    let all = crate::common::numbered("line-", 0..200_000);
    let input = crate::common::write(&d, "in.txt", &all);
    let seen = env!("CARGO_BIN_EXE_seen");
    // Chunks of 16 KiB: many are judged and not yet written when the
    // journal's file reaches 600 KiB.
    let first = std::process::Command::new("bash")
        .current_dir(d.path())
        .env("SEEN_JOURNAL_DIR", &j)
        .env("SEEN_CHUNK_BYTES", "16384")
        .args([
            "-c",
            "ulimit -f 600 && exec \"$0\" dedup -n 1M -f \"$1\" \"$2\"",
            seen,
            &loc,
        ])
        .arg(&input)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write the journal"), "{err}");
    assert!(
        !first.stdout.is_empty(),
        "nothing printed before the journal filled: {err}"
    );
    let next = crate::common::seen_env(
        d.path(),
        &[("SEEN_JOURNAL_DIR", j.as_str())],
        ["dedup", "-f", &loc],
        &all,
    );
    next.code(0);
    exactly_once(&[&first.stdout, &next.stdout], &all, "after a full journal");
}

/// Files under `dir`, recursively (journal files; empty when `dir` is
/// gone).
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = d.read_dir() else { continue };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                found.push(p);
            }
        }
    }
    found
}

/// Issue 40, item 2, for the Bloom layout: a filter whose meta key was lost
/// (here a `DEL`) is damage, not room for a new filter. `verify` says so
/// (exit 1); a writer that would make a filter there refuses (exit 2,
/// nothing printed) and says what to do; once the old keys are removed as
/// it says, the filter is made again and every new line is printed.
/// (Before: the writer made a "new" filter over the old bits: 2,394 of
/// 100,000 never-seen lines dropped at a 1e-3 target, and `verify` said
/// ok.)
#[test]
fn a_lost_meta_key_is_damage_not_a_new_filter() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = crate::common::tmp();
    let name = crate::common::unique_name("lostmeta");
    let loc = format!("redis://{addr}/{name}");
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let run = |args: &[&str], input: &[u8]| crate::common::seen_env(d.path(), &env, args, input);
    let make = [
        "dedup",
        "-q",
        "--redis-layout",
        "bloom",
        "-n",
        "10k",
        "-p",
        "1e-9",
        "-f",
        &loc,
    ];
    run(&make, &crate::common::numbered("old", 0..30_000)).code(0);
    let mut c = redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(format!("seen:{{{name}}}:meta"))
        .query(&mut c)
        .unwrap();
    let v = run(&["verify", &loc], b"");
    v.code(1)
        .stderr_has("meta key was lost")
        .stderr_has("redis-cli --scan");
    assert!(
        v.stdout_str()
            .contains("damaged: data of a filter without its meta key"),
        "{}",
        v.ctx()
    );
    let new = crate::common::numbered("new", 0..10_000);
    run(&make, &new)
        .code(2)
        .no_stdout()
        .stderr_has("has no meta key");
    // As the advice says: remove the filter's keys, then make it again.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("seen:{{{name}*"))
        .query(&mut c)
        .unwrap();
    assert!(!keys.is_empty());
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut c).unwrap();
    run(&make, &new).code(0).stdout(&new);
    run(&["verify", &loc], b"").code(0);
}

/// Issue 40, item 2, the reverse: a meta key whose data was lost (sets
/// deleted or evicted while the meta key and counters stayed) is damage
/// that `verify` reports, not "ok". Keys forgotten and recorded again
/// (counted as new without a fingerprint more) are no shortfall. (Before:
/// `verify` said ok with every set gone.) `stats` warns of it as well.
#[test]
fn sets_lost_under_their_meta_key_are_damage() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = crate::common::tmp();
    let srv = Private::start(d.path());
    let name = "lostsets";
    let loc = format!("redis://{}/{name}", srv.addr);
    let j = d.path().join("j").display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let run = |args: &[&str], input: &[u8]| crate::common::seen_env(d.path(), &env, args, input);
    let lines = crate::common::numbered("k", 0..30_000);
    run(&["dedup", "-q", "-n", "100k", "-f", &loc], &lines)
        .ok()
        .stdout(&lines);
    let again = crate::common::numbered("k", 0..2_000);
    run(&["forget", &loc], &again).ok();
    run(&["dedup", "-q", "-f", &loc], &lines)
        .ok()
        .stdout(&again);
    run(&["verify", &loc], b"").ok();
    // No warning while nothing is lost (keys forgotten and recorded again
    // included).
    run(&["stats", &loc], b"").ok();
    let mut c = srv.conn();
    let sets: Vec<String> = redis::cmd("KEYS")
        .arg(format!("seen:{{{name}:*"))
        .query::<Vec<String>>(&mut c)
        .unwrap()
        .into_iter()
        .filter(|k| !k.ends_with(":f"))
        .collect();
    assert!(sets.len() > 100, "{sets:?}");
    let _: () = redis::cmd("DEL")
        .arg(&sets[..sets.len() / 3])
        .query(&mut c)
        .unwrap();
    let v = run(&["verify", &loc], b"");
    v.code(1).stderr_has("lost their fingerprints");
    assert!(
        v.stdout_str()
            .contains("fewer than the 30,000 lines recorded"),
        "{}",
        v.ctx()
    );
    // A cron job watching `stats` hears of it too, in text and JSON.
    let s = run(&["stats", &loc], b"");
    s.code(0)
        .stderr_has("recorded lines lost their fingerprints")
        .stderr_has("fewer than the 30,000 lines recorded");
    let j = run(&["stats", "--json", &loc], b"");
    j.code(0);
    assert!(
        j.stdout_str()
            .contains("recorded lines lost their fingerprints"),
        "{}",
        j.ctx()
    );
}

/// Issue 40, item 2: a run whose filter vanished under it (the server
/// flushed mid-run, as when it restarts empty) fails at its commit and
/// adds nothing to the counters of whatever is there now. (Before: its
/// `HINCRBY` made a count key on the emptied server, so the next filter of
/// that name started with the old run's count.)
#[test]
fn a_run_whose_filter_vanished_counts_nothing() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    for layout in ["bloom", "sets"] {
        let d = crate::common::tmp();
        let srv = Private::start(d.path());
        let loc = format!("redis://{}/vanished", srv.addr);
        let first = crate::common::numbered("a", 0..1000);
        let w = Streaming::start(
            d.path(),
            &d.path().join("j"),
            ("100k", layout),
            &loc,
            &first,
        );
        assert_eq!(w.got, first, "{layout}");
        let mut c = srv.conn();
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let (_, err, code) = w.finish(&crate::common::numbered("b", 0..1000));
        assert_eq!(code, Some(2), "{layout}: {err}");
        assert!(
            err.contains("replaced or deleted during this run"),
            "{layout}: {err}"
        );
        let count: i64 = redis::cmd("EXISTS")
            .arg("seen:{vanished}:count")
            .query(&mut c)
            .unwrap();
        assert_eq!(count, 0, "{layout}: a count key was made: {err}");
    }
}

/// Issue 40, item 4: journals of a filter that was made again are found,
/// reported by writers and `verify`, and removed by `verify --repair`; a
/// clean run leaves no directory behind. (Before: a failed run's journal
/// of the old filter stayed forever, unseen, and every clean run left an
/// empty directory.)
#[test]
fn journals_of_a_filter_made_again_are_reported_and_removed() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = crate::common::tmp();
    let srv = Private::start(d.path());
    let loc = format!("redis://{}/orphan", srv.addr);
    let jdir = d.path().join("j");
    let j = jdir.display().to_string();
    let env = [("SEEN_JOURNAL_DIR", j.as_str())];
    let run = |args: &[&str], input: &[u8]| crate::common::seen_env(d.path(), &env, args, input);
    let make = [
        "dedup",
        "-q",
        "--redis-layout",
        "bloom",
        "-n",
        "1M",
        "-f",
        &loc,
    ];
    run(&make, &crate::common::numbered("old", 0..1000)).code(0);
    assert!(
        files_under(&jdir).is_empty(),
        "a clean run left {:?}",
        files_under(&jdir)
    );
    assert!(
        !jdir.read_dir().is_ok_and(|mut e| e.next().is_some()),
        "a clean run left a directory"
    );
    // A run that fails (a shard another program made a list) keeps its
    // journal.
    let mut c = srv.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("seen:{orphan:*")
        .query(&mut c)
        .unwrap();
    for k in keys.iter().filter(|k| k.ends_with(":b")) {
        let _: () = redis::cmd("DEL").arg(k).query(&mut c).unwrap();
        let _: () = redis::cmd("RPUSH").arg(k).arg("x").query(&mut c).unwrap();
    }
    run(&make, &crate::common::numbered("new", 0..20_000))
        .code(2)
        .stderr_has("WRONGTYPE");
    let left = files_under(&jdir);
    assert!(left.len() >= 2, "no journal kept: {left:?}");
    // The server restarts empty; the filter is made again (another size:
    // one made the same second with the same flags would be the same
    // filter to seen).
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let remake = [
        "dedup",
        "-q",
        "--redis-layout",
        "bloom",
        "-n",
        "2M",
        "-f",
        &loc,
    ];
    let again = run(&remake, &crate::common::numbered("x", 0..100));
    again
        .code(0)
        .stderr_has("belong to an earlier filter at")
        .stderr_has("seen verify --repair");
    let v = run(&["verify", &loc], b"");
    v.code(0);
    assert!(
        v.stdout_str().contains("belong to an earlier filter at"),
        "{}",
        v.ctx()
    );
    let r = run(&["verify", "--repair", &loc], b"");
    r.code(0);
    assert!(r.stdout_str().contains("removed "), "{}", r.ctx());
    assert!(files_under(&jdir).is_empty(), "{:?}", files_under(&jdir));
    let quiet = run(&remake, &crate::common::numbered("y", 0..100));
    quiet.code(0);
    assert!(!quiet.stderr.contains("earlier filter"), "{}", quiet.ctx());
}
