//! `seen merge`: the union of filters of one hash, seed and key rule: layers
//! of one shape at one depth are joined by OR, the others sit side by side
//! (see the subcommand's help and docs/HOW-IT-WORKS.md, "Merging filters").

use crate::cli::MergeArgs;
use crate::filter::forget::ForgetList;
use crate::format::{Header, LayerEntry};
use crate::pipeline::Store;
use crate::progress::Progress;
use crate::redis::SetsFilter;
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
    if inputs.iter().any(|i| i.header().layers.is_empty()) {
        return merge_sets(&a, &mut inputs, link, replace);
    }
    check_alike(&inputs)?;
    let (header, parts) = merged_header(&inputs);
    // The output's own header as read: a file output that is an input must
    // be unchanged when it is replaced.
    let was = out_is_input
        .then(|| ids.iter().position(|id| *id == out_id))
        .flatten()
        .map(|i| inputs[i].header().clone());
    let forget = merged_list(&mut inputs)?;
    let room = crate::format::MAX_LAYERS - usize::from(!forget.is_empty());
    if parts.len() > room {
        bail!(
            "the union would have {} layers, more than the {room} a filter holds{}: merge \
             fewer filters, or build one filter from their lines",
            parts.len(),
            if forget.is_empty() {
                ""
            } else {
                " beside its forget list"
            }
        );
    }
    let total: u64 = header.bit_bytes();
    let progress = Progress::start(a.progress.into(), Some(total), "", false);
    let layers: Vec<Vec<&[u8]>> = inputs
        .iter_mut()
        .map(|i| i.opened.bits(&mut |_| {}))
        .collect::<Result<_>>()?;
    let sources: Vec<Vec<&[u8]>> = parts
        .iter()
        .map(|p| p.from.iter().map(|&(i, n)| layers[i][n]).collect())
        .collect();
    let done = |n: u64| crate::progress::advance(n, 0);
    let made = a.output.union_of(&header, &sources, &forget, &done)?;
    let stats = super::stats::compute_from(&header, &made.bits(), a.output.to_string());
    drop(progress);
    // The inputs' shared locks go before the output's is taken.
    drop(sources);
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
            let opened = p.open_read(link)?;
            // Its damage would be hidden under the output's new checksums.
            opened.check_whole()?;
            Ok(Input {
                at: p.clone(),
                header: opened.header().clone(),
                opened,
            })
        })
        .collect()
}

