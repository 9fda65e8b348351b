# zl.py N: zlib.compress of N small records (each call: deflateInit's state
# and four 64 KiB buffers, malloc'ed and freed), then decompress each.
import json, sys, time, zlib
n = int(sys.argv[1])
recs = [json.dumps({"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)]}).encode() for i in range(n)]
t = time.perf_counter()
out = [zlib.compress(r, 6) for r in recs]
back = [zlib.decompress(c) for c in out]
dt = time.perf_counter() - t
assert back == recs
print(json.dumps({"seconds": dt, "bytes": sum(map(len, out))}))
