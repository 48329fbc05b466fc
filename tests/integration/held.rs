//! `dedup -f` holding the filter file in memory for its dense commit
//! windows (a test-and-set in anonymous memory, the changed segments written
//! back at each window's end) against keeping it mapped (a lookup, a pending
//! set, a second pass to record): the same lines printed and the same bits
//! recorded, whichever the run takes (`SEEN_HOLD=always` or `never`), through
//! growth, a run `-m` stops inside a window, and other writers' commits
//! between windows. (SIGKILL at random moments, held or not, is in
//! `crash.rs`.)

use crate::common::*;
use serde_json::Value;
use std::collections::HashSet;

/// `n` lines `k<i>` drawn from `universe` values: many repeats, in an order
/// fixed by `seed`.
fn lines(seed: u64, n: u64, universe: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend_from_slice(format!("k{}\n", rng.below(universe)).as_bytes());
    }
    out
}

/// `dedup` with `SEEN_HOLD=mode` and small chunks (so windows end often).
fn dedup(dir: &tempfile::TempDir, mode: &str, args: &[&str]) -> Run {
    seen_env(
        dir.path(),
        &[("SEEN_HOLD", mode), ("SEEN_CHUNK_BYTES", "16384")],
        [&["dedup"], args].concat(),
        b"",
    )
}

/// What one sequence of runs did.
struct Sequence {
    /// Standard output of each run.
    outs: Vec<Vec<u8>>,
    /// Windows held in memory against those committed, per run (from
    /// `--summary --json`).
    windows: Vec<(u64, u64)>,
    /// The filter's layers at the end, as `stats --json` gives them.
    layers: Vec<Value>,
}

/// The four runs of [`held_and_mapped_runs_print_and_record_the_same`] on a
/// new filter, with `SEEN_HOLD=mode`.
fn sequence(mode: &str, a: &[u8], b: &[u8]) -> Sequence {
    let d = tmp();
    write(&d, "a.txt", a);
    write(&d, "b.txt", b);
    let sum = ["--summary", "--json"];
    let runs = [
        // A first layer for 3,000 lines: the filter grows inside the run.
        dedup(
            &d,
            mode,
            &[
                &sum[..],
                &[
                    "-n",
                    "3000",
                    "-p",
                    "1e-9",
                    "--commit-every",
                    "5k",
                    "-f",
                    "f.seen",
                    "a.txt",
                ],
            ]
            .concat(),
        ),
        // Stops after 700 new lines, in the middle of a window.
        dedup(
            &d,
            mode,
            &[&sum[..], &["-m", "700", "-f", "f.seen", "b.txt"]].concat(),
        ),
        dedup(
            &d,
            mode,
            &[
                &sum[..],
                &["--dups-out", "dups.txt", "-f", "f.seen", "b.txt"],
            ]
            .concat(),
        ),
        // Nothing new: nothing printed, nothing recorded.
        dedup(
            &d,
            mode,
            &[&sum[..], &["-f", "f.seen", "a.txt", "b.txt"]].concat(),
        ),
    ];
    let mut outs = Vec::new();
    let mut windows = Vec::new();
    for r in &runs {
        r.code(0);
        let s = r.stderr_json();
        windows.push((
            s["held_windows"].as_u64().unwrap(),
            s["commit_windows"].as_u64().unwrap(),
        ));
        outs.push(r.stdout.clone());
    }
    seen(d.path(), ["verify", "f.seen"]).ok();
    let layers = stats_json(d.path(), "f.seen")["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            serde_json::json!({
                "bytes": l["bytes"], "inserts": l["inserts"], "bits_set": l["bits_set"],
            })
        })
        .collect();
    Sequence {
        outs,
        windows,
        layers,
    }
}

/// The same four runs held and mapped print exactly awk's lines, `-m`
/// records exactly the lines it printed, and the filters end with the same
/// layers, inserts and bits set.
#[test]
fn held_and_mapped_runs_print_and_record_the_same() {
    let a = lines(1, 40_000, 25_000);
    let b = lines(2, 20_000, 40_000);
    let mut known = HashSet::new();
    let want_a = reference_after(&mut known, &a, b'\n', false);
    let want_b = reference_after(&mut known, &b, b'\n', false);
    let cut = want_b
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c == b'\n')
        .nth(699)
        .map(|(i, _)| i + 1)
        .unwrap();
    let held = sequence("always", &a, &b);
    let mapped = sequence("never", &a, &b);
    for (name, outs) in [("held", &held.outs), ("mapped", &mapped.outs)] {
        assert_same(&outs[0], &want_a, &format!("{name}: first run"));
        assert_same(&outs[1], &want_b[..cut], &format!("{name}: -m 700"));
        assert_same(&outs[2], &want_b[cut..], &format!("{name}: the rest"));
        assert!(outs[3].is_empty(), "{name}: a run of known lines printed");
    }
    assert!(
        held.layers.len() > 1,
        "the first run should grow the filter"
    );
    assert_eq!(held.layers, mapped.layers);
    // Every window held, or none; the first run had several.
    let (hw, mw) = (&held.windows, &mapped.windows);
    assert!(hw[0].1 > 2, "{hw:?}");
    assert!(hw.iter().all(|(h, w)| h == w), "{hw:?}");
    assert!(mw.iter().all(|(h, _)| *h == 0), "{mw:?}");
}

