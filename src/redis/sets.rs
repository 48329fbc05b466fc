//! [`SetsFilter`]: the fingerprint-set layout of a Redis filter, whose cost
//! is per line, not per filter.
//!
//! A line's 128-bit hash chooses one of `sets` small Redis sets with its low
//! half, and gives a fingerprint with its high half (32 bits, or 64 for a
//! target rate below what 32 bits give). Keys (NAME from the location, GEN a
//! random tag chosen when the filter is made, so that a new filter never
//! adopts keys an older one left):
//! - `seen:{NAME}:meta`: what [`SetsMeta`] encodes; it begins as a format-3
//!   header does, so a `seen` without this layout refuses it as newer.
//! - `seen:{NAME}:count`: the counters, as for the Bloom layout.
//! - `seen:{NAME:j}:GEN`: set `j`, a Redis set of integers. Each has its own
//!   hash tag, so a Cluster spreads the sets over its slots and masters.
//!
//! The atomic step is `SADD set fingerprint`: it returns 1 to exactly one
//! writer, the one that recorded the line. A lookup is `SISMEMBER`. Nothing
//! is cached by the client: a run sends one command per line and keeps only
//! its batch in memory, whatever the filter's size. Sets are sized to stay
//! at or under the server's `set-max-intset-entries` (read when the filter is
//! made), so that Redis keeps each as a packed array of integers (an
//! `intset`, 4 bytes per 32-bit fingerprint) rather than a hash table.

use super::bitfield::{PART_KEYS, Parts};
use super::client::{Client, Failure, Routed, server_error};
use super::journal::Journal;
use super::location::Location;
use super::set_keys::{SetKeys, SetsMeta, unlink_all};
use super::slot::slot;
use crate::format::Header;
use crate::hash::Hash128;
use crate::pipeline::{Forgets, Journals, Store};
use anyhow::{Result, bail};
use redis::Value;

mod lists;
mod merge;

use lists::Check;
pub(crate) use merge::SetsUnion;

/// A filter in the fingerprint-set layout, open for a run.
pub(crate) struct SetsFilter {
    client: Client,
    meta: SetsMeta,
    /// The meta value that names the filter: as it was before a `forget`
    /// marked it (see [`SetsMeta::identity`]).
    meta_bytes: Vec<u8>,
    /// The meta value once marked.
    marked: Vec<u8>,
    keys: SetKeys,
    header: Header,
    /// Lines this run recorded as new, not yet added to the counters.
    added: u64,
    /// Lines recorded as new by every writer: the counters as read, plus
    /// this run's.
    inserts: u64,
    /// The counters as the run found them.
    opened_with: u64,
    /// Set when a reply was lost: the run stops at its next batch.
    broken: Option<anyhow::Error>,
    write: bool,
    journal: Option<Journal>,
    /// A new filter (`build -o`) whose meta key is written when the run
    /// went well: whether it replaces one there.
    pending: Option<bool>,
    /// Keys this run took off the forget lists (recorded again), not yet
    /// added to the counters.
    unlisted: u64,
    /// What the counters said of the forget lists when read on open, not
    /// yet used by a batch.
    lists_read: Option<bool>,
    /// Keys on the forget lists as the counters said after this run's last
    /// `forget` batch (at most that many: see [`SetsFilter::list_counts`]).
    listed_now: u64,
}

impl SetsFilter {
    /// The filter whose meta (decoded, and as stored) and counters were
    /// read on `client`.
    pub(super) fn assemble(
        client: Client,
        meta: SetsMeta,
        header: Header,
        write: bool,
    ) -> SetsFilter {
        let keys = SetKeys::new(client.location(), &meta);
        let meta_bytes = meta.identity();
        let marked = SetsMeta {
            lists: true,
            ..meta.clone()
        }
        .encode();
        SetsFilter {
            client,
            meta,
            meta_bytes,
            marked,
            keys,
            header,
            added: 0,
            inserts: 0,
            opened_with: 0,
            broken: None,
            write,
            journal: None,
            pending: None,
            unlisted: 0,
            lists_read: None,
            listed_now: 0,
        }
    }

