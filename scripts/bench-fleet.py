#!/usr/bin/env python3
"""Fleet benchmark of Redis filters (issue 39): W writer processes at once
against one Redis server and against the 3-master Cluster, `seen dedup -f
redis://…` beside the SADD-of-SHA-1 set crawler stacks use
(scripts/sadd-dedup.py), in two shapes:

- long: each writer dedups a stream of STREAM lines of the corpus, writer i
  starting at line i * STREAM / 2 (so neighbours overlap by half);
- short: each writer loops runs of RUN lines (its own next lines of the
  corpus) for SECONDS, against a filter made for CAPACITY lines first.

Per shape and tool: lines/s (all writers' input lines over the wall time),
Redis CPU per input line (INFO used_cpu_user + used_cpu_sys, summed over the
masters), bytes on the wire per input line (INFO total_net_input_bytes +
total_net_output_bytes, summed over the masters), the peak RSS of a writer
process (/usr/bin/time), and for short runs the median wall of one run. The
outputs are checked: every distinct line fed is printed exactly once by the
fleet as a whole.

Run it under scripts/with-redis.sh, with redis-py:

    python3 -m venv target/bench-venv && target/bench-venv/bin/pip install redis
    scripts/with-redis.sh target/bench-venv/bin/python scripts/bench-fleet.py \\
        --input target/bench/urls-10000000.txt

SEEN_BIN picks another build of seen.
"""
import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
SEEN = os.environ.get("SEEN_BIN", os.path.join(HERE, "..", "target", "release", "seen"))


def nodes_of(addrs):
    return [redis.Redis(host=a.rsplit(":", 1)[0], port=int(a.rsplit(":", 1)[1])) for a in addrs]


def counters(nodes):
    """(CPU seconds per master, wire bytes summed over the masters)."""
    cpu = []
    wire = 0.0
    for r in nodes:
        c = r.info("cpu")
        s = r.info("stats")
        cpu.append(c["used_cpu_user"] + c["used_cpu_sys"])
        wire += s["total_net_input_bytes"] + s["total_net_output_bytes"]
    return cpu, wire


def memory(nodes):
    """Bytes of data the masters hold (INFO used_memory)."""
    return sum(r.info("memory")["used_memory"] for r in nodes)


