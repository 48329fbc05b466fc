//! `seen verify`: check a filter's header and every data segment against its
//! checksum, naming what is damaged.

use crate::cli::VerifyArgs;
use crate::file::ReadFilter;
use crate::file::format::{SEGMENT_BYTES, segment_checksum};
use crate::progress::Progress;
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;

/// Runs `seen verify`: exit 0 when everything checks, 1 when a segment is
/// damaged (each one named on stdout), 2 when the file cannot be used at all
/// (the header check fails on open).
///
/// # Errors
/// An unusable filter (bad header, truncated, ...) or a failed write.
pub fn run(a: VerifyArgs) -> Result<ExitCode> {
    let f = ReadFilter::open(&a.filter)?;
    let h = f.header();
    let total = h.bit_bytes();
    let progress = Progress::start(a.progress, Some(total), "", false);
    let mut out = crate::output::stdout();
    let name = a.filter.display();
    let (mut checked, mut damaged, mut unchecked) = (0u64, 0u64, 0usize);
    for (i, l) in h.layers.iter().enumerate() {
        let sums = f.checksums(i)?;
        if sums.is_empty() {
            unchecked += 1;
            continue;
        }
        let bits = f.layer_bits(i);
        for (s, stored) in sums.iter().enumerate() {
            let range = l.segment(s as u64);
            checked += 1;
            crate::progress::advance(range.len() as u64, 0);
            if segment_checksum(&bits[range.clone()]) != *stored {
                damaged += 1;
                writeln!(
                    out,
                    "{name}: layer {i}, bytes {}..{} of the file (segment {s}): data does not match its checksum",
                    l.offset + range.start as u64,
                    l.offset + range.end as u64
                )
                .context("cannot write output")?;
            }
        }
    }
    drop(progress);
    let layers = h.layers.len();
    if damaged == 0 {
        writeln!(
            out,
            "{name}: ok (header and {checked} data segment{} of up to {} MiB in {layers} layer{}{})",
            if checked == 1 { "" } else { "s" },
            SEGMENT_BYTES >> 20,
            if layers == 1 { "" } else { "s" },
            if unchecked > 0 {
                format!("; {unchecked} layer(s) from before format 1.2 have no checksums")
            } else {
                String::new()
            }
        )
        .context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    if damaged > 0 {
        if h.is_dirty() {
            eprintln!(
                "seen: {name} is dirty (a writer did not finish): checksums of the segments it \
                 was changing may be stale rather than the data damaged; the next writer \
                 (e.g. `seen build --add -o {name} /dev/null`) recomputes them"
            );
        } else {
            eprintln!(
                "seen: {name}: {damaged} of {checked} segments damaged: rebuild the filter from \
                 its source lines (its bits can no longer be trusted)"
            );
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
