import sys, re
def cls4(n):  # mmalloc's classes: 16-byte steps to 128, then 4 per doubling to 32K; above: 4K pages
    if n <= 128: return max(16, (n + 15) // 16 * 16)
    if n <= 32768:
        b = (n - 1).bit_length() - 1
        step = 1 << (b - 2)
        return ((n - 1) // step + 1) * step
    return (n + 4095) // 4096 * 4096
def cls8(n):
    if n <= 1024: return cls4(n)
    if n <= 32768:
        b = (n - 1).bit_length() - 1
        step = 1 << (b - 3)
        return ((n - 1) // step + 1) * step
    return cls4(n)
live = {}; req = c4 = c8 = 0; best = (0, 0, 0, 0)
rx = re.compile(r'^\d+ T\d+ (\w+) (.*)$')
for line in sys.stdin:
    m = rx.match(line)
    if not m: continue
    fn, rest = m.groups()
    if fn in ('malloc', 'calloc', 'realloc'):
        if fn == 'realloc':
            mm = re.match(r'(\S+) size=(\d+) -> (\S+)', rest)
            if not mm: continue
            old, n, new = mm.group(1), int(mm.group(2)), mm.group(3)
            if old in live:
                o = live.pop(old); req -= o; c4 -= cls4(o); c8 -= cls8(o)
        else:
            mm = re.search(r'size=(\d+)(?: nmemb=\d+)? -> (\S+)', rest) or re.search(r'nmemb=(\d+) size=(\d+) -> (\S+)', rest)
            if fn == 'calloc':
                mm2 = re.search(r'nmemb=(\d+) size=(\d+) -> (\S+)', rest)
                n = int(mm2.group(1)) * int(mm2.group(2)); new = mm2.group(3)
            else:
                n = int(mm.group(1)); new = mm.group(2)
        if new == 'NULL': continue
        live[new] = n; req += n; c4 += cls4(n); c8 += cls8(n)
        if c4 > best[1]: best = (req, c4, c8, len(live))
    elif fn == 'free':
        p = rest.split()[0]
        if p in live:
            o = live.pop(p); req -= o; c4 -= cls4(o); c8 -= cls8(o)
print(f"at the 4-per-doubling peak: requested {best[0]/2**20:.1f} MiB, classes(4) {best[1]/2**20:.1f} MiB, classes(8 above 1K) {best[2]/2**20:.1f} MiB, {best[3]} blocks")
