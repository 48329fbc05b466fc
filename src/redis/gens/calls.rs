//! The script calls of a test-and-set ([`TAS_SCRIPT`]): built per group
//! from the lines a precheck did not find, packed, sent a part at a time,
//! and their replies read.

use super::store::GensFilter;
use super::{TAS_SCRIPT, fingerprint};
use crate::hash::Hash128;
use crate::redis::bitfield::Parts;
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::gens::Gen;
use anyhow::anyhow;
use redis::Value;
use std::collections::{HashMap, HashSet};

/// One script call: a group's lines of a batch.
pub(super) struct Call {
    /// The group, and its slot.
    group: u64,
    slot: u16,
    /// `KEYS`: the top key, then the sets.
    keys: Vec<String>,
    /// `KEYS[2..]`, in order.
    sets: Vec<Set>,
    /// The batch positions of the call's lines.
    pub(super) lines: Vec<u32>,
}

/// One set of a call.
struct Set {
    /// Whether it is of the newest generation (the lines are added there).
    newest: bool,
    /// Its fingerprints' width: 1 (32 bits) or 2 (64).
    width: u8,
    /// Its lines' numbers in the call (from 1); for the newest, a run.
    pos: Vec<u16>,
}

/// Lines a script call takes at most (its lines are numbered in two
/// bytes, and Lua's `unpack` takes some thousands of values).
const CALL_LINES: usize = 4000;

impl GensFilter {
    /// Builds the script calls for the lines `todo` of `hashes`, for the
    /// live generations `live` (the newest last): each checks its lines in
    /// the newest and in the older ones from `recheck[group]` on (all of
    /// them for a group not there). A line whose fingerprint another of
    /// them has in the same newest set is left out and returned, with that
    /// other line: it is present once the other is added (so a call adds
    /// each of its fingerprints once). A line of
    /// `skip` is not looked up in the (older) generation it names: this
    /// writer added it there without deciding it (see `fence`).
    pub(super) fn calls(
        &self,
        hashes: &[Hash128],
        todo: &[u32],
        live: &[Gen],
        (recheck, skip): (&HashMap<u64, u64>, &HashMap<u32, u64>),
    ) -> (Vec<Call>, Vec<(u32, u32)>) {
        let loc = self.client.location();
        let newest = live.len() - 1;
        let mut calls = Vec::new();
        let mut twins = Vec::new();
        let g = &live[newest];
        let place = |i: u32| self.meta.place(g, hashes[i as usize]);
        for (t, mut lines) in self.meta.by_group(hashes, todo) {
            // Each newest set's lines together (the script passes them on
            // as a run of its arguments).
            twins.extend(drop_twins(&mut lines, place));
            let from = recheck.get(&t).copied().unwrap_or(0);
            for lines in lines.chunks(CALL_LINES) {
                let top = self.meta.top_key(loc, t);
                let mut call = Call {
                    group: t,
                    slot: crate::redis::slot::slot(top.as_bytes()),
                    keys: vec![top],
                    sets: Vec::new(),
                    lines: lines.to_vec(),
                };
                let mut names: HashMap<String, usize> = HashMap::new();
                for (pos, &i) in lines.iter().enumerate() {
                    let h = hashes[i as usize];
                    let skipped = skip.get(&i).copied();
                    for (n, g) in live.iter().enumerate() {
                        if n != newest && (g.index < from || skipped == Some(g.index)) {
                            continue;
                        }
                        let key = self.meta.set_key(loc, g, h);
                        let at = *names.entry(key).or_insert_with_key(|key| {
                            call.keys.push(key.clone());
                            call.sets.push(Set {
                                newest: n == newest,
                                width: if g.fp_bits == 32 { 1 } else { 2 },
                                pos: Vec::new(),
                            });
                            call.sets.len() - 1
                        });
                        call.sets[at].pos.push(pos as u16 + 1);
                    }
                }
                calls.push(call);
            }
        }
        (calls, twins)
    }

