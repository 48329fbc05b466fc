//! Hostile environments: unreadable inputs and filters, unwritable directories
//! and a read-only filesystem. Permissions mean nothing to root, so these run
//! `seen` as user `nobody` (via `setpriv`) and mount a read-only tmpfs in a
//! private mount namespace (via `unshare -m`); each test says it is skipped,
//! and passes, where the machine does not allow that (not root, no util-linux).

use crate::common::{BIN, seen, stderr, tmp};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Runs `seen ARGS` in `dir` as user `nobody`.
fn as_nobody(dir: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Writes `in.txt` (two lines) in `dir` and builds `f.seen` from it, as root.
fn build_filter(dir: &Path) {
    fs::write(dir.join("in.txt"), b"a\nb\n").unwrap();
    let built = seen(dir, ["build", "-o", "f.seen", "in.txt"]);
    assert_eq!(built.code, 0, "{}", built.ctx());
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Exit 2, a message naming `name` and containing `needle`, nothing on stdout.
fn assert_error(o: &Output, name: &str, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(err.starts_with("seen: error: "), "{err}");
    assert!(
        err.contains(name) && err.contains(needle),
        "want {name} and {needle:?}: {err}"
    );
}

#[test]
fn unreadable_and_unwritable_paths_are_errors_that_say_what_to_do() {
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run seen as another user");
        return;
    }
    let d = tmp();
    let dir = d.path();
    chmod(dir, 0o755);
    build_filter(dir);
    fs::write(dir.join("secret.txt"), b"a\n").unwrap();
    chmod(&dir.join("secret.txt"), 0o000);
    fs::copy(dir.join("f.seen"), dir.join("ro.seen")).unwrap();
    chmod(&dir.join("ro.seen"), 0o444);
    fs::copy(dir.join("f.seen"), dir.join("hidden.seen")).unwrap();
    chmod(&dir.join("hidden.seen"), 0o000);
    fs::create_dir(dir.join("rodir")).unwrap();
    chmod(&dir.join("rodir"), 0o555);

    let o = as_nobody(dir, &["dedup", "secret.txt"]);
    assert_error(&o, "cannot open secret.txt", "Permission denied");
    let o = as_nobody(dir, &["query", "hidden.seen", "a"]);
    assert_error(&o, "hidden.seen", "Permission denied");
    for args in [
        &["dedup", "-f", "ro.seen", "in.txt"][..],
        &["build", "--add", "-o", "ro.seen", "in.txt"],
    ] {
        let o = as_nobody(dir, args);
        assert_error(&o, "cannot open filter ro.seen for writing", "only read it");
    }
    for (args, target) in [
        (
            &["build", "-o", "rodir/x.seen", "in.txt"][..],
            "rodir/x.seen",
        ),
        (
            &["dedup", "-f", "rodir/new.seen", "in.txt"],
            "rodir/new.seen",
        ),
    ] {
        let o = as_nobody(dir, args);
        assert_error(&o, target, "cannot write in directory rodir");
        assert!(!stderr(&o).contains(".tmp"), "no temporary name: {o:?}");
    }
    // Reading needs only read permission: a read-only file answers.
    let o = as_nobody(dir, &["query", "ro.seen", "a", "zz"]);
    assert_eq!(
        (o.status.code(), o.stdout.as_slice()),
        (Some(0), &b"a\n"[..]),
        "{o:?}"
    );
    assert!(as_nobody(dir, &["verify", "ro.seen"]).status.success());
    // Nothing was left behind in the unwritable directory.
    assert_eq!(fs::read_dir(dir.join("rodir")).unwrap().count(), 0);
}

#[test]
fn read_only_filesystem() {
    if !is_root() {
        eprintln!("skipped: needs root to mount a read-only tmpfs");
        return;
    }
    let d = tmp();
    let dir = d.path();
    build_filter(dir);
    fs::create_dir(dir.join("ro")).unwrap();
    // In a private mount namespace, so nothing outlives the test: a tmpfs with
    // the filter, remounted read-only, then every command on it.
    let script = format!(
        "set -e
        mount -t tmpfs -o size=4m tmpfs ro
        cp f.seen ro/
        mount -o remount,ro ro
        set +e
        for c in 'dedup -f ro/f.seen in.txt' 'build --add -o ro/f.seen in.txt' \
                 'build --force -o ro/f.seen in.txt' 'dedup -f ro/new.seen in.txt' \
                 'query ro/f.seen a' 'stats --json ro/f.seen' 'verify ro/f.seen'; do
            '{bin}' $c > out 2> err
            echo \"$c => $? $(head -c 300 err | tr '\\n' ' ')\"
        done",
        bin = BIN
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(dir)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    if !o.status.success() || report.is_empty() {
        eprintln!(
            "skipped: cannot mount a read-only tmpfs here: {}",
            stderr(&o)
        );
        return;
    }
    let verdict = |cmd: &str| -> String {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{cmd} => ")))
            .unwrap_or_else(|| panic!("{cmd} not run: {report}"))
            .to_string()
    };
    for cmd in [
        "dedup -f ro/f.seen in.txt",
        "build --add -o ro/f.seen in.txt",
    ] {
        let v = verdict(cmd);
        assert!(
            v.starts_with(
                "2 seen: error: cannot open filter ro/f.seen for writing: read-only filesystem"
            ),
            "{cmd}: {v}"
        );
    }
    for (cmd, target) in [
        ("build --force -o ro/f.seen in.txt", "ro/f.seen"),
        ("dedup -f ro/new.seen in.txt", "ro/new.seen"),
    ] {
        let v = verdict(cmd);
        assert!(v.starts_with("2 "), "{cmd}: {v}");
        assert!(
            v.contains(&format!(
                "cannot create {target}: cannot write in directory ro: read-only filesystem"
            )),
            "{cmd}: {v}"
        );
    }
    // Readers work on a read-only filesystem.
    for cmd in [
        "query ro/f.seen a",
        "stats --json ro/f.seen",
        "verify ro/f.seen",
    ] {
        let v = verdict(cmd);
        assert!(v.starts_with("0 "), "{cmd}: {v}");
    }
}
