//! [`GensFilter`]: a Redis filter of fingerprint sets in generations, open
//! for a run (see the parent module for the keys and the atomic step).
//!
//! Each batch: the writer reads the generations and the counters (one round
//! trip), moves to a new generation when the newest is full or its slice
//! has passed ([`GROW_SCRIPT`], which adds one only when no other writer did
//! first), looks the lines up (`reads`: in its copies of sealed
//! generations, `copies`, then on the server), adds the lines found
//! nowhere behind a fence (`fence`) where their group's top is the newest
//! generation, and sends the rest in one
//! [`TAS_SCRIPT`] call per group. A call refused because the group already
//! holds a newer generation did nothing: the writer reads the generations
//! again and sends those lines again.

use super::{
    CLOCK_BOUND, CLOCK_SCRIPT, CREATE_SCRIPT, GROW_SCRIPT, Gen, GensMeta, GensState, MAX_GENS,
    TAS_SCRIPT,
};
use crate::format::Header;
use crate::hash::Hash128;
use crate::pipeline::{Journals, Store};
use crate::redis::bitfield::{PART_KEYS, Parts};
use crate::redis::client::{Client, Failure, Routed, server_error};
use crate::redis::journal::Journal;
use crate::redis::location::Location;
use crate::redis::slot::slot;
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The part of the newest generation's capacity a step of a batch takes
/// at least, however little room is left (see `insert_batch`).
const MIN_STEP_PART: u64 = 256;

/// Times a batch's lines are sent again after the generations moved under
/// them, before the run gives up.
const MAX_RETRIES: usize = 32;

/// What the first step of a test-and-set left to the script.
struct First {
    /// The lines still to decide.
    todo: Vec<u32>,
    /// Per group, the oldest generation to check again.
    recheck: HashMap<u64, u64>,
    /// Lines added undecided, and the generation they were added to.
    skip: HashMap<u32, u64>,
    /// Whether a command that records went out.
    sent: bool,
}

/// A filter in generations, open for a run.
pub(crate) struct GensFilter {
    pub(super) client: Client,
    pub(super) meta: GensMeta,
    pub(super) meta_bytes: Vec<u8>,
    pub(super) header: Header,
    pub(super) state: GensState,
    /// The generations in `state`, planned.
    pub(super) planned: Vec<Gen>,
    /// Lines recorded in each generation, as the counters said when read.
    pub(super) counted: BTreeMap<u64, u64>,
    /// Lines this run recorded in each generation, not yet counted.
    pub(super) added: BTreeMap<u64, u64>,
    /// The SHA1 of [`TAS_SCRIPT`] (from `SCRIPT LOAD`).
    pub(super) sha: String,
    pub(super) write: bool,
    pub(super) journal: Option<Journal>,
    /// Set when a reply was lost: the run stops at its next batch.
    pub(super) broken: Option<anyhow::Error>,
    /// A generation, and the sets of it (numbers over every group) this
    /// run, or one before it on this machine, gave a time to live.
    pub(super) expiring: (u64, HashSet<u64>),
    /// Copies of sealed generations (see `copies`).
    pub(super) copies: Box<super::Copies>,
    /// Groups whose top a reply showed to be the newest generation (then
    /// a lookup reads it; else it raises it first, see `RAISE_SCRIPT`).
    pub(super) at_top: (u64, HashSet<u64>),
    /// Run between a batch's lookup and its fenced add (a test's other
    /// writer).
    #[cfg(test)]
    pub(super) before_fence: Option<Box<dyn FnMut()>>,
    /// Steps the batches were cut into (a test's count).
    #[cfg(test)]
    pub(super) steps: u64,
}

