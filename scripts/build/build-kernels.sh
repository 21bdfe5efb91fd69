#!/usr/bin/env bash
# Builds kernels/nvcam_kernels.fatbin (committed; the library embeds it) from kernels/*.cu and the
# headers they include (kernels/*.cuh, nvcam_abi.cuh among them: `cargo xtask gen` writes it), and
# kernels/test/nvcam_test_kernels.fatbin (the kernels only tests load) from kernels/test/*.cu, with
# no CUDA toolkit and no host compiler: NVRTC 11.8 from PyPI's nvidia-cuda-nvrtc-cu11 wheel
# compiles each architecture's SASS (cubin) and the PTX, and libnvfatbin from PyPI's
# nvidia-nvfatbin-cu12 wheel packs them (uncompressed, so old drivers need no decompressor).
#
# Why these tools: PyPI's nvidia-cuda-nvcc-cu11/-cu12 wheels hold ptxas and the NVVM library but
# not the nvcc driver or its front end (cicc); NVRTC is the CUDA C++ front end that PyPI ships.
# 11.8 is the newest toolkit that still targets sm_50..sm_70 offline *and* knows sm_90, and SASS
# built by an 11.x toolkit loads on R450+ drivers (PTX JIT needs a driver as new as 11.8: R520+).
#
# Writes both fatbins and kernels/nvcam_kernels.manifest (source hash, tools, architectures).
# tests/kernels_manifest.rs fails when a .cu or .cuh changed without a rebuild.
# Usage: bash scripts/build/build-kernels.sh   (needs python3, pip and network access to PyPI)
set -euo pipefail
cd "$(dirname "$0")/../.."
NVRTC_WHEEL="nvidia-cuda-nvrtc-cu11==11.8.89"
FATBIN_WHEEL="nvidia-nvfatbin-cu12==12.9.82"
ARCHS="50 52 60 61 70 75 80 86 89 90"
PTX_ARCH="90"
tools="${NVCAM_KERNEL_TOOLS:-target/kernel-tools}"
if [ ! -e "$tools/.done" ]; then
    rm -rf "$tools" && mkdir -p "$tools/wheels"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        -d "$tools/wheels" "$NVRTC_WHEEL" "$FATBIN_WHEEL"
    for w in "$tools"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tools/x"; done
    touch "$tools/.done"
fi
NVRTC_LIB="$(ls "$tools"/x/nvidia/cuda_nvrtc/lib/libnvrtc.so.* | head -1)"
FATBIN_LIB="$(ls "$tools"/x/nvidia/nvfatbin/lib/libnvfatbin.so.* | head -1)"
export LD_LIBRARY_PATH="$tools/x/nvidia/cuda_nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 - "$NVRTC_LIB" "$FATBIN_LIB" "$ARCHS" "$PTX_ARCH" "$NVRTC_WHEEL" "$FATBIN_WHEEL" <<'PY'
import ctypes, glob, hashlib, os, sys
nvrtc_path, fatbin_path, archs, ptx_arch, nvrtc_wheel, fatbin_wheel = sys.argv[1:]
archs = archs.split()
nvrtc = ctypes.CDLL(nvrtc_path)
fb = ctypes.CDLL(fatbin_path)
rel = lambda p: os.path.relpath(p, "kernels")
# Every source, by its path in kernels/: the release module's .cu files and the headers they
# include, and the test module's .cu files.
srcs = sorted(glob.glob("kernels/*.cu") + glob.glob("kernels/*.cuh") + glob.glob("kernels/test/*.cu"), key=rel)
# The source hash the manifest test recomputes: per file, its path in kernels/, a newline, its bytes.
h = hashlib.sha256()
for s in srcs:
    h.update(rel(s).encode() + b"\n")
    h.update(open(s, "rb").read())
# The headers, given to NVRTC by name (`#include "x.cuh"` finds exactly the hashed files).
headers = sorted(glob.glob("kernels/*.cuh"), key=rel)
header_names = (ctypes.c_char_p * len(headers))(*[rel(p).encode() for p in headers])
header_texts = (ctypes.c_char_p * len(headers))(*[open(p, "rb").read() for p in headers])

def unit(files):
    """One translation unit: the files, in name order."""
    return b"".join(b'#line 1 "%s"\n' % rel(s).encode() + open(s, "rb").read() + b"\n" for s in files)
