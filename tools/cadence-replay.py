#!/usr/bin/env python3
"""Replays the probe's allocator-sampling cadence on recorded sessions.

Usage: python3 tools/cadence-replay.py recordings/h200-*.psrec

A recording made with samples every 10 ms (every recording in recordings/ is) holds the full
memory timeline; this replays which of those samples a cadence rule would have taken — span
edges and large blocks from the same recording stir it, as they stir the collector — and says
how many it takes a second and how far the timeline drawn through them (straight lines
between samples) lies from the full one: mean, 99th percentile and worst, for live bytes and
RSS. The rules: every 10 ms; stillness only (the cadence before 2026-12-05: a move of 1 MiB
from the last sample resets); a sample that is still or on the line through the last two
(probe/src/cadence.rs: its constants are read from the file; its rule is mirrored here, so
change both together) with the interval on a ramp capped as the probe caps it, at 30 ms, and
uncapped; the line alone (a sample that stops a ramp resets); and the probe's rule with only
span edges, or nothing, stirring it (what the large blocks' stirs buy). The base interval is
the probe's default, 10 ms. Needs `msgpack` (pip install msgpack).
"""
import bisect
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import psrec  # noqa: E402

MS = 1_000_000
MIB = 1 << 20
BASE = 10 * MS  # PROOFSCOPE_ALLOC_SAMPLE_MS's default


def probe_constants():
    """QUIET_LONGEST, RAMP_LONGEST (ns) and QUIET_BYTES as probe/src/cadence.rs has them."""
    src = (Path(__file__).parent.parent / "probe/src/cadence.rs").read_text()

    def const(name, pattern):
        m = re.search(rf"pub const {name}: {pattern};", src)
        if not m:
            sys.exit(f"probe/src/cadence.rs: no `{name}` of the form the replay reads")
        return m.group(1)

    millis = r"Duration = Duration::from_millis\((\d+)\)"
    return (int(const("QUIET_LONGEST", millis)) * MS, int(const("RAMP_LONGEST", millis)) * MS,
            1 << int(const("QUIET_BYTES", r"u64 = 1 << (\d+)")))


QUIET_LONGEST, RAMP_LONGEST, QUIET_BYTES = probe_constants()

RULES = [
    ("every 10 ms", None),
    ("stillness only (before)", dict(line=False, ramp_longest=QUIET_LONGEST)),
    (f"line or still, ramps ≤ {RAMP_LONGEST // MS} ms (the probe's)",
     dict(line=True, or_still=True, ramp_longest=RAMP_LONGEST)),
    ("line or still, ramps ≤ 30 ms", dict(line=True, or_still=True, ramp_longest=30 * MS)),
    ("line or still, uncapped", dict(line=True, or_still=True, ramp_longest=QUIET_LONGEST)),
    (f"line only, ramps ≤ {RAMP_LONGEST // MS} ms", dict(line=True, ramp_longest=RAMP_LONGEST)),
    ("the probe's, stirred by span edges only",
     dict(line=True, or_still=True, ramp_longest=RAMP_LONGEST, stirs=("edges",))),
    ("the probe's, never stirred",
     dict(line=True, or_still=True, ramp_longest=RAMP_LONGEST, stirs=())),
]


def load(path):
    """The allocator samples, and the times that stir the cadence, by kind."""
    samples, stirs = [], {"edges": [], "blocks": []}
    for kind, e in psrec.read(path, []):
        if kind == "alloc_sample":
            samples.append((e["ts"], e["live_bytes"], e["rss_bytes"]))
        elif kind in ("span_begin", "span_end"):
            stirs["edges"].append(e["ts"])
        elif kind in ("alloc", "release"):
            stirs["blocks"].append(e["ts"])
    return samples, {k: sorted(v) for k, v in stirs.items()}


def stirred(stirs, after, until):
    i = bisect.bisect_right(stirs, after)
    return i < len(stirs) and stirs[i] <= until


def replay(samples, stirs_by_kind, rule):
    """The samples the rule takes (each due time takes the latest recorded sample)."""
    kinds = rule.get("stirs", ("edges", "blocks"))
    stirs = sorted(t for k in kinds for t in stirs_by_kind[k])
    times = [s[0] for s in samples]
    kept, every, t = [samples[0]], BASE, samples[0][0]
    while True:
        t += every
        if t > samples[-1][0]:
            return kept
        s = samples[bisect.bisect_right(times, t) - 1]
        last = kept[-1]
        if rule["line"] and len(kept) >= 2:
            a = kept[-2]
            k = (s[0] - last[0]) / max(1, last[0] - a[0])
            expect = [last[i] + (last[i] - a[i]) * k for i in (1, 2)]
        else:
            expect = [last[1], last[2]]
        on_line = all(abs(s[i] - expect[i - 1]) < QUIET_BYTES for i in (1, 2))
        moving = any(abs(s[i] - last[i]) >= QUIET_BYTES for i in (1, 2))
        if rule.get("or_still"):
            on_line = on_line or not moving
        if s[0] != last[0]:
            kept.append(s)
        if stirred(stirs, last[0], t) or not on_line:
            every = BASE
        else:
            every = min(every * 2, rule["ramp_longest"] if moving else QUIET_LONGEST)


def errors(samples, kept, field):
    times = [k[0] for k in kept]
    out = []
    for s in samples:
        j = bisect.bisect_right(times, s[0]) - 1
        if 0 <= j < len(kept) - 1:
            a, b = kept[j], kept[j + 1]
            drawn = a[field] + (b[field] - a[field]) * (s[0] - a[0]) / max(1, b[0] - a[0])
            out.append(abs(drawn - s[field]) / MIB)
    return sorted(out) or [0.0]


def main():
    for path in sys.argv[1:]:
        samples, stirs = load(path)
        if len(samples) < 10:
            print(f"== {path}: {len(samples)} allocator samples, too few to replay")
            continue
        secs = (samples[-1][0] - samples[0][0]) / 1e9
        peak = max(s[1] for s in samples) / MIB
        print(f"== {Path(path).name}: {len(samples)} samples in {secs:.1f} s, peak live "
              f"{peak:.0f} MiB, {len(stirs['edges'])} span edges, {len(stirs['blocks'])} "
              f"large blocks")
        print(f"  {'rule':<44} {'samples/s':>9}   live MiB: mean    p99     max"
              f"   RSS MiB: mean    p99     max")
        for name, rule in RULES:
            kept = samples if rule is None else replay(samples, stirs, rule)
            cols = []
            for field in (1, 2):
                e = errors(samples, kept, field)
                cols.append(f"{statistics.mean(e):10.2f} {e[int(len(e) * 0.99)]:6.1f} "
                            f"{e[-1]:7.1f}")
            print(f"  {name:<44} {len(kept) / secs:9.1f}   {cols[0]}   {cols[1]}")


if __name__ == "__main__":
    main()
