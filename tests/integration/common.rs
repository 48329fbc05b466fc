//! Helpers shared by the integration tests: temporary directories and a
//! deterministic generator, so test data depends on nothing but a seed.

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use tempfile::TempDir;

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
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("seen"));
    cmd.current_dir(dir)
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("SEEN_CHUNK_BYTES")
        .env_remove("SEEN_PORTABLE")
        .envs(env.iter().copied())
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
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// The command and what it did, for assertion messages.
    pub fn ctx(&self) -> String {
        format!(
            "seen {:?}\n  exit: {}\n  stdout: {:?}\n  stderr: {}",
            self.args,
            self.code,
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

    pub fn stdout(&self, expected: &[u8]) -> &Self {
        assert_eq!(
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(expected),
            "stdout differs\n{}",
            self.ctx()
        );
        assert_eq!(self.stdout, expected, "stdout bytes differ\n{}", self.ctx());
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

    pub fn no_warning(&self) -> &Self {
        assert!(
            !self.stderr.contains("warning"),
            "unexpected warning\n{}",
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

/// Runs `seen ARGS` in `dir` under `env` (and without the inherited
/// `RAYON_NUM_THREADS`, `SEEN_CHUNK_BYTES` and `SEEN_PORTABLE`), with `input` on
/// standard input.
pub fn seen_env<I, S>(dir: &Path, env: &[(&str, &str)], args: I, input: &[u8]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let out = assert_cmd::cargo::cargo_bin_cmd!("seen")
        .current_dir(dir)
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("SEEN_CHUNK_BYTES")
        .env_remove("SEEN_PORTABLE")
        .envs(env.iter().copied())
        .args(&args)
        .write_stdin(input.to_vec())
        .output()
        .expect("run seen");
    Run {
        args,
        code: out.status.code().expect("seen was killed by a signal"),
        stdout: out.stdout,
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
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
