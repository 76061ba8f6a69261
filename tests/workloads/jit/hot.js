// tests/test_jitmap.py: a known call chain in hot loops, outer -> middle ->
// inner. At the hot spot it prints the chain as V8 itself sees it
// (new Error().stack): "STACK inner,middle,outer".
// node hot.js SECONDS [flush]: with flush (--perf-prof: jit-PID.dump in the cwd),
// after 3 s of the hot loop (every function optimized) it compiles filler functions until the
// file grew by 16 KiB (V8 writes its records 8 KiB at a time, so the hot
// functions' records reach the file), then prints "FLUSHED".
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
  console.log("FLUSHED " + (fs.statSync(dump).size - size0));
}

globalThis.report = true;
const end = Date.now() + (+process.argv[2] || 10) * 1000;
const warm = Date.now() + 3000;
let x = 0, flushed = !process.argv[3];
while (Date.now() < end) {
  x += outer(100000);
  if (!flushed && Date.now() > warm) {
    flushed = true;
    flush(`jit-${process.pid}.dump`);
  }
}
console.log("done " + x);
