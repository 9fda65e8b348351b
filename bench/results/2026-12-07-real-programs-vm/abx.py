#!/usr/bin/env python3
"""abx.py N 'CMD' name=ENV... : paired A/B of any command by child CPU time (user+sys) and wall."""
import sys, subprocess, os, resource, statistics as st, time
n=int(sys.argv[1]); cmd=sys.argv[2]; specs=[a.split('=',1) for a in sys.argv[3:]]
res={name:[] for name,_ in specs}
for i in range(n):
    order = specs if i%2==0 else specs[::-1]
    for name,envs in order:
        env=dict(os.environ)
        for kv in envs.split():
            if kv=='-': continue
            k,v=kv.split('=',1); env[k]=v
        r0=resource.getrusage(resource.RUSAGE_CHILDREN); t0=time.time()
        subprocess.run(cmd,shell=True,env=env,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
        w=time.time()-t0; r1=resource.getrusage(resource.RUSAGE_CHILDREN)
        res[name].append(((r1.ru_utime-r0.ru_utime)+(r1.ru_stime-r0.ru_stime), w))
base=specs[0][0]
for name,_ in specs:
    c=[x[0] for x in res[name]]; w=[x[1] for x in res[name]]
    pc=st.median(a[0]/b[0] for a,b in zip(res[name],res[base])); pw=st.median(a[1]/b[1] for a,b in zip(res[name],res[base]))
    print(f"{name:10s} cpu med {st.median(c):.3f} min {min(c):.3f} | wall med {st.median(w):.3f} | paired cpu {pc:.3f} wall {pw:.3f}")
