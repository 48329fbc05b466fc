//! `seen copy`: a filter from a file to Redis, from Redis to a file, or
//! between two Redis locations, byte for byte.

use crate::cli::CopyArgs;
use crate::progress::Progress;
use anyhow::Result;
use std::process::ExitCode;

/// Runs `seen copy`.
///
/// # Errors
/// A source that is not a usable filter, a target that may not be written,
/// or a server that cannot be reached.
pub fn run(a: CopyArgs) -> Result<ExitCode> {
    let link = a.lock.link();
    // Refuse a target that may not be written before reading anything.
    if a.to.path().is_none() && a.from.path().is_some() {
        // Only the header is read here (a filter the target cannot keep).
        a.to.refuse_header(a.from.open_read(link)?.header())?;
    }
    a.to.check_new(a.force, link, "")?;
    let mut from = a.from.open_read(link)?;
    // Its damage would be hidden under the copy's new checksums.
    from.check_whole()?;
    let header = from.header().clone();
    let forget = from.forget_list();
    // Only a fetch takes time worth showing: a file's bits are mapped.
    let progress = from
        .fetches_bits()
        .then(|| Progress::start(a.progress.into(), Some(header.bit_bytes()), "", false));
    let bits = from.bits(&mut |b| crate::progress::advance(b, 0))?;
    drop(progress);
    a.to.write_whole(link, &header, &bits, &forget, a.force)?;
    Ok(ExitCode::SUCCESS)
}
