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
//! group) only once the lookups there have cost about as much (see
//! [`FPS_PER_LOOKUP`]): its own, and those of earlier runs on this machine
//! (counted in files beside the kept copies, see `kept`), so that the runs
//! of a machine pay at most about twice what they would have without
//! copies, however short each is, and a long one pays once. Lines the
//! machine added to the generation count as lookups too: a writer that
//! filled a slice will look its next lines up there while the slice lives,
//! so it copies the slice as soon as it is sealed (at most about what its
//! adds there cost, should it never write again). A copy takes 4
//! bytes a line (32-bit fingerprints; generations of 64-bit ones are not
//! copied), and a run copies at most [`MAX_COPIED`] lines.

use super::kept::{self, Copy};
use super::store::GensFilter;
use super::{Gen, GensMeta};
use crate::hash::Hash128;
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::location::Location;
use crate::redis::slot::slot;
use anyhow::{Result, anyhow};
use redis::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// What copying a set costs the server, in lookups of a line: an
/// `SMEMBERS` costs about one, and one more per this many fingerprints it
/// returns (see docs/PERFORMANCE.md). (Counting a lookup's cost by its
/// commands instead of its lines made runs copy later, and cost more.)
pub(super) const FPS_PER_LOOKUP: u64 = 8;
/// Fingerprints a run copies at most (4 bytes each: 256 MiB).
pub(super) const MAX_COPIED: usize = 64 << 20;
/// Fingerprints about, whose sets a pipeline of copies reads at a time.
const PART_FPS: usize = 1 << 20;

