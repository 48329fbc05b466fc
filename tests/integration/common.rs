//! The harness every integration test shares: the one way to start the
//! `seen` binary, temporary directories, a deterministic generator (test
//! data depends on nothing but a seed), and the reference answers outputs
//! are checked against.
//!
//! Starting the binary: [`seen`], [`seen_io`] and [`seen_env`] run it to its
//! end and return a [`Run`] to assert on; [`read_lines_then_close`] closes
//! its output early; a test that drives the child itself (pipes it holds
//! open, a signal, a kill, stdin from a file) takes a raw [`command`]; a
//! shell or wrapper that starts it names [`BIN`]. All of them run it
//! without the caller's [`SCRUBBED`] variables.

use serde_json::Value;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use tempfile::TempDir;

/// The binary under test. Tests start it through the functions here; they
/// name its path only where a shell or another program starts it.
pub const BIN: &str = env!("CARGO_BIN_EXE_seen");

/// Variables that change how `seen` runs (thread count, chunk size, hashing
/// kernels): removed from every run's environment, so the caller's cannot
/// change a result; a test that wants one sets it.
pub const SCRUBBED: [&str; 3] = ["RAYON_NUM_THREADS", "SEEN_CHUNK_BYTES", "SEEN_PORTABLE"];

/// `seen` as a raw command in `dir`, without the [`SCRUBBED`] variables: for
/// a test that drives the child itself (holds its pipes open, signals or
/// kills it, gives it a file as stdin). Anything else runs [`seen_env`].
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir);
    for var in SCRUBBED {
        cmd.env_remove(var);
    }
    cmd
}

/// A fresh temporary directory, removed when dropped.
pub fn tmp() -> TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// Writes `data` to `name` inside `dir` and returns its path.
pub fn write(dir: &TempDir, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    fs::write(&p, data).unwrap();
    p
}

/// SplitMix64: a tiny deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Spawns `seen ARGS` (under `env`) with stdout piped, reads `lines` lines,
/// closes the pipe and returns (exit code, lines read, stderr). Fails (killing
/// the child) if the child has not ended two minutes later: a hang is a failure,
/// not a stuck test run. No sleeping: the timeout is a channel receive.
pub fn read_lines_then_close(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    lines: usize,
) -> (i32, Vec<String>, String) {
    let mut cmd = command(dir);
    cmd.envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // stderr reaches its end when the child exits.
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut got = Vec::new();
    for _ in 0..lines {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        got.push(line);
    }
    drop(stdout);
    let err = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(err) => err,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("seen {args:?} with {env:?} did not end after its stdout was closed");
        }
    };
    let status = child.wait().unwrap();
    (
        status.code().expect("killed by a signal (SIGPIPE?)"),
        got,
        err,
    )
}

/// What one run of the binary did.
pub struct Run {
    pub args: Vec<OsString>,
    /// The variables the test set for the run.
    pub env: Vec<(String, String)>,
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// The command and what it did, for assertion messages.
    pub fn ctx(&self) -> String {
        let env = if self.env.is_empty() {
            String::new()
        } else {
            format!("{:?} ", self.env)
        };
        format!(
            "{env}seen {:?}\n  exit: {}\n  stdout ({} bytes): {:?}\n  stderr: {}",
            self.args,
            self.code,
            self.stdout.len(),
            String::from_utf8_lossy(&self.stdout[..self.stdout.len().min(2000)]),
            self.stderr
        )
    }

    /// Exit status `code`, and never a panic.
    pub fn code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit status\n{}", self.ctx());
        assert!(!self.stderr.contains("panicked"), "panic\n{}", self.ctx());
        self
    }

    /// Exit 0 with nothing on stderr.
    pub fn ok(&self) -> &Self {
        self.code(0);
        assert_eq!(self.stderr, "", "unexpected stderr\n{}", self.ctx());
        self
    }

    /// Exit 2 with `needle` in the error message.
    pub fn fails(&self, needle: &str) -> &Self {
        self.code(2);
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.ctx()
        );
        self
    }

    /// Exit 2 from `seen` itself (not clap): `seen: error: …` naming `needle`.
    pub fn error(&self, needle: &str) -> &Self {
        self.fails(needle);
        assert!(
            self.stderr.starts_with("seen: error: "),
            "message not in `seen: error: …` form\n{}",
            self.ctx()
        );
        self
    }

    /// Standard output is `expected`, byte for byte.
    pub fn stdout(&self, expected: &[u8]) -> &Self {
        assert_same(&self.stdout, expected, &self.ctx());
        self
    }

    pub fn no_stdout(&self) -> &Self {
        self.stdout(b"")
    }

    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.ctx()
        );
        self
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// Standard output as lines (without terminators).
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8(self.stdout.clone())
            .unwrap_or_else(|_| panic!("stdout is not UTF-8\n{}", self.ctx()))
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Standard output as one JSON value.
    pub fn stdout_json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("bad JSON: {e}\n{}", self.ctx()))
    }

    /// Standard error as exactly one JSON object on one line.
    pub fn stderr_json(&self) -> Value {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "stderr is not one line\n{}", self.ctx());
        let v: Value = serde_json::from_str(lines[0])
            .unwrap_or_else(|e| panic!("bad JSON on stderr: {e}\n{}", self.ctx()));
        assert!(v.is_object(), "not a JSON object\n{}", self.ctx());
        v
    }

    /// Standard output as one JSON object per line.
    pub fn stdout_json_lines(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}\n{}", self.ctx()));
                assert!(v.is_object(), "not a JSON object: {l}\n{}", self.ctx());
                v
            })
            .collect()
    }
}

