// tests/test_jitmap.py: a known call chain in hot loops, outer -> middle ->
// inner. At the hot spot it prints the chain as V8 itself sees it
// (new Error().stack): "STACK inner,middle,outer".
// node hot.js SECONDS [flush]: with flush (--perf-prof: jit-PID.dump in the cwd),
// once the optimized code of all three (TurboFan's "JS:*NAME") is in the
// file it prints "FLUSHED". V8 writes its jitdump through a stdio buffer,
// so the newest records reach the file only when later ones fill it:
// after 3 s of the hot loop, and every 250 ms until they are there, it
// compiles filler functions until the file grew by 16 KiB. (When the
// chain is optimized depends on CPU time: under load, 20 s and more.)
const fs = require("fs");
function inner(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;
  if (globalThis.report) {
    globalThis.report = false;
    const names = new Error().stack.split("\n").slice(1, 4)
      .map((l) => l.trim().split(" ")[1]);
    console.log("STACK " + names.join(","));
  }
  return s;
}
function middle(n) { return inner(n) + 1; }
function outer(n) { return middle(n) + 1; }

function flush(dump) {
  const size0 = fs.statSync(dump).size;
  const until = Date.now() + 5000;
  for (let i = 0; fs.statSync(dump).size < size0 + 16384 && Date.now() < until; i++) {
    const f = new Function("n", `let s = ${i}; for (let k = 0; k < n; k++) s += k ^ ${i}; return s;`);
    for (let k = 0; k < 300; k++) f(1000);
  }
  return fs.statSync(dump).size - size0;
}

// Whether the records of the chain's optimized code are in the file.
function written(dump) {
  const b = fs.readFileSync(dump);
  return ["inner", "middle", "outer"].every((f) => b.includes(`JS:*${f} `));
}

globalThis.report = true;
const end = Date.now() + (+process.argv[2] || 10) * 1000;
const dump = `jit-${process.pid}.dump`;
let x = 0, flushed = !process.argv[3], next = Date.now() + 3000;
while (Date.now() < end) {
  x += outer(10000);
  if (!flushed && Date.now() > next) {
    const grew = flush(dump);
    next = Date.now() + 250;
    if (written(dump)) {
      flushed = true;
      console.log("FLUSHED " + grew);
    }
  }
}
console.log("done " + x);
