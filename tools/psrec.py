#!/usr/bin/env python3
"""A complete decoder of proofscope recordings, written from docs/PROTOCOL.md alone.

Usage: python3 tools/psrec.py FILE.psrec [--summary]
Needs the `msgpack` package (pip install msgpack). CI runs it on the recordings in
recordings/ to keep the spec honest. Like every conforming reader, it skips a frame that does
not decode (reporting its offset on stderr) and stops at a frame of another major version.
"""
import argparse
import struct
import sys

import msgpack

MAX_FRAME = 4 << 20
MAGIC = b"\x89PSREC\r\n"
KINDS = {1: "hello", 2: "name_def", 3: "thread_def", 4: "proof_begin", 5: "proof_end",
         6: "span_begin", 7: "span_end", 8: "marker", 9: "alloc_sample", 10: "alloc",
         11: "release", 12: "gpu_sample", 13: "gpu_span", 14: "dropped", 15: "heartbeat",
         16: "history_gap", 17: "live_start", 18: "goodbye", 19: "thread_sched", 20: "stack_def",
         21: "output_write", 22: "gpu_process", 23: "thread_kernel",
         24: "stack_sample", 32: "subscribe"}
MIN_FIELDS = {1: 1, 2: 2, 3: 3, 4: 2, 5: 2, 6: 6, 7: 2, 8: 5, 9: 8, 10: 5, 11: 5, 12: 13,
              13: 6, 14: 2, 15: 1, 16: 4, 17: 1, 18: 2, 19: 5, 20: 2, 21: 5, 22: 4, 23: 8,
              24: 3, 32: 2}


def frames(data, offset=0):
    """Yields (offset, body); stops at a truncation, reporting it on stderr."""
    i = offset
    while i < len(data):
        if i + 4 > len(data):
            print(f"truncated at byte {i}: incomplete length prefix", file=sys.stderr)
            return
        (n,) = struct.unpack_from("<I", data, i)
        if n > MAX_FRAME:
            raise ValueError(f"byte {i}: frame length {n} exceeds {MAX_FRAME}")
        if i + 4 + n > len(data):
            print(f"truncated at byte {i}: frame needs {n + 4} bytes, {len(data) - i} present",
                  file=sys.stderr)
            return
        yield i, data[i + 4:i + 4 + n]
        i += 4 + n


class OtherMajor(Exception):
    """A frame of another major version: nothing after it can be read."""


class BadFrame(Exception):
    """A frame that does not decode: skipped whole."""


def check(cond, what):
    if not cond:
        raise BadFrame(what)


