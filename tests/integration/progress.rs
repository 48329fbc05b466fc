//! Progress on stderr: absent when stderr is not a terminal, drawn under a
//! pseudo-terminal (`script`), forced as plain lines by `--progress`, and
//! suppressed by `-q`. `SEEN_PROGRESS_DELAY_MS=0` shows it from the first
//! moment, so these runs need not last a second to be tested.

use crate::common::{BIN, Run, seen, seen_env, tmp, write};
use std::process::Command;

fn input(lines: usize) -> Vec<u8> {
    (0..lines)
        .flat_map(|i| format!("https://example.com/{}\n", i % 700).into_bytes())
        .collect()
}

/// Runs `seen ARGS` with stderr piped (not a terminal).
fn piped(dir: &std::path::Path, args: &[&str]) -> Run {
    seen_env(dir, &[("SEEN_PROGRESS_DELAY_MS", "0")], args, b"")
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let d = tmp();
    write(&d, "in.txt", &input(5000));
    for args in [
        &["dedup", "in.txt"][..],
        &["build", "-o", "f.seen", "in.txt"],
        &["stats", "f.seen"],
        &["verify", "f.seen"],
        &["query", "f.seen", "-f", "in.txt"],
    ] {
        let r = piped(d.path(), args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.ctx());
        assert!(r.stderr.is_empty(), "{args:?} wrote to stderr: {}", r.ctx());
    }
}

#[test]
fn progress_flag_forces_plain_lines_and_quiet_suppresses_it() {
    let d = tmp();
    write(&d, "in.txt", &input(5000));
    let r = piped(d.path(), &["dedup", "--progress", "in.txt"]);
    let err = &r.stderr;
    assert_eq!(r.code, 0, "{}", r.ctx());
    // Plain text for a log: no cursor movement, no carriage returns.
    assert!(err.starts_with("seen: "), "{err}");
    assert!(err.contains("lines"), "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
    // The output is the same as without progress.
    assert_eq!(r.stdout, piped(d.path(), &["dedup", "in.txt"]).stdout);

    let r = piped(d.path(), &["build", "--progress", "-o", "f.seen", "in.txt"]);
    assert!(r.stderr.contains("seen: "));
    let r = piped(d.path(), &["stats", "--progress", "f.seen"]);
    assert!(r.stderr.starts_with("seen: "));

    let r = piped(d.path(), &["dedup", "-q", "in.txt"]);
    assert!(r.code == 0 && r.stderr.is_empty(), "{}", r.ctx());
    let r = piped(d.path(), &["dedup", "-q", "--progress", "in.txt"]);
    assert_eq!(r.code, 2, "-q and --progress conflict");
}

/// Runs `cmd` under `script` (stdin, stdout and stderr a pseudo-terminal) in
/// `dir` and returns the transcript.
pub fn under_script(dir: &std::path::Path, cmd: &str) -> String {
    let transcript = dir.join("transcript");
    let r = Command::new("script")
        .args(["-q", "-e", "-c", cmd])
        .arg(&transcript)
        .current_dir(dir)
        .env("SEEN_PROGRESS_DELAY_MS", "0")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    String::from_utf8_lossy(&std::fs::read(&transcript).unwrap()).into_owned()
}

#[test]
fn bar_is_drawn_under_a_pseudo_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let d = tmp();
    write(&d, "in.txt", &input(20_000));
    // Under `script`, stderr is a pseudo-terminal; stdout goes to a file.
    let t = under_script(d.path(), &format!("'{BIN}' dedup in.txt > out.txt"));
    // The bar: bytes of the file, percent and the line count, then cleared.
    assert!(t.contains("MiB") || t.contains("KiB"), "{t:?}");
    assert!(t.contains('%') && t.contains("lines"), "{t:?}");
    assert!(
        t.contains('\x1b'),
        "a terminal bar uses escape sequences: {t:?}"
    );
    let out = std::fs::read(d.path().join("out.txt")).unwrap();
    assert_eq!(out, input(700));

    // Lines printed to the terminal show progress themselves: no bar then.
    let t = under_script(d.path(), &format!("'{BIN}' dedup in.txt"));
    assert!(t.contains("https://example.com/699"), "{t:?}");
    assert!(!t.contains("lines") && !t.contains("ETA"), "{t:?}");
    // stats prints its table after the bits are counted: the bar shows.
    let r = seen(d.path(), ["build", "-o", "f.seen", "in.txt"]);
    assert_eq!(r.code, 0, "{}", r.ctx());
    let t = under_script(d.path(), &format!("'{BIN}' stats f.seen"));
    assert!(t.contains("ETA") && t.contains("fill"), "{t:?}");

    // A warning printed during the run goes above the bar, on a line of its
    // own: the bar's line is cleared first.
    let seq: Vec<u8> = (0..5000)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    write(&d, "seq.txt", &seq);
    let t = under_script(
        d.path(),
        &format!("'{BIN}' build --fixed -n 1000 -o w.seen seq.txt"),
    );
    let at = t
        .find("seen: warning")
        .unwrap_or_else(|| panic!("no warning: {t:?}"));
    let before = &t[..at];
    assert!(
        before.ends_with("\x1b[2K") || before.ends_with('\n'),
        "the warning shares a line with the bar: {t:?}"
    );

    // -q: nothing but the command's own output in the transcript.
    let t = under_script(d.path(), &format!("'{BIN}' dedup -q in.txt > out.txt"));
    assert!(!t.contains("lines"), "{t:?}");
}
