//! The `BITFIELD` test-and-set of a Redis filter: the command, packed by
//! hand, and the parts of a batch in flight with their replies (a key is new
//! when any of its bits came back 0, or, in the fingerprint-set layout,
//! when its `SADD` returned 1).

use super::client::{Client, Raw, Sent, server_error};
use anyhow::anyhow;
use redis::Value;

/// `BITFIELD` operations per command at most (the server runs one command
/// at a time: a long one delays every other client).
pub(super) const MAX_OPS: usize = 1 << 16;

/// Keys per part of a test-and-set (see `RedisFilter::test_and_set`).
pub(super) const PART_KEYS: usize = 8192;

/// `BITFIELD KEY SET u1 OFF 1 …` for `offs`, as RESP (written here rather than
/// through `redis::Cmd`, which costs several times as much per argument).
pub(super) fn pack_bitfield_set(key: &str, offs: &[u64]) -> Vec<u8> {
    let mut b = Vec::with_capacity(40 + key.len() + offs.len() * 36);
    let args = 2 + 4 * offs.len();
    b.extend_from_slice(
        format!("*{args}\r\n$8\r\nBITFIELD\r\n${}\r\n{key}\r\n", key.len()).as_bytes(),
    );
    let mut digits = [0u8; 20];
    for &off in offs {
        b.extend_from_slice(b"$3\r\nSET\r\n$2\r\nu1\r\n$");
        let mut n = off;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let len = digits.len() - at;
        if len >= 10 {
            b.push(b'0' + (len / 10) as u8);
        }
        b.push(b'0' + (len % 10) as u8);
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(&digits[at..]);
        b.extend_from_slice(b"\r\n$1\r\n1\r\n");
    }
    b
}

/// The parts of a test-and-set in flight (see `RedisFilter::test_and_set`).
#[derive(Default)]
pub(super) struct Parts {
    /// Sent, replies not read yet, with the key of each operation, and the
    /// first command that takes a key off a forget list (`SREM`, after the
    /// test-and-sets; the commands' number when there are none).
    pub(super) in_flight: std::collections::VecDeque<(Sent, Vec<Vec<u32>>, usize)>,
    /// The first failure.
    pub(super) failed: Option<anyhow::Error>,
    /// Keys whose commands were sent and whose replies were lost or
    /// refused: the server may or may not have recorded them.
    lost: Vec<u32>,
    /// Keys taken off a forget list (their `SREM` returned 1).
    pub(super) unlisted: u64,
}

impl Parts {
    /// Every key of `owners` may have been recorded: its reply is lost.
    pub(super) fn mark(&mut self, owners: &[Vec<u32>], new: &mut [bool]) {
        for who in owners {
            for &i in who {
                new[i as usize] = true;
                self.lost.push(i);
            }
        }
    }

    /// A failure: the parts still in flight may have run, and their replies
    /// will not be read (the connections were dropped): their keys are
    /// lost too.
    pub(super) fn fail(&mut self, e: anyhow::Error, new: &mut [bool]) {
        for (_, owners, _) in std::mem::take(&mut self.in_flight) {
            self.mark(&owners, new);
        }
        self.failed.get_or_insert(e);
    }

    /// Ends a test-and-set of either layout: reads every part still in
    /// flight, waits for replicas (`--redis-wait`) when anything was sent
    /// and nothing failed, and turns `new` into verdicts: `out[i]` (true:
    /// present) is set for every key not already decided. A key whose reply
    /// was lost counts as new (printed, perhaps twice) unless the run keeps
    /// a `journal`: then it is not printed, and its journal says so, for the
    /// next run to ask the filter (printed once if the server recorded it).
    /// Returns how many keys were new, and the failure that must stop the
    /// run at its next batch, if any (after a failed `WAIT` the verdicts
    /// stand: the writes are on the masters, this batch's lines are
    /// printed).
    pub(super) fn conclude(
        &mut self,
        client: &mut Client,
        sent_any: bool,
        mut new: Vec<bool>,
        out: &mut [bool],
        journal: Option<&mut super::journal::Journal>,
    ) -> (u64, Option<anyhow::Error>) {
        while !self.in_flight.is_empty() {
            self.settle_front(client, &mut new);
        }
        let broken = if let Some(e) = self.failed.take() {
            Some(e.context(if journal.is_some() {
                "a test-and-set failed: the lines whose replies were lost are in the journal, \
                 and the next run prints those the filter holds"
            } else {
                "a test-and-set failed: the lines it may have recorded were all taken as new \
                 (some may be printed twice)"
            }))
        } else if sent_any {
            client
                .wait_replicas(" (and their lines would be printed again)")
                .err()
        } else {
            None
        };
        let mut unknown = Vec::new();
        if journal.is_some() {
            self.lost.sort_unstable();
            self.lost.dedup();
            for &i in &self.lost {
                if !out[i as usize] {
                    out[i as usize] = true;
                    new[i as usize] = false;
                    unknown.push(i);
                }
            }
        }
        let mut count = 0;
        for (i, was_new) in new.iter().enumerate() {
            if !out[i] {
                out[i] = !was_new;
                count += u64::from(*was_new);
            }
        }
        if let Some(j) = journal {
            use super::journal::{NEW, PRESENT, UNKNOWN};
            let mut v: Vec<u8> = out.iter().map(|&p| if p { PRESENT } else { NEW }).collect();
            for &i in &unknown {
                v[i as usize] = UNKNOWN;
            }
            j.verdicts(v);
        }
        (count, broken)
    }

