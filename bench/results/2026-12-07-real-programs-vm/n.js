const fs = require('fs');
const j = JSON.parse(fs.readFileSync('/tmp/survey/big.json'));
let m = new Map();
for (const o of j) { m.set(o.b + o.d.y, o); }
const out = JSON.stringify([...m.values()].filter(o => o.a > 3));
console.log(m.size, out.length);
