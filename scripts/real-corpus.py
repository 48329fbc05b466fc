#!/usr/bin/env python3
"""A corpus of real strings from what a Debian machine has, for benchmarks
that must not rest on generated URLs alone.

Each line is a URL made of real parts: a Debian package name, a public
suffix (the public suffix list) and a real file path from this machine
(`find /usr -type f`), e.g. `https://libssl3.co.uk/usr/share/doc/...`.
About 30 % of lines repeat an earlier one (skewed towards recent lines, as
a crawler's frontier repeats), with a fixed seed: the same machine gives
the same corpus.

    scripts/real-corpus.py --lines 4000000 > target/bench/real.txt
"""
import argparse
import os
import random
import subprocess
import sys


def suffixes():
    out = []
    with open("/usr/share/publicsuffix/public_suffix_list.dat", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("//") and "*" not in line and "!" not in line:
                out.append(line)
    return out


def packages():
    names = []
    with open("/var/lib/dpkg/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("Package: "):
                names.append(line[9:].strip())
    return names


def paths():
    found = subprocess.run(
        ["find", "/usr", "-xdev", "-type", "f"], capture_output=True, text=True, check=False
    ).stdout.split("\n")
    return sorted(p for p in found if p and "\t" not in p and " " not in p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    sfx, pkgs, ps = suffixes(), packages(), paths()
    if not (sfx and pkgs and ps):
        sys.exit("real-corpus: needs the public suffix list, dpkg's status and files under /usr")
    seen = []
    out = sys.stdout
    buf = []
    for _ in range(a.lines):
        if seen and rng.random() < a.repeat:
            # Skewed towards recent lines.
            i = len(seen) - 1 - int(len(seen) * rng.random() ** 3)
            line = seen[i]
        else:
            line = "https://%s.%s%s" % (rng.choice(pkgs), rng.choice(sfx), rng.choice(ps))
            seen.append(line)
        buf.append(line)
        if len(buf) >= 65536:
            out.write("\n".join(buf) + "\n")
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")


if __name__ == "__main__":
    main()
