#!/usr/bin/env python3
"""redis_bench.py — Debian's redis-server on whatever malloc is preloaded
(LD_PRELOAD in this script's environment reaches the server, not the
client), driven by redis-benchmark with pipelining: the pattern of the
suite row "redis" (issue: fastest in every row).

One pass per value size (8, 64, 256 and 1024 bytes): strings set and read,
counters, lists pushed at both ends, popped and ranged (LRANGE of 100
elements), a set and a hash, REQUESTS requests of each, 16 to a pipeline,
50 connections, all on fixed keys (no -r), so the final dataset is the same
on every run and every allocator: its DEBUG DIGEST is the checksum.  The
server listens on a Unix socket in a temporary directory, saves nothing,
and is shut down at the end; this script waits for it, so the peak RSS of
this process tree (GNU time, in `make bench`) is the server's (this script
and the client stay small next to it).

Output: one JSON line like the suite's workloads: seconds (the client's
wall time over all passes), ops (requests), checksum.

usage: redis_bench.py [threads=1] [requests=N]   (threads: the server's
io-threads; 1 is redis' default)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TESTS = "set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,lrange_100"
SIZES = [8, 64, 256, 1024]


def main(argv):
    opts = {"threads": 1, "requests": 100000}
    for a in argv:
        k, _, v = a.partition("=")
        if k not in opts or not v.isdigit():
            sys.exit("redis_bench.py: unknown argument %s" % a)
        opts[k] = int(v)
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if not shutil.which(tool):
            sys.exit("redis_bench.py: %s not installed (apt-get install redis-server redis-tools)" % tool)
    client_env = dict(os.environ)
    client_env.pop("LD_PRELOAD", None)
    client_env.pop("MMALLOC_STATS", None)
    tmp = tempfile.mkdtemp(prefix="mm-redis-")
    sock = os.path.join(tmp, "redis.sock")
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
         "--dir", tmp, "--enable-debug-command", "yes", "--io-threads", str(max(1, opts["threads"])),
         "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=None)
    cli = ["redis-cli", "-s", sock]
    try:
        for _ in range(500):
            if os.path.exists(sock) and subprocess.run(cli + ["ping"], env=client_env, capture_output=True,
                                                       text=True).stdout.strip() == "PONG":
                break
            if server.poll() is not None:
                sys.exit("redis_bench.py: redis-server exited with status %d" % server.returncode)
            time.sleep(0.02)
        else:
            sys.exit("redis_bench.py: redis-server did not answer")
        seconds, ops = 0.0, 0
        for size in SIZES:
            t0 = time.monotonic()
            r = subprocess.run(["redis-benchmark", "-s", sock, "-q", "-P", "16", "-c", "50",
                                "-n", str(opts["requests"]), "-d", str(size), "-t", TESTS],
                               env=client_env, capture_output=True, text=True)
            seconds += time.monotonic() - t0
            if r.returncode != 0:
                sys.exit("redis_bench.py: redis-benchmark failed: %s" % r.stderr[-300:])
            ops += opts["requests"] * len(TESTS.split(","))
        digest = subprocess.run(cli + ["debug", "digest"], env=client_env, capture_output=True,
                                text=True).stdout.strip()
        dbsize = subprocess.run(cli + ["dbsize"], env=client_env, capture_output=True,
                                text=True).stdout.strip()
        subprocess.run(cli + ["shutdown", "nosave"], env=client_env, capture_output=True)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if not digest or len(digest) != 40:
        sys.exit("redis_bench.py: no DEBUG DIGEST (%r)" % digest)
    print(json.dumps({"workload": "redis", "threads": opts["threads"], "ops": ops,
                      "seconds": round(seconds, 6), "checksum": "%s-%s" % (digest, dbsize),
                      "server_status": server.returncode}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
