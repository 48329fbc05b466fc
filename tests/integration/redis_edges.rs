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
        let mut w = command(d.path())
            .env("SEEN_JOURNAL_DIR", d.path().join("j"))
            .args(["dedup", "-n", "10k", "--redis-layout", layout, "-f", &loc])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = w.stdin.take().unwrap();
        let mut stdout = w.stdout.take().unwrap();
        let first = crate::common::numbered("a", 0..1000);
        stdin.write_all(&first).unwrap();
        stdin.flush().unwrap();
        let mut got = vec![0u8; first.len()];
        stdout.read_exact(&mut got).unwrap();
        assert_eq!(got, first, "{layout}");
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
        stdin.write_all(&both).unwrap();
        drop(stdin);
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).unwrap();
        let mut err = String::new();
        w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(w.wait().unwrap().code(), Some(0), "{layout}: {err}");
        assert_eq!(rest, second, "{layout}: {err}");
    }
}

/// Issue 40, item 2, for the fingerprint-set layout: a filter whose meta
/// key was lost is made again from nothing: it adopts neither the old
/// filter's sets (their keys carry the old filter's tag) nor its count (a
/// field named with that tag), so no new line is dropped and `stats`
/// counts only what the new filter holds. (Before the count was tagged,
/// the new filter started at the old one's 3,000 and warned of it.)
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
