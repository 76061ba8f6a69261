"""Read profiles through Google's pprof (the oracle), never our own decoder.

pprof_traces() runs `pprof -traces` and splits its text output into
samples: {"labels": {...}, "value": int, "frames": [leaf, ..., root]}.
"""
import re
import subprocess

SEP = re.compile(r"^-+\+-+$")
VALUE_LINE = re.compile(r"^(\s*)(\d+)([a-z]*)(\s+)(\S.*)$")  # value, unit (-unit=ns)
LABEL_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*):\s+(.*)$")


def pprof_traces(pprof, path, *extra):
    """Samples of profile @path as pprof -traces prints them (counts)."""
    out = subprocess.run(
        [pprof, "-traces", "-sample_index=samples", "-symbolize=none", *extra, path],
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
