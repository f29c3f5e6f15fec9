#!/usr/bin/env python3
"""Compiles the kernel sources with the local NVRTC (no GPU needed) the way the prover does at
run time (fr.cuh inlined, --gpu-architecture=sm_90: ptxas runs too), to catch compile errors before spending device time.
Usage: tools/nvrtc-check.py [libnvrtc.so] ; prints the log and the PTX size per module."""
import ctypes, pathlib, sys

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libnvrtc.so.11.2")
cuda = pathlib.Path(__file__).resolve().parent.parent / "cuda"

def source(name):
    text = (cuda / name).read_text()
    out = []
    for line in text.splitlines():
        if line.strip().startswith('#include "'):
            inc = line.split('"')[1]
            out.append(source(inc))
        elif line.strip() == "#pragma once":
            continue
        else:
            out.append(line)
    return "\n".join(out)

ok = True
for mod in sorted(p.name for p in cuda.glob("*.cu")):
    src = source(mod).encode()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, mod.encode(), 0, None, None) == 0
    opts = [b"--gpu-architecture=sm_90", b"--std=c++17", b"-default-device"]
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