    /// Makes the filter `meta` describes at `loc` unless one is there (its
    /// meta key is written with `SET NX`: two creators race, one wins, and
    /// the other uses the winner's). Returns the meta stored, and whether
    /// this run made it.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(super) fn create(client: &mut Client, meta: &SetsMeta) -> Result<(Vec<u8>, bool)> {
        let loc = client.location().clone();
        let bytes = meta.encode();
        let v = client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("SET")
                .arg(loc.meta_key())
                .arg(&bytes)
                .arg("NX")
                .clone(),
        )?;
        if let Some(e) = server_error("SET of the meta key", &loc, &v) {
            return Err(e);
        }
        Ok((bytes, v == Value::Okay))
    }

    /// A new filter for `build -o`: its sets are filled under a fresh tag,
    /// and its meta key is written only when the run went well
    /// (`Held::finish` of the store), replacing one there with `replace`.
    pub(super) fn new_pending(client: Client, meta: SetsMeta, replace: bool) -> SetsFilter {
        let header = meta.header();
        let mut f = SetsFilter::assemble(client, meta, header, true);
        f.pending = Some(replace);
        f
    }

    /// What the meta key records.
    pub(crate) fn meta(&self) -> &SetsMeta {
        &self.meta
    }

    /// The header (seed, keys, sizing, counters; no layers).
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

    /// Sets the lines recorded as new (the counters as read).
    pub(crate) fn set_inserts(&mut self, n: u64) {
        self.inserts = n;
        self.opened_with = n;
    }

    /// Whether keys were on the forget lists when the counters were read
    /// on open: the first batch's answer (see `SetsFilter::lists_to_check`).
    pub(crate) fn set_lists_read(&mut self, listed: bool) {
        self.lists_read = Some(listed);
    }

    /// The new lines this run is expected to have taken for seen ones,
    /// for `new` lines it judged new (each was compared with its set's
    /// fingerprints; the sets held, on average, what they held between the
    /// run's start and now: at rate `r`, `r / (1 − r)` per line judged
    /// new), and the rate of a lookup now.
    pub(crate) fn run_rates(&self, new: u64) -> (f64, f64) {
        let during = (self.opened_with + self.inserts) as f64 / 2.0;
        let r = self.meta.fpp_with(during).min(1.0 - 1e-9);
        (
            new as f64 * r / (1.0 - r),
            self.meta.fpp_with(self.inserts as f64),
        )
    }

    /// The directory of this filter's journals on this machine.
    ///
    /// # Errors
    /// When there is no directory for journals (no `HOME`).
    pub(crate) fn journal_dir(&self) -> Result<std::path::PathBuf> {
        super::journal::dir_for(&self.location().name, &self.meta_bytes)
    }

    /// See `RedisFilter::journal`.
    ///
    /// # Errors
    /// As there.
    pub(crate) fn journal(
        &mut self,
        term: u8,
        keys: crate::keys::KeySpec,
        out: &mut dyn std::io::Write,
    ) -> Result<(u64, std::path::PathBuf)> {
        let dir = super::journal::dir_for(&self.location().name, &self.meta_bytes)?;
        let replayed = Journal::replay(&dir, term, &mut super::journal::asker(self, keys), out)?;
        self.journal = Some(Journal::start(&dir, &self.location().to_string())?);
        Ok((replayed, dir))
    }

    /// Ends the run: the journal removed when it went well (`ok`), kept
    /// otherwise; the counters added to; a pending new filter put in place
    /// (or its sets removed). Returns the header as the run left it.
    ///
    /// # Errors
    /// The failure that stopped the run's test-and-sets, a failed commit,
    /// or a new filter that could not be put in place.
    pub(crate) fn finish(&mut self, ok: bool) -> Result<Option<Header>> {
        let broken = self.broken.take();
        if let Some(j) = self.journal.take() {
            j.end(ok && broken.is_none());
        }
        if let Some(replace) = self.pending {
            if !ok || broken.is_some() {
                let _ = self.unlink_sets(self.meta.tag);
                return broken.map_or(Ok(None), Err);
            }
            self.put_in_place(replace)?;
            return Ok(Some(self.header.clone()));
        }
        let committed = self.commit();
        if let Some(e) = broken {
            return Err(e);
        }
        committed?;
        Ok(ok.then(|| self.header.clone()))
    }

    /// Adds this run's new lines to the shared counters, and checks that
    /// the filter is still the one it opened.
    fn commit(&mut self) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        // Lines recorded again after a `forget` are counted first, then the
        // new lines: a reader (`stats`, `verify`) never sees more lines
        // counted than the sets and these account for, even when this run
        // stops between the two.
        if self.unlisted > 0 {
            let [_, unforgets] = self.meta.list_fields();
            super::meta::bump_count(
                &mut self.client,
                &unforgets,
                self.unlisted as i64,
                &self.meta_bytes,
                &self.marked,
            )?;
            self.unlisted = 0;
        }
        let total = super::meta::add_counts(
            &mut self.client,
            &self.meta.count_field(),
            self.added,
            self.meta.capacity,
            (&self.meta_bytes, &self.marked),
            "its sets fill toward set-max-intset-entries (at about 2.4 times its capacity the \
             fullest pass it and take 15 times the memory), and its false-positive rate grows \
             with them (`seen stats` shows both)",
        )?;
        self.added = 0;
        self.header.updated = total.1;
        Ok(())
    }

    /// Writes the meta key and counters of a new filter (`build -o`) once
    /// its sets hold its lines; with `replace`, the filter there first
    /// loses its meta key, then its data.
    fn put_in_place(&mut self, replace: bool) -> Result<()> {
        let loc = self.client.location().clone();
        let meta_slot = slot(loc.meta_key().as_bytes());
        let old = super::meta::read_any(&mut self.client, &loc)?;
        if old.is_some() && !replace {
            let _ = self.unlink_sets(self.meta.tag);
            bail!(
                "{loc} was made by another process while this one was being built: run again \
                 with --force to replace it"
            );
        }
        if let Some(old) = old {
            super::meta::delete(&mut self.client, &loc, old)?;
        }
        let t = crate::clock::system_secs();
        let mut counts = redis::cmd("HSET");
        counts
            .arg(loc.count_key())
            .arg(self.meta.count_field())
            .arg(self.added)
            .arg("updated")
            .arg(t);
        if self.listed_now > 0 {
            // A union's forget lists (`seen merge`): counted before the
            // meta key names the filter, so that writers check them.
            counts.arg(&self.meta.list_fields()[0]).arg(self.listed_now);
        }
        let cmds = vec![
            Routed::new(meta_slot, &counts),
            Routed::new(
                meta_slot,
                redis::cmd("SET")
                    .arg(loc.meta_key())
                    .arg(&self.meta_bytes)
                    .arg("NX"),
            ),
        ];
        let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
        for v in &replies {
            if let Some(e) = server_error("storing the meta key", &loc, v) {
                return Err(e);
            }
        }
        if replies.last() != Some(&Value::Okay) {
            let _ = self.unlink_sets(self.meta.tag);
            bail!(
                "{loc} was made by another process while this one was being built: run again \
                 with --force to replace it"
            );
        }
        self.header.updated = t;
        self.added = 0;
        self.client.wait_replicas(&format!(
            " (the filter is stored: check it with `seen verify {loc}`)"
        ))
    }

    /// Removes every set of tag `tag` (a failed `build -o`'s, or a replaced
    /// filter's), `UNLINK`ed in pipelines of 4096.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(crate) fn unlink_sets(&mut self, tag: u32) -> Result<()> {
        let mut meta = self.meta.clone();
        meta.tag = tag;
        let keys = SetKeys::new(self.client.location(), &meta);
        let lists = meta.lists_key(self.client.location());
        unlink_all(&mut self.client, &keys, meta.sets, &lists)
    }

    /// Runs `verb` (`SCARD`, `OBJECT ENCODING`) on every set (or, with
    /// `lists`, every set's forget list), `per` calls at a time, handing
    /// each group's replies (with the first set's number) to `each`.
    ///
    /// # Errors
    /// A lost connection, or what `each` returns.
    pub(crate) fn for_every_set(
        &mut self,
        lists: bool,
        verb: &[&str],
        each: &mut dyn FnMut(u64, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let per = 4096u64;
        let mut start = 0;
        while start < self.meta.sets {
            let end = (start + per).min(self.meta.sets);
            let cmds = (start..end)
                .map(|j| {
                    let name = if lists {
                        self.keys.list_name(j)
                    } else {
                        self.keys.name(j)
                    };
                    let mut c = redis::cmd(verb[0]);
                    for v in &verb[1..] {
                        c.arg(*v);
                    }
                    Routed::new(slot(name.as_bytes()), c.arg(name))
                })
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            each(start, replies)?;
            start = end;
        }
        Ok(())
    }

    /// The test-and-set of a batch: `SADD` of each key's fingerprint into
    /// its set, in parts of [`PART_KEYS`] keys pipelined to every node, the
    /// next part sent before the replies of the one before are read. A key
    /// is new when its `SADD` returned 1. With `lists` (some keys are
    /// forgotten), each `SADD` goes with an `SREM` of the key's hash from
    /// its set's forget list, in the same slot: a key is new too when its
    /// `SREM` returned 1, which Redis answers to exactly one writer.
    /// Failures are handled as by the Bloom layout's
    /// (`RedisFilter::test_and_set`): a part whose replies are lost counts
    /// its keys as new, the parts after it are not sent.
    ///
    /// # Errors
    /// When nothing could be sent: nothing was recorded.
    fn test_and_set(&mut self, hashes: &[Hash128], lists: &Check, out: &mut [bool]) -> Result<u64> {
        let mut new = vec![false; hashes.len()];
        let mut t = Parts::default();
        let mut key = Vec::new();
        let mut sent_any = false;
        // A line given again in the batch is present (its first `SADD`
        // records it) and sends nothing: two commands on one key could
        // otherwise run out of order, the first redirected (MOVED, ASK) and
        // sent again after the second ran, which would then take the
        // line's first place in the output.
        mark_repeats(hashes, out);
        for start in (0..hashes.len()).step_by(PART_KEYS) {
            let end = (start + PART_KEYS).min(hashes.len());
            if t.failed.is_some() {
                out[start..].fill(true);
                break;
            }
            let firsts: Vec<usize> = (start..end).filter(|&i| !out[i]).collect();
            if firsts.is_empty() {
                continue;
            }
            let mut cmds: Vec<Routed> = firsts
                .iter()
                .map(|&i| self.keys.command(b"SADD", hashes[i], &mut key))
                .collect();
            let mut owners: Vec<Vec<u32>> = firsts.iter().map(|&i| vec![i as u32]).collect();
            let unlists_from = cmds.len();
            for &i in &firsts {
                let h = hashes[i];
                if lists.set(self.keys.set_of(h)) {
                    cmds.push(self.keys.list_command(b"SREM", h, &mut key));
                    owners.push(vec![i as u32]);
                }
            }
            match self.client.send(cmds) {
                Ok(sent) => {
                    sent_any = true;
                    t.in_flight.push_back((sent, owners, unlists_from));
                }
                Err(Failure::NotSent(e)) => {
                    if !sent_any {
                        return Err(e);
                    }
                    out[start..].fill(true);
                    t.fail(e, &mut new);
                    break;
                }
                Err(Failure::Lost(e)) => {
                    t.mark(&owners, &mut new);
                    t.fail(e, &mut new);
                    out[end..].fill(true);
                    break;
                }
            }
            while t.in_flight.len() > 1 {
                t.settle_front(&mut self.client, &mut new);
            }
        }
        let (count, broken) =
            t.conclude(&mut self.client, sent_any, new, out, self.journal.as_mut());
        if broken.is_some() {
            self.broken = broken;
        }
        self.unlisted += t.unlisted;
        Ok(count)
    }
}

