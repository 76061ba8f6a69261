// bench/workloads_jit/deep.js - a node process whose main thread is DEPTH
// JS frames of its own deep nearly all the time (bench/jit_bpf_cost.sh,
// issue 19): main -> rec x (DEPTH - 2) -> leaf, the leaf a loop of ~0.2 ms
// of arithmetic (no calls); the descent is run again and again, so rec
// and leaf get hot and are JIT-compiled (unless --jitless). Below main:
// the script's own frame and node's module loader (JS), then node's C++.
// Usage: node deep.js DEPTH SECONDS. Exits after SECONDS, or on SIGTERM.
'use strict';

function leaf(x) {
  for (let i = 0; i < 200000; i++) x = ((x * 31 + i) ^ (x >>> 7)) >>> 0;
  return x;
}

function rec(n, x) {
  if (n === 0) return leaf(x);
  return rec(n - 1, x) + 1;
}

function main(depth, secs) {
  const end = Date.now() + secs * 1000;
  let sink = 0;
  while (Date.now() < end) sink = (sink + rec(depth - 3, sink)) >>> 0;	// main + rec(depth-3..0) + leaf
  return sink;
}

console.log(main(Number(process.argv[2]), Number(process.argv[3])) & 1);
