#!/usr/bin/env python3
"""Generate a reproducible list of URL-like lines with skewed duplicates.

    scripts/gen-urls.py --lines 10000000 --seed 1 > urls.txt

About `--dup` of the lines (default 30 %) repeat an earlier line, chosen with a
skew (recent and popular URLs repeat more, as in a crawl frontier); the rest are
new. Lines average ~80 bytes. Same arguments, same bytes, on any machine.
"""
import argparse
import random
import sys

WORDS = ("news blog shop item product article page post user profile search "
         "video photo image tag category archive docs api v1 v2 help about "
         "contact login cart review story world sport tech science music").split()
TLDS = ["com", "org", "net", "io", "de", "fr", "co.uk", "info"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dup", type=float, default=0.30, help="fraction of repeated lines")
    ap.add_argument("--hosts", type=int, default=5000)
    ap.add_argument("--min-words", type=int, default=2, help="path segments, at least")
    ap.add_argument("--max-words", type=int, default=6, help="path segments, at most")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    hosts = [
        "%s%s.%s.%s" % (rng.choice(["www.", "", "m.", "blog."]), rng.choice(WORDS),
                        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))),
                        rng.choice(TLDS))
        for _ in range(a.hosts)
    ]
    seen = []
    out = sys.stdout
    buf = []
    for i in range(a.lines):
        if seen and rng.random() < a.dup:
            # Skewed repetition: mostly recent lines, sometimes a very popular early one.
            r = rng.random()
            if r < 0.6:
                j = len(seen) - 1 - int(rng.expovariate(1 / 50.0)) % len(seen)
            elif r < 0.9:
                j = rng.randrange(len(seen))
            else:
                j = int(rng.paretovariate(1.2)) % min(len(seen), 1000)
            line = seen[j]
        else:
            host = hosts[int(rng.paretovariate(1.1)) % len(hosts)]
            path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(a.min_words, a.max_words)))
            line = "https://%s/%s/%d" % (host, path, rng.randrange(10 ** rng.randint(3, 9)))
            if rng.random() < 0.6:
                line += "?id=%d&ref=%s" % (rng.randrange(10 ** 6), rng.choice(WORDS))
            seen.append(line)
        buf.append(line)
        if len(buf) >= 65536:
            out.write("\n".join(buf) + "\n")
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")


if __name__ == "__main__":
    main()
