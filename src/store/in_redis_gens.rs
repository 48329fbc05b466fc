//! A Redis filter of fingerprint sets in generations (growth, windows) as
//! an open store: `stats` counts its live generations, `verify` checks
//! them, and `copy` and `merge` say why they cannot take it.

use super::Verified;
use super::open::Held;
use crate::format::Header;
use crate::keys::KeySpec;
use crate::redis::GensFilter;
use anyhow::{Context, Result, bail};
use std::io::Write;

impl Held for GensFilter {
    fn header(&self) -> &Header {
        GensFilter::header(self)
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        bail!(
            "{} is a Redis filter of fingerprint sets in generations (it grows, or has a time \
             window), which has no Bloom bits to copy or merge",
            self.location()
        )
    }

    fn cannot_forget(&self) -> String {
        "a Redis filter that grows or has a time window cannot forget keys yet (filter files \
         and fixed-size Redis filters of fingerprint sets can): with a window, its lines are \
         forgotten when their slice expires"
            .into()
    }

    fn gens(&mut self) -> Option<&mut GensFilter> {
        Some(self)
    }

    fn output_lost(&mut self) {
        crate::redis::Journaled::output_lost(self);
    }

    fn shared_writer(&self) -> bool {
        self.writes()
    }

    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        Some((GensFilter::header(self).keys, self.location().to_string()))
    }

    fn finish(mut self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        GensFilter::finish(&mut self, ok)
    }
}

/// `verify` of a filter in generations: its generations hash names live
/// generations, and every key where one of their sets goes is a set (or
/// absent: never written, or expired with its slice).
///
/// # Errors
/// A server that cannot be reached, or a failed write.
pub(super) fn verify(mut f: GensFilter, out: &mut dyn Write) -> Result<Verified> {
    let loc = f.location().clone();
    let census = f.census(&mut |_| {})?;
    let wrong: Vec<&String> = census.iter().flat_map(|c| &c.wrong).collect();
    for k in &wrong {
        writeln!(out, "{loc}: {k} is not a set").context("cannot write output")?;
    }
    let sets: u64 = census
        .iter()
        .map(|c| c.generation.per_group * f.meta().groups)
        .sum();
    if wrong.is_empty() {
        writeln!(
            out,
            "{loc}: ok (meta key, {} live generation{}, {sets} sets)",
            census.len(),
            if census.len() == 1 { "" } else { "s" }
        )
        .context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    if wrong.is_empty() {
        return Ok(Verified::Ok);
    }
    eprintln!(
        "seen: {loc}: {} keys where its sets go are not sets: another program wrote there, and \
         the lines they held read as new",
        wrong.len()
    );
    Ok(Verified::Damaged)
}