/// Sets `out[i]` (present) for each key of `hashes` that repeats one
/// before it.
pub(crate) fn mark_repeats(hashes: &[Hash128], out: &mut [bool]) {
    let mut seen: std::collections::HashSet<(u64, u64), crate::hash::BuildKeyHasher> =
        std::collections::HashSet::with_capacity_and_hasher(hashes.len(), Default::default());
    for (i, h) in hashes.iter().enumerate() {
        if !seen.insert((h.lo, h.hi)) {
            out[i] = true;
        }
    }
}

/// What the sets of a filter hold, counted with `SCARD` (for `stats`).
#[derive(Clone, Debug)]
pub(crate) struct Census {
    /// What the meta key records.
    pub meta: SetsMeta,
    /// Lines recorded as new (the counters).
    pub inserts: u64,
    /// Time of the last change (the counters).
    pub updated: u64,
    /// The name of set 0, as a pattern for the rest.
    pub first_set: String,
    /// Fingerprints over all sets.
    pub fingerprints: u64,
    /// The fullest set's.
    pub max_load: u64,
    /// Sets at 90 % or more of the intset limit, not past it.
    pub near: u64,
    /// Sets past it (kept as hash tables: about 15 times the memory).
    pub past: u64,
    /// Sets with nothing in them (never written, or emptied).
    pub empty: u64,
    /// Keys that are not sets (damage: another program wrote there).
    pub wrong: u64,
    /// Keys on the forget lists (`SCARD` of each), for a filter that ever
    /// forgot one; `None` otherwise.
    pub listed: Option<u64>,
    /// Lines recorded again after they were forgotten (the counters):
    /// counted as new without a fingerprint more.
    pub unlisted: u64,
}

