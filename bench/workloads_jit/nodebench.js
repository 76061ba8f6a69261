// bench/workloads_jit/nodebench.js - a node workload for bench/jit_stacks.sh
// and bench/jit_overhead.sh (issue 19): closures, a class hierarchy, JSON
// round trips, Array.prototype.sort with a callback, Map and string work,
// in rounds on the main thread (V8 compiles them: Ignition, Sparkplug,
// Maglev/TurboFan). Usage: node nodebench.js [SECONDS] (0 or none: until
// killed). Prints "ready" after the first round. No node flags needed.
'use strict';

class Shape {
  constructor(id) { this.id = id; }
  area() { return 0; }
  describe() { return `${this.constructor.name}#${this.id}:${this.area().toFixed(2)}`; }
}
class Circle extends Shape {
  constructor(id, r) { super(id); this.r = r; }
  area() { return Math.PI * this.r * this.r; }
}
class Rect extends Shape {
  constructor(id, w, h) { super(id); this.w = w; this.h = h; }
  area() { return this.w * this.h; }
}

function makeCounter(step) {
  let n = 0;
  return function bump(k) { n = (n + step * k) % 1000003; return n; };
}

function shapesRound(n) {
  const shapes = [];
  for (let i = 0; i < n; i++)
    shapes.push(i % 2 ? new Circle(i, (i % 13) + 1) : new Rect(i, i % 7 + 1, i % 5 + 1));
  let s = 0;
  for (const sh of shapes) s += sh.describe().length;
  return s;
}

function jsonRound(n) {
  const obj = { items: [] };
  for (let i = 0; i < n; i++)
    obj.items.push({ id: i, name: 'item' + (i % 97), tags: ['a', 'b', String(i % 5)], v: i * 1.5 });
  const text = JSON.stringify(obj);
  const back = JSON.parse(text);
  return back.items.reduce((acc, it) => acc + it.tags.length + it.v, 0) + text.length;
}

function sortRound(n, bump) {
  const recs = [];
  for (let i = 0; i < n; i++) recs.push({ score: bump(i) % 1000, name: 'r' + (bump(i + 1) % 500) });
  recs.sort(function byScoreName(a, b) {
    return a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  });
  return recs[0].score + recs[n - 1].score;
}

function stringsRound(n) {
  const words = new Map();
  let text = '';
  for (let i = 0; i < n; i++) text += 'word' + (i % 97) + (i % 3 ? ' ' : ',');
  for (const w of text.split(/[ ,]/)) {
    const u = w.toUpperCase();
    words.set(u, (words.get(u) || 0) + 1);
  }
  return words.size;
}

function main() {
  const secs = Number(process.argv[2] || 0);
  const deadline = secs > 0 ? Date.now() + secs * 1000 : Infinity;
  const bump = makeCounter(7);
  let sink = 0, first = true;
  while (Date.now() < deadline) {
    sink += shapesRound(2000);
    sink += jsonRound(1000);
    sink += sortRound(3000, bump);
    sink += stringsRound(2000);
    if (first) { console.log('ready'); first = false; }
  }
  return sink;
}

main();
