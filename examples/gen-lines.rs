//! A fast, reproducible stream of URL-like lines for benchmarks at scales no
//! file holds (`scripts/bench-scale.sh`: a billion lines is about 70 GB):
//!
//! ```text
//! cargo run --release --example gen-lines -- LINES [SEED] [REPEAT%] [PREFIX]
//! ```
//!
//! Each line is new with probability 1 - REPEAT% (default 30) and otherwise
//! repeats a line drawn from the last million new ones; line `i` of a seed is
//! the same on every machine. New lines are numbered, so they are distinct, and
//! their count is printed on stderr at the end. Another PREFIX (default
//! `https://`) gives lines none of the first stream's (to measure a filter's
//! false-positive rate).

use std::io::Write;

/// The next value of a SplitMix64 sequence.
fn mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Appends `n` in decimal (by hand: `write!` made the whole generator 1.7x
/// slower, and it must outrun `seen`).
fn decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

const WORDS: [&str; 16] = [
    "news", "blog", "shop", "item", "post", "page", "docs", "wiki", "tags", "user", "feed", "view",
    "list", "team", "help", "data",
];

/// Appends line number `id` of the stream (`prefix`, a host, two words, the
/// number): distinct numbers give distinct lines.
fn line(out: &mut Vec<u8>, prefix: &[u8], seed: u64, id: u64) {
    let mut s = seed ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let h = mix(&mut s);
    out.extend_from_slice(prefix);
    out.extend_from_slice(b"www.site");
    decimal(out, h % 50_000);
    out.extend_from_slice(b".example/");
    out.extend_from_slice(WORDS[(h >> 20) as usize % 16].as_bytes());
    out.push(b'/');
    out.extend_from_slice(WORDS[(h >> 24) as usize % 16].as_bytes());
    out.extend_from_slice(b"/article-");
    decimal(out, id);
    out.extend_from_slice(b".html\n");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen-lines LINES [SEED] [REPEAT%] [PREFIX]";
    let lines: u64 = args.first().and_then(|a| a.parse().ok()).expect(usage);
    let seed: u64 = args.get(1).map_or(42, |a| a.parse().expect(usage));
    let repeat: u64 = args.get(2).map_or(30, |a| a.parse().expect(usage));
    let prefix = args.get(3).map_or("https://", String::as_str).as_bytes();
    let mut rng = seed;
    let mut fresh = 0u64;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut out = std::io::stdout().lock();
    for _ in 0..lines {
        let r = mix(&mut rng);
        let id = if fresh > 0 && r % 100 < repeat {
            let back = (r >> 8) % fresh.min(1 << 20);
            fresh - 1 - back
        } else {
            fresh += 1;
            fresh - 1
        };
        line(&mut buf, prefix, seed, id);
        if buf.len() >= 1 << 20 {
            if out.write_all(&buf).is_err() {
                return; // the reader has gone
            }
            buf.clear();
        }
    }
    let _ = out.write_all(&buf);
    let _ = out.flush();
    eprintln!("gen-lines: {lines} lines, {fresh} distinct");
}