/// The copies a run holds, and its lookups of what it has not copied.
#[derive(Default)]
pub(crate) struct Copies {
    held: HashMap<(u64, u64), Copy>,
    /// Lines looked up on the server per (generation, group).
    looked: HashMap<(u64, u64), u64>,
    /// Fingerprints held in all.
    total: usize,
    /// Where copies are kept between runs (see `kept`): none for a run
    /// that keeps no journal.
    place: Option<kept::Place>,
    /// This run's files of the sets it gave their time to live, and of
    /// its lookups of what it has not copied.
    logs: kept::Log,
    /// Of `looked`, what the files kept hold already.
    saved: HashMap<(u64, u64), u64>,
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
        Some(c.holds((j % g.per_group) as usize, fp as u32))
    }

    /// Keeps copies in `dir` from now on (for the filter at `location`),
    /// and takes those kept there of the generations `live`.
    pub(super) fn keep_in(&mut self, dir: PathBuf, location: String, live: &[Gen]) {
        kept::remove_others(&dir, &location);
        for (pair, c) in kept::load(&dir, live, MAX_COPIED.saturating_sub(self.total)) {
            if let std::collections::hash_map::Entry::Vacant(e) = self.held.entry(pair) {
                self.total += c.len();
                e.insert(c);
            }
        }
        // Lookups runs here made of what is not copied count toward
        // copying it, as this run's do.
        for g in live {
            for (t, n) in kept::looked(&dir, g.index) {
                if !self.has(g.index, t) {
                    *self.looked.entry((g.index, t)).or_default() += n;
                    *self.saved.entry((g.index, t)).or_default() += n;
                }
            }
        }
        self.place = Some((dir, location));
    }

    /// Writes down for the next runs here this run's lookups not written
    /// yet, of the groups it has not copied.
    pub(super) fn save_looked(&mut self) {
        let Some(place) = &self.place else { return };
        let mut by_gen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&(g, t), &n) in &self.looked {
            let saved = self.saved.entry((g, t)).or_default();
            if n > *saved && !self.held.contains_key(&(g, t)) {
                by_gen
                    .entry(g)
                    .or_default()
                    .push(kept::looked_record(t, n - *saved));
                *saved = n;
            }
        }
        for (g, values) in by_gen {
            self.logs.add(place, kept::Kind::Looked, g, &values);
        }
    }

    /// The sets of generation `g` that runs on this machine gave their
    /// time to live (none when copies are not kept).
    pub(super) fn given_ttl(&self, g: u64) -> std::collections::HashSet<u64> {
        self.place
            .as_ref()
            .map(|(dir, _)| kept::given_ttl(dir, g))
            .unwrap_or_default()
    }

    /// Keeps that this run gave sets `js` of generation `g` their time to
    /// live.
    pub(super) fn gave_ttl(&mut self, g: u64, js: &[u64]) {
        if let Some(place) = &self.place {
            self.logs.add(place, kept::Kind::Ttl, g, js);
        }
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
                freed += c.len();
            }
            keep
        });
        self.total -= freed;
        self.looked.retain(|&(g, _), _| alive(g));
        self.saved.retain(|&(g, _), _| alive(g));
        self.logs.keep_live(alive);
    }

    /// The (generation, group) pairs to copy now: of 32-bit fingerprints,
    /// passed by the group's top as `tops` read it (before the copy is
    /// taken), and looked up as many times as copying it costs, with the
    /// lines of the group about to be (`pending`; `held`: the lines each
    /// generation holds, over `groups` groups).
    fn due(
        &self,
        live: &[Gen],
        (tops, pending): (&HashMap<u64, u64>, &HashMap<u64, u64>),
        held: &BTreeMap<u64, u64>,
        groups: u64,
    ) -> Vec<(Gen, u64)> {
        let mut due = Vec::new();
        for (&(g, t), &n) in &self.looked {
            let n = n + pending.get(&t).copied().unwrap_or(0);
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
    /// enough, counting the lines per group about to be (`pending`; see
    /// the module's doc), as far as the budget goes. `tops`: the groups'
    /// tops, read before.
    ///
    /// # Errors
    /// A server error or a lost connection (it only reads).
    pub(super) fn copy_sealed(
        &mut self,
        live: &[Gen],
        tops: &HashMap<u64, u64>,
        pending: &HashMap<u64, u64>,
    ) -> Result<()> {
        self.copies.keep_live(live);
        let groups = self.meta.groups;
        let mut due = self
            .copies
            .due(live, (tops, pending), &self.counted, groups);
        // As many as the budget takes, by the lines each group holds.
        let counted = self.counted.clone();
        let per = |g: &Gen| (counted.get(&g.index).copied().unwrap_or(0) / groups) as usize;
        let mut expected = self.copies.total;
        due.retain(|(g, _)| {
            expected += per(g);
            expected <= MAX_COPIED
        });
        // Pipelined, a part of about PART_FPS fingerprints at a time (the
        // replies are held whole before they are taken).
        let mut batch: Option<(Gen, kept::Batch)> = None;
        let mut from = 0;
        while from < due.len() {
            let (mut to, mut fps) = (from, 0);
            while to < due.len() && (to == from || fps + per(&due[to].0) <= PART_FPS) {
                fps += per(&due[to].0);
                to += 1;
            }
            self.copy_part(&due[from..to], &mut batch)?;
            from = to;
        }
        self.copies.hold(batch);
        self.copies.save_looked();
        Ok(())
    }
}

impl GensFilter {
    /// Raises (or reads) the tops of the groups that `known` says nothing
    /// of and whose older generations would be due for a copy once sealed,
    /// counting the lines per group about to be looked up (`pending`), and
    /// adds what they are to `known`: a run's first batch is then looked
    /// up in the copies that earlier runs' lookups made due (see `kept`),
    /// not on the server first. The raise is the one the lookup makes
    /// (`top_command`), made a round trip earlier.
    ///
    /// # Errors
    /// A server error or a lost connection (nothing was recorded).
    pub(super) fn raise_for_copies(
        &mut self,
        live: &[Gen],
        known: &mut HashMap<u64, u64>,
        pending: &HashMap<u64, u64>,
    ) -> Result<()> {
        let Some(newest) = live.last() else {
            return Ok(());
        };
        let passed: HashMap<u64, u64> = pending.keys().map(|&t| (t, u64::MAX)).collect();
        let mut ts: Vec<u64> = self
            .copies
            .due(live, (&passed, pending), &self.counted, self.meta.groups)
            .into_iter()
            .filter(|(g, t)| g.index != newest.index && !known.contains_key(t))
            .map(|(_, t)| t)
            .collect();
        ts.sort_unstable();
        ts.dedup();
        if ts.is_empty() {
            return Ok(());
        }
        self.newest_is(newest);
        let loc = self.client.location().clone();
        let ttl = self.ttl(newest, self.time());
        let cmds = ts
            .iter()
            .map(|&t| self.top_command(&loc, t, newest, ttl))
            .collect();
        let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
        for (&t, v) in ts.iter().zip(&replies) {
            let raised = !self.at_top.1.contains(&t);
            if let Some(top) = super::reads::top_reply(v, raised, newest) {
                known.insert(t, top);
                if top == newest.index {
                    self.at_top.1.insert(t);
                }
            }
        }
        Ok(())
    }
}

impl GensFilter {
    /// Copies the (generation, group) pairs `due` (one pipeline), into
    /// `batch` (held, and a new one begun, at each new generation).
    ///
    /// # Errors
    /// A server error or a lost connection.
    fn copy_part(
        &mut self,
        due: &[(Gen, u64)],
        batch: &mut Option<(Gen, kept::Batch)>,
    ) -> Result<()> {
        let loc = self.client.location().clone();
        let mut cmds = Vec::new();
        for &(g, t) in due {
            for k in 0..g.per_group {
                let n = self.meta.set_name(&loc, g.index, t, k);
                cmds.push(Routed::new(
                    slot(n.as_bytes()),
                    redis::cmd("SMEMBERS").arg(n),
                ));
            }
        }
        let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
        let mut at = 0;
        for &(g, t) in due {
            let sets = &replies[at..at + g.per_group as usize];
            at += sets.len();
            let mut starts = Vec::with_capacity(sets.len() + 1);
            let mut fps = Vec::new();
            for v in sets {
                starts.push(fps.len() as u32);
                let from = fps.len();
                members(v, &loc, &mut fps)?;
                fps[from..].sort_unstable();
            }
            starts.push(fps.len() as u32);
            self.copies.total += fps.len();
            if batch.as_ref().is_some_and(|(b, _)| b.index != g.index) {
                self.copies.hold(batch.take());
            }
            batch
                .get_or_insert_with(|| (g, kept::Batch::new(&g)))
                .1
                .group(t, &starts, &fps);
        }
        Ok(())
    }
}

impl Copies {
    /// Holds a generation's batch of copies, and keeps it in a file.
    fn hold(&mut self, batch: Option<(Gen, kept::Batch)>) {
        let Some((g, b)) = batch else { return };
        for (t, c) in kept::own(self.place.as_ref(), b.finish()) {
            self.held.insert((g.index, t), c);
        }
    }
}

/// Appends the fingerprints of an `SMEMBERS` reply `v` to `fps`.
fn members(v: &Value, loc: &Location, fps: &mut Vec<u32>) -> Result<()> {
    let Value::Array(items) = v else {
        return Err(server_error("SMEMBERS", loc, v)
            .unwrap_or_else(|| anyhow!("{loc}: unexpected SMEMBERS reply")));
    };
    for m in items {
        let fp = match m {
            Value::BulkString(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<i64>().ok()),
            Value::Int(n) => Some(*n),
            _ => None,
        }
        .ok_or_else(|| anyhow!("{loc}: a set holds {m:?}, not a fingerprint"))?;
        fps.push(fp as u32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fence::tests::{key, locations, open_sized, record};
    use crate::hash::Hash128;
    use crate::pipeline::Store;
    use std::collections::HashMap;

    fn looked(f: &super::GensFilter) -> u64 {
        f.copies.looked.values().sum()
    }

    /// A writer copies a generation's group once the group's top has
    /// passed it (its own lookups from generation 1 raise the tops) and it
    /// has looked it up enough; then it looks lines up in the copy (no
    /// lookup on the server), and its verdicts stay those of the server's
    /// sets, for it and for a writer without copies.
    #[test]
    fn a_sealed_generation_is_copied_and_answers_as_the_server() {
        for loc in locations("copies") {
            // Two sets a group in generation 0: copied once the lines looked
            // up there reach its 2 sets and one per 8 fingerprints it holds.
            let mut a = open_sized(&loc, 100_000);
            assert_eq!(a.planned[0].per_group, 2, "{:?}", a.planned[0]);
            assert_eq!(record(&mut a, 0, 20_000).0, 20_000);
            // Looked up in the newest generation only: nothing to copy.
            assert_eq!(record(&mut a, 0, 20_000).0, 0);
            assert!(a.copies.held.is_empty());
            let now = a.time();
            a.grow(0, 0, 1, now).unwrap();
            a.refresh().unwrap();
            // The first lookups from generation 1 raise every group's top
            // and look 1,250 lines a group up in generation 0: past what
            // copying costs (2 + 1,250 / 8), it is copied.
            let (n, out) = record(&mut a, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
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
            assert_eq!(record(&mut b, 0, 20_000).0, 0);
            assert_eq!(record(&mut b, 30_000, 31_000).0, 0);
            let (n, _) = record(&mut b, 31_000, 32_000);
            assert_eq!(n, 1000);
            let hs: Vec<Hash128> = (31_000..32_000).map(key).collect();
            let mut out = Vec::new();
            a.contains_batch(&hs, &mut out).unwrap();
            assert!(out.iter().all(|&p| p));
        }
    }

    /// A (generation, group) is due for a copy only once its top has
    /// passed it, it is of 32-bit fingerprints, and it was looked up as
    /// often as the copy costs.
    #[test]
    fn only_a_sealed_generation_looked_up_enough_is_due() {
        let g = |index, fp_bits| super::Gen {
            index,
            slice: 0,
            rank: index as u32,
            capacity: 1000,
            rate: 1e-3,
            fp_bits,
            per_group: 2,
        };
        let live = [g(0, 32), g(1, 64), g(2, 32)];
        // 1,600 lines in each over 10 groups: a copy costs 2 + 160 / 8.
        let held = [(0, 1600), (1, 1600), (2, 1600)].into_iter().collect();
        let mut c = super::Copies::default();
        let none = HashMap::new();
        let due = |c: &super::Copies, tops: &[(u64, u64)]| -> Vec<(u64, u64)> {
            let tops = tops.iter().copied().collect();
            c.due(&live, (&tops, &none), &held, 10)
                .into_iter()
                .map(|(g, t)| (g.index, t))
                .collect()
        };
        c.looked_up(0, 3, 21);
        c.looked_up(1, 3, 100);
        c.looked_up(0, 4, 22);
        assert!(
            due(&c, &[(3, 2), (4, 0)]).is_empty(),
            "unsealed, or too few"
        );
        c.looked_up(0, 3, 1);
        assert_eq!(due(&c, &[(3, 2), (4, 0)]), [(0, 3)]);
        assert_eq!(due(&c, &[(3, 2), (4, 1)]), [(0, 3), (0, 4)]);
        assert_eq!(due(&c, &[(3, 0), (4, 2)]), [(0, 4)], "top 0 seals nothing");
        // Lines about to be looked up count: 1 looked up and 21 to be
        // reach the 22 a copy costs.
        let (tops, pending) = ([(5, 2)].into(), [(5, 21)].into());
        c.looked_up(0, 5, 1);
        assert!(c.due(&live, (&tops, &none), &held, 10).is_empty());
        let due: Vec<_> = c.due(&live, (&tops, &pending), &held, 10);
        assert_eq!(
            due.iter().map(|&(g, t)| (g.index, t)).collect::<Vec<_>>(),
            [(0, 5)]
        );
    }

    /// Makes writer `a` copy every group of generation 0 (as the test
    /// above): 20,000 lines there, then generation 1.
    fn copy_generation_0(a: &mut super::GensFilter) {
        assert_eq!(record(a, 0, 20_000).0, 20_000);
        let now = a.time();
        a.grow(0, 0, 1, now).unwrap();
        a.refresh().unwrap();
        assert_eq!(record(a, 20_000, 30_000).0, 10_000);
        for _ in 0..3 {
            assert_eq!(record(a, 0, 20_000).0, 0);
        }
        assert_eq!(a.copies.held.len(), a.meta.groups as usize);
    }

    /// Lookups too few in one run to pay for a copy count toward it in the
    /// next run on this machine: generation 0 holds 1,600 lines a group
    /// (added by another writer), so a copy costs its sets and 200; two
    /// runs of about 140 lines a group copy it in the second. The writer
    /// that added them copies it at once: its adds count as lookups.
    #[test]
    fn short_runs_lookups_add_up_to_a_copy() {
        const RUN: u32 = 140 * 256;
        for loc in locations("looked") {
            let dir = tempfile::tempdir().unwrap();
            let kept = dir.path().join("copies");
            let mut w = open_sized(&loc, 500_000);
            assert_eq!(record(&mut w, 0, 1600 * 256).0, 1600 * 256);
            w.commit_counts().unwrap();
            let now = w.time();
            w.grow(0, 0, 1, now).unwrap();
            w.refresh().unwrap();
            let mut a = open_sized(&loc, 500_000);
            let live = a.live(a.time());
            a.copies.keep_in(kept.clone(), loc.to_string(), &live);
            let (n, out) = record(&mut a, 0, RUN);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert!(a.copies.held.is_empty(), "one run pays no copy");
            assert_eq!(looked(&a), u64::from(RUN));
            // The next run starts from those counts.
            let mut b = open_sized(&loc, 500_000);
            let live = b.live(b.time());
            b.copies.keep_in(kept.clone(), loc.to_string(), &live);
            assert_eq!(looked(&b), u64::from(RUN));
            let (n, out) = record(&mut b, RUN, 2 * RUN);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert_eq!(b.copies.held.len(), b.meta.groups as usize);
            assert_eq!(
                looked(&b),
                u64::from(RUN),
                "its lines looked up in its copies"
            );
            // A run on another machine (no counts kept) does not copy.
            let mut c = open_sized(&loc, 500_000);
            let live = c.live(c.time());
            c.copies
                .keep_in(dir.path().join("elsewhere"), loc.to_string(), &live);
            record(&mut c, RUN, 2 * RUN);
            assert!(c.copies.held.is_empty());
            // The writer, with no lookups there at all, copies the groups
            // of its lines before looking them up.
            let before = looked(&w);
            assert_eq!(record(&mut w, RUN, RUN + 256).0, 0);
            assert!(w.copies.held.len() > 100, "{}", w.copies.held.len());
            assert_eq!(looked(&w), before, "nothing looked up on the server");
        }
    }

    /// The copies a run takes are kept, and the next run (another writer
    /// on this machine) takes them instead of looking generation 0 up on
    /// the server; a kept file that is damaged, or of a generation not
    /// live, is removed, and only its groups are missing.
    #[test]
    fn kept_copies_serve_the_next_run_and_bad_ones_go() {
        for loc in locations("kept") {
            let dir = tempfile::tempdir().unwrap();
            let kept = dir.path().join("copies");
            let mut a = open_sized(&loc, 100_000);
            let live = a.live(a.time());
            a.copies.keep_in(kept.clone(), loc.to_string(), &live);
            copy_generation_0(&mut a);
            let written = crate::redis::gens::kept::tests::named(&kept, "copy-");
            assert!(!written.is_empty());
            // The next run: every group held from the files, none looked
            // up on the server, the same verdicts.
            let mut b = open_sized(&loc, 100_000);
            let live = b.live(b.time());
            b.copies.keep_in(kept.clone(), loc.to_string(), &live);
            assert_eq!(b.copies.held.len(), b.meta.groups as usize);
            assert_eq!(b.copies.total, 20_000);
            let before = looked(&b);
            let (n, out) = record(&mut b, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert_eq!(looked(&b), before, "looked up in the kept copies only");
            assert_eq!(record(&mut b, 30_000, 31_000).0, 1000);
            assert_eq!(record(&mut a, 30_000, 31_000).0, 0);
            // A damaged file, and one of a generation that is not live.
            let bytes = std::fs::read(&written[0]).unwrap();
            let mut bad = bytes.clone();
            let at = bad.len() - 1;
            bad[at] ^= 1;
            std::fs::write(&written[0], bad).unwrap();
            let mut other = bytes;
            other[8] = 99;
            let foreign = kept.join("copy-foreign");
            std::fs::write(&foreign, other).unwrap();
            let mut c = open_sized(&loc, 100_000);
            let live = c.live(c.time());
            c.copies.keep_in(kept.clone(), loc.to_string(), &live);
            assert!(!written[0].exists(), "the damaged file is removed");
            assert!(!foreign.exists(), "the file of generation 99 is removed");
            // The groups of the files left (the head counts them).
            let left: usize = written[1..]
                .iter()
                .map(|p| {
                    let b = std::fs::read(p).unwrap();
                    u32::from_le_bytes(b[44..48].try_into().unwrap()) as usize
                })
                .sum();
            assert!(left < c.meta.groups as usize);
            assert_eq!(c.copies.held.len(), left);
            // Its verdicts stay the server's: present, and looked up there
            // for the groups not held.
            let (n, out) = record(&mut c, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            assert!(looked(&c) > 0);
        }
    }
}
