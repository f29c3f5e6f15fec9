#!/usr/bin/env python3
"""Compiles the kernel sources with the local NVRTC (no GPU needed) the way the prover does at
run time (each unit a module with its headers inlined once, at its ptxas level,
--gpu-architecture=sm_90: ptxas runs too), to catch compile errors before spending device time.
Usage: tools/nvrtc-check.py [libnvrtc.so [NVRTC options…]] ; prints the log and the CUBIN size.
With PS_CUBIN=PREFIX in the environment each unit's CUBIN is written to PREFIX-<unit>.cubin (for `cuobjdump -sass FILE`:
instructions counted per kernel, again without a GPU; cuobjdump and nvdisasm come in PyPI's
`nvidia-cuda-cuobjdump` and `nvidia-cuda-nvdisasm` wheels).
With --ptxas-options=-v it ends with a table of every kernel's registers, stack and spills:
a figure that needs no GPU (register pressure, e.g. before and after a change to a kernel).
No CUDA here? `pip download --no-deps nvidia-cuda-nvrtc-cu12` and unzip the wheel: its
nvidia/cuda_nvrtc/lib/libnvrtc.so.12 works on a machine without a GPU."""
import ctypes, os, pathlib, re, sys

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libnvrtc.so.11.2")
cuda = pathlib.Path(__file__).resolve().parent.parent / "cuda"

# (unit, ptxas level), read from prover-core/src/gpu/kernels.rs, which builds them so (one
# list, not two); PROOFSCOPE_PTXAS_LEVEL overrides every level there and here.
KERNELS_RS = cuda.parent / "prover-core" / "src" / "gpu" / "kernels.rs"
UNITS = [(f, int(l)) for f, l in re.findall(
    r'file:\s*"([a-z_0-9]+\.cu)",\s*ptxas_level:\s*(\d)', KERNELS_RS.read_text())]
assert UNITS, f"no units found in {KERNELS_RS}"

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

def source(unit):
    out = []
    expand(unit, set(), out)
    return "\n".join(out)

def kernel_table(log):
    """Per entry function: registers, stack frame, spill stores and loads (ptxas -v)."""
    rows, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            rows[cur] = {}
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and "stack" not in rows[cur]:
            rows[cur].update(stack=m.group(1), stores=m.group(2), loads=m.group(3))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            rows[cur]["regs"] = m.group(1)
    out = [f"{'kernel':28s} {'regs':>5} {'stack B':>8} {'spill st B':>11} {'spill ld B':>11}"]
    for k, v in sorted(rows.items()):
        out.append(f"{k:28s} {v.get('regs', '?'):>5} {v.get('stack', '?'):>8} "
                   f"{v.get('stores', '?'):>11} {v.get('loads', '?'):>11}")
    return "\n".join(out)

ok = True
for mod, level in UNITS:
    level = int(os.environ.get("PROOFSCOPE_PTXAS_LEVEL", level))
    src = source(mod).encode()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, mod.encode(), 0, None, None) == 0
    opts = [b"--gpu-architecture=sm_90", b"--std=c++17", b"-default-device",
            f"--ptxas-options=-O{level}".encode()] + [o.encode() for o in sys.argv[2:]]
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
    print(f"{mod}: ok, CUBIN {size.value} bytes (sm_90, ptxas -O{level})")
    if os.environ.get("PS_CUBIN"):
        cubin = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, cubin)
        pathlib.Path(f"{os.environ['PS_CUBIN']}-{mod.removesuffix('.cu')}.cubin").write_bytes(cubin.raw)
    if "Used " in log.value.decode():
        print(kernel_table(log.value.decode()))
sys.exit(0 if ok else 1)
