//! The fenced add: the common case of a test-and-set in generations, without
//! a script. A group whose top was the newest generation when the precheck
//! read it (or raised it there, see `RAISE_SCRIPT`, before its lookups)
//! gets its new lines as plain `SADD`s into the newest generation's
//! sets, pipelined, followed on the same connection by a `GET` of the
//! group's top (the fence). The top only grows, so when that `GET` still
//! names the newest generation, the top was that generation all the time
//! from the precheck to the last `SADD`: no writer could add to an older
//! generation meanwhile (a script on one refuses, and a fenced add to one
//! is not taken as decided, see below), and every add to the newest was
//! one of these `SADD`s or a script's, each atomic on its set. So an `SADD`
//! that returned 1 is a line new to exactly this writer, as a script's
//! verdict would be, at the cost of one command a line (the fixed layout's)
//! and a `GET` per group and part.
//!
//! When the fence names a newer generation, another writer moved on while
//! these lines were added: an `SADD` that returned 0 still means another
//! writer holds the line, but one that returned 1 decided nothing. That
//! line is *tentative*: it is in an older generation now, put there by this
//! writer, and other writers take it as present there. This writer sends it
//! again through the script, into the newer generation, without looking in
//! the set it added it to ([`GensFilter::calls`] skips it): new there, it
//! is printed by this writer alone; else another writer has it. A writer
//! killed before that leaves it to its journal (its verdict was never
//! written: the next run asks the filter, which holds it, and prints it).
//!
//! A redirected command (MOVED, ASK) is sent again after the ones behind it
//! ran, so after one the fence proves nothing: a second `GET` of each top,
//! once every reply is in, fences the part instead.

use super::store::GensFilter;
use super::{Gen, fingerprint};
use crate::hash::Hash128;
use crate::redis::bitfield::{PART_KEYS, Parts};
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::slot::slot;
use anyhow::{Result, anyhow};
use redis::Value;
use std::collections::HashMap;

/// What a fenced add left to the script.
pub(super) struct Fenced {
    /// Lines of groups whose top was not the newest generation when the
    /// precheck read it (the script decides them), and twins of tentative
    /// lines.
    pub rest: Vec<u32>,
    /// Lines this writer added to generation `G` without deciding them
    /// (line → `G`): sent again, not looked up in that generation.
    pub tentative: HashMap<u32, u64>,
    /// Whether a command went out.
    pub sent: bool,
}

/// One group's share of a part.
struct Group {
    /// The group.
    t: u64,
    slot: u16,
    /// Its top key.
    top: String,
    /// Its lines and the names of their sets, in the order sent.
    lines: Vec<(u32, String)>,
    /// Sets given a time to live after the lines' `SADD`s.
    expire: Vec<(u64, String)>,
}

impl Group {
    /// The commands it sends (and replies it gets): the `SADD`s, the
    /// `EXPIRE`s, the fence.
    fn commands(&self) -> usize {
        self.lines.len() + self.expire.len() + 1
    }
}

