#!/usr/bin/env python3
"""ab.py — an A/B timing on a noisy machine: runs a workload N times under
each setting, the settings alternating (their order reversed every other
round), and prints per setting the median and minimum of the child's CPU
time (user + sys, from rusage) and of the workload's own `seconds`, and the
median over the rounds of its ratio to the first setting in the same
round (paired), which cancels the machine's slower and faster stretches.
A command whose last line of output is not make bench's JSON (any other
program) has its wall time in place of `seconds`.

    python3 ab.py N 'build/bench/larson threads=1' base=LD_PRELOAD=/path/a.so other='LD_PRELOAD=/path/b.so X=1'
"""
import sys, subprocess, os, json, resource, statistics as st, shlex, time
n=int(sys.argv[1]); cmd=shlex.split(sys.argv[2]); specs=[a.split('=',1) for a in sys.argv[3:]]
res={name:[] for name,_ in specs}
for i in range(n):
    order = specs if i%2==0 else specs[::-1]
    for name,envs in order:
        env=dict(os.environ)
        for kv in envs.split():
            k,v=kv.split('=',1); env[k]=v
        r0=resource.getrusage(resource.RUSAGE_CHILDREN); t0=time.time()
        out=subprocess.run(cmd,env=env,capture_output=True,text=True).stdout
        wall=time.time()-t0
        r1=resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu=(r1.ru_utime-r0.ru_utime)+(r1.ru_stime-r0.ru_stime)
        try:
            secs=json.loads(out.strip().splitlines()[-1])["seconds"]
        except (IndexError, ValueError, KeyError, TypeError):
            secs=wall
        res[name].append((cpu,secs))
base=specs[0][0]
for name,_ in specs:
    c=[x[0] for x in res[name]]; s=[x[1] for x in res[name]]
    pc=st.median(a[0]/b[0] for a,b in zip(res[name],res[base])); ps=st.median(a[1]/b[1] for a,b in zip(res[name],res[base]))
    print(f"{name:8s} cpu med {st.median(c):.4f} min {min(c):.4f} | secs med {st.median(s):.4f} min {min(s):.4f} | paired cpu {pc:.3f} secs {ps:.3f}")