impl Census {
    /// When the sets hold fewer fingerprints than the lines recorded (less
    /// those recorded again after a `forget`), those lines and the
    /// fingerprints held: sets were deleted, evicted or lost in a failover
    /// or a restart, and the lines they held read as new.
    pub(crate) fn lost_lines(&self) -> Option<(u64, u64)> {
        let lines = self.inserts.saturating_sub(self.unlisted);
        (self.fingerprints < lines).then_some((lines, self.fingerprints))
    }
}

impl SetsFilter {
    /// Counts every set's fingerprints (`SCARD`, pipelined), telling
    /// `progress` the sets counted.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Census> {
        let mut c = Census {
            meta: self.meta.clone(),
            inserts: self.inserts,
            updated: self.header.updated,
            first_set: self.keys.name(0),
            fingerprints: 0,
            max_load: 0,
            near: 0,
            past: 0,
            empty: 0,
            wrong: 0,
            listed: None,
            unlisted: 0,
        };
        let limit = self.meta.limit;
        self.for_every_set(false, &["SCARD"], &mut |_, replies| {
            progress(replies.len() as u64);
            for v in replies {
                match v {
                    Value::Int(n) => {
                        let n = u64::try_from(n).unwrap_or(0);
                        c.fingerprints += n;
                        c.max_load = c.max_load.max(n);
                        c.empty += u64::from(n == 0);
                        c.past += u64::from(n > limit);
                        c.near += u64::from(n <= limit && n * 10 >= limit * 9);
                    }
                    _ => c.wrong += 1,
                }
            }
            Ok(())
        })?;
        if self.meta.lists {
            let mut listed = 0;
            self.for_every_set(true, &["SCARD"], &mut |_, replies| {
                progress(replies.len() as u64);
                for v in replies {
                    match v {
                        Value::Int(n) => listed += u64::try_from(n).unwrap_or(0),
                        _ => c.wrong += 1,
                    }
                }
                Ok(())
            })?;
            c.listed = Some(listed);
            c.unlisted = self.list_counts()?.1;
        }
        Ok(c)
    }

    /// Checks every set's encoding (`OBJECT ENCODING`, pipelined): an
    /// intset or nothing is well; a set kept as a hash table answers right
    /// but lost its compact form; a key of another type is damage. Returns
    /// the sets found wrong, each with what is wrong and whether it is
    /// damage.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn check_sets(&mut self) -> Result<Vec<(String, String, bool)>> {
        let mut bad = Vec::new();
        let names = SetKeys::new(self.client.location(), &self.meta);
        self.for_every_set(false, &["OBJECT", "ENCODING"], &mut |start, replies| {
            for (i, v) in replies.into_iter().enumerate() {
                let name = || names.name(start + i as u64);
                match v {
                    Value::Nil => {}
                    Value::BulkString(e) if e == b"intset" => {}
                    Value::BulkString(e) if e == b"hashtable" || e == b"listpack" => bad.push((
                        name(),
                        format!(
                            "is kept as a {} (past set-max-intset-entries, or a member that is \
                             not a fingerprint): it answers right but takes about 15 times the \
                             memory",
                            String::from_utf8_lossy(&e)
                        ),
                        false,
                    )),
                    Value::BulkString(e) => bad.push((
                        name(),
                        format!(
                            "is not a set (its encoding is {}): another program wrote there",
                            String::from_utf8_lossy(&e)
                        ),
                        true,
                    )),
                    other => bad.push((name(), format!("cannot be read: {other:?}"), true)),
                }
            }
            Ok(())
        })?;
        if self.meta.lists {
            self.for_every_set(true, &["TYPE"], &mut |start, replies| {
                for (i, v) in replies.into_iter().enumerate() {
                    if !matches!(type_name(&v).as_str(), "set" | "none") {
                        bad.push((
                            names.list_name(start + i as u64),
                            format!(
                                "is not a set but a {}: another program wrote there (the keys \
                                 it listed as forgotten read as present)",
                                type_name(&v)
                            ),
                            true,
                        ));
                    }
                }
                Ok(())
            })?;
        }
        Ok(bad)
    }
}

/// A `TYPE` reply, as text.
fn type_name(v: &Value) -> String {
    match v {
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

impl Store for SetsFilter {
    fn seed(&self) -> u64 {
        self.meta.seed
    }

    /// `SISMEMBER` per key (and of its hash in its forget list while
    /// lists are in use), pipelined in parts of [`PART_KEYS`].
    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        let lists = self.lists_to_check()?;
        self.lookup(hashes, &lists, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        if let Some(r) = crate::redis::Journaled::broken_batch(self, out, hashes.len()) {
            return r;
        }
        // As the Bloom layout's: verdicts written down when judged.
        let lists = self.lists_to_check()?;
        let n = self.test_and_set(hashes, &lists, out)?;
        self.added += n;
        self.inserts += n;
        Ok(n)
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        crate::redis::Journaled::as_journals(self)
    }

    fn forgets(&mut self) -> Option<&mut dyn Forgets> {
        Some(self)
    }
}

impl crate::redis::journal::Journaled for SetsFilter {
    fn journal_parts(&mut self) -> (Option<&mut Journal>, &mut Option<anyhow::Error>) {
        (self.journal.as_mut(), &mut self.broken)
    }
}
