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
