#!/usr/bin/env python3
"""Redis memory per distinct line of a filter filled to its capacity (issue
39's goal: at most 1/20 of the SADD-of-SHA-1 set's): for each N, on a
flushed server, `seen dedup -n N -f redis://…` of N distinct lines in each
layout, and the SADD set (scripts/sadd-dedup.py) of the same lines; the
delta of INFO used_memory over N, and the estimated false-positive rate
`seen stats` gives at that fill.

    scripts/with-redis.sh target/bench-venv/bin/python scripts/bench-redis-memory.py \\
        --input target/bench/exact-10000000.txt --lines 1000000,4000000

The input must hold distinct lines (target/bench/exact-*.txt are the
corpus's first occurrences). SEEN_BIN picks another build of seen.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
SEEN = os.environ.get("SEEN_BIN", os.path.join(HERE, "..", "target", "release", "seen"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--lines", default="1000000")
    ap.add_argument("--fpp", default="1e-6")
    ap.add_argument("--tools", default="sets,bloom,sadd")
    a = ap.parse_args()
    addr = os.environ["SEEN_TEST_REDIS"]
    host, port = addr.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port))
    env = dict(os.environ, SEEN_JOURNAL_DIR=os.environ.get("SEEN_JOURNAL_DIR", "/tmp/seen-bench-journal"))
    print("| distinct lines | tool | Redis memory per line | estimated FPP at that fill |")
    print("|---:|---|---:|---:|")
    for n in [int(x) for x in a.lines.split(",")]:
        with open(a.input, "rb") as f:
            data = b"".join(next(f) for _ in range(n))
        for tool in a.tools.split(","):
            r.flushall()
            time.sleep(0.3)
            base = r.info("memory")["used_memory"]
            loc = f"redis://{addr}/mem"
            if tool == "sadd":
                cmd = [sys.executable, os.path.join(HERE, "sadd-dedup.py"), f"redis://{addr}/mem-set"]
            else:
                cmd = [SEEN, "dedup", "-q", "-n", str(n), "-p", a.fpp, "--redis-layout", tool, "-f", loc]
            p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, env=env, check=True)
            printed = p.stdout.count(b"\n")
            if printed < n * 0.999:
                sys.exit(f"{tool}: printed {printed:,} of {n:,} distinct lines")
            per = (r.info("memory")["used_memory"] - base) / n
            fpp = "–"
            if tool != "sadd":
                s = subprocess.run([SEEN, "stats", "--json", loc], stdout=subprocess.PIPE, env=env,
                                   check=True)
                fpp = f"{json.loads(s.stdout)['estimated_fpp']:.2e}"
            name = {"sadd": "SADD SHA-1 (redis-py)"}.get(tool, f"seen, --redis-layout {tool}")
            print(f"| {n:,} | {name} | {per:.2f} B | {fpp} |", flush=True)
    r.flushall()


if __name__ == "__main__":
    main()
