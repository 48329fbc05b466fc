//! `seen merge`: the union of filters of one shape, as the OR of their bits,
//! layer by layer (see the subcommand's help and docs/HOW-IT-WORKS.md,
//! "Merging filters").

use super::redis_location;
use crate::cli::MergeArgs;
use crate::file::format::Header;
use crate::file::{NewFilter, ReadFilter};
use crate::progress::Progress;
use crate::redis::{Location, RedisFilter};
use anyhow::{Result, bail};
use indicatif::HumanCount;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::ExitCode;

/// One filter to merge, its bits mapped (a file) or read (Redis).
enum Input {
    File(ReadFilter),
    Redis(Location, Header, Vec<Vec<u8>>),
}

impl Input {
    fn header(&self) -> &Header {
        match self {
            Input::File(f) => f.header(),
            Input::Redis(_, h, _) => h,
        }
    }

    fn name(&self) -> String {
        match self {
            Input::File(f) => f.path().display().to_string(),
            Input::Redis(loc, ..) => loc.to_string(),
        }
    }

    fn layers(&self) -> Vec<&[u8]> {
        match self {
            Input::File(f) => (0..f.header().layers.len())
                .map(|i| f.layer_bits(i))
                .collect(),
            Input::Redis(_, _, bits) => bits.iter().map(Vec::as_slice).collect(),
        }
    }
}

/// Where a filter argument points, to tell when two arguments are one
/// filter: a file's device and inode, or a Redis location without its
/// password.
#[derive(Debug, PartialEq)]
enum Identity {
    File(u64, u64),
    Redis(String),
    Absent,
}

fn identity(arg: &Path) -> Result<Identity> {
    if let Some(loc) = redis_location(arg)? {
        let mut plain = loc;
        plain.password = None;
        plain.user = None;
        return Ok(Identity::Redis(plain.to_string()));
    }
    Ok(match std::fs::metadata(arg) {
        Ok(m) => Identity::File(m.dev(), m.ino()),
        Err(_) => Identity::Absent,
    })
}