    /// Reads the replies of the oldest part in flight. When a node
    /// redirected some of its commands, every other part is read first, then
    /// the redirected commands are sent again, in order.
    pub(super) fn settle_front(&mut self, client: &mut Client, new: &mut [bool]) {
        let Some((sent, owners, unlists)) = self.in_flight.pop_front() else {
            return;
        };
        let raw = match client.recv_raw(sent) {
            Ok(raw) => raw,
            Err(f) => {
                self.mark(&owners, new);
                return self.fail(f.into_error(), new);
            }
        };
        if !raw.redirected() {
            return self.apply(client, raw, &owners, unlists, new);
        }
        let mut raws = vec![(raw, owners, unlists)];
        while let Some((sent, owners, unlists)) = self.in_flight.pop_front() {
            match client.recv_raw(sent) {
                Ok(raw) => raws.push((raw, owners, unlists)),
                Err(f) => {
                    for (_, o, _) in &raws {
                        self.mark(o, new);
                    }
                    self.mark(&owners, new);
                    return self.fail(f.into_error(), new);
                }
            }
        }
        for (raw, owners, unlists) in raws {
            if self.failed.is_some() {
                self.mark(&owners, new);
                continue;
            }
            self.apply(client, raw, &owners, unlists, new);
        }
    }

    /// Sends again what `raw` has redirected, then takes its replies: a key
    /// whose bit came back 0 is new, or whose `SADD` or `SREM` (from
    /// command `unlists` on) returned 1; a command answered with an error
    /// (or whose reply is lost) counts all its keys as new and fails the
    /// run.
    fn apply(
        &mut self,
        client: &mut Client,
        raw: Raw,
        owners: &[Vec<u32>],
        unlists: usize,
        new: &mut [bool],
    ) {
        let loc = client.location().clone();
        let replies = match client.finish(raw) {
            Ok(r) => r,
            Err(f) => {
                self.mark(owners, new);
                return self.fail(f.into_error(), new);
            }
        };
        for (at, (v, who)) in replies.iter().zip(owners).enumerate() {
            match v {
                Value::Array(old) => {
                    for (o, &i) in old.iter().zip(who.iter()) {
                        if *o == Value::Int(0) {
                            new[i as usize] = true;
                        }
                    }
                }
                // `SADD` of one key's fingerprint: 1 when it was not there;
                // `SREM` of its hash from a forget list: 1 when it was.
                Value::Int(n) if who.len() == 1 => {
                    if *n == 1 {
                        new[who[0] as usize] = true;
                        self.unlisted += u64::from(at >= unlists);
                    }
                }
                other => {
                    self.mark(std::slice::from_ref(who), new);
                    let e = server_error("a test-and-set", &loc, other)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected test-and-set reply"));
                    self.failed.get_or_insert(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitfield_is_packed_as_redis_cmd_packs_it() {
        let offs = [0, 7, 9, 10, 123_456_789, u64::from(u32::MAX)];
        let mut cmd = redis::cmd("BITFIELD");
        cmd.arg("seen:{x:0:1}:b");
        for o in offs {
            cmd.arg("SET").arg("u1").arg(o).arg(1);
        }
        assert_eq!(
            pack_bitfield_set("seen:{x:0:1}:b", &offs),
            cmd.get_packed_command()
        );
    }
}
