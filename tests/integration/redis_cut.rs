//! A connection cut in the middle of a run: a proxy between `seen` and a
//! server of the test's own passes the server's replies up to a given byte,
//! then closes every connection and drops those that come after. The run
//! fails (some of its replies lost: the server may or may not have recorded
//! those lines); the next run, straight to the server with the same input,
//! replays the first one's journal and goes on. Together they print every
//! distinct line, wherever the cut falls, in every layout (the Bloom layout,
//! fingerprint sets, and generations that grow or have a window): exactly
//! once in the Bloom layout, which reads a line's bits before it sets them;
//! in the others a repeat, whose `SADD` is its lookup, may be printed twice
//! within the chunk whose replies were lost.

use crate::common::{reference, seen_env, tmp};
use crate::redis::{Private, urls};
use crate::redis_edges::{exactly_once, tally};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A proxy to `upstream` that passes `cut_at` bytes of replies in all, then
/// closes every connection and takes no more.
struct Cutter {
    addr: String,
    /// Bytes of replies passed.
    passed: Arc<AtomicU64>,
    /// Whether it cut.
    cut: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Cutter {
    fn start(upstream: &str, cut_at: u64) -> Cutter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let passed = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let upstream = upstream.to_string();
        let (p, c, dn) = (passed.clone(), cut.clone(), done.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if dn.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                if c.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let server = TcpStream::connect(&upstream).unwrap();
                {
                    let mut o = open.lock().unwrap();
                    o.push(client.try_clone().unwrap());
                    o.push(server.try_clone().unwrap());
                }
                // Requests: passed whole until the cut closes the sockets.
                let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Write);
                });
                let (mut from, mut to) = (server, client);
                let (p, c, open) = (p.clone(), c.clone(), open.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 16 << 10];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n as u64,
                        };
                        let before = p.fetch_add(n, Ordering::SeqCst);
                        let room = cut_at.saturating_sub(before).min(n);
                        if to.write_all(&buf[..room as usize]).is_err() {
                            break;
                        }
                        if room < n {
                            c.store(true, Ordering::SeqCst);
                            for s in open.lock().unwrap().iter() {
                                let _ = s.shutdown(Shutdown::Both);
                            }
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Write);
                });
            }
        });
        Cutter {
            addr,
            passed,
            cut,
            done,
        }
    }
}

impl Drop for Cutter {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees `done`.
        let _ = TcpStream::connect(&self.addr);
    }
}

/// Chunks of the runs: many test-and-sets in a run.
const CHUNK_BYTES: usize = 65_536;
/// Lines a chunk holds at most (the test's lines are 29 bytes or more).
const CHUNK_LINES: usize = CHUNK_BYTES / 29;

/// Asserts that `outs` together print every line of `want`, and no more
/// than `twice` of them twice: the fingerprint-set layout cannot tell, of a
/// line whose `SADD` reply was lost and that its set now holds, whether the
/// lost command added it (the next run prints it) or found it there (a
/// repeat of a line printed before): the next run prints it. The replies
/// lost are those of the parts in flight, within one chunk.
fn at_least_once(outs: &[&[u8]], want: &[u8], twice: usize, ctx: &str) {
    let n = tally(outs);
    let lines: Vec<&[u8]> = want
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let lost = lines.iter().filter(|l| !n.contains_key(**l)).count();
    let more = n.values().filter(|&&c| c > 2).count();
    let dup = n.values().filter(|&&c| c == 2).count();
    assert_eq!(
        (lost, more, n.len()),
        (0, 0, lines.len()),
        "{ctx}: (lost, printed 3 times or more, distinct)"
    );
    assert!(
        dup <= twice,
        "{ctx}: {dup} lines printed twice, more than a chunk's"
    );
}

/// For each layout, a run through a proxy that cuts at a share of the
/// replies a whole run takes, then a run straight to the server: each
/// distinct line printed once by the two (at least once, and twice only
/// within the chunk whose replies were lost, but for the Bloom layout).
#[test]
fn a_cut_connection_loses_no_line_and_repeats_at_most_a_chunk() {
    if crate::common::redis_server("SEEN_TEST_REDIS").is_none() {
        return;
    }
    let d = tmp();
    let srv = Private::start(d.path());
    let data = urls(30_000, 77);
    let want = reference(&data, b'\n', false);
    let now = "@1796634000";
    // Fingerprint sets, and generations, whose lines are not looked up in
    // the newest generation before their `SADD`s: a repeat whose reply was
    // lost is printed again. The Bloom layout reads its bits first.
    let layouts: [(&str, &[&str]); 4] = [
        ("sets", &["-n", "40000"]),
        ("bloom", &["-n", "40000", "--redis-layout", "bloom"]),
        ("growth", &["--growth", "2", "-n", "2000"]),
        ("window", &["--window", "7d", "-n", "40000", "--now", now]),
    ];
    for (kind, opts) in layouts {
        let j = d.path().join(format!("j-{kind}")).display().to_string();
        // Small chunks: many test-and-sets in a run.
        let env = [
            ("SEEN_JOURNAL_DIR", j.as_str()),
            ("SEEN_CHUNK_BYTES", &CHUNK_BYTES.to_string()),
        ];
        let run = |addr: &str, name: &str| {
            let loc = format!("redis://{addr}/{name}");
            // A cut connection is given up soon.
            let mut args = vec!["dedup", "-q", "--redis-timeout", "300ms", "-f", &loc];
            args.extend_from_slice(opts);
            seen_env(d.path(), &env, &args, &data)
        };
        // The replies a whole run takes.
        let whole = Cutter::start(&srv.addr, u64::MAX);
        run(&whole.addr, &format!("{kind}-whole"))
            .ok()
            .stdout(&want);
        let total = whole.passed.load(Ordering::SeqCst);
        let mut cut_mid_run = 0;
        for share in [10, 50, 90, 98] {
            let name = format!("{kind}-{share}");
            let proxy = Cutter::start(&srv.addr, total * share / 100);
            let first = run(&proxy.addr, &name);
            assert!(proxy.cut.load(Ordering::SeqCst), "{kind} {share}%: no cut");
            assert_eq!(first.code, 2, "{kind} {share}%: {}", first.stderr);
            let second = run(&srv.addr, &name);
            second.code(0);
            cut_mid_run += usize::from(!first.stdout.is_empty());
            let ctx = format!("{kind}, cut at {share}% of the replies");
            if kind == "bloom" {
                exactly_once(&[&first.stdout, &second.stdout], &want, &ctx);
            } else {
                at_least_once(&[&first.stdout, &second.stdout], &want, CHUNK_LINES, &ctx);
            }
            // A third run has nothing left to print.
            run(&srv.addr, &name).ok().stdout(b"");
        }
        assert!(cut_mid_run >= 3, "{kind}: the cuts fell before any output");
    }
}
