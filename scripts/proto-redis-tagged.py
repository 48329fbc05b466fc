#!/usr/bin/env python3
"""A prototype, not seen's code: what a windowed Redis filter would cost if
each fingerprint set held every live slice of its lines (issue 42).

Today's window layout (docs/REDIS.md, "Growth and windows") keeps a set per
slice, so at a realistic size a new line costs a lookup in each of the S + 1
live slices: 5-9x the Redis CPU of the fixed layout's one SADD
(docs/PERFORMANCE.md). The layout measured here keeps ONE set per (group, j)
for all slices: a member is a 28-bit fingerprint times 16 plus the 4-bit tag
of the slice that recorded it (a signed 32-bit integer, so the set stays an
intset, 4 bytes a line). A line is present when the set holds it under a live
tag: one SMISMEMBER of S + 1 members. The test-and-set is one Lua call per
group and batch: per line, SMISMEMBER and, when no live tag holds it, SADD
under the newest tag (and, in the "expire" variant, EXPIRE of the key).

Also "fenced": the fixed layout's SADDs sent per group inside MULTI ... EXEC
with a GET of the group's top key first (the fence a growing or windowed
filter's newest generation would need), the top unchanged.

Measured against the fixed layout emulated in the same harness (one
pipelined SADD of a 32-bit fingerprint per line), on a private redis-server:
Redis CPU (INFO used_cpu_user + used_cpu_sys) per line, new lines then the
same lines again (present), and memory per line.

  scripts/proto-redis-tagged.py [--lines N] [--capacity N] [--runs R] [--fill M]
  scripts/proto-redis-tagged.py --micro

--micro measures what the layouts are made of instead: Redis CPU per line
of one command per line (SISMEMBER, SMISMEMBER of 9 members, SADD), and of
the same lookups made by a Lua script per batch of 128 or 1,024 lines (and
of a script that only receives 9 arguments a line).

--capacity: the lines the filters are sized for (70M: a 7-day window at 10M
lines a day); the sets are capacity / 204 (fixed) and capacity * 9/8 / 204
(tagged, all 9 live slices). --fill M first puts M members of old tags in
every tagged set and M members in every fixed set (server-side, by a Lua
loop), so that sets are at their working size instead of nearly empty.
"""
import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

LIVE = 9  # --window 7d --slices 8: 9 live slices
GROUPS = 256
BATCH = 32768

TAS = b"""
local expire = tonumber(ARGV[1])
local new = {}
local b = 1
for i = 1, #KEYS do
  local k = KEYS[i]
  local r = redis.call('SMISMEMBER', k, ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4],
    ARGV[b + 5], ARGV[b + 6], ARGV[b + 7], ARGV[b + 8], ARGV[b + 9])
  if r[1] + r[2] + r[3] + r[4] + r[5] + r[6] + r[7] + r[8] + r[9] == 0 then
    redis.call('SADD', k, ARGV[b + 9])
    if expire > 0 then redis.call('EXPIRE', k, expire) end
    new[#new + 1] = i
  end
  b = b + 9
end
return new
"""

FILL = b"""
local from, to, m, tagged, seed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
math.randomseed(seed)
for j = from, to - 1 do
  local key = tagged and ('t:{' .. (j % 256) .. '}:' .. j) or ('f:{' .. (j % 256) .. '}:' .. j)
  for k = 1, m do
    if tagged then
      redis.call('SADD', key, math.random(-134217728, 134217727) * 16 + (k % 8))
    else
      redis.call('SADD', key, math.random(-2147483648, 2147483647))
    end
  end
end
return 0
"""


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb", buffering=1 << 20)

    def reply(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data
        if t == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"bad reply {line!r}")

    def pipeline(self, cmds):
        self.s.sendall(b"".join(cmds))
        return [self.reply() for _ in cmds]

    def call(self, *args):
        return self.pipeline([enc(*args)])[0]


