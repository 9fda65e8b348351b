# dist.py N "CMD" NAME=ENV ...: runs CMD N times per setting, alternating, and prints each setting's seconds sorted.
import sys, subprocess, os, json, shlex
n=int(sys.argv[1]); cmd=shlex.split(sys.argv[2]); specs=[a.split('=',1) for a in sys.argv[3:]]
res={k:[] for k,_ in specs}
for i in range(n):
    for name,envs in (specs if i%2==0 else specs[::-1]):
        env=dict(os.environ)
        for kv in envs.split():
            k,v=kv.split('=',1); env[k]=v
        out=subprocess.run(cmd,env=env,capture_output=True,text=True).stdout
        res[name].append(json.loads(out.strip().splitlines()[-1])["seconds"])
for k,v in res.items(): print(k, ' '.join(f"{x:.3f}" for x in sorted(v)))