impl GensFilter {
    /// Adds the lines `todo` of `hashes` (found in no live generation by
    /// the precheck, whose tops it read as `tops`) to generation `g`, the
    /// newest, behind a fence (see the module's doc), for the groups whose
    /// top was `g`; the others are left to the script. Verdicts go to
    /// `new`; a line not recorded (a failure) is set present in `out`.
    ///
    /// # Errors
    /// When the first part could not be sent: nothing was recorded.
    pub(super) fn add_fenced(
        &mut self,
        hashes: &[Hash128],
        todo: Vec<u32>,
        tops: &HashMap<u64, u64>,
        (g, ttl): (&Gen, u64),
        (new, out): (&mut [bool], &mut [bool]),
        t: &mut Parts,
    ) -> Result<Fenced> {
        let loc = self.client.location().clone();
        if self.expiring.0 != g.index {
            self.expiring = (g.index, self.copies.given_ttl(g.index));
        }
        // Sets known to have their time to live: those this run, or one
        // before it on this machine, gave one after adding to them (a set
        // lives until its slice ends, long after the run has moved past
        // the slice), unless the slice ends soon.
        let remember = ttl > 4 * super::CLOCK_BOUND;
        let meta = &self.meta;
        let place = |i: u32| meta.place(g, hashes[i as usize]);
        let mut f = Fenced {
            rest: Vec::new(),
            tentative: HashMap::new(),
            sent: false,
        };
        let mut twins = Vec::new();
        let mut groups = Vec::new();
        for (t, mut lines) in self.meta.by_group(hashes, &todo) {
            if tops.get(&t) != Some(&g.index) {
                f.rest.extend(lines);
                continue;
            }
            twins.extend(super::calls::drop_twins(&mut lines, place));
            let top = self.meta.top_key(&loc, t);
            let mut group = Group {
                t,
                slot: slot(top.as_bytes()),
                top,
                lines: Vec::with_capacity(lines.len()),
                expire: Vec::new(),
            };
            for i in lines {
                let j = place(i).0;
                let key = self
                    .meta
                    .set_name(&loc, g.index, j / g.per_group, j % g.per_group);
                if ttl > 0 && !(remember && self.expiring.1.contains(&j)) {
                    group.expire.push((j, key.clone()));
                }
                group.lines.push((i, key));
            }
            group.expire.sort_unstable();
            group.expire.dedup();
            groups.push(group);
        }
        let mut at = 0;
        while at < groups.len() {
            let mut end = at;
            let mut lines = 0;
            while end < groups.len() && (end == at || lines < PART_KEYS) {
                lines += groups[end].lines.len();
                end += 1;
            }
            let part = &groups[at..end];
            at = end;
            if t.failed.is_some() {
                // Not sent: not recorded.
                for (i, _) in part.iter().flat_map(|p| &p.lines) {
                    out[*i as usize] = true;
                }
                continue;
            }
            self.send_fenced(part, hashes, (g, ttl), (new, out), t, &mut f)?;
            if remember && t.failed.is_none() {
                let js: Vec<u64> = part.iter().flat_map(|p| &p.expire).map(|e| e.0).collect();
                self.copies.gave_ttl(g.index, &js);
                self.expiring.1.extend(js);
            }
        }
        // A twin is present once its line kept is added; it goes to the
        // script with it when that one is sent again.
        for (i, kept) in twins {
            if f.tentative.contains_key(&kept) || f.rest.contains(&kept) {
                f.rest.push(i);
            } else {
                out[i as usize] = true;
            }
        }
        Ok(f)
    }

    /// Sends one part: per group, the lines' `SADD`s (and the `EXPIRE`s),
    /// then the fence; reads the verdicts.
    fn send_fenced(
        &mut self,
        part: &[Group],
        hashes: &[Hash128],
        (g, ttl): (&Gen, u64),
        (new, out): (&mut [bool], &mut [bool]),
        t: &mut Parts,
        f: &mut Fenced,
    ) -> Result<()> {
        let mut cmds = Vec::new();
        for p in part {
            for (i, key) in &p.lines {
                let fp = fingerprint(g.fp_bits, hashes[*i as usize]);
                cmds.push(Routed::new(p.slot, redis::cmd("SADD").arg(key).arg(fp)));
            }
            for (_, key) in &p.expire {
                cmds.push(Routed::new(p.slot, redis::cmd("EXPIRE").arg(key).arg(ttl)));
            }
            cmds.push(Routed::new(p.slot, redis::cmd("GET").arg(&p.top)));
        }
        let owners: Vec<Vec<u32>> = part
            .iter()
            .map(|p| p.lines.iter().map(|(i, _)| *i).collect())
            .collect();
        let before = self.client.redirected();
        let replies = match self.client.exec(cmds) {
            Ok(r) => r,
            Err(Failure::NotSent(e)) if !f.sent => return Err(e),
            Err(Failure::NotSent(e)) => {
                // Not sent: not recorded.
                for &i in owners.iter().flatten() {
                    out[i as usize] = true;
                }
                t.fail(e, new);
                return Ok(());
            }
            Err(Failure::Lost(e)) => {
                t.mark(&owners, new);
                t.fail(e, new);
                return Ok(());
            }
        };
        f.sent = true;
        // After a redirect, each group's fence is read again now.
        let fences: Vec<Value> = if self.client.redirected() == before {
            let mut at = 0;
            part.iter()
                .map(|p| {
                    at += p.commands();
                    replies[at - 1].clone()
                })
                .collect()
        } else {
            let cmds = part
                .iter()
                .map(|p| Routed::new(p.slot, redis::cmd("GET").arg(&p.top)))
                .collect();
            match self.client.exec(cmds) {
                Ok(v) => v,
                Err(e) => {
                    // Undecided: the lines an `SADD` may have added.
                    let mut at = 0;
                    for p in part {
                        for (n, (i, _)) in p.lines.iter().enumerate() {
                            if replies[at + n] != Value::Int(0) {
                                t.mark(&[vec![*i]], new);
                            }
                        }
                        at += p.commands();
                    }
                    t.fail(e.into_error(), new);
                    return Ok(());
                }
            }
        };
        self.judge_fenced(part, (&replies, &fences), (g, &owners), new, t, f);
        Ok(())
    }

