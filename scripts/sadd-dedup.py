#!/usr/bin/env python3
"""The exact-set dedup crawler stacks use, as the peer of `seen dedup -f redis://`:
scrapy-redis's RFPDupeFilter does `SADD key <SHA-1 hex fingerprint>` per request
and keeps the request when the member was added. This batches it as a redis-py
pipeline of 10,000 SADDs (the fastest way a Python crawler can run it) and prints
each line whose fingerprint was new, in input order.

    sadd-dedup.py redis://HOST:PORT/KEY < lines          # standalone
    sadd-dedup.py redis+cluster://HOST:PORT/KEY < lines  # Cluster (one set, one slot)
"""
import hashlib
import sys

import redis
from redis.cluster import RedisCluster

BATCH = 10_000


def main():
    url = sys.argv[1]
    scheme, rest = url.split("://", 1)
    hostport, key = rest.split("/", 1)
    host, port = hostport.split(",")[0].rsplit(":", 1)
    if scheme == "redis+cluster":
        r = RedisCluster(host=host, port=int(port))
    else:
        r = redis.Redis(host=host, port=int(port))
    out = sys.stdout.buffer
    batch = []

    def flush():
        pipe = r.pipeline(transaction=False)
        for line in batch:
            pipe.sadd(key, hashlib.sha1(line).hexdigest())
        for line, added in zip(batch, pipe.execute()):
            if added:
                out.write(line)
        batch.clear()

    for line in sys.stdin.buffer:
        batch.append(line)
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    out.flush()


if __name__ == "__main__":
    main()
