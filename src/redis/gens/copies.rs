//! A writer's local copies of sealed generations. A generation is sealed in
//! a group once the group's top has passed it: from then on no writer adds
//! a line to it that decides anything (a script refuses, a fenced add there
//! is tentative and its writer decides the line in a newer generation), so
//! a copy of its sets taken after a `GET` of the top showed it passed holds
//! every line another writer may have printed from it. A line is then
//! looked up in the copy instead of on the server, and a group whose older
//! live generations are all copied needs no lookup at all: its lines go
//! straight to the fenced add, whose `SADD` is the lookup of the newest.
//!
//! Copying costs an `SMEMBERS` per set, so a run copies a (generation,
//! group) only once its lookups there have cost about as much
//! ([`COPY_AFTER`] a set): a short run pays at most about twice what it
//! would have without copies, a long one pays once. A copy takes 4 bytes a
//! line (32-bit fingerprints; generations of 64-bit ones are not copied),
//! and a run copies at most [`MAX_COPIED`] lines.

use super::store::GensFilter;
use super::{Gen, GensMeta};
use crate::hash::Hash128;
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::slot::slot;
use anyhow::{Result, anyhow};
use redis::Value;
use std::collections::{BTreeMap, HashMap};

/// What copying a set costs the server, in lookups of a line: an
/// `SMEMBERS` costs about one, and one more per this many fingerprints it
/// returns (see docs/PERFORMANCE.md). (Counting a lookup's cost by its
/// commands instead of its lines made runs copy later, and cost more.)
pub(super) const FPS_PER_LOOKUP: u64 = 8;
/// Fingerprints a run copies at most (4 bytes each: 256 MiB).
pub(super) const MAX_COPIED: usize = 64 << 20;

/// One (generation, group), copied: each set's fingerprints, sorted.
struct Copy {
    /// Where set k's fingerprints begin in `fps` (one more at the end).
    starts: Vec<u32>,
    fps: Vec<u32>,
}

/// The copies a run holds, and its lookups of what it has not copied.
#[derive(Default)]
pub(crate) struct Copies {
    held: HashMap<(u64, u64), Copy>,
    /// Lines looked up on the server per (generation, group).
    looked: HashMap<(u64, u64), u64>,
    /// Fingerprints held in all.
    total: usize,
}

impl Copies {
    /// Whether group `t` of generation `g` is copied.
    fn has(&self, g: u64, t: u64) -> bool {
        self.held.contains_key(&(g, t))
    }

    /// The (generation, group) pairs copied.
    pub(super) fn pairs(&self) -> std::collections::HashSet<(u64, u64)> {
        self.held.keys().copied().collect()
    }

    /// Whether the copy of generation `g` holds key `h`; `None` when `h`'s
    /// group of it is not copied.
    pub(super) fn holds(&self, meta: &GensMeta, g: &Gen, h: Hash128) -> Option<bool> {
        let (j, fp) = meta.place(g, h);
        let c = self.held.get(&(g.index, j / g.per_group))?;
        let k = (j % g.per_group) as usize;
        let set = &c.fps[c.starts[k] as usize..c.starts[k + 1] as usize];
        Some(set.binary_search(&(fp as u32)).is_ok())
    }

    /// Counts `n` lines looked up on the server in group `t` of `g`.
    pub(super) fn looked_up(&mut self, g: u64, t: u64, n: usize) {
        *self.looked.entry((g, t)).or_default() += n as u64;
    }

    /// Drops what belongs to generations no longer live.
    fn keep_live(&mut self, live: &[Gen]) {
        let alive = |g: u64| live.iter().any(|l| l.index == g);
        let mut freed = 0;
        self.held.retain(|&(g, _), c| {
            let keep = alive(g);
            if !keep {
                freed += c.fps.len();
            }
            keep
        });
        self.total -= freed;
        self.looked.retain(|&(g, _), _| alive(g));
    }

    /// The (generation, group) pairs to copy now: of 32-bit fingerprints,
    /// passed by the group's top as `tops` read it (before the copy is
    /// taken), and looked up as many times as copying it costs (`held`:
    /// the lines each generation holds, over `groups` groups).
    fn due(
        &self,
        live: &[Gen],
        tops: &HashMap<u64, u64>,
        held: &BTreeMap<u64, u64>,
        groups: u64,
    ) -> Vec<(Gen, u64)> {
        let mut due = Vec::new();
        for (&(g, t), &n) in &self.looked {
            let Some(at) = live.iter().find(|l| l.index == g) else {
                continue;
            };
            let sealed = tops.get(&t).is_some_and(|&top| top > g);
            let cost = at.per_group + held.get(&g).copied().unwrap_or(0) / groups / FPS_PER_LOOKUP;
            if sealed && at.fp_bits == 32 && !self.has(g, t) && n >= cost {
                due.push((*at, t));
            }
        }
        due.sort_unstable_by_key(|&(g, t)| (g.index, t));
        due
    }
}