    /// Takes a part's verdicts from its replies and fences (see the
    /// module's doc): new, present, or tentative.
    fn judge_fenced(
        &mut self,
        part: &[Group],
        (replies, fences): (&[Value], &[Value]),
        (g, owners): (&Gen, &[Vec<u32>]),
        new: &mut [bool],
        t: &mut Parts,
        f: &mut Fenced,
    ) {
        let loc = self.client.location().clone();
        let mut at = 0;
        for ((p, fence), who) in part.iter().zip(fences).zip(owners) {
            let adds = &replies[at..at + p.lines.len()];
            let expires = &replies[at + p.lines.len()..at + p.lines.len() + p.expire.len()];
            at += p.commands();
            let bad = adds
                .iter()
                .chain(expires)
                .chain(std::iter::once(fence))
                .find_map(|v| server_error("a fenced add", &loc, v));
            let top = super::top_of(fence);
            let gone_back = top.is_none_or(|top: u64| top < g.index);
            if let Some(e) = bad.or_else(|| {
                gone_back.then(|| {
                    anyhow!(
                        "{loc}: the newest generation of group {} went back from {} to {:?} \
                         while this writer added to it: its keys were changed or expired \
                         under it",
                        p.top,
                        g.index,
                        top
                    )
                })
            }) {
                t.mark(std::slice::from_ref(who), new);
                t.failed.get_or_insert(e);
                continue;
            }
            let decided = top == Some(g.index);
            let mut added = 0;
            for (v, &i) in adds.iter().zip(who) {
                match v {
                    Value::Int(1) if decided => {
                        new[i as usize] = true;
                        added += 1;
                    }
                    Value::Int(1) => {
                        f.tentative.insert(i, g.index);
                    }
                    Value::Int(0) => {}
                    other => {
                        t.mark(&[vec![i]], new);
                        t.failed.get_or_insert_with(|| {
                            anyhow!("{loc}: unexpected reply to a fenced SADD: {other:?}")
                        });
                    }
                }
            }
            if added > 0 {
                *self.added.entry(g.index).or_default() += added;
                // A writer that adds to a generation will look its next
                // lines up there once it is sealed (see `copies`).
                self.copies.looked_up(g.index, p.t, added as usize);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::filter::sizing::{Growth, Spec};
    use crate::hash::Hash128;
    use crate::keys::KeySpec;
    use crate::pipeline::Store;
    use crate::redis::client::Link;
    use crate::redis::gens::store::GensFilter;
    use crate::redis::location::Location;
    use crate::redis::open::{Layout, Opened, open_or_create};
    use crate::redis::slot::slot;
    use redis::Value;

    /// The test servers' address in `var`, as the integration tests take
    /// it (`scripts/with-redis.sh`); `None` (skipped) outside CI.
    fn server(var: &str) -> Option<String> {
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(v),
            _ if std::env::var_os("CI").is_some() => {
                panic!("{var} is not set under CI: run the tests with scripts/with-redis.sh")
            }
            _ => None,
        }
    }

    /// A new filter's location on each test server there is (standalone,
    /// Cluster), named for `test`.
    pub(in crate::redis::gens) fn locations(test: &str) -> Vec<Location> {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        [
            ("SEEN_TEST_REDIS", "redis"),
            ("SEEN_TEST_REDIS_CLUSTER", "redis+cluster"),
        ]
        .into_iter()
        .filter_map(|(var, scheme)| {
            let addr = server(var)?;
            let name = format!("{test}-{}-{t}", std::process::id());
            Some(Location::parse(&format!("{scheme}://{addr}/{name}")).unwrap())
        })
        .collect()
    }

    fn open(loc: &Location) -> GensFilter {
        open_sized(loc, 1_000_000)
    }

    /// Opens the growing filter at `loc`, made for `capacity` lines first.
    pub(in crate::redis::gens) fn open_sized(loc: &Location, capacity: u64) -> GensFilter {
        let spec = Spec {
            capacity,
            target_fpp: 1e-6,
            growth: Some(Growth {
                factor: 2,
                ratio: 0.8,
            }),
            window: None,
        };
        let link = Link {
            timeout: std::time::Duration::from_secs(10),
            replicas: 0,
        };
        match open_or_create(loc, link, Layout::Sets, &spec, 7, KeySpec::RAW)
            .unwrap()
            .0
        {
            Opened::Gens(f) => f,
            _ => panic!("not a filter in generations"),
        }
    }

    pub(in crate::redis::gens) fn key(i: u32) -> Hash128 {
        crate::hash::hash(format!("https://example.com/{i}").as_bytes(), 7)
    }

    /// Records `from..to` through `f`; returns how many were new.
    pub(in crate::redis::gens) fn record(
        f: &mut GensFilter,
        from: u32,
        to: u32,
    ) -> (u64, Vec<bool>) {
        let hs: Vec<Hash128> = (from..to).map(key).collect();
        let mut out = vec![false; hs.len()];
        let n = f.insert_batch(&hs, &mut out).unwrap();
        (n, out)
    }

    /// Writer A looks its batch up while every group's top is generation
    /// 0; before its fenced add, writer B adds generation 1 and records
    /// lines there, half of A's among them. A's fence then names
    /// generation 1: its adds to generation 0 decided nothing, and it sends
    /// them again into generation 1, where B's lines are present (B printed
    /// them) and its own are new, once.
    #[test]
    fn a_writer_moved_past_during_its_add_decides_its_lines_again() {
        for loc in locations("fence") {
            // Sets enough that the batch's lines fall one to a set (the
            // fence takes those).
            let mut a = open_sized(&loc, 10_000_000);
            let mut b = open_sized(&loc, 10_000_000);
            // Every group's top becomes generation 0.
            assert_eq!(record(&mut a, 0, 3000).0, 3000);
            a.before_fence = Some(Box::new(move || {
                let now = b.time();
                b.grow(0, 0, 1, now).unwrap();
                b.refresh().unwrap();
                let (n, out) = record(&mut b, 3500, 9000);
                assert_eq!(n, 5500);
                assert!(out.iter().all(|&p| !p));
            }));
            let (n, out) = record(&mut a, 3000, 4000);
            a.before_fence = None;
            assert_eq!(n, 500, "A's own lines, new once");
            assert!(out[..500].iter().all(|&p| !p), "3000..3500 new to A");
            assert!(out[500..].iter().all(|&p| p), "3500..4000 B's");
            // Decided in generation 1, not 0.
            assert_eq!(a.added.get(&1), Some(&500));
            assert_eq!(a.added.get(&0).copied().unwrap_or(0), 0);
            // They went through the fence: added to generation 0 too.
            let g0 = a.planned[0];
            let loc = a.client.location().clone();
            for i in 3000..3500 {
                let h = key(i);
                let set = a.meta.set_key(&loc, &g0, h);
                let v = a
                    .client
                    .query(
                        slot(set.as_bytes()),
                        redis::cmd("SISMEMBER")
                            .arg(&set)
                            .arg(super::fingerprint(g0.fp_bits, h))
                            .clone(),
                    )
                    .unwrap();
                assert_eq!(v, Value::Int(1), "line {i} in generation 0");
            }
            // And every line is present to a reader now.
            let mut c = open(&loc);
            let hs: Vec<Hash128> = (0..9000).map(key).collect();
            let mut out = Vec::new();
            c.contains_batch(&hs, &mut out).unwrap();
            assert!(out.iter().all(|&p| p));
        }
    }

    /// Writer A, on generation 1 while every group's top is still 0, raises
    /// the tops of its batch's groups before it looks its lines up; then
    /// writer B, still on generation 0 (it read the generations before A
    /// added 1), records half of A's lines. B's adds to generation 0 are
    /// refused (the top passed it): it moves to generation 1, where the
    /// lines are new to it, and A's fenced adds find them there. Each line
    /// is new to one writer.
    #[test]
    fn a_raised_top_seals_the_older_generations_for_the_lookup() {
        for loc in locations("raise") {
            let mut a = open_sized(&loc, 10_000_000);
            let mut b = open_sized(&loc, 10_000_000);
            assert_eq!(record(&mut a, 0, 3000).0, 3000);
            let now = a.time();
            a.grow(0, 0, 1, now).unwrap();
            a.refresh().unwrap();
            assert_eq!(b.planned.len(), 1, "B still knows generation 0 only");
            let b_new = std::rc::Rc::new(std::cell::Cell::new(0));
            let got = std::rc::Rc::clone(&b_new);
            a.before_fence = Some(Box::new(move || {
                let hs: Vec<Hash128> = (3500..4500).map(key).collect();
                let mut out = vec![false; hs.len()];
                got.set(b.test_and_set(&hs, &mut out).unwrap());
                assert_eq!(b.planned.len(), 2, "B moved to generation 1");
            }));
            let (n, out) = record(&mut a, 3000, 4000);
            a.before_fence = None;
            assert_eq!(b_new.get(), 1000, "3500..4500 new to B");
            assert_eq!(n, 500, "3000..3500 new to A");
            assert!(out[..500].iter().all(|&p| !p));
            assert!(out[500..].iter().all(|&p| p));
            // A's lines went behind the fence: none left to the script.
            assert_eq!(a.added.get(&1), Some(&500));
        }
    }

    /// A generation nearly full takes a batch in steps of a 256th of its
    /// capacity at least, not of the room left (lines already present take
    /// none: a step a few lines long would cost a round trip a few lines),
    /// and holds at most that much more than its capacity.
    #[test]
    fn a_nearly_full_generation_takes_lines_in_steps_of_a_256th() {
        for loc in locations("steps") {
            let mut a = open_sized(&loc, 100_000);
            let cap = a.planned[0].capacity;
            assert_eq!(record(&mut a, 0, 99_990).0, 99_990);
            assert_eq!(a.room(), Some(cap - 99_990));
            a.steps = 0;
            let (n, out) = record(&mut a, 0, 20_000);
            assert_eq!(n, 0);
            assert!(out.iter().all(|&p| p));
            // 20,000 present lines in steps of 390 (not 10).
            assert_eq!(a.steps, 20_000_u64.div_ceil(cap / 256), "{cap}");
            // New lines: the step that crosses the capacity takes 390.
            assert_eq!(record(&mut a, 99_990, 101_000).0, 1010);
            a.refresh().unwrap();
            let held = a.held(0);
            assert_eq!(held, 99_990 + cap / 256, "{cap}");
            assert_eq!(a.planned.len(), 2, "generation 1 was added");
        }
    }
}