    /// The call packed as `EVALSHA` (or `EVAL` with `body`), for
    /// generation `g` whose keys live `ttl` seconds (0: for ever).
    fn pack(&self, call: &Call, hashes: &[Hash128], g: u64, ttl: u64, body: bool) -> Routed {
        let wide = call.sets.iter().any(|s| s.width == 2);
        let widths: &[u32] = if wide { &[32, 64] } else { &[32] };
        // EVAL(SHA), its script, the key count, the keys, four numbers, the
        // fingerprints, and a flag and a blob per set.
        let args = 3 + call.keys.len() + 4 + call.lines.len() * widths.len() + 2 * call.sets.len();
        let mut packed = Vec::with_capacity(64 + 16 * call.lines.len() * widths.len());
        packed.extend_from_slice(format!("*{args}\r\n").as_bytes());
        let mut count = 0usize;
        let mut arg = |a: &[u8]| {
            packed.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            packed.extend_from_slice(a);
            packed.extend_from_slice(b"\r\n");
            count += 1;
        };
        arg(if body { b"EVAL" } else { b"EVALSHA" });
        arg(if body {
            TAS_SCRIPT.as_bytes()
        } else {
            self.sha.as_bytes()
        });
        arg(call.keys.len().to_string().as_bytes());
        for k in &call.keys {
            arg(k.as_bytes());
        }
        arg(g.to_string().as_bytes());
        arg(ttl.to_string().as_bytes());
        arg(call.lines.len().to_string().as_bytes());
        arg(widths.len().to_string().as_bytes());
        let mut digits = String::new();
        for &bits in widths {
            for &i in &call.lines {
                use std::fmt::Write as _;
                digits.clear();
                let _ = write!(digits, "{}", fingerprint(bits, hashes[i as usize]));
                arg(digits.as_bytes());
            }
        }
        for s in &call.sets {
            let flag = [if s.newest { b'n' } else { b'o' }, b'0' + s.width];
            arg(&flag);
            let blob: Vec<u8> = if s.newest {
                // A run: its first line and its count.
                debug_assert!(s.pos.windows(2).all(|w| w[1] == w[0] + 1));
                let (first, count) = (s.pos[0], s.pos.len() as u16);
                [first.to_be_bytes(), count.to_be_bytes()].concat()
            } else {
                s.pos.iter().flat_map(|p| p.to_be_bytes()).collect()
            };
            arg(&blob);
        }
        debug_assert_eq!(count, args, "the header counts every argument");
        Routed {
            slot: call.slot,
            packed,
        }
    }