major, minor = ctypes.c_int(), ctypes.c_int()
nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
nvrtc_version = f"{major.value}.{minor.value}"

def compile(source, arch, ptx):
    prog = ctypes.c_void_p()
    r = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source, b"nvcam_kernels.cu", len(headers), header_texts, header_names)
    assert r == 0, f"nvrtcCreateProgram: {r}"
    target = f"--gpu-architecture={'compute' if ptx else 'sm'}_{arch}".encode()
    # --fmad=false: the CPU path (src/convert/cpu.rs) does these float operations unfused.
    # No -lineinfo: it embeds the PTX text per architecture and triples the fatbin (add it
    # locally when a sanitizer report needs source lines).
    opts = [target, b"--fmad=false", b"--std=c++14"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if r != 0:
        sys.exit(f"NVRTC failed for {target.decode()}:\n{log.value.decode()}")
    if log.value.strip():
        print(log.value.decode(), file=sys.stderr)
    get_size, get = (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if ptx else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    get_size(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    assert get(prog, buf) == 0
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw

def fatbin(source, name):
    """SASS for every architecture and the PTX of one translation unit, packed."""
    handle = ctypes.c_void_p()
    fopts = [b"-64", b"-compress=false", b"-host=linux"]
    r = fb.nvFatbinCreate(ctypes.byref(handle), (ctypes.c_char_p * len(fopts))(*fopts), len(fopts))
    assert r == 0, f"nvFatbinCreate: {r}"
    for a in archs:
        cubin = compile(source, a, False)
        r = fb.nvFatbinAddCubin(handle, cubin, ctypes.c_size_t(len(cubin)), a.encode(), name)
        assert r == 0, f"nvFatbinAddCubin sm_{a}: {r}"
        print(f"{name.decode()} sm_{a}: {len(cubin)} bytes of SASS")
    ptx = compile(source, ptx_arch, True)
    r = fb.nvFatbinAddPTX(handle, ptx, ctypes.c_size_t(len(ptx)), ptx_arch.encode(), name, b"")
    assert r == 0, f"nvFatbinAddPTX: {r}"
    n = ctypes.c_size_t()
    assert fb.nvFatbinSize(handle, ctypes.byref(n)) == 0
    out = ctypes.create_string_buffer(n.value)
    assert fb.nvFatbinGet(handle, out) == 0
    fb.nvFatbinDestroy(ctypes.byref(handle))
    return out.raw

# The release module: every kernels/*.cu. The test module: kernels/test/*.cu, which only
# test-hooks builds of the library embed.
release = fatbin(unit(sorted(glob.glob("kernels/*.cu"), key=rel)), b"nvcam_kernels")
test = fatbin(unit(sorted(glob.glob("kernels/test/*.cu"), key=rel)), b"nvcam_test_kernels")
open("kernels/nvcam_kernels.fatbin", "wb").write(release)
open("kernels/test/nvcam_test_kernels.fatbin", "wb").write(test)
with open("kernels/nvcam_kernels.manifest", "w") as m:
    m.write("# Written by scripts/build/build-kernels.sh; checked by tests/kernels_manifest.rs.\n")
    m.write(f"source_sha256={h.hexdigest()}\n")
    m.write(f"sources={' '.join(rel(s) for s in srcs)}\n")
    m.write(f"compiler=NVRTC {nvrtc_version} ({nvrtc_wheel}), options --fmad=false --std=c++14\n")
    m.write(f"packer=nvFatbin ({fatbin_wheel}), options -64 -compress=false -host=linux\n")
    m.write(f"sass={' '.join('sm_' + a for a in archs)}\n")
    m.write(f"ptx=compute_{ptx_arch}\n")
    m.write(f"fatbin_bytes={len(release)}\n")
    m.write(f"fatbin_sha256={hashlib.sha256(release).hexdigest()}\n")
    m.write(f"test_fatbin_bytes={len(test)}\n")
    m.write(f"test_fatbin_sha256={hashlib.sha256(test).hexdigest()}\n")
print(f"kernels/nvcam_kernels.fatbin: {len(release)} bytes; kernels/test/nvcam_test_kernels.fatbin: {len(test)} bytes")
PY