def timed(cmd, data, env):
    """Runs cmd with data on stdin under /usr/bin/time; returns (stdout, peak KiB, wall)."""
    with tempfile.NamedTemporaryFile() as rss:
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd], input=data,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"{cmd} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}")
        kib = int(open(rss.name).read().split()[-1])
    return p.stdout, kib, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--stream", type=int, default=2_000_000, help="lines per writer, long shape")
    ap.add_argument("--run", type=int, default=1_000, help="lines per run, short shape")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long each writer loops, short shape")
    ap.add_argument("--capacity", default="100M", help="the filter the short runs use is made for this many lines")
    ap.add_argument("--fpp", default="1e-6")
    ap.add_argument("--shapes", default="long,short")
    ap.add_argument("--targets", default="standalone,cluster")
    ap.add_argument("--tools", default="seen,sadd")
    ap.add_argument("--layout", default="sets", help="--redis-layout of the filter seen makes")
    a = ap.parse_args()

    w = a.writers
    need = a.stream * (w + 1) // 2
    with open(a.input, "rb") as f:
        lines = [next(f) for _ in range(need)]
    stand = os.environ["SEEN_TEST_REDIS"]
    clus = os.environ["SEEN_TEST_REDIS_CLUSTER"].split(",")
    env = dict(os.environ, SEEN_JOURNAL_DIR=os.environ.get("SEEN_JOURNAL_DIR", "/tmp/seen-bench-journal"))
    targets = {
        "standalone": ([stand], f"redis://{stand}/fleet", f"redis://{stand}/fleet-set"),
        "Cluster (3 masters)": (clus, f"redis+cluster://{','.join(clus)}/fleet",
                                f"redis+cluster://{clus[0]}/fleet-set"),
    }
    rows = []
    for tname, (addrs, loc, set_loc) in targets.items():
        if ("cluster" if len(addrs) > 1 else "standalone") not in a.targets:
            continue
        nodes = nodes_of(addrs)
        for shape in a.shapes.split(","):
            for tool in a.tools.split(","):
                for r in nodes:
                    r.flushall()
                time.sleep(0.2)
                base = memory(nodes)
                if tool == "seen":
                    size = a.capacity if shape == "short" else str(need)
                    subprocess.run([SEEN, "build", "-q", "-n", size, "-p", a.fpp, "--redis-layout",
                                    a.layout, "-o", loc, "/dev/null"], check=True, env=env)
                    cmd = [SEEN, "dedup", "-q", "-f", loc]
                else:
                    cmd = [sys.executable, os.path.join(HERE, "sadd-dedup.py"), set_loc]
                time.sleep(0.2)
                rows.append((tname, shape, tool, *fleet(shape, cmd, lines, a, env, nodes, base)))
                print(rows[-1], file=sys.stderr, flush=True)
    print(f"{w} writers; long: {a.stream:,} lines each, overlapping by half; short: runs of "
          f"{a.run:,} lines for {a.seconds:.0f} s against a filter made for {a.capacity} lines; "
          f"p = {a.fpp}; seen's layout: {a.layout}\n")
    print("| target | shape | tool | input lines | lines/s | Redis CPU per line | CPU spread over masters "
          "| wire bytes per line | Redis memory per distinct line | peak RSS of a writer "
          "| wall of one run (median) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t, shape, tool, n, lps, cpu, spread, wire, mem, rss, run_wall in rows:
        name = "seen dedup -f" if tool == "seen" else "SADD SHA-1 (redis-py)"
        rw = "–" if run_wall is None else f"{run_wall:.3f} s"
        sp = "–" if spread is None else f"±{spread * 100:.0f} %"
        print(f"| {t} | {shape} | {name} | {n:,} | {lps / 1e6:.3f} M | {cpu * 1e6:.2f} µs | {sp} "
              f"| {wire:,.0f} B | {mem:,.1f} B | {rss / 1024:,.0f} MiB | {rw} |")


def fleet(shape, cmd, lines, a, env, nodes, base):
    """Runs the fleet once; returns (input lines, lines/s, CPU s per line,
    the largest share a master's CPU is off the masters' mean (None for one
    server), wire bytes per line, Redis memory per distinct line over
    `base`, peak RSS KiB, median run wall or None)."""
    w = a.writers
    fed = [[] for _ in range(w)]
    out = [[] for _ in range(w)]
    rss = [0] * w
    walls = [[] for _ in range(w)]
    stop = time.monotonic() + a.seconds
    half = a.stream // 2

    def writer(i):
        if shape == "long":
            chunk = lines[i * half:i * half + a.stream]
            o, kib, wall = timed(cmd, b"".join(chunk), env)
            fed[i].append(chunk)
            out[i].append(o)
            rss[i] = kib
            return
        at = i * half
        while time.monotonic() < stop:
            chunk = lines[at:at + a.run]
            at += a.run
            if len(chunk) < a.run:
                break
            o, kib, wall = timed(cmd, b"".join(chunk), env)
            fed[i].append(chunk)
            out[i].append(o)
            rss[i] = max(rss[i], kib)
            walls[i].append(wall)

    c0, n0 = counters(nodes)
    t0 = time.monotonic()
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(w)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    c1, n1 = counters(nodes)
    # Every distinct line fed is printed exactly once by the fleet.
    want = set()
    total = 0
    for chunks in fed:
        for c in chunks:
            total += len(c)
            want.update(hashlib.blake2b(l, digest_size=16).digest() for l in c)
    got = []
    for outs in out:
        for o in outs:
            got.extend(hashlib.blake2b(l + b"\n", digest_size=16).digest() for l in o.split(b"\n")[:-1])
    if len(got) != len(want) or set(got) != want:
        print(f"warning: {cmd[0]} {shape}: printed {len(got):,} lines, {len(set(got)):,} distinct; "
              f"{len(want):,} distinct lines were fed", file=sys.stderr)
    runs = [x for ws in walls for x in ws]
    per = [b - a_ for a_, b in zip(c0, c1)]
    mean = sum(per) / len(per)
    spread = max(abs(p - mean) for p in per) / mean if len(per) > 1 and mean > 0 else None
    mem = (memory(nodes) - base) / max(len(want), 1)
    return (total, total / wall, sum(per) / total, spread, (n1 - n0) / total, mem, max(rss),
            statistics.median(runs) if runs else None)


if __name__ == "__main__":
    main()
