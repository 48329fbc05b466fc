//! `seen merge` (issue 24): the union of filters of one shape is the OR of
//! their bits, so it answers as one filter built from all their lines.

use crate::common::{numbered, seen, seen_env, seen_io, stats_json, tmp, write};

/// The bytes of a filter file after its header (bit arrays and checksum
/// tables): equal when two filters hold the same bits.
fn body(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap()[4096..].to_vec()
}

#[test]
fn a_merge_of_halves_holds_the_bits_of_one_built_from_both() {
    let d = tmp();
    let a = write(&d, "a.txt", &numbered("u", 0..30_000));
    let b = write(&d, "b.txt", &numbered("u", 30_000..60_000));
    let both = write(&d, "both.txt", &numbered("u", 0..60_000));
    let sized = ["--fixed", "-n", "100k", "-p", "1e-6", "-o"];
    for (out, input) in [("a.seen", &a), ("b.seen", &b), ("both.seen", &both)] {
        seen(
            d.path(),
            ["build"]
                .into_iter()
                .chain(sized)
                .chain([out])
                .chain([input.to_str().unwrap()]),
        )
        .ok();
    }
    let run = seen(d.path(), ["merge", "-o", "m.seen", "a.seen", "b.seen"]);
    run.code(0).stderr_has("merged 2 filters into m.seen");
    run.stderr_has("estimated false-positive rate");
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    assert_eq!(
        body(&d.path().join("m.seen")),
        body(&d.path().join("both.seen"))
    );
    // Counters add up; the result checks out and answers for every line.
    assert_eq!(stats_json(d.path(), "m.seen")["inserts"], 60_000);
    seen(d.path(), ["verify", "m.seen"]).code(0);
    seen_io(
        d.path(),
        ["query", "-c", "m.seen"],
        &numbered("u", 0..60_000),
    )
    .ok()
    .stdout(b"60000\n");
}

#[test]
fn growing_filters_merge_layer_by_layer() {
    let d = tmp();
    // Three layers, two, one: the same -n, so the layers line up.
    let grow = |out: &str, lines: std::ops::Range<u32>| {
        seen_io(
            d.path(),
            ["build", "-n", "5k", "-o", out],
            &numbered("g", lines),
        )
        .ok();
    };
    grow("a.seen", 0..30_000);
    grow("b.seen", 30_000..40_000);
    grow("c.seen", 40_000..42_000);
    let layers = |f: &str| stats_json(d.path(), f)["layers"].as_array().unwrap().len();
    let (la, lb, lc) = (layers("a.seen"), layers("b.seen"), layers("c.seen"));
    assert!(la > lb && lb > lc, "{la} {lb} {lc}");
    seen(
        d.path(),
        ["merge", "-o", "m.seen", "c.seen", "b.seen", "a.seen"],
    )
    .code(0);
    assert_eq!(layers("m.seen"), la);
    // No line of any input is missing.
    seen_io(
        d.path(),
        ["query", "-c", "m.seen"],
        &numbered("g", 0..42_000),
    )
    .ok()
    .stdout(b"42000\n");
    // It keeps growing as a's did.
    let before = layers("m.seen");
    seen_io(
        d.path(),
        ["build", "--add", "-o", "m.seen"],
        &numbered("h", 0..200_000),
    )
    .ok();
    assert!(layers("m.seen") > before);
}