/// Runs `seen merge`.
///
/// # Errors
/// Filters of different shapes, an output that may not be written, or a
/// server that cannot be reached.
pub fn run(a: MergeArgs) -> Result<ExitCode> {
    let link = a.lock.redis();
    let out_redis = redis_location(&a.output)?;
    let out_id = identity(&a.output)?;
    let mut ids = Vec::new();
    for p in &a.inputs {
        let id = identity(p)?;
        if id != Identity::Absent && ids.contains(&id) {
            bail!(
                "{} is given twice: give each filter once",
                crate::redis::redact(&p.display().to_string())
            );
        }
        ids.push(id);
    }
    let out_is_input = out_id != Identity::Absent && ids.contains(&out_id);
    if out_is_input && out_redis.is_some() && !a.force {
        // A Redis filter is replaced by deleting it first: a failure before
        // the new one is stored would lose an input's bits.
        bail!(
            "{} is one of the inputs: a filter in Redis is replaced by deleting it first, so \
             a failure midway would lose it; merge into a new name (then move the fleet to \
             it), or pass --force to take that risk",
            crate::redis::redact(&a.output.display().to_string())
        );
    }
    // Refuse an output that may not be written before reading anything.
    let replace = a.force || out_is_input;
    match &out_redis {
        None => super::check_new_filter_path(
            &a.output,
            replace,
            " (or name it among the inputs to merge into it)",
        )?,
        Some(loc) if !replace => RedisFilter::refuse_existing(loc, link)?,
        Some(_) => {}
    }
    let mut inputs = Vec::new();
    for p in &a.inputs {
        inputs.push(match redis_location(p)? {
            Some(loc) => {
                let mut f = RedisFilter::open(&loc, link, false)?;
                let header = f.header().clone();
                let bits = f
                    .read_all(&mut |_| {})?
                    .into_iter()
                    .map(<[u8]>::to_vec)
                    .collect();
                Input::Redis(loc, header, bits)
            }
            None => Input::File(ReadFilter::open(p)?),
        });
    }
    let shape = check_shapes(&inputs)?;
    let header = merged_header(&inputs, shape);
    // The output's own header as read: a file output that is an input must
    // be unchanged when it is replaced.
    let was = out_is_input
        .then(|| {
            a.inputs
                .iter()
                .zip(&ids)
                .position(|(_, id)| *id == out_id)
                .map(|i| inputs[i].header().clone())
        })
        .flatten();
    let total: u64 = header.bit_bytes();
    let progress = Progress::start(a.progress.into(), Some(total), "", false);
    let layers: Vec<Vec<&[u8]>> = inputs.iter().map(Input::layers).collect();
    let done = |n: u64| crate::progress::advance(n, 0);
    let stats = match &out_redis {
        None => {
            let f = NewFilter::union_of(&a.output, &header, &layers, &done)?;
            let bits: Vec<&[u8]> = (0..header.layers.len()).map(|i| f.layer_bits(i)).collect();
            let stats = super::stats::compute_from(&header, &bits, a.output.display().to_string());
            drop(bits);
            drop(progress);
            // The inputs' shared locks go before the output's is taken.
            drop(layers);
            drop(inputs);
            f.finish_over(replace, was.as_ref())?;
            stats
        }
        Some(loc) => {
            let bits: Vec<Vec<u8>> = header
                .layers
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut out = vec![0u8; usize::try_from(l.layout.bytes()).unwrap_or(0)];
                    let srcs: Vec<&[u8]> =
                        layers.iter().filter_map(|l| l.get(i).copied()).collect();
                    crate::filter::union_into(&mut out, &srcs, &done);
                    out
                })
                .collect();
            drop(progress);
            let bits: Vec<&[u8]> = bits.iter().map(Vec::as_slice).collect();
            let stats = super::stats::compute_from(&header, &bits, loc.to_string());
            drop(layers);
            drop(inputs);
            RedisFilter::upload(loc, link, &header, &bits, replace)?;
            stats
        }
    };
    let target = header.target_fpp;
    crate::say!(
        "seen: merged {} filter{} into {}: {} layer{}, up to {} keys (the inputs' counts added: \
         keys in more than one are counted twice), estimated false-positive rate {:.2e} \
         (target {target:e})",
        a.inputs.len(),
        if a.inputs.len() == 1 { "" } else { "s" },
        crate::redis::redact(&a.output.display().to_string()),
        header.layers.len(),
        if header.layers.len() == 1 { "" } else { "s" },
        HumanCount(header.inserts()),
        stats.estimated_fpp,
    );
    if stats.estimated_fpp > target {
        crate::say!(
            "seen: warning: the merged filter's estimated false-positive rate {:.2e} is above \
             its target {target:e}: it holds more keys than it was sized for; build a larger \
             one (-n) from the lines, or keep the filters apart",
            stats.estimated_fpp
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Which input gives the merged filter its shape (the first with the most
/// layers), once every input is checked against it.
///
/// # Errors
/// The first difference between two inputs, and what to do.
fn check_shapes(inputs: &[Input]) -> Result<usize> {
    let most = inputs
        .iter()
        .map(|i| i.header().layers.len())
        .max()
        .unwrap_or(0);
    let t = inputs
        .iter()
        .position(|i| i.header().layers.len() == most)
        .expect("at least one input");
    let th = inputs[t].header();
    let redo = "merge needs filters made alike: the same -n, -p, --seed, growth and key \
                flags (`seen stats` shows them); rebuild one to match the other";
    if let Some(i) = inputs.iter().find(|i| i.header().window.is_some()) {
        bail!(
            "{} has a time window (--window): merging filters that forget is not supported \
             (their slices would have to line up in time); merge filters without --window",
            i.name()
        );
    }
    for i in inputs {
        let h = i.header();
        let differ = |what: &str, a: String, b: String| {
            anyhow::anyhow!(
                "{} and {} differ in their {what} ({a} and {b}): {redo}",
                inputs[t].name(),
                i.name()
            )
        };
        if h.hash_algorithm != th.hash_algorithm {
            return Err(differ(
                "hash algorithm",
                th.hash_algorithm.to_string(),
                h.hash_algorithm.to_string(),
            ));
        }
        if h.seed != th.seed {
            return Err(differ(
                "seed",
                format!("{:#018x}", th.seed),
                format!("{:#018x}", h.seed),
            ));
        }
        if h.keys != th.keys {
            return Err(differ(
                "key options",
                format!("`{}`", th.keys),
                format!("`{}`", h.keys),
            ));
        }
        if h.growth != th.growth {
            let g = |h: &Header| match h.growth {
                Some(g) => format!("x{} per layer, fpp ratio {}", g.factor, g.ratio),
                None => "fixed".into(),
            };
            return Err(differ("growth", g(th), g(h)));
        }
        for (n, (l, tl)) in h.layers.iter().zip(&th.layers).enumerate() {
            if l.layout != tl.layout || l.capacity != tl.capacity {
                let d = |l: &crate::file::format::LayerEntry| {
                    format!(
                        "{} bytes, {} keys, {} blocks per key, k {}, {} positions",
                        l.layout.bytes(),
                        HumanCount(l.capacity),
                        l.layout.blocks_per_key,
                        l.layout.k,
                        l.layout.scheme.name()
                    )
                };
                return Err(differ(&format!("layer {n}"), d(tl), d(l)));
            }
        }
    }
    Ok(t)
}

/// The merged filter's header: the shape of input `t`, the inputs' insert
/// counts added layer by layer (an upper bound: a key recorded in two
/// inputs counts twice), created when the oldest input was.
fn merged_header(inputs: &[Input], t: usize) -> Header {
    let mut h = inputs[t].header().clone();
    for (n, l) in h.layers.iter_mut().enumerate() {
        l.inserts = inputs
            .iter()
            .filter_map(|i| i.header().layers.get(n))
            .fold(0u64, |acc, l| acc.saturating_add(l.inserts));
    }
    h.created = inputs
        .iter()
        .map(|i| i.header().created)
        .min()
        .unwrap_or(h.created);
    h
}

/// The paths of a merge, for the tests of `identity`.
#[cfg(test)]
fn same(a: &Path, b: &Path) -> bool {
    identity(a).ok() == identity(b).ok() && identity(a).ok() != Some(Identity::Absent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn one_filter_under_two_names_is_one() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let b = d.path().join("b");
        std::fs::hard_link(&a, &b).unwrap();
        assert!(same(&a, &b));
        assert!(same(&a, &d.path().join(".").join("a")));
        assert!(!same(&a, &d.path().join("nothing")));
        let with_pw = PathBuf::from("redis://u:pw@h:1/n");
        assert!(same(&with_pw, Path::new("redis://h:1/n")));
        assert!(!same(&with_pw, Path::new("redis://h:1/m")));
    }
}