impl GensFilter {
    /// Makes the filter `meta` describes at the client's location unless
    /// one is there ([`CREATE_SCRIPT`]: its meta key and its generations
    /// hash naming generation 0, in one step). Returns whether this run
    /// made it.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(in crate::redis) fn create(client: &mut Client, meta: &GensMeta) -> Result<bool> {
        let loc = client.location().clone();
        let t = crate::clock::now();
        let slice = meta.window.map_or(0, |w| w.slice_at(t));
        // One step (the two keys share the name's slot): a run killed in
        // the middle leaves neither, and a writer that lost the race none
        // of its own.
        let v = client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("EVAL")
                .arg(CREATE_SCRIPT)
                .arg(2)
                .arg(loc.meta_key())
                .arg(meta.gens_key(&loc))
                .arg(meta.encode())
                .arg(format!("{slice} 0 {}", meta.first_first()))
                .arg(t)
                .clone(),
        )?;
        if let Some(e) = server_error("making the filter", &loc, &v) {
            return Err(e);
        }
        Ok(v == Value::Int(1))
    }

    /// The filter `meta` (stored as `meta_bytes`) on `client`, its
    /// generations and counters read.
    ///
    /// # Errors
    /// A server that cannot be reached, or a generations hash that is gone.
    pub(in crate::redis) fn assemble(
        mut client: Client,
        meta: GensMeta,
        meta_bytes: Vec<u8>,
        write: bool,
    ) -> Result<GensFilter> {
        let loc = client.location().clone();
        // Only a writer runs the script (a reader may lack the right to).
        let sha = if write {
            let v = client.query(
                slot(loc.meta_key().as_bytes()),
                redis::cmd("SCRIPT").arg("LOAD").arg(TAS_SCRIPT).clone(),
            )?;
            match v {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                other => {
                    return Err(server_error("SCRIPT LOAD", &loc, &other)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected SCRIPT LOAD reply")));
                }
            }
        } else {
            String::new()
        };
        let header = meta.header();
        let mut f = GensFilter {
            client,
            meta,
            meta_bytes,
            header,
            state: GensState::default(),
            planned: Vec::new(),
            counted: BTreeMap::new(),
            added: BTreeMap::new(),
            sha,
            write,
            journal: None,
            broken: None,
            expiring: (u64::MAX, HashSet::new()),
            copies: Default::default(),
            at_top: (u64::MAX, HashSet::new()),
            #[cfg(test)]
            before_fence: None,
            #[cfg(test)]
            steps: 0,
        };
        f.refresh()?;
        Ok(f)
    }

    /// What the meta key records.
    pub(crate) fn meta(&self) -> &GensMeta {
        &self.meta
    }

    /// The header (seed, keys, sizing, growth, window; no layers).
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// Where it lives.
    pub(crate) fn location(&self) -> &Location {
        self.client.location()
    }

    /// Whether this run records lines.
    pub(crate) fn writes(&self) -> bool {
        self.write
    }

    /// The live generations, planned, oldest first, with the lines the
    /// counters say each holds.
    pub(crate) fn generations(&self) -> Vec<(Gen, u64)> {
        self.live(self.time())
            .into_iter()
            .map(|g| (g, self.counted.get(&g.index).copied().unwrap_or(0)))
            .collect()
    }

    /// The latest time a writer worked at (the filter's clock).
    pub(crate) fn clock(&self) -> u64 {
        self.state.clock
    }

    /// Reads the generations and the counters (one round trip).
    pub(super) fn refresh(&mut self) -> Result<()> {
        let loc = self.client.location().clone();
        let s = slot(loc.meta_key().as_bytes());
        let gens = self.meta.gens_key(&loc);
        let v = self
            .client
            .exec(vec![
                Routed::new(s, redis::cmd("HGETALL").arg(&gens)),
                Routed::new(s, redis::cmd("HGETALL").arg(loc.count_key())),
            ])
            .map_err(Failure::into_error)
            .context("cannot read the generations")?;
        for r in &v {
            if let Some(e) = server_error("HGETALL of the generations", &loc, r) {
                return Err(e);
            }
        }
        self.state = GensState::read(&v[0], &loc)?;
        self.planned = self
            .state
            .gens
            .iter()
            .map(|&(g, slice, rank, first)| self.meta.generation(g, slice, rank, first))
            .collect::<Result<_>>()?;
        self.counted.clear();
        let prefix = format!("lines:{:08x}:", self.meta.tag);
        let mut updated = None;
        crate::redis::meta::each_count(&v[1], &mut |k, n| {
            if k == b"updated" {
                updated = Some(n);
            } else if let Some(g) = k
                .strip_prefix(prefix.as_bytes())
                .and_then(|g| std::str::from_utf8(g).ok()?.parse::<u64>().ok())
            {
                self.counted.insert(g, n);
            }
        });
        if let Some(t) = updated {
            self.header.updated = t;
        }
        if let Some(w) = &mut self.header.window {
            w.clock = self.state.clock;
        }
        Ok(())
    }

    /// The time the run works at: its clock (`--now`, else the system's),
    /// or the filter's when that is later.
    pub(crate) fn time(&self) -> u64 {
        crate::clock::now().max(self.state.clock)
    }

    /// The generations live at time `t`: every one without a window, else
    /// those of the slices a lookup at `t` tests.
    pub(super) fn live(&self, t: u64) -> Vec<Gen> {
        let oldest = self
            .meta
            .window
            .map_or(0, |w| w.slice_at(t).saturating_sub(u64::from(w.slices)));
        self.planned
            .iter()
            .filter(|g| g.slice >= oldest)
            .copied()
            .collect()
    }

    /// Before a batch is recorded: refuses a clock too far behind the
    /// filter's, and adds a generation when the newest is full or its
    /// slice has passed (or takes the one another writer added).
    fn advance(&mut self) -> Result<()> {
        // Counted at once: the other writers then see a generation fill.
        self.commit_counts()?;
        self.refresh()?;
        let own = crate::clock::now();
        if own + CLOCK_BOUND < self.state.clock {
            bail!(
                "{}: this writer's clock ({}) is {} s behind the filter's ({}, the latest time \
                 a writer worked at), more than the {CLOCK_BOUND} s writers may be apart: fix \
                 this machine's clock (NTP), or pass --now with the right time",
                self.location(),
                crate::clock::format(own),
                self.state.clock - own,
                crate::clock::format(self.state.clock)
            );
        }
        for _ in 0..MAX_RETRIES {
            let t = self.time();
            let (top, slice, rank, _) = self.state.newest();
            let want = match self.meta.window {
                Some(w) if w.slice_at(t) > slice => Some((w.slice_at(t), 0)),
                _ => (self.room() == Some(0)).then_some((slice, rank + 1)),
            };
            let Some((slice, rank)) = want else {
                return Ok(());
            };
            self.commit()?;
            self.grow(top, slice, rank, t)?;
            self.refresh()?;
        }
        bail!(
            "{}: its generations kept moving while this writer tried to add one",
            self.location()
        )
    }

    /// Lines the newest generation takes before it is full, when the
    /// filter grows, or its slice does (`None`: it does not, or no more).
    pub(crate) fn room(&self) -> Option<u64> {
        let (top, _, rank, first) = self.state.newest();
        let last = match self.meta.last_rank(first) {
            Some(last) => last,
            None if self.meta.growth.is_some() => MAX_GENS - 1,
            None => return None,
        };
        if rank >= last || rank + 1 >= MAX_GENS || self.state.gens.len() >= self.meta.max_live() {
            return None;
        }
        let g = self.planned.last().expect("one at least");
        let held = self.held(top);
        Some(g.capacity.saturating_sub(held))
    }

    /// Lines recorded in generation `g`: counted on the server, and added
    /// by this writer since.
    pub(super) fn held(&self, g: u64) -> u64 {
        self.counted.get(&g).copied().unwrap_or(0) + self.added.get(&g).copied().unwrap_or(0)
    }

    /// Adds generation `top + 1` (rank `rank` of slice `slice`) unless
    /// another writer added one after `top` first.
    pub(super) fn grow(&mut self, top: u64, slice: u64, rank: u32, t: u64) -> Result<()> {
        let loc = self.client.location().clone();
        // A new slice is sized after the lines the newest one took; a
        // slice's next generation keeps its first one's size.
        let (_, newest, _, first) = self.state.newest();
        let first = if rank == 0 {
            let before = self.state.gens.iter().filter(|g| g.1 == newest);
            self.meta.next_first(before.map(|g| self.held(g.0)).sum())
        } else {
            self.meta.first_or_least(first)
        };
        let gens = self.meta.gens_key(&loc);
        let oldest = self
            .meta
            .window
            .map_or(0, |w| slice.saturating_sub(u64::from(w.slices)));
        let v = self.client.query_once(
            slot(gens.as_bytes()),
            redis::cmd("EVAL")
                .arg(GROW_SCRIPT)
                .arg(2)
                .arg(&gens)
                .arg(loc.count_key())
                .arg(top)
                .arg(slice)
                .arg(format!("{rank} {first}"))
                .arg(t)
                .arg(oldest)
                .arg(format!("lines:{:08x}:", self.meta.tag))
                .clone(),
        )?;
        if let Some(e) = server_error("adding a generation", &loc, &v) {
            return Err(e);
        }
        Ok(())
    }

    /// The first step of a batch's test-and-set: the lookup (`precheck`),
    /// then the fenced add (`fence`). Returns what is left to the script.
    ///
    /// # Errors
    /// When nothing was recorded (the lookup failed, or the first part
    /// could not be sent).
    fn first_step(
        &mut self,
        hashes: &[Hash128],
        (new, out): (&mut [bool], &mut [bool]),
        t: &mut Parts,
    ) -> Result<First> {
        let first: Vec<u32> = (0..hashes.len() as u32)
            .filter(|&i| !out[i as usize])
            .collect();
        let now = self.time();
        let live = self.live(now);
        // Groups whose top a reply showed to be the newest: their older
        // generations are sealed, and copied before this batch's lookups
        // when those would reach what a copy costs.
        let mut known: HashMap<u64, u64> = match live.last() {
            Some(g) if self.at_top.0 == g.index => {
                self.at_top.1.iter().map(|&t| (t, g.index)).collect()
            }
            _ => HashMap::new(),
        };
        let pending = self
            .meta
            .by_group(hashes, &first)
            .into_iter()
            .map(|(t, lines)| (t, lines.len() as u64))
            .collect();
        self.raise_for_copies(&live, &mut known, &pending)?;
        self.copy_sealed(&live, &known, &pending)?;
        let found = self.precheck(hashes, &first, &live)?;
        // Still nothing sent: for the next batches.
        self.copy_sealed(&live, &found.recheck, &HashMap::new())?;
        // Found in a generation: present.
        let rest: HashSet<u32> = found.todo.iter().copied().collect();
        for i in first {
            out[i as usize] |= !rest.contains(&i);
        }
        let mut step = First {
            todo: found.todo,
            recheck: found.recheck,
            skip: HashMap::new(),
            sent: false,
        };
        #[cfg(test)]
        if let Some(f) = &mut self.before_fence {
            f();
        }
        let Some(g) = live.last() else {
            return Ok(step);
        };
        let ttl = self.ttl(g, now);
        let todo = std::mem::take(&mut step.todo);
        let f = self.add_fenced(hashes, todo, &step.recheck, (g, ttl), (new, out), t)?;
        step.sent = f.sent;
        step.todo = f.rest;
        if !f.tentative.is_empty() {
            // The generations moved: read again, every one checked.
            step.todo.extend(f.tentative.keys());
            step.skip = f.tentative;
            step.recheck.clear();
        }
        Ok(step)
    }

    /// Test-and-set of a batch (see the module's doc). A line repeated in
    /// the batch is present and sends nothing.
    pub(super) fn test_and_set(&mut self, hashes: &[Hash128], out: &mut [bool]) -> Result<u64> {
        let mut new = vec![false; hashes.len()];
        let mut t = Parts::default();
        let First {
            mut todo,
            mut recheck,
            skip,
            sent: mut sent_any,
        } = self.first_step(hashes, (&mut new, out), &mut t)?;
        let mut tries = usize::from(!skip.is_empty());
        while !todo.is_empty() && t.failed.is_none() {
            tries += 1;
            let ready = if tries > MAX_RETRIES {
                Err(anyhow!(
                    "{}: its generations kept moving while this writer sent a batch",
                    self.location()
                ))
            } else if tries > 1 {
                self.refresh()
            } else {
                Ok(())
            };
            let now = self.time();
            let live = self.live(now);
            let newest = live.last().copied();
            let g = match (ready, newest) {
                (Ok(()), Some(g)) => g,
                (ready, _) => {
                    let e = ready.err().unwrap_or_else(|| {
                        anyhow!("{}: no live generation to record in", self.location())
                    });
                    if !sent_any {
                        // The first step only read: nothing was recorded.
                        return Err(e);
                    }
                    // Lines recorded before stay judged (and journaled);
                    // these were not sent again: not recorded.
                    not_sent(&todo, &skip, (&mut new, out), &mut t);
                    t.failed = Some(e);
                    break;
                }
            };
            if let Some((i, s)) = skip.iter().find(|&(_, &s)| s >= g.index) {
                // Cannot happen: tentative lines are of a generation the
                // group's top passed.
                let e = anyhow!(
                    "{}: line {i} was added to generation {s} undecided, and the newest is {}",
                    self.location(),
                    g.index
                );
                not_sent(&todo, &skip, (&mut new, out), &mut t);
                t.failed = Some(e);
                break;
            }
            let ttl = self.ttl(&g, now);
            let (calls, twins) = self.calls(hashes, &todo, &live, (&recheck, &skip));
            // Present once the line kept is added (and until then not
            // judged new, nor sent).
            for &(i, _) in &twins {
                out[i as usize] = true;
            }
            // Lines sent again: every live generation checked.
            recheck.clear();
            let mut again = Vec::new();
            let mut part = Vec::new();
            let mut lines = 0;
            let mut calls = calls.into_iter().peekable();
            while let Some(c) = calls.next() {
                lines += c.lines.len();
                part.push(c);
                if lines < PART_KEYS && calls.peek().is_some() {
                    continue;
                }
                let (sent, stale) =
                    self.send_part(&part, hashes, (g.index, ttl), &mut new, out, &mut t);
                if !sent && !sent_any {
                    // Nothing went out: nothing was recorded.
                    return Err(t.failed.take().expect("a part not sent failed"));
                }
                sent_any |= sent;
                again.extend(stale);
                part.clear();
                lines = 0;
                if t.failed.is_some() {
                    break;
                }
            }
            if t.failed.is_some() {
                // The lines not sent, or refused as stale: not judged new,
                // not recorded.
                let left: Vec<u32> = calls.flat_map(|c| c.lines).chain(again).collect();
                not_sent(&left, &skip, (&mut new, out), &mut t);
                break;
            }
            // A twin goes again with its line kept, into a generation where
            // the two may differ.
            let stale: HashSet<u32> = again.iter().copied().collect();
            for (i, kept) in twins {
                if stale.contains(&kept) {
                    out[i as usize] = false;
                    again.push(i);
                }
            }
            todo = again;
        }
        if t.failed.is_some() && tries == usize::from(!skip.is_empty()) {
            // The fenced add failed: the script never ran.
            not_sent(&todo, &skip, (&mut new, out), &mut t);
        }
        let (count, broken) =
            t.conclude(&mut self.client, sent_any, new, out, self.journal.as_mut());
        if broken.is_some() {
            self.broken = broken;
        }
        Ok(count)
    }

    /// Seconds generation `g`'s keys live from `now` (0: for ever).
    pub(super) fn ttl(&self, g: &Gen, now: u64) -> u64 {
        self.meta
            .slice_end(g.slice)
            .map_or(0, |end| end.saturating_sub(now).max(1))
    }

    /// Adds this run's lines to the counters (per generation), and moves
    /// the filter's clock forward to the run's time.
    fn commit(&mut self) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        self.commit_counts()?;
        self.commit_time()
    }

    /// Adds this run's lines to each generation's counter.
    pub(super) fn commit_counts(&mut self) -> Result<()> {
        // Each generation's count is taken off as it is sent (a lost reply
        // may have counted it: never twice); after a failure the rest are
        // still owed.
        let added: Vec<(u64, u64)> = self.added.iter().map(|(&g, &n)| (g, n)).collect();
        for (g, n) in added {
            self.added.remove(&g);
            if n == 0 {
                continue;
            }
            let field = self.meta.count_field(g);
            let total = crate::redis::meta::bump_count(
                &mut self.client,
                &field,
                n as i64,
                &self.meta_bytes,
                &self.meta_bytes,
            )?;
            self.counted.insert(g, u64::try_from(total).unwrap_or(0));
        }
        Ok(())
    }

    /// The clock and time of change, at the run's end and when it adds a
    /// generation.
    fn commit_time(&mut self) -> Result<()> {
        let loc = self.client.location().clone();
        let gens = self.meta.gens_key(&loc);
        let t = self.time();
        let v = self.client.query(
            slot(gens.as_bytes()),
            redis::cmd("EVAL")
                .arg(CLOCK_SCRIPT)
                .arg(1)
                .arg(&gens)
                .arg(t)
                .clone(),
        )?;
        if let Some(e) = server_error("moving the clock", &loc, &v) {
            return Err(e);
        }
        let now = crate::clock::system_secs();
        let v = self.client.query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("HSET")
                .arg(loc.count_key())
                .arg("updated")
                .arg(now)
                .clone(),
        )?;
        if let Some(e) = server_error("HSET of the counters", &loc, &v) {
            return Err(e);
        }
        self.header.updated = now;
        Ok(())
    }

    /// The directory of this filter's journals on this machine.
    ///
    /// # Errors
    /// When there is no directory for journals (no `HOME`).
    pub(crate) fn journal_dir(&self) -> Result<std::path::PathBuf> {
        crate::redis::journal::dir_for(&self.location().name, &self.meta_bytes)
    }

    /// See `RedisFilter::journal`; the run also takes the copies of sealed
    /// generations kept beside the journal, and keeps its own there (see
    /// `kept`).
    ///
    /// # Errors
    /// As there.
    pub(crate) fn journal(
        &mut self,
        term: u8,
        keys: crate::keys::KeySpec,
        out: &mut dyn std::io::Write,
    ) -> Result<(u64, std::path::PathBuf)> {
        let dir = self.journal_dir()?;
        let replayed = Journal::replay(
            &dir,
            term,
            &mut crate::redis::journal::asker(self, keys),
            out,
        )?;
        self.journal = Some(Journal::start(&dir, &self.location().to_string())?);
        let live = self.live(self.time());
        let location = self.location().to_string();
        self.copies
            .keep_in(super::kept::dir_of(&dir), location, &live);
        Ok((replayed, dir))
    }

    /// Ends the run (as `SetsFilter::finish`): the journal removed when it
    /// went well, kept otherwise; the counters added to.
    ///
    /// # Errors
    /// The failure that stopped the run's test-and-sets, or a failed commit.
    pub(crate) fn finish(&mut self, ok: bool) -> Result<Option<Header>> {
        let broken = self.broken.take();
        if let Some(j) = self.journal.take() {
            j.end(ok && broken.is_none());
        }
        // The last batch's lookups and adds, for the next runs here.
        self.copies.save_looked();
        let committed = self.commit();
        if let Some(e) = broken {
            return Err(e);
        }
        committed?;
        Ok(ok.then(|| self.header.clone()))
    }
}