/// Issue 43, item 2: filters of any size, rate and growth merge (before,
/// "a.seen and b.seen differ in their layer 0 (…)" and exit 2); the layers
/// of other shapes sit side by side, and the union answers for every line.
#[test]
fn filters_of_any_shape_merge_into_their_union() {
    let d = tmp();
    let mk = |out: &str, flags: &[&str], lines: std::ops::Range<u32>| {
        let input = write(&d, &format!("{out}.txt"), &numbered("s", lines));
        let mut args = vec!["build", "-o", out, input.to_str().unwrap()];
        args.extend_from_slice(flags);
        seen(d.path(), args).ok();
    };
    // Sized for their files' lines (as `build -o FILE` does), fixed, growing:
    // four shapes.
    mk("a.seen", &[], 0..5_000);
    mk("b.seen", &[], 4_000..10_000);
    mk(
        "c.seen",
        &["--fixed", "-n", "2k", "-p", "1e-2"],
        10_000..12_000,
    );
    mk("d.seen", &["-n", "1k"], 12_000..17_000);
    let layers = |f: &str| {
        stats_json(d.path(), f)["layers"]
            .as_array()
            .unwrap()
            .clone()
    };
    let d_layers = layers("d.seen").len();
    assert!(d_layers >= 3, "{d_layers}");
    let run = seen(
        d.path(),
        [
            "merge", "-o", "m.seen", "d.seen", "a.seen", "b.seen", "c.seen",
        ],
    );
    run.code(0).stderr_has("merged 4 filters into m.seen");
    // No false negative: every line of every input.
    seen_io(
        d.path(),
        ["query", "-c", "m.seen"],
        &numbered("s", 0..17_000),
    )
    .ok()
    .stdout(b"17000\n");
    seen(d.path(), ["verify", "m.seen"]).code(0);
    // Every layer kept: none of a, b and c is the shape of another.
    let m = stats_json(d.path(), "m.seen");
    let ml = m["layers"].as_array().unwrap();
    assert_eq!(ml.len(), 3 + d_layers);
    // Its rate is the layers' compound rate, and false positives follow it.
    let compound = 1.0
        - ml.iter()
            .map(|l| 1.0 - l["estimated_fpp"].as_f64().unwrap())
            .product::<f64>();
    let est = m["estimated_fpp"].as_f64().unwrap();
    assert!(
        (est - compound).abs() <= 1e-9 * compound,
        "{est} {compound}"
    );
    assert!(est > 3e-4, "c's full layer alone is above 3e-4: {est}");
    let probes = 100_000;
    let fp = seen_io(
        d.path(),
        ["query", "-c", "m.seen"],
        &numbered("never", 0..probes),
    )
    .stdout_str();
    let fp: f64 = fp.trim().parse().unwrap();
    let expected = est * f64::from(probes);
    assert!(
        (0.5 * expected..=2.0 * expected).contains(&fp),
        "{fp} false positives, {expected} expected"
    );
    // New lines go to the layer with the most room (d's newest, 2,000
    // left), not to c's full one: no layer is added.
    assert_eq!(ml.last().unwrap()["capacity"], 4_000);
    seen_io(
        d.path(),
        ["dedup", "-f", "m.seen"],
        &numbered("t", 0..1_000),
    )
    .ok()
    .stdout(&numbered("t", 0..1_000));
    assert_eq!(layers("m.seen").len(), 3 + d_layers);
    seen(d.path(), ["verify", "m.seen"]).code(0);
}

/// A filter that forgot a key and then grew has its later layers after
/// its forget list: a union laid out from the inputs' offsets overlapped
/// them (a corrupt header, and `merge -o A A B` lost A). Layer by layer,
/// into a new file and into an input.
#[test]
fn a_grown_filter_with_a_forget_list_merges_layer_by_layer() {
    let d = tmp();
    let p = d.path();
    let sized = ["-n", "1000", "-p", "0.01"];
    let build = |out: &str, add: bool, lines: &[u8]| {
        let mut args = vec!["build", "-o", out];
        args.extend_from_slice(if add { &["--add"][..] } else { &sized[..] });
        seen_io(p, args, lines).code(0);
    };
    build("a.seen", false, &numbered("a", 0..1_000));
    seen(p, ["forget", "a.seen", "a5"]).code(0);
    build("a.seen", true, &numbered("a", 1_000..4_000));
    build("b.seen", false, &numbered("b", 0..8_001));
    let all = [numbered("a", 0..4_000), numbered("b", 0..8_001)].concat();
    for out in ["m.seen", "a.seen"] {
        seen(p, ["merge", "-o", out, "a.seen", "b.seen"]).code(0);
        seen(p, ["verify", out]).code(0);
        seen_io(p, ["query", "-c", out], &all)
            .ok()
            .stdout(b"12000\n");
        seen(p, ["query", "-q", out, "a5"]).code(1);
    }
}