    /// Sends one part's calls (pipelined; a call a node did not know the
    /// script for is sent again with it), records the verdicts in `new`
    /// and the lines added per generation. Returns whether anything was
    /// sent, and the lines to send again (their group held a newer
    /// generation).
    pub(super) fn send_part(
        &mut self,
        part: &[Call],
        hashes: &[Hash128],
        (g, ttl): (u64, u64),
        new: &mut [bool],
        out: &mut [bool],
        t: &mut Parts,
    ) -> (bool, Vec<u32>) {
        let owners: Vec<Vec<u32>> = part.iter().map(|c| c.lines.clone()).collect();
        let cmds = part
            .iter()
            .map(|c| self.pack(c, hashes, g, ttl, false))
            .collect();
        let mut replies = match self.client.exec(cmds) {
            Ok(r) => r,
            Err(Failure::NotSent(e)) => {
                // Not sent: not judged new, not recorded.
                for &i in owners.iter().flatten() {
                    out[i as usize] = true;
                }
                t.fail(e, new);
                return (false, Vec::new());
            }
            Err(Failure::Lost(e)) => {
                t.mark(&owners, new);
                t.fail(e, new);
                return (true, Vec::new());
            }
        };
        // Nodes without the script cached: the same calls, with it.
        let unknown: Vec<usize> = replies
            .iter()
            .enumerate()
            .filter(|(_, v)| matches!(v, Value::ServerError(e) if e.code() == "NOSCRIPT"))
            .map(|(i, _)| i)
            .collect();
        let mut lost_calls = HashSet::new();
        if !unknown.is_empty() {
            let cmds = unknown
                .iter()
                .map(|&i| self.pack(&part[i], hashes, g, ttl, true))
                .collect();
            match self.client.exec(cmds) {
                Ok(r) => {
                    for (&i, v) in unknown.iter().zip(r) {
                        replies[i] = v;
                    }
                }
                Err(f) => {
                    // Those may have run; the other calls' replies are in.
                    let lost: Vec<Vec<u32>> = unknown.iter().map(|&i| owners[i].clone()).collect();
                    t.mark(&lost, new);
                    t.fail(f.into_error(), new);
                    lost_calls.extend(unknown);
                }
            }
        }
        let loc = self.client.location().clone();
        let mut stale = Vec::new();
        for (n, (v, who)) in replies.iter().zip(&owners).enumerate() {
            if lost_calls.contains(&n) {
                continue;
            }
            let present = match v {
                Value::Array(items) if items.first() == Some(&Value::Int(0)) => {
                    present_ones(items, who.len())
                }
                _ => None,
            };
            match (v, present) {
                (Value::Array(items), _) if items.first() == Some(&Value::Int(1)) => {
                    stale.extend_from_slice(who);
                }
                (_, Some(present)) => {
                    let mut added = 0;
                    for (n, &i) in who.iter().enumerate() {
                        if !present.contains(&(n + 1)) {
                            new[i as usize] = true;
                            added += 1;
                        }
                    }
                    *self.added.entry(g).or_default() += added;
                    self.copies.looked_up(g, part[n].group, added as usize);
                }
                (other, None) => {
                    t.mark(std::slice::from_ref(who), new);
                    let e = server_error("a test-and-set", &loc, other)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected test-and-set reply"));
                    t.failed.get_or_insert(e);
                }
            }
        }
        (true, stale)
    }
}

/// Sorts `lines` by their `place` (a newest set and a fingerprint in it),
/// and takes out each line whose place an earlier one has: returned with
/// the line kept, (twin, kept).
pub(super) fn drop_twins<P: Ord>(
    lines: &mut Vec<u32>,
    place: impl Fn(u32) -> P,
) -> Vec<(u32, u32)> {
    lines.sort_by_key(|&i| place(i));
    let mut twins = Vec::new();
    lines.dedup_by(|later, kept| {
        let twin = place(*later) == place(*kept);
        if twin {
            twins.push((*later, *kept));
        }
        twin
    });
    twins
}

/// The numbers (from 1) of a call's lines that were not new, as its reply
/// (`0`, the group's top, then those numbers) lists them; `None` when the
/// reply is short or one is not a line of the `count` the call had.
fn present_ones(items: &[Value], count: usize) -> Option<HashSet<usize>> {
    items
        .get(2..)?
        .iter()
        .map(|v| match v {
            Value::Int(p) => usize::try_from(*p).ok().filter(|p| (1..=count).contains(p)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_one_place_go_but_the_first() {
        // Line i's place: (set, fingerprint).
        let places = [(3, 7), (1, 7), (3, 7), (3, 8), (1, 7), (3, 7)];
        let mut lines: Vec<u32> = (0..places.len() as u32).collect();
        let mut twins = drop_twins(&mut lines, |i| places[i as usize]);
        twins.sort_unstable();
        assert_eq!(lines, [1, 0, 3]);
        assert_eq!(twins, [(2, 0), (4, 1), (5, 0)]);
    }

    #[test]
    fn a_reply_lists_lines_of_the_call_only() {
        let reply = |v: &[i64]| v.iter().map(|&n| Value::Int(n)).collect::<Vec<_>>();
        assert_eq!(present_ones(&reply(&[0, 5]), 3), Some(HashSet::new()));
        assert_eq!(
            present_ones(&reply(&[0, 5, 3, 1]), 3),
            Some(HashSet::from([1, 3]))
        );
        assert_eq!(present_ones(&reply(&[0, 5, 4]), 3), None);
        assert_eq!(present_ones(&reply(&[0, 5, 0]), 3), None);
        assert_eq!(present_ones(&reply(&[0]), 3), None);
    }
}
