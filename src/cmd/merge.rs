//! `seen merge`: the union of filters of one shape, as the OR of their bits,
//! layer by layer (see the subcommand's help and docs/HOW-IT-WORKS.md,
//! "Merging filters").

use crate::cli::MergeArgs;
use crate::filter::forget::ForgetList;
use crate::format::Header;
use crate::pipeline::Store;
use crate::progress::Progress;
use crate::store::{FilterAt, Identity, Link, Opened};
use anyhow::{Result, bail};
use indicatif::HumanCount;
use std::process::ExitCode;

/// One filter to merge: where it is, its header, and its store.
struct Input {
    at: FilterAt,
    header: Header,
    opened: Opened,
}

impl Input {
    fn header(&self) -> &Header {
        &self.header
    }

    fn name(&self) -> String {
        self.at.to_string()
    }
}

/// Runs `seen merge`.
///
/// # Errors
/// Filters of different shapes, an output that may not be written, or a
/// server that cannot be reached.
pub fn run(a: MergeArgs) -> Result<ExitCode> {
    let link = a.lock.link();
    let out_id = a.output.identity();
    let ids = identities(&a.inputs)?;
    let out_is_input = out_id != Identity::Absent && ids.contains(&out_id);
    if out_is_input && !a.force {
        a.output.refuse_replacing_an_input()?;
    }
    // Refuse an output that may not be written before reading anything.
    let replace = a.force || out_is_input;
    a.output.check_new(
        replace,
        link,
        " (or name it among the inputs to merge into it)",
    )?;
    let mut inputs = open_inputs(&a.inputs, link)?;
    let shape = check_shapes(&inputs)?;
    let header = merged_header(&inputs, shape);
    // The output's own header as read: a file output that is an input must
    // be unchanged when it is replaced.
    let was = out_is_input
        .then(|| ids.iter().position(|id| *id == out_id))
        .flatten()
        .map(|i| inputs[i].header().clone());
    let forget = merged_list(&mut inputs)?;
    let total: u64 = header.bit_bytes();
    let progress = Progress::start(a.progress.into(), Some(total), "", false);
    let layers: Vec<Vec<&[u8]>> = inputs
        .iter_mut()
        .map(|i| i.opened.bits(&mut |_| {}))
        .collect::<Result<_>>()?;
    let done = |n: u64| crate::progress::advance(n, 0);
    let made = a.output.union_of(&header, &layers, &forget, &done)?;
    let stats = super::stats::compute_from(&header, &made.bits(), a.output.to_string());
    drop(progress);
    // The inputs' shared locks go before the output's is taken.
    drop(layers);
    drop(inputs);
    made.finish(link, replace, was.as_ref())?;
    tell(&a, &header, stats.estimated_fpp);
    Ok(ExitCode::SUCCESS)
}

/// The forget list of the union of `inputs` ([`ForgetList::merged`]).
///
/// # Errors
/// A store that cannot be read.
fn merged_list(inputs: &mut [Input]) -> Result<ForgetList> {
    let lists: Vec<ForgetList> = inputs.iter().map(|i| i.opened.forget_list()).collect();
    ForgetList::merged(&lists, |i, keys, out| {
        inputs[i].opened.contains_batch(keys, out)
    })
}

/// What each of `inputs` points at now, in order.
///
/// # Errors
/// A filter given twice (by one name or two).
fn identities(inputs: &[FilterAt]) -> Result<Vec<Identity>> {
    let mut ids = Vec::new();
    for p in inputs {
        let id = p.identity();
        if id != Identity::Absent && ids.contains(&id) {
            bail!("{p} is given twice: give each filter once");
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Opens each of `paths` to read it whole, in order.
///
/// # Errors
/// No usable filter at one of them, or a server that cannot be reached.
fn open_inputs(paths: &[FilterAt], link: Link) -> Result<Vec<Input>> {
    paths
        .iter()
        .map(|p| {
            let mut opened = p.open_read(link)?;
            // Its damage would be hidden under the output's new checksums.
            opened.check_whole()?;
            if opened.header().layers.is_empty() {
                // A filter without bits to join (a Redis filter of
                // fingerprint sets): its store says why.
                opened.bits(&mut |_| {})?;
                bail!("{p} has no layers to merge");
            }
            Ok(Input {
                at: p.clone(),
                header: opened.header().clone(),
                opened,
            })
        })
        .collect()
}

/// Says what was merged into what, and warns when the merged filter's
/// `estimated_fpp` is above its target.
fn tell(a: &MergeArgs, header: &Header, estimated_fpp: f64) {
    let target = header.target_fpp;
    crate::say!(
        "seen: merged {} filter{} into {}: {} layer{}, up to {} keys (the inputs' counts added: \
         keys in more than one are counted twice), estimated false-positive rate {:.2e} \
         (target {target:e})",
        a.inputs.len(),
        if a.inputs.len() == 1 { "" } else { "s" },
        a.output,
        header.layers.len(),
        if header.layers.len() == 1 { "" } else { "s" },
        HumanCount(header.inserts()),
        estimated_fpp,
    );
    if estimated_fpp > target {
        crate::say!(
            "seen: warning: the merged filter's estimated false-positive rate {:.2e} is above \
             its target {target:e}: it holds more keys than it was sized for; build a larger \
             one (-n) from the lines, or keep the filters apart",
            estimated_fpp
        );
    }
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
                let d = |l: &crate::format::LayerEntry| {
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