def events(body):
    try:
        arr = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as e:  # any MessagePack error rejects the frame
        raise BadFrame(f"not MessagePack: {e}") from None
    check(isinstance(arr, list) and len(arr) >= 3, "frame body is not an array of 3+ elements")
    major, minor, base, evs = arr[0], arr[1], arr[2], arr[3:]
    check(all(isinstance(x, int) and not isinstance(x, bool) for x in (major, minor, base)),
          "frame header is not three integers")
    if major != 1:
        raise OtherMajor(f"protocol {major}.{minor}; this decoder speaks 1.x")
    cur = {"t": base, "s": 0}

    def ts(d):
        cur["t"] += d
        return cur["t"]

    def span(d):
        if d is None:
            return None
        cur["s"] += d
        return cur["s"]

    for e in evs:
        check(isinstance(e, list) and len(e) >= 1, "an event is not an array with a tag")
        tag, f = e[0], e[1:]
        if tag not in KINDS:
            continue  # unknown kind: skipped
        check(len(f) >= MIN_FIELDS[tag],
              f"event tag {tag} has {len(f)} field(s) after its tag, needs {MIN_FIELDS[tag]}")
        k = KINDS[tag]
        if tag == 1:
            yield k, f[0]
        elif tag == 2:
            yield k, {"id": f[0], "name": f[1]}
        elif tag == 3:
            yield k, {"id": f[0], "name": f[1], "os_tid": f[2]}
        elif tag in (4, 5):
            t = ts(f[0])
            yield k, dict(f[1], ts=t)
        elif tag == 6:
            s = span(f[0])
            parent = None if f[1] is None else s - f[1]
            yield k, {"span": s, "parent": parent, "proof": f[2], "name": f[3],
                      "thread": f[4], "ts": ts(f[5])}
        elif tag == 7:
            s = span(f[0])
            yield k, {"span": s, "ts": ts(f[1])}
        elif tag == 8:
            t = ts(f[0])
            yield k, {"ts": t, "name": f[1], "thread": f[2], "span": span(f[3]), "text": f[4]}
        elif tag == 9:
            names = ["live_bytes", "peak_bytes", "allocs", "frees", "alloc_bytes",
                     "free_bytes", "rss_bytes"]
            t = ts(f[0])
            yield k, dict(zip(names, f[1:8]), ts=t)
        elif tag in (10, 11):
            t = ts(f[0])
            ev = {"ts": t, "bytes": f[1], "inside_ns": f[2], "thread": f[3],
                  "span": span(f[4])}
            if len(f) > 5:  # since 1.3: the stack id, absolute
                ev["stack"] = f[5]
            yield k, ev
        elif tag == 12:
            names = ["device", "util_pct", "mem_util_pct", "mem_used_bytes", "mem_total_bytes",
                     "power_mw", "energy_mj", "temp_c", "sm_clock_mhz", "mem_clock_mhz",
                     "pcie_rx_kbps", "pcie_tx_kbps"]
            t = ts(f[0])
            yield k, dict(zip(names, f[1:13]), ts=t)
        elif tag == 13:
            start = ts(f[0])
            yield k, {"start": start, "end": start + f[1], "device": f[2], "stream": f[3],
                      "name": f[4], "span": span(f[5])}
        elif tag == 14:
            t = ts(f[0])
            yield k, {"ts": t, "counts": {KINDS.get(kt, kt): n for kt, n in f[1].items()}}
        elif tag in (15, 17):
            yield k, {"ts": ts(f[0])}
        elif tag == 16:
            t = ts(f[0])
            yield k, {"ts": t, "evicted_events": f[1], "evicted_from": f[2],
                      "evicted_until": f[3]}
        elif tag == 18:
            yield k, {"ts": ts(f[0]), "reason": f[1]}
        elif tag == 20:
            yield k, {"id": f[0], "frames": list(f[1])}
        elif tag == 19:
            # Since 1.2; absolute fields, no cursor moves.
            yield k, {"ts": f[0], "thread": f[1], "cpu_ns": f[2], "runq_ns": f[3],
                      "timeslices": f[4]}
        elif tag == 21:
            # Since 1.5; absolute fields, no cursor moves.
            yield k, {"ts": f[0], "thread": f[1], "stream": f[2], "offset": f[3],
                      "bytes": f[4]}
        elif tag == 22:
            # Since 1.6; absolute fields, no cursor moves.
            yield k, {"ts": f[0], "device": f[1], "context": f[2], "used_bytes": f[3]}
        elif tag == 23:
            # Since 1.7; absolute fields, no cursor moves.
            yield k, {"ts": f[0], "thread": f[1], "minor_faults": f[2], "major_faults": f[3],
                      "user_ns": f[4], "system_ns": f[5], "syscall": f[6],
                      "syscall_arg": f[7]}
        elif tag == 24:
            # Since 1.7; absolute fields, no cursor moves.
            yield k, {"ts": f[0], "thread": f[1], "stack": f[2]}
        elif tag == 32:
            yield k, {"history": f[0], "client": f[1]}


def read(path, bad):
    """Yields (kind, event); appends (offset, why) to `bad` for each frame skipped."""
    with open(path, "rb") as fh:
        data = fh.read()
    if not data:
        raise ValueError("empty recording (the writer stopped before its header)")
    if data[:8] != MAGIC:
        raise ValueError("not a proofscope recording")
    if len(data) < 12:
        raise ValueError("recording cut inside its header")
    version, flags = struct.unpack_from("<HH", data, 8)
    if version != 1:
        raise ValueError(f"recording version {version} not supported")
    if flags != 0:
        raise ValueError(f"recording header flags 0x{flags:04x}: no flags are defined")
    for off, body in frames(data, 12):
        try:
            # A frame is accepted or rejected whole.
            evs = list(events(body))
        except (BadFrame, TypeError, KeyError, IndexError, AttributeError, ValueError) as e:
            bad.append((off, str(e) or type(e).__name__))
            print(f"frame at byte {off} skipped: {e}", file=sys.stderr)
            continue
        yield from evs


def main():
    ap = argparse.ArgumentParser(
        description="Decode a proofscope recording (docs/PROTOCOL.md) and print its events.")
    ap.add_argument("file", help="the recording (.psrec)")
    ap.add_argument("--summary", action="store_true",
                    help="print only the event counts and span names")
    args = ap.parse_args()
    path = args.file
    bad = []
    counts = {}
    names = {}
    spans = {}
    try:
        for kind, ev in read(path, bad):
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "name_def":
                names[ev["id"]] = ev["name"]
            elif kind == "span_begin":
                spans[ev["span"]] = ev
            if not args.summary:
                print(kind, ev)
    except (OtherMajor, ValueError, OSError) as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        sys.exit(1)
    phases = sorted({names.get(s["name"], "?") for s in spans.values()})
    print("events:", ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    print("span names:", ", ".join(phases))
    print("bad frames:", len(bad))


if __name__ == "__main__":
    main()
