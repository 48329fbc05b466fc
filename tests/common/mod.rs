//! Helpers shared by the integration tests: temporary directories and a
//! deterministic generator, so test data depends on nothing but a seed.
#![allow(dead_code)] // each test crate uses a different subset

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
