#!/usr/bin/env python3
"""run.py REPS OUT.csv NAME=ENV... -- CMD...: run CMD under each setting
(NAME=VAR=VALUE[,VAR=VALUE...], e.g. mmalloc=LD_PRELOAD=build/libmmalloc.so),
the settings alternating and their order rotated each repetition; one CSV row
per run (name, rep, wall s, user s, sys s, max RSS KiB, minor faults), then
per setting the median wall and system time, RSS and faults."""
import csv, os, resource, statistics as st, subprocess, sys, time
reps, out = int(sys.argv[1]), sys.argv[2]
i = sys.argv.index("--")
settings = [a.split("=", 1) for a in sys.argv[3:i]]
cmd = sys.argv[i + 1:]
rows = []
for r in range(reps):
    for name, env in settings[r % len(settings):] + settings[:r % len(settings)]:
        e = dict(os.environ)
        for kv in env.split(","):
            k, v = kv.split("=", 1)
            e[k] = v
        t0 = time.time()
        p = subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.time() - t0
        if status != 0:
            sys.exit(f"run.py: {name} exited with status {status}")
        rows.append((name, r, wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, ru.ru_minflt))
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["setting", "rep", "wall_s", "user_s", "sys_s", "maxrss_kb", "minflt"])
    w.writerows(rows)
print("| setting | wall s, median [min-max] | sys s | peak RSS MiB | minor faults |")
print("|---|---|---|---|---|")
for name, _ in settings:
    x = [r for r in rows if r[0] == name]
    walls = [r[2] for r in x]
    print(f"| {name} | {st.median(walls):.2f} [{min(walls):.2f}-{max(walls):.2f}] | "
          f"{st.median(r[4] for r in x):.2f} | {st.median(r[5] for r in x) / 1024:.0f} | "
          f"{st.median(r[6] for r in x):.0f} |")