/// Lines a failure left unsent: not recorded, so not judged new (present,
/// unprinted), but a line this writer added undecided (`skip`) is in the
/// filter: it is taken as a lost reply (the journal asks for it next run).
fn not_sent(
    lines: &[u32],
    skip: &HashMap<u32, u64>,
    (new, out): (&mut [bool], &mut [bool]),
    t: &mut Parts,
) {
    for &i in lines {
        if skip.contains_key(&i) {
            t.mark(&[vec![i]], new);
        } else {
            out[i as usize] = true;
        }
    }
}

impl Store for GensFilter {
    fn seed(&self) -> u64 {
        self.meta.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        self.lookup(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        if let Some(r) = crate::redis::Journaled::broken_batch(self, out, hashes.len()) {
            return r;
        }
        // In steps no larger than the room left in the newest generation,
        // so that a growing filter adds the next one when it is full, not a
        // batch later; but of a 256th of its capacity at least, or a
        // generation nearly full would take lines a few at a time (each
        // step reads the generations: lines already present, which take no
        // room, would cost a round trip or more each). A generation then
        // holds up to that much more than its capacity, as when writers add
        // to it at once.
        crate::redis::sets::mark_repeats(hashes, out);
        let mut new = 0;
        let mut from = 0;
        while from < hashes.len() {
            if self.broken.is_some() {
                // A reply was lost: nothing more is sent (the run stops).
                out[from..].fill(true);
                if let Some(j) = &mut self.journal {
                    j.verdicts(out[from..].iter().map(|_| crate::redis::journal::PRESENT));
                }
                break;
            }
            self.advance()?;
            let to = match self.room() {
                Some(room) => {
                    let least = self
                        .planned
                        .last()
                        .map_or(1, |g| g.capacity / MIN_STEP_PART);
                    from + (room.max(least).max(1) as usize).min(hashes.len() - from)
                }
                None => hashes.len(),
            };
            #[cfg(test)]
            {
                self.steps += 1;
            }
            new += self.test_and_set(&hashes[from..to], &mut out[from..to])?;
            from = to;
        }
        Ok(new)
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        crate::redis::Journaled::as_journals(self)
    }

    /// A script call costs the server per call as much as per line: the
    /// more lines a call, the fewer calls.
    fn whole_chunks(&self) -> bool {
        true
    }
}

impl crate::redis::journal::Journaled for GensFilter {
    fn journal_parts(&mut self) -> (Option<&mut Journal>, &mut Option<anyhow::Error>) {
        (self.journal.as_mut(), &mut self.broken)
    }
}
