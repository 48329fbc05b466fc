//! What a run of a filter in generations reads without a script: the
//! first step of a test-and-set ([`GensFilter::precheck`]), lookups
//! (`query`, and a journal's replay), and the count of the live
//! generations' sets (`stats`, `verify`).

use super::fingerprint;
use super::store::GensFilter;
use crate::hash::Hash128;
use crate::redis::bitfield::PART_KEYS;
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::gens::Gen;
use crate::redis::location::Location;
use crate::redis::slot::slot;
use anyhow::{Result, anyhow};
use redis::Value;
use std::collections::{HashMap, HashSet};

/// What a precheck found (see [`GensFilter::precheck`]).
pub(super) struct Prechecked {
    /// The lines found in no live generation.
    pub todo: Vec<u32>,
    /// Per group, the oldest generation to check again.
    pub recheck: HashMap<u64, u64>,
}

/// What a reply of a precheck is about.
enum About {
    /// A group's top.
    Top(u64),
    /// A group's top before it was raised to the newest generation.
    Raised(u64),
    /// A set's lookup of these lines.
    Lines(Vec<u32>),
}

/// The group's top that a reply to [`GensFilter::top_command`] for the
/// newest generation `g` gives: a `GET` replies the top; a raise (`raised`)
/// the top before, and the top is then not below `g`. None on an error
/// (the script did not run).
pub(super) fn top_reply(v: &Value, raised: bool, g: &Gen) -> Option<u64> {
    match v {
        Value::Int(top) if raised => Some(u64::try_from(*top).unwrap_or(0).max(g.index)),
        _ if raised => None,
        _ => super::top_of(v),
    }
}

/// Takes a reply of a precheck's round in generation `g`: a group's top
/// (into `recheck`) or lines found (into `found`).
fn take_reply(
    v: &Value,
    about: About,
    g: &Gen,
    loc: &Location,
    recheck: &mut HashMap<u64, u64>,
    found: &mut HashSet<u32>,
) -> Result<()> {
    let who = match about {
        About::Top(t) | About::Raised(t) => {
            if let Some(top) = top_reply(v, matches!(about, About::Raised(_)), g) {
                recheck.insert(t, top);
            }
            return Ok(());
        }
        About::Lines(who) => who,
    };
    let Value::Array(items) = v else {
        return Err(server_error("SMISMEMBER", loc, v)
            .unwrap_or_else(|| anyhow!("{loc}: unexpected SMISMEMBER reply")));
    };
    for (o, &i) in items.iter().zip(&who) {
        if *o == Value::Int(1) {
            found.insert(i);
        }
    }
    Ok(())
}

impl GensFilter {
    /// The lines `todo` of `hashes` that no copy of an `older` generation
    /// holds.
    fn not_in_copies(&self, hashes: &[Hash128], todo: &[u32], older: &[Gen]) -> Vec<u32> {
        let mut left = todo.to_vec();
        left.retain(|&i| {
            let h = hashes[i as usize];
            !older
                .iter()
                .any(|g| self.copies.holds(&self.meta, g, h) == Some(true))
        });
        left
    }

    /// The first step of a batch, without a script: the lines `todo` of
    /// `hashes` looked up in the live generations, newest first, each
    /// round only the lines not found yet (`SMISMEMBER`, after each
    /// group's top is raised to the newest generation, or read once a
    /// reply showed it there, see [`super::RAISE_SCRIPT`]). A line found is
    /// present (sets only grow). Returns the lines still to decide, and
    /// per group its top: the oldest generation the script must check
    /// again (one the top had not passed yet could take the line after it
    /// was looked up: a writer still on it; the others refuse adds; with
    /// the top raised, none). After a redirected command (which runs after
    /// those behind it) every generation is checked again.
    ///
    /// A generation this run holds a copy of (in a group, see `copies`) is
    /// looked up in the copy, first. The newest generation is not looked
    /// up: the `SADD`s of the fenced add (see `fence`) are that lookup, at
    /// a command a line, as in the fixed layout. (Looking lines that fall
    /// tens to a set up first, an `SMISMEMBER` a set, cost a cron job's
    /// short runs a fifth more.) The lines found nowhere go behind the
    /// fence, or, when their group's top is newer than the newest this
    /// writer knows, to the script, which looks them up.
    ///
    /// # Errors
    /// A server error or a lost connection (nothing was recorded).
    pub(super) fn precheck(
        &mut self,
        hashes: &[Hash128],
        todo: &[u32],
        live: &[Gen],
    ) -> Result<Prechecked> {
        let loc = self.client.location().clone();
        let before = self.client.redirected();
        let older = &live[..live.len().saturating_sub(1)];
        let ttl = live.last().map_or(0, |g| self.ttl(g, self.time()));
        if let Some(g) = live.last() {
            self.newest_is(g);
        }
        let mut left = self.not_in_copies(hashes, todo, older);
        let copied = self.copies.pairs();
        let mut looked = Vec::new();
        let mut recheck = HashMap::new();
        for (round, g) in live.iter().rev().enumerate() {
            if left.is_empty() {
                break;
            }
            let mut cmds = Vec::new();
            // What each reply is about.
            let mut about: Vec<About> = Vec::new();
            for (t, lines) in self.meta.by_group(hashes, &left) {
                if round == 0 {
                    cmds.push(self.top_command(&loc, t, g, ttl));
                    about.push(if self.at_top.1.contains(&t) {
                        About::Top(t)
                    } else {
                        About::Raised(t)
                    });
                    // The fenced add's `SADD` looks them up in the newest.
                    continue;
                }
                if copied.contains(&(g.index, t)) {
                    continue;
                }
                looked.push((g.index, t, lines.len()));
                let mut sets: HashMap<String, Vec<u32>> = HashMap::new();
                for i in lines {
                    sets.entry(self.meta.set_key(&loc, g, hashes[i as usize]))
                        .or_default()
                        .push(i);
                }
                for (key, who) in sets {
                    let mut c = redis::cmd("SMISMEMBER");
                    c.arg(&key);
                    for &i in &who {
                        c.arg(fingerprint(g.fp_bits, hashes[i as usize]));
                    }
                    cmds.push(Routed::new(slot(key.as_bytes()), &c));
                    about.push(About::Lines(who));
                }
            }
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            let mut found = HashSet::new();
            for (v, about) in replies.iter().zip(about) {
                take_reply(v, about, g, &loc, &mut recheck, &mut found)?;
            }
            left.retain(|i| !found.contains(i));
        }
        if self.client.redirected() != before {
            recheck.clear();
        }
        let newest = self.at_top.0;
        let at = recheck.iter().filter(|&(_, &top)| top == newest);
        self.at_top.1.extend(at.map(|(&t, _)| t));
        for (g, t, n) in looked {
            self.copies.looked_up(g, t, n);
        }
        Ok(Prechecked {
            todo: left,
            recheck,
        })
    }