impl GensFilter {
    /// Copies the sealed (generation, group) pairs this run has looked up
    /// enough (see the module's doc), as far as the budget goes. `tops`:
    /// the groups' tops, read before.
    ///
    /// # Errors
    /// A server error or a lost connection (it only reads).
    pub(super) fn copy_sealed(&mut self, live: &[Gen], tops: &HashMap<u64, u64>) -> Result<()> {
        self.copies.keep_live(live);
        let loc = self.client.location().clone();
        for (g, t) in self.copies.due(live, tops, &self.counted, self.meta.groups) {
            if self.copies.total >= MAX_COPIED {
                break;
            }
            let names: Vec<String> = (0..g.per_group)
                .map(|k| self.meta.set_name(&loc, g.index, t, k))
                .collect();
            let cmds = names
                .iter()
                .map(|n| Routed::new(slot(n.as_bytes()), redis::cmd("SMEMBERS").arg(n)))
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            let mut c = Copy {
                starts: Vec::with_capacity(names.len() + 1),
                fps: Vec::new(),
            };
            for v in &replies {
                c.starts.push(c.fps.len() as u32);
                let Value::Array(items) = v else {
                    return Err(server_error("SMEMBERS", &loc, v)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected SMEMBERS reply")));
                };
                let from = c.fps.len();
                for m in items {
                    let fp = match m {
                        Value::BulkString(b) => std::str::from_utf8(b)
                            .ok()
                            .and_then(|s| s.parse::<i64>().ok()),
                        Value::Int(n) => Some(*n),
                        _ => None,
                    }
                    .ok_or_else(|| anyhow!("{loc}: a set holds {m:?}, not a fingerprint"))?;
                    c.fps.push(fp as u32);
                }
                c.fps[from..].sort_unstable();
            }
            c.starts.push(c.fps.len() as u32);
            self.copies.total += c.fps.len();
            self.copies.held.insert((g.index, t), c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fence::tests::{key, locations, open_sized, record};
    use crate::hash::Hash128;
    use crate::pipeline::Store;

    fn looked(f: &super::GensFilter) -> u64 {
        f.copies.looked.values().sum()
    }

    /// A writer copies a generation's group only once the group's top has
    /// passed it and it has looked it up enough; then it looks lines up in
    /// the copy (no lookup on the server), and its verdicts stay those of
    /// the server's sets, for it and for a writer without copies.
    #[test]
    fn a_sealed_generation_is_copied_and_answers_as_the_server() {
        for loc in locations("copies") {
            // Two sets a group in generation 0: copied once the lines looked
            // up there reach its 2 sets and one per 8 fingerprints it holds.
            let mut a = open_sized(&loc, 100_000);
            assert_eq!(a.planned[0].per_group, 2, "{:?}", a.planned[0]);
            assert_eq!(record(&mut a, 0, 20_000).0, 20_000);
            let now = a.time();
            a.grow(0, 0, 1, now).unwrap();
            a.refresh().unwrap();
            // Looked up in generation 0 while no group's top has passed
            // it: not copied.
            let (n, out) = record(&mut a, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert!(looked(&a) > 0);
            assert!(a.copies.held.is_empty());
            // Generation 1's first lines raise every group's top; then the
            // lookups of generation 0 copy it.
            assert_eq!(record(&mut a, 20_000, 30_000).0, 10_000);
            for _ in 0..2 {
                let (n, _) = record(&mut a, 0, 20_000);
                assert_eq!(n, 0);
            }
            assert_eq!(a.copies.held.len(), a.meta.groups as usize);
            assert_eq!(a.copies.total, 20_000);
            // From the copy now: nothing looked up on the server.
            let before = looked(&a);
            let (n, out) = record(&mut a, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert_eq!(looked(&a), before);
            // New lines: new to the writer with copies, once; present to
            // one without.
            let (n, out) = record(&mut a, 30_000, 31_000);
            assert_eq!(n, 1000);
            assert!(out.iter().all(|&p| !p));
            let mut b = open_sized(&loc, 100_000);
            let (n, _) = record(&mut b, 0, 31_000);
            assert_eq!(n, 0);
            let (n, _) = record(&mut b, 31_000, 32_000);
            assert_eq!(n, 1000);
            let hs: Vec<Hash128> = (31_000..32_000).map(key).collect();
            let mut out = Vec::new();
            a.contains_batch(&hs, &mut out).unwrap();
            assert!(out.iter().all(|&p| p));
        }
    }
}