#[test]
fn filters_that_hash_keys_apart_are_refused_saying_how_to_rebuild() {
    let d = tmp();
    let lines = numbered("x", 0..1000);
    let mk = |out: &str, flags: &[&str]| {
        let mut args = vec!["build", "-o", out];
        args.extend_from_slice(flags);
        seen_io(d.path(), args, &lines).ok();
    };
    mk("a.seen", &["-n", "10k"]);
    mk("seed.seen", &["-n", "10k", "--seed", "7"]);
    mk("keys.seen", &["-n", "10k", "--ignore-case"]);
    for (other, what, fix) in [
        ("seed.seen", "seed", "--seed "),
        ("keys.seen", "key options", "with `--raw-keys`"),
    ] {
        seen(d.path(), ["merge", "-o", "m.seen", "a.seen", other])
            .error(&format!("differ in their {what}"))
            .stderr_has("rebuild one from its lines")
            .stderr_has(fix);
        assert!(
            !d.path().join("m.seen").exists(),
            "{other}: output left behind"
        );
    }
    // Lines are not a filter; a filter named twice is a mistake.
    let txt = write(&d, "lines.txt", &lines);
    seen(
        d.path(),
        ["merge", "-o", "m.seen", "a.seen", txt.to_str().unwrap()],
    )
    .error("not a seen filter");
    seen(d.path(), ["merge", "-o", "m.seen", "a.seen", "./a.seen"]).error("given twice");
}

#[test]
fn the_output_may_be_an_input_and_anything_else_needs_force() {
    let d = tmp();
    let sized = ["-n", "50k"];
    let mk = |out: &str, lines: std::ops::Range<u32>| {
        let mut args = vec!["build", "-o", out];
        args.extend_from_slice(&sized);
        seen_io(d.path(), args, &numbered("y", lines)).ok();
    };
    mk("a.seen", 0..10_000);
    mk("b.seen", 10_000..20_000);
    mk("c.seen", 20_000..20_001);
    // Into an input: a.seen becomes the union.
    seen(d.path(), ["merge", "-o", "a.seen", "a.seen", "b.seen"]).code(0);
    seen_io(
        d.path(),
        ["query", "-c", "a.seen"],
        &numbered("y", 0..20_000),
    )
    .ok()
    .stdout(b"20000\n");
    // Over another filter: only with --force.
    let c_before = std::fs::read(d.path().join("c.seen")).unwrap();
    seen(d.path(), ["merge", "-o", "c.seen", "b.seen"]).error("--force");
    assert_eq!(std::fs::read(d.path().join("c.seen")).unwrap(), c_before);
    seen(d.path(), ["merge", "--force", "-o", "c.seen", "b.seen"]).code(0);
    assert_eq!(
        body(&d.path().join("c.seen")),
        body(&d.path().join("b.seen"))
    );
    // Never over a file that is not a filter, nor into a directory.
    write(&d, "notes.txt", b"keep me\n");
    seen(d.path(), ["merge", "--force", "-o", "notes.txt", "b.seen"]).error("not a seen filter");
    assert_eq!(
        std::fs::read(d.path().join("notes.txt")).unwrap(),
        b"keep me\n"
    );
    std::fs::create_dir(d.path().join("dir")).unwrap();
    seen(d.path(), ["merge", "-o", "dir", "b.seen"]).error("directory");
}