/// Writers sharing the filter file `f.seen` in `dir`: one `seen dedup
/// --commit-every 2k -f f.seen IN<p>.txt` per input name `in<p>.txt`, all at
/// once, small chunks (so windows end often), with the variables `env` set.
/// Every output is read as it comes (a process blocked on a full pipe holds
/// the lock for its window, as it must: its judged lines are not recorded
/// yet). Returns the lines each printed, all of them having exited 0.
pub fn concurrent_writers(dir: &Path, env: &[(&str, &str)], inputs: &[String]) -> Vec<Vec<u8>> {
    let children: Vec<_> = inputs
        .iter()
        .map(|input| {
            command(dir)
                .env("SEEN_CHUNK_BYTES", "8192")
                .envs(env.iter().copied())
                .args(["dedup", "--commit-every", "2k", "-f", "f.seen", input])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let readers: Vec<_> = children
        .into_iter()
        .map(|c| std::thread::spawn(move || c.wait_with_output().unwrap()))
        .collect();
    let mut printed = Vec::new();
    for r in readers {
        let o = r.join().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        printed.extend(records(&o.stdout, b'\n').into_iter().map(<[u8]>::to_vec));
    }
    printed
}

/// Runs `seen ARGS` in `dir` to its end, with the variables `env` set (and
/// the [`SCRUBBED`] ones not inherited) and `input` on standard input (a
/// pipe, closed after it). Fails if `seen` was killed by a signal.
pub fn seen_env<I, S>(dir: &Path, env: &[(&str, &str)], args: I, input: &[u8]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let mut cmd = command(dir);
    cmd.envs(env.iter().copied()).args(&args);
    let out = assert_cmd::Command::from_std(cmd)
        .write_stdin(input.to_vec())
        .output()
        .expect("run seen");
    let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "seen {args:?} was killed by a signal ({})\n  stderr: {stderr}",
            out.status
        )
    });
    Run {
        args,
        env: env
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        code,
        stdout: out.stdout,
        stderr,
    }
}

/// Runs `seen ARGS` in `dir` with `input` on standard input.
pub fn seen_io<I, S>(dir: &Path, args: I, input: &[u8]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    seen_env(dir, &[], args, input)
}

/// Runs `seen ARGS` in `dir` with an empty standard input.
pub fn seen<I, S>(dir: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    seen_io(dir, args, b"")
}

/// `seen stats --json FILTER` in `dir`: exit 0 (warnings allowed), and the
/// object it printed.
pub fn stats_json(dir: &Path, filter: &str) -> Value {
    let r = seen(dir, ["stats", "--json", filter]);
    r.code(0);
    r.stdout_json()
}

/// [`stats_json`], and nothing on stderr either (no warning).
pub fn stats_json_quiet(dir: &Path, filter: &str) -> Value {
    let r = seen(dir, ["stats", "--json", filter]);
    r.ok();
    r.stdout_json()
}

