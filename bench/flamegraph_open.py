#!/usr/bin/env python3
"""bench/flamegraph_open.py - time a flame graph page in headless chromium
(used by bench/flamegraph_open.sh; python3 standard library only).

Talks to chromium over the DevTools protocol on a pipe
(--remote-debugging-pipe: the browser reads commands on fd 3 and writes
replies on fd 4, each a JSON text ended by a NUL byte), so no websocket
module is needed. For PAGE, at WIDTHxHEIGHT, it measures:

  open    navigation start -> the first frame painted after the page's
          script drew the graph (a requestAnimationFrame callback, then a
          task: the paint happened in between), ms
  load    navigation start -> the load event, ms
  zoom    a click (a trusted input event) on the widest frame of the
          third row -> the next paint, as Chrome's Event Timing API
          reports it (the measure behind INP; 8 ms steps), ms
  unzoom  the same for a click on "Reset zoom", ms
  search  the search box's input event -> the match line updated and the
          next frame, ms, less the page's typing debounce
          (SEARCH_DEBOUNCE_MS)

Each run is a fresh browser with a fresh profile directory; the best of
--runs is printed (a shared machine's other load only adds time) with the
median, as one line "RESULT flamegraph_open page=... open_ms=...".

Usage: flamegraph_open.py [--runs N] [--size WxH] [--query TEXT] CHROMIUM PAGE
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SEARCH_DEBOUNCE_MS = 120  # the page's setTimeout on the search box

# Installed before the page's own scripts: when the document is parsed
# (the page's script has built the graph), wait for the next paint.
EARLY = """
window.__bench = {};
document.addEventListener('DOMContentLoaded', function () {
	window.__bench.dcl = performance.now();
	requestAnimationFrame(function () {
		setTimeout(function () { window.__bench.painted = performance.now(); }, 0);
	});
});
"""

# The start of the next frame: the page draws its canvas in the event's
# own task, so that frame shows the new picture. (Waiting for a task
# after the frame would also count the page's list of frames, which it
# builds in small tasks after the frame.)
NEXT_PAINT = """
function nextPaint() {
	return new Promise(function (res) { requestAnimationFrame(res); });
}
"""

# Chrome's Event Timing entries (what INP is made of): for each click,
# the time from the input to the next paint after its handlers ran.
OBSERVE = """
window.__clicks = [];
new PerformanceObserver(function (l) {
	l.getEntries().forEach(function (e) {
		if (e.name === 'click') window.__clicks.push(e.duration);
	});
}).observe({type: 'event', buffered: true, durationThreshold: 16});
"""

# Where to click: the widest frame of the third row (from the page's
# list of laid-out frames, #frames), then the "Reset zoom" button (at the
# top of the page: an older page had to be scrolled to its frames).
TARGETS = """
(function () {
	var fg = document.getElementById('fg'), best = null, bw = -1;
	document.querySelectorAll('#frames .f').forEach(function (f) {
		var w = +f.getAttribute('data-width');
		if (f.getAttribute('data-row') === '2' && w > bw) { best = f; bw = w; }
	});
	var b = fg.getBoundingClientRect();
	var at = best ? [b.left + (+best.getAttribute('data-left') + bw / 2) / 100 * b.width,
			 b.top + 2 * 16 + 8] : null;
	if (!best) { /* an older page: frames are elements, the root at the bottom */
		document.querySelectorAll('#fg .f').forEach(function (f) {
			if (f.style.bottom === '32px' && f.offsetWidth > bw) { best = f; bw = f.offsetWidth; }
		});
		window.scrollTo(0, best.offsetTop + fg.offsetTop - 100);
		var fb = best.getBoundingClientRect();
		at = [fb.left + fb.width / 2, fb.top + fb.height / 2];
	}
	return JSON.stringify(at);
})()
"""

RESET_AT = """
(function () {
	window.scrollTo(0, 0);
	var r = document.getElementById('reset').getBoundingClientRect();
	return JSON.stringify([r.left + r.width / 2, r.top + r.height / 2]);
})()
"""

SEARCH = NEXT_PAINT + """
(async function (q) {
	var el = document.getElementById('search'), m = document.getElementById('match');
	var before = m.textContent, t = performance.now();
	el.value = q;
	el.dispatchEvent(new Event('input'));
	await new Promise(function (res) {
		(function poll() {
			if (m.textContent !== before) res(); else setTimeout(poll, 1);
		})();
	});
	await nextPaint();
	return JSON.stringify({search: performance.now() - t, match: m.textContent});
})(%s)
"""


class Pipe:
    """One chromium with the DevTools protocol on fds 3 (in) and 4 (out)."""

    def __init__(self, chromium, width, height):
        self.udir = tempfile.mkdtemp(prefix="fg-bench-")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def child():
            # via high numbers: a pipe's own fd may be 3 or 4 already
            os.dup2(to_r, 100)
            os.dup2(from_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars",
             f"--window-size={width},{height}", f"--user-data-dir={self.udir}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=child, close_fds=False)
        os.close(to_r)
        os.close(from_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read_msg(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=120):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_msg(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=120):
        deadline = time.monotonic() + timeout
        for k, m in enumerate(self.events):
            if m.get("method") == method:
                del self.events[k]
                return m
        while True:
            m = self._read_msg(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, RuntimeError, TimeoutError, EOFError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)
        shutil.rmtree(self.udir, ignore_errors=True)


def evaluate(p, session, expr):
    r = p.call("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                    "returnByValue": True}, session)
    if "exceptionDetails" in r:
        raise RuntimeError(json.dumps(r["exceptionDetails"])[:2000])
    return r["result"].get("value")


def click(p, session, x, y):
    """A person's click at (x, y) (CSS px in the window), by the DevTools
    input domain (a trusted event); the click's Event Timing duration in
    ms: input -> the next paint (16: faster than the API reports)."""
    n = int(evaluate(p, session, "window.__clicks.length"))
    for kind in ("mousePressed", "mouseReleased"):
        p.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                            "button": "left", "clickCount": 1},
               session)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.1)
        d = json.loads(evaluate(p, session, "JSON.stringify(window.__clicks)"))
        if len(d) > n:
            return d[n]
    return 16


def one_run(chromium, url, width, height, query):
    p = Pipe(chromium, width, height)
    try:
        target = p.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = p.call("Target.attachToTarget", {"targetId": target,
                                             "flatten": True})["sessionId"]
        p.call("Page.enable", session=s)
        p.call("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": height, "deviceScaleFactor": 1,
                "mobile": False}, s)
        p.call("Page.addScriptToEvaluateOnNewDocument", {"source": EARLY}, s)
        p.call("Page.navigate", {"url": url}, s)
        p.wait_event("Page.loadEventFired")
        # The paint after DOMContentLoaded may come after the load event.
        t = json.loads(evaluate(p, s, """
            new Promise(function (res) {
                (function poll() {
                    if (window.__bench.painted) res(JSON.stringify({
                        open: window.__bench.painted, dcl: window.__bench.dcl,
                        load: performance.getEntriesByType('navigation')[0].loadEventStart,
                        drawn: +document.getElementById('fg').getAttribute('data-drawn'),
                        nodes: +document.getElementById('fg').getAttribute('data-nodes')}));
                    else setTimeout(poll, 5);
                })();
            })"""))
        evaluate(p, s, OBSERVE + "1")
        t["zoom"] = click(p, s, *json.loads(evaluate(p, s, TARGETS)))
        t["zoomed_drawn"] = int(evaluate(
            p, s, "document.getElementById('fg').getAttribute('data-drawn')"))
        t["unzoom"] = click(p, s, *json.loads(evaluate(p, s, RESET_AT)))
        t.update(json.loads(evaluate(p, s, SEARCH % json.dumps(query))))
        t["search"] -= SEARCH_DEBOUNCE_MS
        return t
    finally:
        p.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--query", default="step_1")
    ap.add_argument("chromium")
    ap.add_argument("page")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    url = "file://" + os.path.abspath(a.page)
    runs = [one_run(a.chromium, url, w, h, a.query) for _ in range(a.runs)]
    keys = ("open", "load", "zoom", "unzoom", "search")
    best = {k: min(r[k] for r in runs) for k in keys}
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    last = runs[-1]
    print(f"RESULT flamegraph_open page={os.path.basename(a.page)} "
          f"bytes={os.path.getsize(a.page)} size={a.size} "
          f"nodes={last['nodes']} drawn={last['drawn']} "
          f"zoomed_drawn={last['zoomed_drawn']} runs={a.runs} " +
          " ".join(f"{k}_ms={best[k]:.0f}" for k in keys) + " " +
          " ".join(f"median_{k}_ms={med[k]:.0f}" for k in keys) +
          f" match={last['match']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
