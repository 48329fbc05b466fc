//! `seen verify`: check a filter's header and every data segment against its
//! checksum, naming what is damaged; with `--repair`, first settle a file a
//! killed writer left dirty. The checks themselves are the store's
//! (`FilterAt::verify`); this maps what they found to an exit status.

use crate::cli::VerifyArgs;
use crate::file::ClockBack;
use crate::store::Verified;
use anyhow::Result;
use indicatif::HumanCount;
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
    if let Some(t) = a.set_clock {
        tell_clock(&a.filter.to_string(), t, a.filter.set_clock(t)?);
    }
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

/// Says on stderr what setting `name`'s clock back to `t` did, and what it
/// costs.
fn tell_clock(name: &str, t: u64, back: Option<ClockBack>) {
    let at = crate::clock::format;
    let Some(b) = back else {
        crate::say!(
            "seen: {name}: its time is not after {}: nothing to set back",
            at(t)
        );
        return;
    };
    let lines = |(n, l): (u64, usize)| {
        format!(
            "{} line{} in {l} layer{}",
            HumanCount(n),
            if n == 1 { "" } else { "s" },
            if l == 1 { "" } else { "s" }
        )
    };
    crate::say!(
        "seen: {name}: time set back from {} to {}; {} recorded after it now count as \
         recorded at {}",
        at(b.from),
        at(b.to),
        lines(b.moved),
        at(b.to)
    );
    if b.expired.1 == 0 {
        return;
    }
    if b.revived {
        crate::say!(
            "seen: {name}: {} that expired when its time moved ahead are seen again",
            lines(b.expired)
        );
    } else {
        crate::say!(
            "seen: {name}: {} that expired when its time moved ahead were cleared, not \
             brought back (the filter forgot keys, and its forget list let go of those that \
             were only there): those lines are new again",
            lines(b.expired)
        );
    }
}