def cpu(c):
    info = c.call("INFO", "cpu").decode()
    v = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    return float(v["used_cpu_user"]) + float(v["used_cpu_sys"])


def mem(c):
    info = c.call("INFO", "memory").decode()
    v = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    return int(v["used_memory"])


def lines(n, seed):
    r = random.Random(seed)
    return [r.getrandbits(64) for _ in range(n)]


def fixed_cmds(xs, k):
    out = []
    for i in range(0, len(xs), BATCH):
        out.append([fixed_sadd(x, k)[1] for x in xs[i : i + BATCH]])
    return out


def fixed_sadd(x, k):
    """Line x's group and SADD in the fixed layout: set j of k, a 32-bit
    fingerprint."""
    j = x % k
    fp = ((x >> 32) & 0xFFFFFFFF) - (1 << 31)
    return j % GROUPS, enc(b"SADD", b"f:{%d}:%d" % (j % GROUPS, j), fp)


def fenced_cmds(xs, k):
    """One generation's test-and-set behind a fence: per group and batch,
    MULTI, GET of the group's top, the lines' SADDs, EXEC."""
    out = []
    for i in range(0, len(xs), BATCH):
        groups = {}
        for x in xs[i : i + BATCH]:
            g, sadd = fixed_sadd(x, k)
            groups.setdefault(g, []).append(sadd)
        part = []
        for g, sadds in groups.items():
            part.append(enc(b"MULTI"))
            part.append(enc(b"GET", b"top:{%d}" % g))
            part.extend(sadds)
            part.append(enc(b"EXEC"))
        out.append(part)
    return out


def tagged_cmds(xs, k, sha, expire):
    out = []
    for i in range(0, len(xs), BATCH):
        groups = {}
        for x in xs[i : i + BATCH]:
            j = x % k
            fp = ((x >> 36) & 0x0FFFFFFF) - (1 << 27)
            groups.setdefault(j % GROUPS, []).append((j, fp))
        part = []
        for g, ls in groups.items():
            keys = [b"t:{%d}:%d" % (g, j) for j, _ in ls]
            members = [fp * 16 + t for _, fp in ls for t in range(LIVE)]
            part.append(enc(b"EVALSHA", sha, len(keys), *keys, expire, *members))
        out.append(part)
    return out


def timed(c, batches):
    before = cpu(c)
    replies = 0
    for part in batches:
        for r in c.pipeline(part):
            if isinstance(r, list):
                # EXEC: the GET's reply, then one per SADD.
                replies += sum(x for x in r[1:]) if r and r[0] is None else len(r)
            elif isinstance(r, int):
                replies += r
    return cpu(c) - before, replies


def fill(c, keys, m, tagged):
    sha = c.call("SCRIPT", "LOAD", FILL)
    step = 20000
    for a in range(0, keys, step):
        c.call("EVALSHA", sha, 0, a, min(keys, a + step), m, 1 if tagged else 0, a + 7)


