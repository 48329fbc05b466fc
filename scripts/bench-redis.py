#!/usr/bin/env python3
"""Benchmark of Redis filters (issue 22): `seen dedup -f redis://…` against the
exact SADD set of crawler stacks (scripts/sadd-dedup.py), on one Redis server,
on one with a replica (with and without --redis-wait 1), on one over TLS,
and on a 3-master Cluster, with the servers on this machine.

Run it under scripts/with-redis.sh (which starts the servers), with redis-py:

    python3 -m venv target/bench-venv && target/bench-venv/bin/pip install redis
    scripts/with-redis.sh target/bench-venv/bin/python scripts/bench-redis.py \
        --input target/bench/urls-10000000.txt --lines 2000000 --runs 3

For each target and tool, every run starts from empty servers (FLUSHALL) and
measures: wall time, lines/s, Redis CPU (INFO used_cpu_user + used_cpu_sys,
summed over the masters, before and after) per input line, Redis memory
(used_memory after minus before) per distinct line, and on the Cluster the
spread of CPU over the masters. Medians over the runs; the output of every run
is checked against awk's (its line count and checksum).
"""
import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
# SEEN_BIN: another build to measure (an A/B against an older one).
SEEN = os.environ.get("SEEN_BIN", os.path.join(HERE, "..", "target", "release", "seen"))


def masters(addr_list, tls=False):
    opts = {}
    if tls:
        d = os.environ["SEEN_TEST_REDIS_TLS_DIR"]
        opts = dict(ssl=True, ssl_ca_certs=f"{d}/ca.crt", ssl_certfile=f"{d}/client.crt", ssl_keyfile=f"{d}/client.key")
    return [redis.Redis(host=a.rsplit(":", 1)[0], port=int(a.rsplit(":", 1)[1]), **opts) for a in addr_list]


def cpu(r):
    i = r.info("cpu")
    return i["used_cpu_user"] + i["used_cpu_sys"]


def mem(r):
    return r.info("memory")["used_memory"]


def run_one(cmd, stdin_path, nodes):
    for r in nodes:
        r.flushall()
    time.sleep(0.2)  # let lazy frees settle before the memory baseline
    c0 = [cpu(r) for r in nodes]
    m0 = sum(mem(r) for r in nodes)
    t0 = time.monotonic()
    with open(stdin_path, "rb") as f:
        p = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, SEEN_JOURNAL_DIR=os.environ.get("SEEN_JOURNAL_DIR", "/tmp/seen-bench-journal")))
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{cmd} failed: {p.stderr.decode()}")
    c1 = [cpu(r) for r in nodes]
    m1 = sum(mem(r) for r in nodes)
    per_node = [b - a for a, b in zip(c0, c1)]
    return wall, per_node, m1 - m0, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fpp", default="1e-6")
    a = ap.parse_args()
    sample = f"/tmp/seen-bench-redis-{a.lines}.txt"
    if not os.path.exists(sample):
        with open(a.input, "rb") as src, open(sample, "wb") as dst:
            for i, line in enumerate(src):
                if i >= a.lines:
                    break
                dst.write(line)
    lines = 0
    seen_set = set()
    want = hashlib.sha1()
    with open(sample, "rb") as f:
        for line in f:
            lines += 1
            if line not in seen_set:
                seen_set.add(line)
                want.update(line)
    distinct = len(seen_set)
    del seen_set
    stand = os.environ["SEEN_TEST_REDIS"]
    repl = os.environ["SEEN_TEST_REDIS_REPLICATED"]
    clus = os.environ["SEEN_TEST_REDIS_CLUSTER"].split(",")
    tls = os.environ["SEEN_TEST_REDIS_TLS"]
    tls_dir = os.environ["SEEN_TEST_REDIS_TLS_DIR"]
    os.environ.update(SEEN_REDIS_CA=f"{tls_dir}/ca.crt", SEEN_REDIS_CERT=f"{tls_dir}/client.crt", SEEN_REDIS_KEY=f"{tls_dir}/client.key")
    py = sys.executable
    rows = []

    def seen(loc, *extra):
        return [SEEN, "dedup", "-q", "-n", str(distinct), "-p", a.fpp, *extra, "-f", loc]

    def sadd(loc):
        return [py, os.path.join(HERE, "sadd-dedup.py"), loc.replace("/bench", "/bench-set")]

    loc_s = f"redis://{stand}/bench"
    loc_r = f"redis://{repl}/bench"
    loc_c = f"redis+cluster://{','.join(clus)}/bench"
    loc_t = f"rediss://{tls}/bench"
    for target, nodes_addr, is_tls, tools in [
        ("standalone", [stand], False, [
            ("seen dedup -f", seen(loc_s)),
            ("SADD SHA-1 (redis-py, pipelines of 10k)", sadd(loc_s)),
        ]),
        ("standalone with a replica", [repl], False, [
            ("seen dedup -f", seen(loc_r)),
            ("seen dedup -f --redis-wait 1", seen(loc_r, "--redis-wait", "1")),
            ("SADD SHA-1 (redis-py, pipelines of 10k)", sadd(loc_r)),
        ]),
        ("standalone over TLS", [tls], True, [("seen dedup -f rediss://", seen(loc_t))]),
        ("Cluster (3 masters)", clus, False, [
            ("seen dedup -f", seen(loc_c)),
            ("SADD SHA-1 (redis-py, pipelines of 10k)", sadd(loc_c)),
        ]),
    ]:
        nodes = masters(nodes_addr, is_tls)
        for tool, cmd in tools:
            walls, cpus, mems, spreads = [], [], [], []
            for _ in range(a.runs):
                wall, per_node, dm, out = run_one(cmd, sample, nodes)
                if hashlib.sha1(out).hexdigest() != want.hexdigest():
                    got = out.count(b"\n")
                    print(f"warning: {tool} on {target}: output differs from awk's ({got} lines, awk {distinct})", file=sys.stderr)
                walls.append(wall)
                cpus.append(sum(per_node))
                mems.append(dm)
                mean = sum(per_node) / len(per_node)
                spreads.append(max(abs(x - mean) / mean for x in per_node) if mean > 0 else 0)
            w = statistics.median(walls)
            rows.append((target, tool, lines / w, statistics.median(cpus) / lines * 1e6, statistics.median(mems) / distinct, statistics.median(spreads) if len(nodes) > 1 else None, w))
    print(f"{lines:,} lines, {distinct:,} distinct, p = {a.fpp}, medians of {a.runs} runs\n")
    print("| target | tool | lines/s | Redis CPU per line | Redis memory per distinct line | CPU spread over masters | wall |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for t, tool, lps, c, m, s, w in rows:
        spread = "–" if s is None else f"±{s * 100:.0f} %"
        print(f"| {t} | {tool} | {lps / 1e6:.2f} M | {c:.2f} µs | {m:.1f} B | {spread} | {w:.2f} s |")


if __name__ == "__main__":
    main()
