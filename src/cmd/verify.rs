//! `seen verify`: check a filter's header and every data segment against its
//! checksum, naming what is damaged; with `--repair`, first settle a file a
//! killed writer left dirty. The checks themselves are the store's
//! (`FilterAt::verify`); this maps what they found to an exit status.

use crate::cli::VerifyArgs;
use crate::store::Verified;
use anyhow::Result;
use std::process::ExitCode;

/// Exit status of a dirty file whose checksums do not all match: a writer was
/// killed between changing bits and writing their checksums, so they may be
/// stale rather than the data damaged.
pub const STALE: u8 = 3;

/// Runs `seen verify`: exit 0 when everything checks, 1 when a part of a
/// clean filter is damaged or missing (each one named on stdout), [`STALE`]
/// when a dirty file's checksums do not all match, 2 when the filter cannot
/// be used at all (the header check fails on open). With `--repair`, a dirty
/// file is first settled by a writer that recounts it and rewrites every
/// checksum.
///
/// # Errors
/// An unusable filter (bad header, truncated, ...) or a failed write.
pub fn run(a: VerifyArgs) -> Result<ExitCode> {
    let mut out = crate::output::stdout();
    let found = a
        .filter
        .verify(a.repair, a.lock.link(), a.progress.into(), &mut out)?;
    Ok(match found {
        Verified::Ok => ExitCode::SUCCESS,
        Verified::Damaged => ExitCode::from(1),
        Verified::Stale => ExitCode::from(STALE),
    })
}
