#!/usr/bin/env python3
"""How far a log line's write stamp (protocol OutputWrite) is from the prover's own clock.

Builds a small C program that prints N lines to stderr, each carrying CLOCK_REALTIME in ns
as the program read it just before the fprintf, runs it under `proofscope run --record`
(optionally beside busy loops, and with run's relay stopped 250 ms of every 300 ms), then
maps each line of its output (run's --log file) to the write that carried its first byte
and prints the stamp minus the program's own time: p50, p99, max — and how many lines had
no stamp.

    python3 tools/stamp-error.py [--busy N] [--starve] [--lines N] [--proofscope BIN] [--preload SO]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import psrec  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  usleep(300000);
  for (int i = 0; i < n; i++) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    fprintf(stderr, "CUZK_TIMING: line=%d t=%lld\n", i, (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    usleep(2000);
  }
  return 0;
}
"""


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--starve", action="store_true")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--proofscope", default="target/release/proofscope")
    ap.add_argument("--preload", default="target/release/libproofscope_preload.so")
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    src, exe = os.path.join(d, "p.c"), os.path.join(d, "p")
    open(src, "w").write(PROGRAM)
    subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
    rec, log = os.path.join(d, "r.psrec"), os.path.join(d, "out.log")
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    run = subprocess.Popen([a.proofscope, "run", "--headless", "--preload", a.preload, "--record", rec,
                            "--log", log, "-o", os.devnull, "--", exe, str(a.lines)])
    stop = threading.Event()

    def starve():
        relay = None
        while relay is None and not stop.is_set():
            for p in os.listdir("/proc"):
                if p.isdigit():
                    try:
                        st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                        cmd = open(f"/proc/{p}/cmdline", "rb").read()
                    except OSError:
                        continue
                    if int(st[1]) == run.pid and b"__relay" in cmd:
                        relay = int(p)
            time.sleep(0.01)
        while not stop.is_set():
            try:
                os.kill(relay, signal.SIGSTOP)
                time.sleep(0.25)
                os.kill(relay, signal.SIGCONT)
                time.sleep(0.05)
            except ProcessLookupError:
                return

    t = threading.Thread(target=starve) if a.starve else None
    if t:
        t.start()
    run.wait()
    stop.set()
    if t:
        t.join()
    for b in busy:
        b.kill()
    events = list(psrec.read(rec, []))
    hello = next(e for k, e in events if k == "hello")
    origin = hello["session_start_unix_ns"]
    writes = [e for k, e in events if k == "output_write" and e["stream"] == 2]
    data = open(log, "rb").read()
    errs, missing, at = [], 0, 0
    for line in data.split(b"\n"):
        if b" t=" in line:
            own = int(line.rsplit(b"t=", 1)[1])
            w = next((w for w in writes if w["offset"] <= at < w["offset"] + w["bytes"]), None)
            if w is None:
                missing += 1
            else:
                errs.append(origin + w["ts"] - own)
        at += len(line) + 1
    us = [e / 1000 for e in errs]
    print(f"busy {a.busy}, relay starved {a.starve}: {len(errs)} lines stamped, {missing} without a stamp; "
          f"stamp − the prover's own clock: p50 {pct(us, 50):.1f} µs, p99 {pct(us, 99):.1f} µs, max {max(us):.1f} µs, "
          f"min {min(us):.1f} µs")


if __name__ == "__main__":
    main()