/// A finished process's standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts `got == want`, reporting the lengths and where they first differ
/// (not megabytes of both) and then `ctx`.
pub fn assert_same(got: &[u8], want: &[u8], ctx: &str) {
    if got == want {
        return;
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    // Short outputs whole, long ones around the first difference.
    let show = |b: &[u8]| {
        let (s, e) = if got.len().max(want.len()) <= 400 {
            (0, b.len())
        } else {
            (at.saturating_sub(40), (at + 40).min(b.len()))
        };
        String::from_utf8_lossy(&b[s..e]).into_owned()
    };
    panic!(
        "output differs: {} bytes vs {} expected, first difference at byte {at}\n  \
         got:      {:?}\n  expected: {:?}\n{ctx}",
        got.len(),
        want.len(),
        show(got),
        show(want),
    );
}

/// Recomputes a filter file's header checksum (XXH3-64 of the 4096-byte
/// header with the checksum field, bytes 120..128, zeroed), after a test has
/// changed a header field; a buffer shorter than a header is left alone.
pub fn reseal(b: &mut [u8]) {
    if b.len() < 4096 {
        return;
    }
    let mut h = b[..4096].to_vec();
    h[120..128].fill(0);
    let sum = xxhash_rust::xxh3::xxh3_64(&h);
    b[120..128].copy_from_slice(&sum.to_le_bytes());
}

// ---------------------------------------------------------------------------
// Test data and reference answers
// ---------------------------------------------------------------------------

/// Lines `{prefix}{i}\n` for i in `range`.
pub fn numbered(prefix: &str, range: std::ops::Range<u32>) -> Vec<u8> {
    range
        .map(|i| format!("{prefix}{i}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Splits into records; a last record without terminator is still a record.
pub fn records(data: &[u8], term: u8) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    let body = data.strip_suffix(&[term]).unwrap_or(data);
    body.split(|&b| b == term).collect()
}

/// The exact answer of `seen dedup`: each record's first occurrence (or,
/// with `repeated`, every later one) in input order, every output record
/// terminated: `awk '!seen[$0]++'` (or `awk 'seen[$0]++'`) on raw records.
/// `seen` holds the records known before `data` (a persistent filter's
/// earlier runs) and is updated.
pub fn reference_after(
    seen: &mut HashSet<Vec<u8>>,
    data: &[u8],
    term: u8,
    repeated: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records(data, term) {
        if seen.insert(r.to_vec()) != repeated {
            out.extend_from_slice(r);
            out.push(term);
        }
    }
    out
}

/// [`reference_after`] with nothing known before.
pub fn reference(data: &[u8], term: u8, repeated: bool) -> Vec<u8> {
    reference_after(&mut HashSet::new(), data, term, repeated)
}

/// How many distinct records `data` holds.
pub fn distinct(data: &[u8], term: u8) -> usize {
    records(data, term)
        .into_iter()
        .collect::<HashSet<_>>()
        .len()
}

/// Runs `seen ARGS` with stdout piped; after `kill_after` bytes of output (if
/// it gets that far) sends SIGKILL; returns everything it wrote and whether it
/// was killed. `env` is added to the child's environment.
pub fn run_killed_env(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    kill_after: usize,
) -> (Vec<u8>, bool) {
    let (mut child, mut stdout) = spawn_killable(dir, env, args);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while out.len() < kill_after {
        let want = buf.len().min(kill_after - out.len());
        match stdout.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{e}"),
        }
    }
    let killed = out.len() == kill_after;
    if killed {
        let _ = child.kill();
    }
    end_killable(child, stdout, out, killed, args)
}

/// Runs `seen ARGS` with stdout piped and never read until the child is
/// blocked writing to it (a thread of it asleep in a pipe write to fd 1,
/// as `/proc` says), then sends SIGKILL: it dies owing lines it judged and
/// could not write. Unlike [`run_killed_env`], whose kill can fall between
/// two chunks, this one cannot find the child with everything it judged
/// written. Returns what it wrote and whether it was killed (not: it ended
/// first).
pub fn run_killed_blocked_env(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (Vec<u8>, bool) {
    let (mut child, stdout) = spawn_killable(dir, env, args);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let killed = loop {
        if blocked_writing_stdout(child.id()) {
            let _ = child.kill();
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{args:?} never blocked writing its output"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    end_killable(child, stdout, Vec::new(), killed, args)
}

/// Starts `seen ARGS` for the `run_killed_*` helpers: chunks of 64 KiB,
/// stdin empty, stdout and stderr piped (stdout taken).
fn spawn_killable(
    dir: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (std::process::Child, std::process::ChildStdout) {
    let mut child = command(dir)
        .env("SEEN_CHUNK_BYTES", "65536")
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, stdout)
}

/// Ends a `run_killed_*` run: what the child wrote before it died (still in
/// the pipe) after `out`; a child not `killed` must have exited 0, and none
/// may have panicked.
fn end_killable(
    mut child: std::process::Child,
    mut stdout: std::process::ChildStdout,
    mut out: Vec<u8>,
    killed: bool,
    args: &[&str],
) -> (Vec<u8>, bool) {
    stdout.read_to_end(&mut out).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    if !killed {
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    (out, killed)
}

/// Whether a thread of process `pid` sleeps in a pipe write (`write` or
/// `writev`) to its fd 1.
fn blocked_writing_stdout(pid: u32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|t| {
        let p = t.path();
        let wchan = fs::read_to_string(p.join("wchan")).unwrap_or_default();
        let call = fs::read_to_string(p.join("syscall")).unwrap_or_default();
        let mut f = call.split_whitespace();
        wchan.contains("pipe_write")
            && matches!(f.next(), Some("1" | "20"))
            && f.next() == Some("0x1")
    })
}

/// The address of a Redis test server from `var` (set by
/// `scripts/with-redis.sh`), or `None`: the test is skipped, except under CI
/// (`CI` set), where a missing server is a failure.
pub fn redis_server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set under CI: run the tests with scripts/with-redis.sh")
        }
        _ => {
            eprintln!("skipped: {var} is not set (run the tests with scripts/with-redis.sh)");
            None
        }
    }
}

/// Calls of `verb` the server behind `c` has run so far (`INFO
/// commandstats`, `cmdstat_VERB`).
pub fn redis_calls(c: &mut redis::Connection, verb: &str) -> u64 {
    let text: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{verb}:calls=")))
        .map_or(0, |r| r.split(',').next().unwrap().parse().unwrap())
}

/// A name no other test run uses (`test`, the process id, the time): for
/// filters on the shared Redis test servers.
pub fn unique_name(test: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{t}", std::process::id())
}
