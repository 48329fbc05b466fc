//! The union of bit arrays of the same layout: the OR of their bytes, which
//! is the array one filter would hold had it been given every key of them
//! (`seen merge`). A scan at memory bandwidth, in parallel over page ranges
//! (on one thread when no other can start).

use rayon::prelude::*;

/// Bytes one task ORs: big enough to stream, small enough to spread.
const SPAN: usize = 4 << 20;

/// ORs every array of `srcs` (each as long as `out`) into `out`, telling
/// `done` the bytes finished every so often (from any thread).
///
/// # Panics
/// When an array of `srcs` is not as long as `out` (a programming error: the
/// caller checks layouts first).
pub fn union_into(out: &mut [u8], srcs: &[&[u8]], done: &(dyn Fn(u64) + Sync)) {
    for s in srcs {
        assert_eq!(s.len(), out.len(), "union of arrays of different lengths");
    }
    let or_span = |(n, chunk): (usize, &mut [u8])| {
        let at = n * SPAN;
        for s in srcs {
            let src = &s[at..at + chunk.len()];
            // Word-wise: the compiler turns this into vector ORs.
            for (o, i) in chunk.chunks_exact_mut(8).zip(src.chunks_exact(8)) {
                let v = u64::from_ne_bytes(o[..8].try_into().expect("8 bytes"))
                    | u64::from_ne_bytes(i[..8].try_into().expect("8 bytes"));
                o.copy_from_slice(&v.to_ne_bytes());
            }
            let tail = chunk.len() / 8 * 8;
            for (o, i) in chunk[tail..].iter_mut().zip(&src[tail..]) {
                *o |= *i;
            }
        }
        done(chunk.len() as u64);
    };
    // A pool of this run's own, not rayon's global one, whose threads
    // failing to start (an address-space limit) would be a panic: then
    // the spans are done on this thread.
    match rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("seen-union-{i}"))
        .build()
    {
        Ok(pool) => pool.install(|| out.par_chunks_mut(SPAN).enumerate().for_each(or_span)),
        Err(_) => out.chunks_mut(SPAN).enumerate().for_each(or_span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_is_the_or_of_every_array() {
        // Lengths that do not divide into spans or words.
        for len in [0, 7, 8, 4099, SPAN + 13] {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8 & 0x55).collect();
            let b: Vec<u8> = (0..len).map(|i| (i * 13 % 256) as u8 & 0xA3).collect();
            let c: Vec<u8> = (0..len).map(|i| (i % 3) as u8).collect();
            let mut out = a.clone();
            let seen = std::sync::atomic::AtomicU64::new(0);
            union_into(&mut out, &[&b, &c], &|n| {
                seen.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            });
            let want: Vec<u8> = (0..len).map(|i| a[i] | b[i] | c[i]).collect();
            assert_eq!(out, want, "len {len}");
            assert_eq!(seen.into_inner(), len as u64);
        }
    }
}
