"""Read profiles through Google's pprof (the oracle), never our own decoder.

pprof_traces() runs `pprof -traces` and splits its text output into
samples: {"labels": {...}, "value": int, "frames": [leaf, ..., root]}.
"""
import re
import subprocess

SEP = re.compile(r"^-+\+-+$")
VALUE_LINE = re.compile(r"^(\s*)(\d+)([a-z]*)(\s+)(\S.*)$")  # value, unit (-unit=ns)
LABEL_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*):\s+(.*)$")


def pprof_traces(pprof, path, *extra, inlines=False):
    """Samples of profile @path as pprof -traces prints them (counts).
    Functions inlined into a frame (the extra Lines of a location, from
    DWARF) are left out (pprof -noinlines: each location is the function
    that holds the code), unless @inlines: then each is a frame of its
    own, named "NAME (inline)", innermost first."""
    out = subprocess.run(
        [pprof, "-traces", "-sample_index=samples", "-symbolize=none",
         *([] if inlines else ["-noinlines"]), *extra, path],
        check=True, capture_output=True, text=True).stdout
    samples, block = [], None
    for line in out.splitlines():
        if SEP.match(line):
            if block and block["frames"]:
                samples.append(block)
            block = {"labels": {}, "value": 0, "frames": []}
            continue
        if block is None:
            continue
        if not block["frames"]:
            m = VALUE_LINE.match(line)
            if m:
                block["value"] = int(m.group(2))
                block["col"] = sum(len(m.group(i)) for i in range(1, 5))
                block["frames"].append(m.group(5).strip())
                continue
            m = LABEL_LINE.match(line)
            if m:
                block["labels"][m.group(1)] = m.group(2).strip()
            continue
        if line.strip():
            block["frames"].append(line.strip())  # the column varies with value width
    if block and block["frames"]:
        samples.append(block)
    return samples


def comments(pprof, path):
    """The profile's comments, as pprof -raw prints them."""
    out = subprocess.run([pprof, "-raw", "-symbolize=none", path], check=True,
                         capture_output=True, text=True).stdout
    return out


_RAW_LOC = re.compile(r"^\s*(\d+): 0x([0-9a-f]+)(?: M=(\d+))? ?(.*)$")
_RAW_LINE = re.compile(r"^(.*) (\S*):(-?\d+) s=-?\d+(?:\(.*\))?$")
_RAW_MAP = re.compile(r"^\s*(\d+): 0x([0-9a-f]+)/0x[0-9a-f]+/0x([0-9a-f]+) (\S*)(.*)$")
_RAW_SAMPLE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$")


def pprof_raw_samples(pprof, path, *extra, env=None):
    """Samples of profile @path as `pprof -raw` prints them, with each
    frame's mapping: {"labels": {...}, "value": count, "frames": [leaf,
    ..., root]}, a frame {"function", "file", "line", "mapping"} (the
    mapping's file name, e.g. "[python]"; an inlined location gives one
    frame per line, innermost first; an unsymbolized one function None),
    "address" (the location's runtime address), "loc" (its id), "map" (its
    mapping: {"start", "offset", "file", "has_functions"}, or None) and
    "flags" (its mapping's as pprof prints them: "[FN][FL][LN][IN]").
    @extra: more pprof arguments (e.g. "-symbolize=local" in place of
    "-symbolize=none", which comes first); @env: pprof's environment
    (e.g. with PPROF_BINARY_PATH)."""
    out = subprocess.run([pprof, "-raw", "-symbolize=none", *extra, path], check=True,
                         capture_output=True, text=True, env=env).stdout
    locs, maps, raw, section, last = {}, {}, [], None, None
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = _RAW_SAMPLE.match(line)
            if m:
                raw.append(([int(x) for x in m.group(2).split()],
                            int(m.group(1).split()[0]), {}))
            elif raw:
                for key, val in re.findall(r"([\w.]+):\[([^\]]*)\]", line):
                    raw[-1][2][key] = val
        elif section == "Locations":
            m = _RAW_LOC.match(line)
            text = m.group(4) if m else line.strip()
            if m:
                last = locs[int(m.group(1))] = {"mapping": int(m.group(3) or 0), "lines": [],
                                                "address": int(m.group(2), 16)}
            fm = _RAW_LINE.match(text)
            if last is not None and (fm or m):
                last["lines"].append((fm.group(1), fm.group(2), int(fm.group(3)))
                                     if fm else (None, "", 0))
        elif section == "Mappings":
            m = _RAW_MAP.match(line)
            if m:
                maps[int(m.group(1))] = {"start": int(m.group(2), 16),
                                         "offset": int(m.group(3), 16),
                                         "file": m.group(4),
                                         "has_functions": "[FN]" in m.group(5),
                                         "flags": "".join(re.findall(r"\[[A-Z]{2}\]",
                                                                     m.group(5)))}
    samples = []
    for ids, value, labels in raw:
        frames = []
        for i in ids:
            loc = locs[i]
            for fn, file, no in loc["lines"] or [(None, "", 0)]:
                mp = maps.get(loc["mapping"])
                frames.append({"function": fn, "file": file, "line": no,
                               "mapping": mp["file"] if mp else "",
                               "address": loc["address"], "loc": i, "map": mp,
                               "flags": mp["flags"] if mp else ""})
        samples.append({"labels": labels, "value": value, "frames": frames})
    return samples
