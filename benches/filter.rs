//! Core benchmark (a program, run with `cargo bench`): insert and query cost per
//! key at filter sizes from 64 KiB to 1 GiB, hashes precomputed so only the
//! probe is measured, plus the hash alone. Prints a markdown table of medians
//! over `SEEN_BENCH_RUNS` runs (default 3).
//!
//! `cargo bench --bench filter -- 16M` limits the sizes to those given.
//! `cargo bench --bench filter -- layers` measures a growing filter instead:
//! 7M distinct keys into one layer sized for 10M, against a filter that
//! starts at 30k and grows to 8 layers (the `l1`/`l8` rows of
//! `scripts/bench-paths.sh`, without the pipeline around them).

use seen::file::MemFilter;
use seen::filter::Scheme;
use seen::filter::sizing::plan_with_spread;
use seen::hash::{Hash128, hash};
use seen::pipeline::Store;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn urls(range: std::ops::Range<u64>) -> Vec<String> {
    range
        .map(|i| format!("https://example.com/articles/{i}?ref=feed&page=2"))
        .collect()
}

fn keys(urls: &[String]) -> Vec<Hash128> {
    urls.iter().map(|u| hash(u.as_bytes(), 1)).collect()
}

fn main() {
    // The switches (`SEEN_PORTABLE`, ...) as `seen` itself reads them.
    seen::tuning::install(seen::tuning::Tuning::from_env());
    let runs: usize = std::env::var("SEEN_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if wanted.iter().any(|w| w == "layers") {
        layers(runs);
        return;
    }
    let sizes: [(&str, u64); 6] = [
        ("64K", 64 << 10),
        ("1M", 1 << 20),
        ("16M", 16 << 20),
        ("64M", 64 << 20),
        ("256M", 256 << 20),
        ("1G", 1 << 30),
    ];
    let ops = 4_000_000u64;
    let strings = urls(0..ops);
    let avg = strings.iter().map(String::len).sum::<usize>() as f64 / ops as f64;
    let t = Instant::now();
    let hs = keys(&strings);
    println!(
        "hash: xxh3-128 of {avg:.0}-byte keys: {:.1} ns/key\n",
        t.elapsed().as_nanos() as f64 / ops as f64
    );
    drop(strings);
    let absent = keys(&urls(ops..2 * ops));
    println!(
        "| filter size | bit positions | blocks/key | k | insert ns/op | query (absent) ns/op | query (present) ns/op |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, bytes) in sizes {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        // Capacity that gives about this size at 1e-3 (x = 1), 1e-6 (x = 2) or
        // 2e-7 (x = 3 or 4, the first layer of a growing 1e-6 filter).
        for (scheme, x, p, bits_per_key) in [
            (Scheme::Scattered, 1, 1e-3, 15.5),
            (Scheme::Sectored, 1, 1e-3, 15.7),
            (Scheme::Scattered, 2, 1e-6, 31.1),
            (Scheme::Sectored, 2, 1e-6, 31.5),
            (Scheme::Scattered, 4, 2e-7, 33.0),
            (Scheme::Sectored, 3, 2e-7, 34.0),
        ] {
            let capacity = (bytes as f64 * 8.0 / bits_per_key) as u64;
            let plan = plan_with_spread(capacity, p, x, scheme).unwrap();
            let n = ops.min(capacity) as usize;
            let (mut ins, mut qa, mut qp) = (vec![], vec![], vec![]);
            let mut v = Vec::with_capacity(n);
            for _ in 0..runs {
                let mut f = MemFilter::new(&plan, 1).unwrap();
                // Touch every page first: page faults are not the probe's cost.
                prefault(&mut f);
                let t = Instant::now();
                f.insert_batch(&hs[..n], &mut v).unwrap();
                ins.push(t.elapsed().as_nanos() as f64 / n as f64);
                let t = Instant::now();
                f.contains_batch(&absent[..n], &mut v).unwrap();
                qa.push(t.elapsed().as_nanos() as f64 / n as f64);
                let t = Instant::now();
                f.contains_batch(&hs[..n], &mut v).unwrap();
                qp.push(t.elapsed().as_nanos() as f64 / n as f64);
                assert!(v.iter().all(|&b| b), "false negative");
            }
            println!(
                "| {name} | {} | {x} | {} | {:.1} | {:.1} | {:.1} |",
                scheme.name(),
                plan.layout.k,
                median(ins),
                median(qa),
                median(qp)
            );
        }
    }
}

/// Faults every page in, so the timings are of probes, not of page faults.
fn prefault(f: &mut MemFilter) {
    f.prefault();
}

/// A growing filter against one layer: ns per key to insert 7M distinct keys
/// (in batches of 60k, about a 4 MiB chunk of URLs), then to look up 7M
/// present and 7M absent ones, medians of `runs`; and the ratio.
fn layers(runs: usize) {
    use seen::filter::sizing::{Growth, Spec};
    let n = 7_000_000u64;
    let present = keys(&urls(0..n));
    let absent = keys(&urls(n..2 * n));
    let spec = |capacity, growth| Spec {
        capacity,
        target_fpp: 1e-6,
        growth,
        window: None,
    };
    println!(
        "| filter | layers | insert ns/key | query (present) ns/key | query (absent) ns/key |"
    );
    println!("|---|---|---|---|---|");
    let mut rows = vec![];
    for (name, spec) in [
        ("-n 10M", spec(10_000_000, Some(Growth::new(2)))),
        ("-n 30k", spec(30_000, Some(Growth::new(2)))),
    ] {
        let (mut ins, mut qp, mut qa, mut count) = (vec![], vec![], vec![], 0);
        let mut v = Vec::with_capacity(n as usize);
        for _ in 0..runs {
            let mut f = MemFilter::with_spec(&spec, 1).unwrap();
            let t = Instant::now();
            for batch in present.chunks(60_000) {
                v.clear();
                f.insert_batch(batch, &mut v).unwrap();
            }
            ins.push(t.elapsed().as_nanos() as f64 / n as f64);
            count = f.header().layers.len();
            let t = Instant::now();
            v.clear();
            for batch in present.chunks(60_000) {
                f.contains_batch(batch, &mut v).unwrap();
            }
            qp.push(t.elapsed().as_nanos() as f64 / n as f64);
            assert!(v.iter().all(|&b| b), "false negative");
            let t = Instant::now();
            v.clear();
            for batch in absent.chunks(60_000) {
                f.contains_batch(batch, &mut v).unwrap();
            }
            qa.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        let row = (median(ins), median(qp), median(qa));
        println!(
            "| {name} | {count} | {:.1} | {:.1} | {:.1} |",
            row.0, row.1, row.2
        );
        rows.push(row);
    }
    let (one, grown) = (rows[0], rows[1]);
    println!(
        "| ratio | | {:.2}x | {:.2}x | {:.2}x |",
        grown.0 / one.0,
        grown.1 / one.1,
        grown.2 / one.2
    );
}
