import random, json
random.seed(1)
d = {}
for i in range(400000):
    d[str(i) * (i % 5 + 1)] = [random.random() for _ in range(i % 7)]
s = json.dumps(list(d.items())[:100000])
x = json.loads(s)
for k in list(d)[::2]:
    del d[k]
t = sorted(d, key=lambda k: (len(k), k))
print(len(x), len(t), len(s))