/// With the default choice, a dense run on a small filter holds its windows
/// (and keeps holding them when all its lines are duplicates), and a sparse
/// one on a large filter keeps it mapped.
#[test]
fn dense_runs_hold_and_sparse_runs_map() {
    let d = tmp();
    write(&d, "many.txt", &lines(3, 50_000, 1_000_000));
    write(&d, "few.txt", &lines(4, 100, 1_000_000));
    let held = |r: &Run| r.code(0).stderr_json()["held_windows"].as_u64().unwrap();
    let sum = ["--summary", "--json", "-f"];
    // 50,000 lines into a filter of about 100 KiB: dense.
    let r = dedup(
        &d,
        "",
        &[&sum[..], &["small.seen", "-n", "50k", "many.txt"]].concat(),
    );
    assert!(held(&r) >= 1, "{}", r.ctx());
    // The same lines again, all duplicates, in windows of 10k lines: every
    // one stays held (nothing to write back).
    let r = dedup(
        &d,
        "",
        &[
            &sum[..],
            &["small.seen", "--commit-every", "10k", "many.txt"],
        ]
        .concat(),
    );
    let j = r.code(0).stderr_json();
    assert_eq!(j["new"], 0, "{}", r.ctx());
    assert!(j["commit_windows"].as_u64().unwrap() >= 3, "{}", r.ctx());
    assert_eq!(j["held_windows"], j["commit_windows"], "{}", r.ctx());
    // 100 lines into a filter of about 40 MiB: sparse.
    let r = dedup(
        &d,
        "",
        &[&sum[..], &["large.seen", "-n", "10M", "few.txt"]].concat(),
    );
    assert_eq!(held(&r), 0, "{}", r.ctx());
}

/// Processes taking turns on one file, each holding it in memory: a window
/// starts from what the others committed (the copy is read again), so every
/// line is printed exactly once over all of them.
#[test]
fn held_writers_taking_turns_print_each_line_once() {
    let d = tmp();
    let inputs: Vec<Vec<u8>> = (0..3).map(|p| lines(10 + p, 30_000, 50_000)).collect();
    for (p, data) in inputs.iter().enumerate() {
        write(&d, &format!("in{p}.txt"), data);
    }
    dedup(
        &d,
        "always",
        &["-n", "60k", "-p", "1e-9", "-f", "f.seen", "/dev/null"],
    )
    .ok();
    let names: Vec<String> = (0..3).map(|p| format!("in{p}.txt")).collect();
    let printed = concurrent_writers(d.path(), &[("SEEN_HOLD", "always")], &names);
    let union: HashSet<&Vec<u8>> = printed.iter().collect();
    assert_eq!(printed.len(), union.len(), "a line was printed twice");
    let all: HashSet<&[u8]> = inputs.iter().flat_map(|i| records(i, b'\n')).collect();
    assert_eq!(union.len(), all.len(), "a line was lost");
    seen(d.path(), ["verify", "f.seen"]).ok();
}

/// A window whose output fails (`--dups-out` on a full disk, at the first
/// chunk with a duplicate) after chunks of new lines went out loses no line
/// either way. Mapped, the lines of the chunks written were recorded one
/// chunk at a time: the next run prints at most those of the chunk that
/// failed.
/// Held, the window is undone and records none of them (it keeps no keys
/// unless `-m` may stop it): the next run prints every line again, as after
/// a kill.
#[test]
fn a_failed_window_loses_nothing_and_a_held_one_records_nothing() {
    let d = tmp();
    let distinct: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line-{i:05}\n").into_bytes())
        .collect();
    let input = [&distinct[..], &distinct[..]].concat();
    for mode in ["never", "always"] {
        let _ = std::fs::remove_file(d.path().join("f.seen"));
        let env = [("SEEN_HOLD", mode), ("SEEN_CHUNK_BYTES", "4096")];
        let args = [
            "dedup",
            "-n",
            "10k",
            "-f",
            "f.seen",
            "--dups-out",
            "/dev/full",
        ];
        // Standard input, read in chunks of 4 KiB (a file would be mapped).
        let r = seen_env(d.path(), &env, args, &input);
        r.error("cannot write to --dups-out file /dev/full: No space left on device");
        // Every new line went out before the first duplicate failed.
        assert_eq!(r.stdout, distinct, "{mode}: {}", r.ctx());
        let again = seen_io(d.path(), ["dedup", "-f", "f.seen"], &distinct);
        again.ok();
        if mode == "always" {
            assert_eq!(again.stdout, distinct, "held: none recorded");
        } else {
            // The chunk that failed, at most: the ones before were recorded.
            assert!(distinct.ends_with(&again.stdout), "{}", again.ctx());
            assert!(again.stdout.len() <= 4096, "{}", again.ctx());
        }
        seen(d.path(), ["verify", "f.seen"]).ok();
    }
}
