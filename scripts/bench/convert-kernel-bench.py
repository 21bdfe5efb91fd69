#!/usr/bin/env python3
"""Kernel-only throughput of the conversion kernels, on the GPU machine (CuPy there).

Loads one or more builds of kernels/ (fatbins, each beside the kernels/ sources it was built from
(builds from before the kernels were split by family), or the committed fatbin by default, whose
shapes come from kernels/*.cu and *.cuh), launches the kernels directly with cuLaunchKernel on synthetic
NV12 frames (no nvcam calls, no events between launches: what the kernel itself costs), 200
launches queued behind the fatbin's spin kernel and timed with events, and prints GB/s = (NV12
read + output written) / time beside a device-to-device copy of the same bytes (half read, half
written), and their ratio. examples/convert_bench measures the same conversions through
nvcam_frame_convert (which adds an event wait and record per call). The box filter is launched as
src/convert/launch.rs launches it (its tiled kernels and their shared memory, in builds that have
them). Every build must write the same bytes in every case, the kernels being exact: a difference
is printed and the exit status is 1. KB_ALL=1 adds the goal rows (every same-size format, the downscales), KB_SIZES=WxH,... picks
the frames, KB_ONLY=text the cases whose name contains it.

  python3 scripts/bench/convert-kernel-bench.py [BUILD.fatbin ...]   # BUILD.cu beside each, or
                                                               # kernels/*.cu, *.cuh
The parameter blocks mirror kernels/nvcam_abi.cuh (`cargo xtask gen` writes it from
src/gpu/params.rs). The spin kernel comes from the build, or from kernels/test/'s fatbin.
"""
import ctypes
import os
import re
import struct
import sys

import cupy as cp

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
N = int(os.environ.get("KB_N", "200"))
# KB_FENCE=1: also time each single-frame case with the API's per-call stream work after every
# launch (query + wait on the slot's consumer event, then record it), to split the API's cost.
FENCE = os.environ.get("KB_FENCE") == "1"
# KB_SITING: the frames' chroma siting, as the item's (chroma_x, chroma_y) in half pixels:
# left (H.264/HEVC's default), center (JPEG) or topleft. Builds from before siting ignore it.
SITING = {"left": (1, 2), "center": (2, 2), "topleft": (1, 1)}[os.environ.get("KB_SITING", "left")]
KERNELS = {"same8": "nvcam_convert_same", "samef": "nvcam_convert_same_float", "area": "nvcam_convert_area", "bilinear": "nvcam_convert_bilinear",
           "batch": "nvcam_convert_batch", "spin": "nvcam_test_spin_copy"}

cp.cuda.Device(0).use()
cp.zeros(1)  # the primary context, current on this thread
cu = ctypes.CDLL("libcuda.so.1")
stream = cp.cuda.Stream(non_blocking=True)
S = ctypes.c_void_p(stream.ptr)


def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")