def micro(c):
    n = 100_000
    r = random.Random(1)
    keys = [b"k:{%d}:%d" % (i % GROUPS, r.randrange(40_000)) for i in range(n)]
    mem = [[r.randrange(-(2**31), 2**31) for _ in range(LIVE)] for _ in range(n)]
    c.call("FLUSHALL")
    c.pipeline([enc(b"SADD", k, *m[:3]) for k, m in zip(keys, mem)])

    def run(name, cmds):
        before = cpu(c)
        for i in range(0, len(cmds), 4096):
            c.pipeline(cmds[i : i + 4096])
        print(f"  {name:44} {(cpu(c) - before) / n * 1e9:6.0f} ns a line", flush=True)

    run("SISMEMBER, a command a line", [enc(b"SISMEMBER", k, m[0]) for k, m in zip(keys, mem)])
    run("SMISMEMBER of 9, a command a line", [enc(b"SMISMEMBER", k, *m) for k, m in zip(keys, mem)])
    run("SADD (present), a command a line", [enc(b"SADD", k, m[0]) for k, m in zip(keys, mem)])
    one = c.call("SCRIPT", "LOAD", b"for i = 1, #KEYS do redis.call('SISMEMBER', KEYS[i], ARGV[i]) end return 0")
    nine = c.call(
        "SCRIPT",
        "LOAD",
        b"local b = 0 for i = 1, #KEYS do redis.call('SMISMEMBER', KEYS[i], ARGV[b+1], ARGV[b+2], "
        b"ARGV[b+3], ARGV[b+4], ARGV[b+5], ARGV[b+6], ARGV[b+7], ARGV[b+8], ARGV[b+9]) b = b + 9 end return 0",
    )
    none = c.call("SCRIPT", "LOAD", b"local b = 0 for i = 1, #KEYS do b = b + 9 end return 0")
    for per in (128, 1024):
        def script(sha, members):
            out = []
            for i in range(0, n, per):
                ks = keys[i : i + per]
                ms = [x for m in mem[i : i + per] for x in m[:members]]
                out.append(enc(b"EVALSHA", sha, len(ks), *ks, *ms))
            return out

        run(f"Lua SISMEMBER, {per} lines a call", script(one, 1))
        run(f"Lua SMISMEMBER of 9, {per} lines a call", script(nine, LIVE))
        run(f"Lua doing nothing with 9 arguments a line, {per}", script(none, LIVE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--capacity", type=int, default=70_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fill", type=int, default=0)
    ap.add_argument("--port", type=int, default=6531)
    ap.add_argument("--micro", action="store_true")
    a = ap.parse_args()
    kf = a.capacity // 204
    kt = a.capacity * 9 // 8 // 204
    d = tempfile.mkdtemp()
    srv = subprocess.Popen(
        ["redis-server", "--port", str(a.port), "--save", "", "--appendonly", "no", "--dir", d],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                c = Conn(a.port)
                c.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        if a.micro:
            print("Redis CPU per line, 100,000 lines on 40,000 sets of 3 members:")
            micro(c)
            return
        rows = {k: [] for k in ("fixed new", "fixed present", "fenced new", "fenced present",
                                "tagged new", "tagged present",
                                "tagged+expire new", "tagged+expire present")}
        memrows = {"fixed": [], "tagged": []}
        for run in range(a.runs):
            xs = lines(a.lines, 1000 + run)
            for name, expire in (("fixed", None), ("fenced", None), ("tagged", 0), ("tagged+expire", 700000)):
                c.call("FLUSHALL")
                sha = c.call("SCRIPT", "LOAD", TAS)
                if a.fill:
                    fill(c, kf if expire is None else kt, a.fill, expire is not None)
                m0 = mem(c)
                if name == "fixed":
                    cmds = fixed_cmds(xs, kf)
                elif name == "fenced":
                    cmds = fenced_cmds(xs, kf)
                else:
                    cmds = tagged_cmds(xs, kt, sha, expire)
                secs, new = timed(c, cmds)
                rows[name + " new"].append(secs / a.lines * 1e9)
                secs2, again = timed(c, cmds)
                rows[name + " present"].append(secs2 / a.lines * 1e9)
                if name in memrows:
                    memrows[name].append((mem(c) - m0) / a.lines)
                print(f"run {run}: {name}: {new} new, then {again} new again", flush=True)
        print(f"\n{a.lines} lines, filters sized for {a.capacity} ({kf} fixed sets, {kt} tagged sets), "
              f"fill {a.fill}; Redis CPU ns per line, median of {a.runs}:")
        base = {"new": statistics.median(rows["fixed new"]), "present": statistics.median(rows["fixed present"])}
        for k, v in rows.items():
            m = statistics.median(v)
            kind = k.split()[-1]
            print(f"  {k:24} {m:7.0f} ns  ({m / base[kind]:.2f}x fixed)   runs: {' '.join(f'{x:.0f}' for x in v)}")
        for k, v in memrows.items():
            print(f"  memory {k:8} {statistics.median(v):6.1f} bytes per line")
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
