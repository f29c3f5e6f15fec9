#!/usr/bin/env python3
"""Compiles the kernel sources with the local NVRTC (no GPU needed) the way the prover does at
run time (the units with their headers inlined once, --gpu-architecture=sm_90: ptxas runs too), to catch compile errors before spending device time.
Usage: tools/nvrtc-check.py [libnvrtc.so] ; prints the log and the PTX size per module."""
import ctypes, pathlib, sys

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libnvrtc.so.11.2")
cuda = pathlib.Path(__file__).resolve().parent.parent / "cuda"

UNITS = ["ntt.cu", "msm.cu"]  # as prover-core/src/gpu/kernels.rs builds the one module

def expand(name, seen, out):
    if name in seen:
        return
    seen.add(name)
    for line in (cuda / name).read_text().splitlines():
        t = line.strip()
        if t.startswith('#include "'):
            expand(t.split('"')[1], seen, out)
        elif t != "#pragma once":
            out.append(line)

def source():
    out, seen = [], set()
    for u in UNITS:
        expand(u, seen, out)
    return "\n".join(out)

ok = True
for mod in ["proofscope.cu"]:
    src = source().encode()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, mod.encode(), 0, None, None) == 0
    opts = [b"--gpu-architecture=sm_90", b"--std=c++17", b"-default-device"] + [o.encode() for o in sys.argv[2:]]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        print(f"--- {mod} log:\n{log.value.decode()}")
    if rc != 0:
        ok = False
        print(f"{mod}: FAILED ({rc})")
        continue
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    print(f"{mod}: ok, CUBIN {size.value} bytes (sm_90)")
sys.exit(0 if ok else 1)