/// `seen merge` of Redis filters of fingerprint sets ([`SetsFilter::union_into`]).
///
/// # Errors
/// An input of another layout, inputs not alike, or a failed union.
fn merge_sets(a: &MergeArgs, inputs: &mut [Input], link: Link, replace: bool) -> Result<ExitCode> {
    let names: Vec<String> = inputs.iter().map(Input::name).collect();
    let first_sets = inputs
        .iter()
        .position(|i| i.header().layers.is_empty())
        .expect("one input keeps sets");
    let mut sets: Vec<&mut SetsFilter> = Vec::new();
    for (n, i) in inputs.iter_mut().enumerate() {
        let Some(s) = i.opened.sets() else {
            bail!(
                "{} holds Bloom bits and {} fingerprint sets (the default layout of a Redis \
                 filter): neither can be turned into the other (a Bloom filter's keys cannot be \
                 read back, nor a fingerprint's bits), so they cannot be merged; merge filters \
                 of one layout: rebuild one from its lines (`seen build --redis-layout bloom -o \
                 redis://…` makes Bloom bits in Redis)",
                names[n],
                names[first_sets]
            );
        };
        sets.push(s);
    }
    for s in &sets[1..] {
        sets[0].check_alike(s)?;
    }
    let union = a.output.union_of_sets(link, &mut sets, replace)?;
    let m = &union.meta;
    crate::say!(
        "seen: merged {} filters into {}: {} fingerprints in {} sets{}, estimated \
         false-positive rate {:.2e} (target {:e} at {} lines)",
        inputs.len(),
        a.output,
        HumanCount(union.fingerprints),
        HumanCount(m.sets),
        if union.listed > 0 {
            format!(", {} keys on forget lists", HumanCount(union.listed))
        } else {
            String::new()
        },
        m.fpp_with(union.fingerprints as f64),
        m.target_fpp,
        HumanCount(m.capacity)
    );
    Ok(ExitCode::SUCCESS)
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

/// Checks that every input hashes keys as the first: the same hash, seed
/// and key options, and no time window. Sizes, growth and layouts may
/// differ ([`merged_header`]).
///
/// # Errors
/// The first difference between two inputs, and what to do.
fn check_alike(inputs: &[Input]) -> Result<()> {
    if let Some(i) = inputs.iter().find(|i| i.header().window.is_some()) {
        bail!(
            "{} has a time window (--window): merging filters that forget is not supported \
             (their slices would have to line up in time); merge filters without --window",
            i.name()
        );
    }
    let first = &inputs[0];
    let fh = first.header();
    for i in &inputs[1..] {
        let h = i.header();
        let differ = |what: &str, a: String, b: String, redo: &str| {
            anyhow::anyhow!(
                "{} and {} differ in their {what} ({a} and {b}): a key has other bits in \
                 each, so their bits cannot answer together; {redo}",
                first.name(),
                i.name()
            )
        };
        if h.hash_algorithm != fh.hash_algorithm {
            return Err(differ(
                "hash algorithm",
                fh.hash_algorithm.to_string(),
                h.hash_algorithm.to_string(),
                "rebuild the older filter from its lines with this seen",
            ));
        }
        if h.seed != fh.seed {
            return Err(differ(
                "seed",
                format!("{:#018x}", fh.seed),
                format!("{:#018x}", h.seed),
                &format!(
                    "rebuild one from its lines with --seed {} (or the other's)",
                    fh.seed
                ),
            ));
        }
        if h.keys != fh.keys {
            return Err(differ(
                "key options",
                format!("`{}`", fh.keys),
                format!("`{}`", h.keys),
                &format!(
                    "rebuild one from its lines with `{}` (`seen stats` shows each \
                     filter's)",
                    fh.keys.flags()
                ),
            ));
        }
    }
    Ok(())
}

/// A layer of the merged filter: its table entry (the inputs' insert counts
/// added) and the inputs' layers joined into it, as (input, layer).
struct Part {
    entry: LayerEntry,
    /// The depth of the joined layers in their filters.
    depth: usize,
    from: Vec<(usize, usize)>,
}

/// The merged filter's header and layers. Layers of one kind, layout and
/// capacity at one depth are joined (the OR of their bits: their insert
/// counts are added, an upper bound when a key is in two); each other layer
/// is kept beside them, as a lookup tests every layer. Inputs of one shape
/// thus merge layer by layer, as one filter given all their lines. The
/// sizing and growth are the first input's; created when the oldest input
/// was. When layers were set side by side, the one with the most room
/// left goes last, where new lines are recorded.
fn merged_header(inputs: &[Input]) -> (Header, Vec<Part>) {
    let mut parts: Vec<Part> = Vec::new();
    let mut beside = false;
    for (i, input) in inputs.iter().enumerate() {
        for (n, l) in input.header().layers.iter().enumerate() {
            let joins = |p: &&mut Part| {
                p.depth == n
                    && (p.entry.kind, p.entry.layout, p.entry.capacity)
                        == (l.kind, l.layout, l.capacity)
            };
            if let Some(p) = parts.iter_mut().find(|p| joins(p)) {
                p.entry.inserts = p.entry.inserts.saturating_add(l.inserts);
                p.from.push((i, n));
            } else {
                beside |= parts.len() != n;
                parts.push(Part {
                    entry: *l,
                    depth: n,
                    from: vec![(i, n)],
                });
            }
        }
    }
    let mut h = inputs[0].header().clone();
    if beside {
        let room = |p: &Part| p.entry.capacity.saturating_sub(p.entry.inserts);
        let roomiest = (0..parts.len())
            .max_by_key(|&j| room(&parts[j]))
            .expect("every filter has a layer");
        let last = parts.remove(roomiest);
        parts.push(last);
    }
    // Laid out afresh: an input's layers may sit after its forget list,
    // and layers of several inputs do not line up in any of them.
    h.layers = parts.iter().map(|p| p.entry).collect();
    h = h.laid_out();
    h.created = inputs
        .iter()
        .map(|i| i.header().created)
        .min()
        .unwrap_or(h.created);
    (h, parts)
}
