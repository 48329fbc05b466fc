//! Issue 21: the surprises a first-time user hit, one test each.

use crate::common::{numbered, seen, seen_io, stats_json, tmp};

/// A filter far under its capacity has a tiny but non-zero false-positive
/// rate: `stats` and `--summary` must not round it to 0 by computing
/// `1 − (1 − p)` (it printed `estimated_fpp: 0` and `0.0e0`).
#[test]
fn tiny_rates_are_not_rounded_to_zero() {
    let dir = tmp();
    let lines = numbered("", 0..100_000);
    seen_io(
        dir.path(),
        ["build", "-n", "10M", "-o", "t.seen", "--summary", "--json"],
        &lines,
    )
    .code(0);
    let s = stats_json(dir.path(), "t.seen");
    let overall = s["estimated_fpp"].as_f64().unwrap();
    let layer = s["layers"][0]["estimated_fpp"].as_f64().unwrap();
    assert!(layer > 0.0 && layer < 1e-20, "layer rate {layer}");
    assert_eq!(overall, layer, "one layer: the overall rate is the layer's");
    let r = seen(dir.path(), ["stats", "t.seen"]);
    let text = r.stdout_str();
    assert!(!text.contains("0.000e0"), "{text}");
    let built = seen_io(
        dir.path(),
        ["build", "--add", "-o", "t.seen", "--summary", "--json"],
        b"one more\n",
    );
    let summary = built.stderr_json();
    let now = summary["fpp_now"].as_f64().unwrap();
    assert!(now > 0.0, "--summary's fpp_now is {now}");
    let expected = summary["expected_false_positives"].as_f64().unwrap();
    assert!(expected > 0.0 && expected < 1e-20, "{expected}");
}

/// `seen query F urls.txt` looks up the string "urls.txt": the answer stays
/// (exit 1, nothing printed), with a note that names `--file`.
#[test]
fn an_item_that_is_a_file_gets_a_note() {
    let dir = tmp();
    std::fs::write(dir.path().join("urls.txt"), b"https://a.example/\n").unwrap();
    seen(dir.path(), ["build", "-o", "u.seen", "urls.txt"]).ok();
    let r = seen(dir.path(), ["query", "u.seen", "urls.txt"]);
    r.code(1).no_stdout();
    r.stderr_has("--file urls.txt");
    r.stderr_has("looked up as an item");
    // An item that is no file: no note.
    seen(dir.path(), ["query", "u.seen", "https://a.example/"])
        .ok()
        .stdout(b"https://a.example/\n");
    // Reading the file is what the note suggests, and it finds the line.
    seen(dir.path(), ["query", "u.seen", "--file", "urls.txt"])
        .ok()
        .stdout(b"https://a.example/\n");
}