def load(fatbin):
    """The build's kernels and, from its source's #defines, the pixels one thread converts."""
    src = fatbin[: -len(".fatbin")] + ".cu"
    kdir = os.path.join(root, "kernels")
    srcs = [src] if os.path.exists(src) else [os.path.join(kdir, f) for f in sorted(os.listdir(kdir)) if f.endswith((".cu", ".cuh"))]
    text = "".join(open(s).read() for s in srcs)
    m = {k: int(v) for k, v in re.findall(r"#define (\w+) (\d+)\n", text)}
    data = open(fatbin, "rb").read()
    image = (ctypes.c_uint64 * ((len(data) + 7) // 8))()
    ctypes.memmove(image, data, len(data))
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
    k = {"image": image, "px": {"same8": m["SAME8_PX"] * m.get("SAME8_G", 1), "samef": m["SAMEF_PX"] * m.get("SAMEF_G", 1),
                                "area": m["AREA_PX"], "batch": m["BATCH_PX"], "bilinear": m["RESIZE_PX"]},
         "rows": {"same8": m.get("SAME8_ROWS", 1), "samef": m.get("SAMEF_ROWS", 1), "area": 1, "batch": 1, "bilinear": 1},
         # Builds with the shared-memory box filter get dynamic shared memory for it.
         "block": (m.get("BLOCK_X", 32), m.get("BLOCK_Y", 8))}
    # Newer builds have the box filter's tiled kernels (None in older builds, which lack them).
    for key in ("area4", "area_tiled", "batch_tiled"):
        k[key] = None
        if ("nvcam_convert_%s(" % key) in text:
            fk = ctypes.c_void_p()
            ck(cu.cuModuleGetFunction(ctypes.byref(fk), mod, ("nvcam_convert_" + key).encode()), key)
            k[key] = fk
    for key, name in KERNELS.items():
        f = ctypes.c_void_p()
        r = cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode())
        if r == 500 and key == "spin":  # CUDA_ERROR_NOT_FOUND: builds since the split keep it apart
            k["test_image"], tmod = load_image(os.path.join(kdir, "test", "nvcam_test_kernels.fatbin"))
            r = cu.cuModuleGetFunction(ctypes.byref(f), tmod, name.encode())
        ck(r, name)
        k[key] = f
    return k


def load_image(path):
    """A fatbin's image (kept alive by the caller) and its module."""
    data = open(path, "rb").read()
    image = (ctypes.c_uint64 * ((len(data) + 7) // 8))()
    ctypes.memmove(image, data, len(data))
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData " + path)
    return image, mod


def spin(k):
    a = [ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_int64(300_000_000)]
    args = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in a])
    ck(cu.cuLaunchKernel(k["spin"], 1, 1, 1, 32, 1, 1, 0, S, args, None), "spin")


def timed(k, body):
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    spin(k)  # the launches queue up behind it, so host enqueue time leaves no gaps
    e0.record(stream)
    body()
    e1.record(stream)
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) / 1e3


# BT.709 limited range (src/convert/mod.rs Coeffs).
kr, kb = 0.2126, 0.0722
kg, cs = 1 - kr - kb, 255 / 224
COEFFS = (16.0, 255 / 219, cs * 2 * (1 - kr), cs * 2 * kb * (1 - kb) / kg, cs * 2 * kr * (1 - kr) / kg, cs * 2 * (1 - kb))


def common(fmt, out_w, out_h, bpp):
    row = out_w * bpp
    return struct.pack("<QQIii3f3f3f", row, row * out_h, fmt, out_w, out_h, 114, 114, 114, *[1 / 255] * 3, 0, 0, 0)


def item(w, h, y, uv, pitch, dst, img, mode):
    # The whole frame: ROI origin (0, 0), frame size w x h (before siting: the ROI's size, the
    # same numbers), then the chroma siting.
    ix, iy, iw, ih = img
    return struct.pack("<QQQQiiiiiiiiffIffffffiiI", y, uv, dst, pitch, 0, 0, w, h, ix, iy, iw, ih, w / iw, h / ih, mode, *COEFFS, *SITING, 0)


# (name, format, bytes per pixel, output side (0: same size), letterbox, frames per launch)
CASES = [("BGRA8, same size", 1, 4, 0, False, 1), ("RGB8, same size", 3, 3, 0, False, 1), ("planar f32, same size", 5, 4, 0, False, 1),
         ("planar f16, letterbox 640x640", 6, 2, 640, True, 1), ("planar f16, letterbox 640x640, batch of 16 (one launch)", 6, 2, 640, True, 16)]
# KB_ALL=1: also the goal rows the kernels were tuned for (every same-size format, downscales into 640 and 320).
if os.environ.get("KB_ALL") == "1":
    CASES += [("BGR8, same size", 2, 3, 0, False, 1), ("GRAY8, same size", 4, 1, 0, False, 1), ("planar f16, same size", 6, 2, 0, False, 1),
              ("RGB8, letterbox 640x640", 3, 3, 640, True, 1), ("planar f16, resize 640x640", 6, 2, 640, False, 1),
              ("planar f16, letterbox 320x320", 6, 2, 320, True, 1), ("RGB8, resize 320x320", 3, 3, 320, False, 1),
              ("planar f32, resize 640x640, batch of 16 (one launch)", 5, 4, 640, False, 16)]
# KB_ONLY: run only the cases whose name contains this text (e.g. for a profiler).
if os.environ.get("KB_ONLY"):
    CASES = [c for c in CASES if os.environ["KB_ONLY"] in c[0]]
