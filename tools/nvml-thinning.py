#!/usr/bin/env python3
"""What reading NVML's utilisation half as often would cost the analysis, replayed on recorded
sessions that hold both NVML readings and the prover's own GPU spans.

Usage: python3 tools/nvml-thinning.py recordings/h200-*.psrec

The GPU spans give the truth: the share of each window of time (50, 100 and 250 ms, sliding
by half their length) in which a span ran on the device. The readings estimate it the way
the analysis does (tui/src/analysis/nvml.rs: a reading read at ts speaks for
[ts - 3p, ts - p/2], p the recording's GPU sample period; each reading weighted by its
overlap with the window). Printed per device and window: the mean absolute error and the
correlation against the truth for every reading, and for every other reading — twice, once
for each half, since which half a thinned sampler would have kept is chance.

With `--windows`, it checks that rule instead: for each window `[ts - lo, ts - hi]` of a grid,
the mean absolute error over 100 ms windows of time, per device series and averaged.
Needs `msgpack`.
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import psrec  # noqa: E402

MS = 1_000_000
WINDOWS_MS = (50, 100, 250)


def load(path):
    hello, readings, spans = {}, {}, {}
    for kind, e in psrec.read(path, []):
        if kind == "hello":
            hello = e
        elif kind == "gpu_sample" and e["util_pct"] is not None:
            readings.setdefault(e["device"], []).append((e["ts"], e["util_pct"]))
        elif kind == "gpu_span":
            spans.setdefault(e["device"], []).append((e["start"], e["end"]))
    return hello, readings, spans


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def busy_pct(busy, a, b):
    return sum(max(0, min(e, b) - max(s, a)) for s, e in busy) / (b - a) * 100


def estimate(readings, a, b, period, lo=None, hi=None):
    """The readings' estimate of the busy share of [a, b): each reading speaks for
    [ts - lo, ts - hi] (the analysis's rule, 3p and p/2, unless given)."""
    lo = 3 * period if lo is None else lo
    hi = period // 2 if hi is None else hi
    num = den = 0.0
    for ts, util in readings:
        overlap = max(0, min(ts - hi, b) - max(ts - lo, a))
        num += overlap * util
        den += overlap
    return num / den if den else None


def corr(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    return sxy / (sx * sy) if sx and sy else float("nan")


def windows(paths):
    """The grid of reading windows, scored on every device series of `paths`."""
    series = []
    for path in paths:
        hello, readings, spans = load(path)
        for dev in sorted(set(readings) & set(spans)):
            series.append((union(spans[dev]), readings[dev]))
    for lo in (150, 200, 250, 300, 350, 400):
        for hi in (0, 25, 50, 75, 100):
            if lo - hi < 100:
                continue
            maes = []
            for busy, r in series:
                errs, a = [], r[0][0]
                while a + 100 * MS <= r[-1][0]:
                    e = estimate(r, a, a + 100 * MS, 0, lo * MS, hi * MS)
                    if e is not None:
                        errs.append(abs(e - busy_pct(busy, a, a + 100 * MS)))
                    a += 50 * MS
                maes.append(statistics.mean(errs))
            print(f"[ts - {lo}, ts - {hi}] ms: mean MAE {statistics.mean(maes):5.2f} over "
                  f"{len(maes)} series  " + " ".join(f"{m:5.1f}" for m in maes))


def main():
    if sys.argv[1:2] == ["--windows"]:
        windows(sys.argv[2:])
        return
    for path in sys.argv[1:]:
        hello, readings, spans = load(path)
        period = (hello or {}).get("gpu_sample_interval_ns") or 100 * MS
        for dev in sorted(set(readings) & set(spans)):
            busy, r = union(spans[dev]), readings[dev]
            sets = {"all": r, "even": r[::2], "odd": r[1::2]}
            for w in WINDOWS_MS:
                rows, a = [], r[0][0]
                while a + w * MS <= r[-1][0]:
                    b = a + w * MS
                    est = {k: estimate(v, a, b, period) for k, v in sets.items()}
                    if None not in est.values():
                        rows.append((busy_pct(busy, a, b), est))
                    a += w * MS // 2
                if len(rows) < 3:
                    continue
                truth = [t for t, _ in rows]
                cols = []
                for k in sets:
                    est = [e[k] for _, e in rows]
                    mae = statistics.mean(abs(t - e) for t, e in zip(truth, est))
                    cols.append(f"{k} {mae:5.1f} / {corr(truth, est):4.2f}")
                print(f"{Path(path).name:<30} gpu{dev} {len(r):>5} readings, {w:>3} ms windows "
                      f"({len(rows):>5}): MAE / r  " + "   ".join(cols))


if __name__ == "__main__":
    main()