#[test]
fn a_union_past_its_capacity_says_so() {
    let d = tmp();
    // Each holds its capacity: together, twice it.
    seen_io(
        d.path(),
        [
            "build", "--fixed", "-n", "20k", "-p", "1e-4", "-o", "a.seen",
        ],
        &numbered("z", 0..20_000),
    )
    .ok();
    seen_io(
        d.path(),
        [
            "build", "--fixed", "-n", "20k", "-p", "1e-4", "-o", "b.seen",
        ],
        &numbered("z", 20_000..40_000),
    )
    .ok();
    let run = seen(d.path(), ["merge", "-o", "m.seen", "a.seen", "b.seen"]);
    run.code(0)
        .stderr_has("warning")
        .stderr_has("above its target");
    let est = stats_json(d.path(), "m.seen")["estimated_fpp"]
        .as_f64()
        .unwrap();
    assert!(est > 1e-4, "{est}");
}

/// Redis filters as inputs and as the output (when the test servers run:
/// see tests/integration/redis.rs).
#[test]
fn redis_filters_merge_with_files() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = tmp();
    let run = crate::common::unique_name("merge");
    let name = |n: &str| format!("redis://{addr}/{run}-{n}");
    let sized = ["--fixed", "-n", "100k", "-p", "1e-6"];
    let mk = |out: &str, lines: std::ops::Range<u32>| {
        let mut args = vec!["build", "-o", out];
        args.extend_from_slice(&sized);
        seen_io(d.path(), args, &numbered("r", lines)).ok();
    };
    mk("a.seen", 0..20_000);
    mk("b.seen", 20_000..40_000);
    mk("both.seen", 0..40_000);
    let rb = name("b");
    seen(d.path(), ["copy", "b.seen", &rb]).ok();
    // File + Redis into Redis, then Redis into a file: the same bits as one
    // built from both halves.
    let rm = name("m");
    seen(d.path(), ["merge", "-o", &rm, "a.seen", &rb]).code(0);
    seen_io(d.path(), ["query", "-c", &rm], &numbered("r", 0..40_000))
        .ok()
        .stdout(b"40000\n");
    seen(d.path(), ["merge", "-o", "back.seen", &rm]).code(0);
    assert_eq!(
        body(&d.path().join("back.seen")),
        body(&d.path().join("both.seen"))
    );
    // Into a Redis input: only with --force (it is deleted before the
    // union is stored); over another Redis filter, likewise.
    seen(d.path(), ["merge", "-o", &rb, &rb, "a.seen"]).error("one of the inputs");
    seen(d.path(), ["merge", "--force", "-o", &rb, &rb, "a.seen"]).code(0);
    seen_env(
        d.path(),
        &[],
        ["query", "-c", &rb],
        &numbered("r", 0..40_000),
    )
    .ok()
    .stdout(b"40000\n");
    seen(d.path(), ["merge", "-o", &rm, "a.seen"]).error("already exists");
    // Issue 43, item 2: a Redis filter is sized as Redis sizes (fewer bits
    // per key), never like a file; it merges with files all the same, into
    // a file or into Redis (before: "differ in their layer 0").
    let rg = name("grown");
    seen_io(
        d.path(),
        ["build", "--redis-layout", "bloom", "-n", "30k", "-o", &rg],
        &numbered("r", 40_000..60_000),
    )
    .ok();
    seen(d.path(), ["merge", "-o", "mixed.seen", &rg, "a.seen", &rb]).code(0);
    let rmixed = name("mixed");
    seen(d.path(), ["merge", "-o", &rmixed, "a.seen", &rg]).code(0);
    for (m, lines) in [("mixed.seen", 0..60_000), (rmixed.as_str(), 0..20_000)] {
        seen_io(d.path(), ["query", "-c", m], &numbered("r", lines.clone()))
            .ok()
            .stdout(format!("{}\n", lines.len()).as_bytes());
    }
    seen_io(
        d.path(),
        ["query", "-c", &rmixed],
        &numbered("r", 40_000..60_000),
    )
    .ok()
    .stdout(b"20000\n");
    assert_eq!(
        stats_json(d.path(), &rmixed)["layers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A writer adds to it, and it checks out.
    seen_io(d.path(), ["dedup", "-f", &rmixed], &numbered("n", 0..500))
        .ok()
        .stdout(&numbered("n", 0..500));
    seen(d.path(), ["verify", &rmixed]).code(0);
    // A filter of fingerprint sets (the default of a new Redis filter) has
    // no bits to join with a file's: said before anything is written.
    let rs = name("sets");
    seen_io(
        d.path(),
        ["build", "-n", "100k", "-o", &rs],
        &numbered("r", 0..100),
    )
    .ok();
    seen(d.path(), ["merge", "-o", "s.seen", "a.seen", &rs])
        .error("holds Bloom bits and")
        .stderr_has("--redis-layout bloom");
    assert!(!d.path().join("s.seen").exists());
}

/// Issue 43, item 2, for Redis's default layout: filters of fingerprint
/// sets merge into one (before: refused, "no Bloom bits to copy or
/// merge"), on a server and into a Cluster, and the forget lists follow
/// the rule of files: a key forgotten by one input stays forgotten only
/// if no other input holds it.
#[test]
fn redis_filters_of_fingerprint_sets_merge() {
    let Some(addr) = crate::common::redis_server("SEEN_TEST_REDIS") else {
        return;
    };
    let d = tmp();
    let run = crate::common::unique_name("msets");
    let name = |n: &str| format!("redis://{addr}/{run}-{n}");
    let (ra, rb) = (name("a"), name("b"));
    let mk = |at: &str, lines: std::ops::Range<u32>| {
        seen_io(
            d.path(),
            ["build", "-n", "100k", "-o", at],
            &numbered("s", lines),
        )
        .ok();
    };
    mk(&ra, 0..30_000);
    mk(&rb, 20_000..50_000);
    // Forgotten in a only (b holds s20001 and s25000, a alone s5); in both.
    seen_io(d.path(), ["forget", &ra], b"s5\ns20001\ns25000\n").code(0);
    seen_io(d.path(), ["forget", &rb], b"s25000\n").code(0);
    let mut outs = vec![name("m")];
    if let Ok(nodes) = std::env::var("SEEN_TEST_REDIS_CLUSTER") {
        let first = nodes.split(',').next().unwrap().to_string();
        outs.push(format!("redis+cluster://{first}/{run}-m"));
    }
    for out in &outs {
        let m = seen(d.path(), ["merge", "-o", out, &ra, &rb]);
        m.code(0)
            .stderr_has("50,000 fingerprints")
            .stderr_has("2 keys on forget lists");
        // Every line of either but the two forgotten where no input holds
        // them.
        seen_io(d.path(), ["query", "-c", out], &numbered("s", 0..50_000))
            .ok()
            .stdout(b"49998\n");
        seen_io(d.path(), ["query", out], b"s5\ns20001\ns25000\n")
            .code(0)
            .stdout(b"s20001\n");
        seen(d.path(), ["verify", out]).code(0);
        // Writers print the forgotten ones once, then they are seen.
        let again = [&numbered("s", 0..50_000)[..], b"s5\ns25000\nnew\n"].concat();
        seen_io(d.path(), ["dedup", "-f", out], &again)
            .ok()
            .stdout(b"s5\ns25000\nnew\n");
        seen_io(d.path(), ["dedup", "-f", out], b"s5\nnew\n")
            .ok()
            .stdout(b"");
    }
    // Into an input (with --force): stored first, the input removed after.
    seen(d.path(), ["merge", "--force", "-o", &ra, &ra, &rb]).code(0);
    seen_io(d.path(), ["query", "-c", &ra], &numbered("s", 0..50_000))
        .ok()
        .stdout(b"49998\n");
    seen(d.path(), ["verify", &ra]).code(0);
    // Into a file: a fingerprint is not Bloom bits.
    seen(d.path(), ["merge", "-o", "s.seen", &ra, &rb]).error("kept in Redis only");
    assert!(!d.path().join("s.seen").exists());
    // Sets of other sizes do not line up.
    let rc = name("c");
    seen_io(d.path(), ["build", "-n", "1M", "-o", &rc], b"x\n").ok();
    seen(d.path(), ["merge", "-o", &name("n"), &ra, &rc])
        .error("differ in their sets")
        .stderr_has("rebuild one");
}