SIZES = [tuple(int(v) for v in s.split("x")) for s in os.environ.get("KB_SIZES", "1920x1080,3840x2160").split(",")]
THREADS = (32, 4)
SMS = 132
MISMATCH = []


def area_smem(px, sx, sy, rpt=1):
    """src/convert/launch.rs area_smem: the dynamic shared memory a box-filter launch gets."""
    import math
    tw, th = THREADS[0] * px, THREADS[1] * rpt
    align = lambda b: (math.ceil(b) + 15) // 16 * 16
    lw, lr = align(tw * sx + 2 + 32), math.ceil(th * sy) + 3
    cw, cr = align(2 * (math.ceil(tw * sx / 2) + 3) + 32), math.ceil(th * sy / 2) + 3
    return lr * lw + cr * cw + 64


def main():
    paths = sys.argv[1:] or [os.path.join(root, "kernels", "nvcam_kernels.fatbin")]
    builds = {os.path.basename(p)[: -len(".fatbin")]: load(p) for p in paths}
    first = next(iter(builds.values()))
    ratios = {b: [] for b in builds}
    print(f"convert-kernel-bench on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {N} launches per figure, chroma siting {os.environ.get('KB_SITING', 'left')}")
    print("| frame | conversion | bytes read + written | D2D copy GB/s | " + " | ".join(f"{b} GB/s (ratio)" for b in builds) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(builds))
    optin = ctypes.c_int()
    ck(cu.cuDeviceGetAttribute(ctypes.byref(optin), 97, 0), "cuDeviceGetAttribute")  # ..._PER_BLOCK_OPTIN
    cap = min(optin.value, 100 * 1024)
    global SMS
    sms = ctypes.c_int()
    ck(cu.cuDeviceGetAttribute(ctypes.byref(sms), 16, 0), "cuDeviceGetAttribute")  # MULTIPROCESSOR_COUNT
    SMS = sms.value
    for k in builds.values():
        for key in ("area4", "area_tiled", "batch_tiled"):
            if k[key] is not None:
                ck(cu.cuFuncSetAttribute(k[key], 8, cap), "cuFuncSetAttribute")  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    for (w, h) in SIZES:
        pitch = (w + 511) // 512 * 512
        src = cp.random.randint(0, 256, size=pitch * (h + h // 2), dtype=cp.uint8)
        y, uv = src.data.ptr, src.data.ptr + pitch * h
        for name, fmt, bpp, side, letterbox, nb in CASES:
            if side and letterbox:
                out_w = out_h = side
                s = min(side / w, side / h)
                iw, ih = round(w * s), round(h * s)
                img = ((side - iw) // 2, (side - ih) // 2, iw, ih)
            elif side:
                out_w = out_h = side
                img = (0, 0, side, side)
            else:
                out_w, out_h, img = w, h, (0, 0, w, h)
            sx, sy = w / img[2], h / img[3]
            mode = 0 if not side else (2 if sx > 2 or sy > 2 else 1)
            need = out_w * bpp * out_h * (3 if fmt >= 5 else 1)
            dst = cp.empty(need * nb, dtype=cp.uint8)
            nbytes = (w * h * 3 // 2 + need) * nb
            half = nbytes // 2
            a, b = cp.empty(half, cp.uint8), cp.empty(half, cp.uint8)

            def copy():
                for _ in range(N):
                    b.data.copy_from_device_async(a.data, half, stream)

            copy()
            stream.synchronize()
            copy_gbs = 2 * half * N / timed(first, copy) / 1e9
            cells = []
            first_out = None
            for bn, k in builds.items():
                if nb > 1:
                    p = common(fmt, out_w, out_h, bpp) + b"".join(item(w, h, y, uv, pitch, dst.data.ptr + i * need, img, mode) for i in range(nb))
                    p += bytes(112 * (32 - nb))
                    key = "batch"
                else:
                    key = {1: "bilinear", 2: "area"}.get(mode, "samef" if fmt >= 5 else "same8")
                    p = common(fmt, out_w, out_h, bpp) + item(w, h, y, uv, pitch, dst.data.ptr, img, mode)
                f, px, rows = k[key], k["px"][key], k["rows"][key]
                buf = ctypes.create_string_buffer(p, len(p))
                args = (ctypes.c_void_p * 1)(ctypes.cast(buf, ctypes.c_void_p))
                smem = 0
                if k["area4"] is not None and mode == 2:
                    # src/convert/launch.rs tiled_scale, area_launch and smem_for.
                    sxf, syf = struct.unpack("<ff", struct.pack("<ff", sx, sy))
                    staged = sxf * syf > 36 or (sxf * syf >= 16 and sxf != int(sxf))
                    blocks4 = -(-img[2] // 32) * -(-img[3] // 16)
                    if key == "area" and staged and blocks4 >= 2 * SMS and area_smem(1, sx, sy, rpt=4) <= cap:
                        f, px, rows, smem = k["area4"], 1, 4, area_smem(1, sx, sy, rpt=4)
                    elif staged and area_smem(px, sx, sy) <= cap:
                        f, smem = k["area_tiled" if key == "area" else "batch_tiled"], area_smem(px, sx, sy)
                bx, by = k["block"]
                gx, gy = (out_w + bx * px - 1) // (bx * px), (out_h + by * rows - 1) // (by * rows)

                def conv():
                    for _ in range(N):
                        ck(cu.cuLaunchKernel(f, gx, gy, nb, bx, by, 1, smem, S, args, None), "cuLaunchKernel")

                dst.fill(0xA5)
                ck(cu.cuLaunchKernel(f, gx, gy, nb, bx, by, 1, smem, S, args, None), "cuLaunchKernel")
                stream.synchronize()
                # Every build must write the same bytes (the kernels' values are exact).
                if first_out is None:
                    first_out = dst.copy()
                elif not bool((dst == first_out).all()):
                    print(f"  {bn}: {w}x{h} {name}: output DIFFERS from {next(iter(builds))} in {int((dst != first_out).sum())} bytes", flush=True)
                    MISMATCH.append((bn, w, h, name))
                conv()
                stream.synchronize()
                gbs = nbytes * N / timed(k, conv) / 1e9
                cells.append(f"{gbs:,.0f} ({gbs / copy_gbs:.2f})")
                if FENCE and nb == 1:
                    ev = ctypes.c_void_p()
                    # CU_EVENT_DISABLE_TIMING (2), as nvcam's events; KB_EVENT_FLAGS=3 adds
                    # CU_EVENT_BLOCKING_SYNC (1).
                    flags = int(os.environ.get("KB_EVENT_FLAGS", "2"))
                    ck(cu.cuEventCreate(ctypes.byref(ev), flags), "cuEventCreate")

                    def conv_fenced(wait):
                        for _ in range(N):
                            ck(cu.cuLaunchKernel(f, gx, gy, nb, bx, by, 1, 0, S, args, None), "cuLaunchKernel")
                            if wait and cu.cuEventQuery(ev) != 0:
                                ck(cu.cuStreamWaitEvent(S, ev, 0), "cuStreamWaitEvent")
                            ck(cu.cuEventRecord(ev, S), "cuEventRecord")

                    for wait in (False, True):
                        conv_fenced(wait)
                        stream.synchronize()
                        fg = nbytes * N / timed(k, lambda: conv_fenced(wait)) / 1e9
                        cells.append(f"{'wait+record' if wait else 'record'}: {fg:,.0f} ({fg / copy_gbs:.2f})")
                    cu.cuEventDestroy(ev)
                if nb == 1:
                    ratios[bn].append(gbs / copy_gbs)
            print(f"| {w}x{h} | {name} | {nbytes / 1e6:.1f} MB | {copy_gbs:,.0f} | " + " | ".join(cells) + " |", flush=True)
    for bn, r in ratios.items():
        print(f"{bn}: lowest ratio {min(r):.2f}, mean {sum(r) / len(r):.2f} (single-frame rows)")
    print(f"outputs: {'all builds wrote identical bytes' if not MISMATCH else f'{len(MISMATCH)} cases DIFFER'}")
    if MISMATCH:
        sys.exit(1)


if __name__ == "__main__":
    main()