    /// Starts `at_top` over when `g`, the newest generation, is not the
    /// one it knows the groups' tops of.
    pub(super) fn newest_is(&mut self, g: &Gen) {
        if self.at_top.0 != g.index {
            self.at_top = (g.index, HashSet::new());
        }
    }

    /// The command of a precheck's first round that reads group `t`'s
    /// top: a `GET` when a reply showed it to be `g` (the newest; it only
    /// grows), else [`super::RAISE_SCRIPT`], which raises it to `g` first
    /// with its time to live `ttl`.
    pub(super) fn top_command(&self, loc: &Location, t: u64, g: &Gen, ttl: u64) -> Routed {
        let top = self.meta.top_key(loc, t);
        let c = if self.at_top.1.contains(&t) {
            redis::cmd("GET").arg(&top).clone()
        } else {
            redis::cmd("EVAL")
                .arg(super::RAISE_SCRIPT)
                .arg(1)
                .arg(&top)
                .arg(g.index)
                .arg(ttl)
                .clone()
        };
        Routed::new(slot(top.as_bytes()), &c)
    }

    /// Lookups of a batch in the live generations: `SMISMEMBER` per set.
    pub(super) fn lookup(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        out.clear();
        out.resize(hashes.len(), false);
        let loc = self.client.location().clone();
        let live = self.live(self.time());
        for part in (0..hashes.len()).collect::<Vec<_>>().chunks(PART_KEYS) {
            let mut sets: HashMap<(usize, String), Vec<usize>> = HashMap::new();
            for &i in part {
                for (n, g) in live.iter().enumerate() {
                    sets.entry((n, self.meta.set_key(&loc, g, hashes[i])))
                        .or_default()
                        .push(i);
                }
            }
            let mut order = Vec::new();
            let mut cmds = Vec::new();
            for ((n, key), who) in sets {
                let g = &live[n];
                let mut c = redis::cmd("SMISMEMBER");
                c.arg(&key);
                for &i in &who {
                    c.arg(fingerprint(g.fp_bits, hashes[i]));
                }
                cmds.push(Routed::new(slot(key.as_bytes()), &c));
                order.push(who);
            }
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            for (v, who) in replies.iter().zip(order) {
                let Value::Array(items) = v else {
                    return Err(server_error("SMISMEMBER", &loc, v)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected SMISMEMBER reply")));
                };
                for (o, i) in items.iter().zip(who) {
                    if *o == Value::Int(1) {
                        out[i] = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What one live generation holds, counted with `SCARD` of its sets.
#[derive(Clone, Debug)]
pub(crate) struct GenCensus {
    /// The generation.
    pub generation: Gen,
    /// Lines recorded in it (the counters).
    pub lines: u64,
    /// Fingerprints its sets hold.
    pub fingerprints: u64,
    /// The fullest set's.
    pub max_load: u64,
    /// Sets past the server's intset limit (kept as hash tables).
    pub past: u64,
    /// Keys where its sets should be that are not sets.
    pub wrong: Vec<String>,
}

impl GensFilter {
    /// Counts the live generations' sets (`SCARD`, pipelined), telling
    /// `progress` the sets counted.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<GenCensus>> {
        let loc = self.client.location().clone();
        let mut all = Vec::new();
        for (g, lines) in self.generations() {
            let mut c = GenCensus {
                generation: g,
                lines,
                fingerprints: 0,
                max_load: 0,
                past: 0,
                wrong: Vec::new(),
            };
            let names: Vec<String> = (0..self.meta.groups)
                .flat_map(|t| (0..g.per_group).map(move |k| (t, k)))
                .map(|(t, k)| self.meta.set_name(&loc, g.index, t, k))
                .collect();
            for part in names.chunks(4096) {
                let cmds = part
                    .iter()
                    .map(|n| Routed::new(slot(n.as_bytes()), redis::cmd("SCARD").arg(n)))
                    .collect();
                let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
                for (n, v) in part.iter().zip(replies) {
                    match v {
                        Value::Int(k) => {
                            let k = u64::try_from(k).unwrap_or(0);
                            c.fingerprints += k;
                            c.max_load = c.max_load.max(k);
                            c.past += u64::from(k > self.meta.limit);
                        }
                        _ => c.wrong.push(n.clone()),
                    }
                }
                progress(part.len() as u64);
            }
            all.push(c);
        }
        Ok(all)
    }
}
