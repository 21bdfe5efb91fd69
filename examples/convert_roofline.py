#!/usr/bin/env python3
"""Roofline of nvcam's GPU conversions through the Python binding.

Conversions of held GPU frames (1920x1080 and 4096x2160 NV12, decoded by nvcam from H.264 clips)
into torch tensors, each row timed with CUDA events around CALLS calls queued behind a spin
(torch.cuda._sleep) on one stream, ROUNDS rounds, the median round; beside it a device-to-device
copy of (bytes read + bytes written) / 2 bytes timed the same way in the same process, and the
ratio copy time / conversion time (1.0 = as fast as a copy of the same traffic). Bytes read = the
NV12 frame (w*h*3/2, per frame), bytes written = the output tensor.

Rows (keys for --rows, see --list):
  {1080p,4k}/same/{BGRA8,BGR8,RGB8,GRAY8,f32,f16}         same size
  {1080p,4k}/{letterbox,resize}/{f16,RGB8}/{640,320}      downscales into 640x640 / 320x320
  {1080p,4k}/batch16/{letterbox-f16,resize-f32}/640       16 frames into one NCHW tensor (convert_batch)
  host/...                                                host time per call: Frame.convert and the C call
  npp/{1080p,4k}/...                                      NPP anchors (NV12->BGR 601 / 709, resize)
  cvcuda/{1080p,4k}/...                                   CV-CUDA anchors (cvtcolor, resize, convertto, chain)
  torch/{1080p,4k}/letterbox-f16/640                      a letterbox written by hand in PyTorch

Run (from the repository root, on the GPU machine, with the bundle's FFmpeg libraries):
  bash .gpu-bundle/run.sh python3 examples/convert_roofline.py --fixtures .gpu-bundle/with/fixtures
  ... --lib OLD/libnvcam.so --binding OLD/nvcam.py --label old   # another build (same process kind)
  # two builds in one device call (each run its own process, same warm GPU):
  bash .gpu-bundle/run.sh bash -c 'python3 examples/convert_roofline.py --fixtures .gpu-bundle/with/fixtures \
      --label new --json /tmp/new.json; python3 examples/convert_roofline.py --fixtures .gpu-bundle/with/fixtures \
      --lib old/libnvcam.so --binding old/nvcam.py --label old --json /tmp/old.json'
  The CV-CUDA rows need .cvcuda (bash scripts/gpu-machine/cvcuda-slim.sh here, then carry .cvcuda: ~31 MB).
  ... --rows 'goal'    # the four goal rows (GOAL_ROWS);  --rows '1080p/same,host'  (comma = or, regexes)
Options: --rounds 10 --calls 40 --host-calls 2000 --cvcuda DIR (default .cvcuda, scripts/gpu-machine/cvcuda-slim.sh)
--json FILE (the rows as JSON), --no-npp, --no-cvcuda, --no-torch.
"""

import argparse
import ctypes
import ctypes.util
import glob
import hashlib
import importlib.util
import json
import lzma
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The conversions the GPU path was tuned for: same-size BGRA8, RGB8 and planar f32, and the
# 640x640 f16 letterbox, at 1080p and 4K.
GOAL_ROWS = [r"^(1080p|4k)/same/(BGRA8|RGB8|f32)$", r"^(1080p|4k)/letterbox/f16/640$"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bw = os.environ.get("BUNDLE_WITH")
    ap.add_argument("--fixtures", default=os.path.join(bw, "fixtures") if bw else os.path.join(ROOT, "fixtures"),
                    help="directory with gpu-h264-1920x1080.mp4 and a 4096x2160 H.264 clip (default $BUNDLE_WITH/fixtures or ./fixtures)")
    ap.add_argument("--synthetic", action="store_true",
                    help="anchors only (NPP, CV-CUDA, torch) on synthetic NV12 frames of the same sizes and a 512-byte "
                         "pitch, without nvcam: for a device call that cannot carry both nvcam's libraries and CV-CUDA")
    ap.add_argument("--lib", help="libnvcam.so to load (sets NVCAM_LIB; default: NVCAM_LIB or the binding's search)")
    ap.add_argument("--binding", help="the binding to import: nvcam/__init__.py, an older nvcam.py, or a folder holding one (default bindings/python/nvcam/)")
    ap.add_argument("--label", default="", help="printed in the header (which build this is)")
    ap.add_argument("--rows", default="", help="comma-separated regexes over the row keys ('goal' = GOAL_ROWS); default all")
    ap.add_argument("--list", action="store_true", help="print the row keys and exit (needs no GPU)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=40, help="calls per round (kept under ~1000 pending launches)")
    ap.add_argument("--host-calls", type=int, default=2000, help="calls timed one by one for the host-time rows")
    ap.add_argument("--host-round", type=int, default=20, help="host-timed calls per spin")
    ap.add_argument("--cvcuda", default=os.path.join(ROOT, ".cvcuda"), help="slim CV-CUDA dir (scripts/gpu-machine/cvcuda-slim.sh) or '' for an installed cvcuda")
    ap.add_argument("--no-npp", action="store_true")
    ap.add_argument("--no-cvcuda", action="store_true")
    ap.add_argument("--no-torch", action="store_true", help="skip the hand-written torch letterbox")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--clip-1080p", help="explicit 1080p clip")
    ap.add_argument("--clip-4k", help="explicit 4K clip (default: a 4096x2160 H.264 clip in --fixtures, else one made with ffmpeg)")
    return ap.parse_args(argv)


# --------------------------------------------------------------------------------------------
# Row catalogue (built without a GPU, so --list works anywhere)
# --------------------------------------------------------------------------------------------

SIZES = [("1080p", 1920, 1080), ("4k", 4096, 2160)]
SAME = ["BGRA8", "BGR8", "RGB8", "GRAY8", "f32", "f16"]
BPP = {"BGRA8": 4, "BGR8": 3, "RGB8": 3, "GRAY8": 1, "f32": 12, "f16": 6}  # bytes per output pixel


def catalogue():
    keys = []
    for s, _w, _h in SIZES:
        keys += ["%s/same/%s" % (s, f) for f in SAME]
        for mode in ("letterbox", "resize"):
            for f in ("f16", "RGB8"):
                for n in (640, 320):
                    keys.append("%s/%s/%s/%d" % (s, mode, f, n))
        keys += ["%s/batch16/letterbox-f16/640" % s, "%s/batch16/resize-f32/640" % s]
    keys += ["host/1080p/letterbox-f16/640/python", "host/1080p/letterbox-f16/640/c", "host/1080p/same/BGRA8/python",
             "host/1080p/same/BGRA8/c", "host/ctypes-noop"]
    for s, _w, _h in SIZES:
        keys += ["npp/%s/nv12-bgr8/601" % s, "npp/%s/nv12-bgr8/709csc" % s, "npp/%s/resize-bgr8/640/super" % s,
                 "npp/%s/resize-bgr8/640/linear" % s, "npp/%s/chain-709csc-super/640" % s]
    for s, _w, _h in SIZES:
        keys += ["cvcuda/%s/cvtcolor-nv12-rgb8/601" % s, "cvcuda/%s/advcvtcolor-nv12-rgb8/709" % s,
                 "cvcuda/%s/resize-rgb8/640/area" % s, "cvcuda/%s/resize-rgb8/640/linear" % s,
                 "cvcuda/%s/convertto-rgb8-f32/640" % s, "cvcuda/%s/chain-rgb-area-f32-nchw/640" % s]
    keys += ["torch/%s/letterbox-f16/640" % s for s, _w, _h in SIZES]
    return keys


def selector(spec):
    if not spec:
        return lambda k: True
    pats = []
    for p in spec.split(","):
        p = p.strip()
        if p == "goal":
            pats += [re.compile(x) for x in GOAL_ROWS]
        elif p:
            pats.append(re.compile(p))
    return lambda k: any(p.search(k) for p in pats)


# --------------------------------------------------------------------------------------------
# Loading nvcam (a chosen library and binding)
# --------------------------------------------------------------------------------------------


def load_nvcam(args):
    if args.lib:
        os.environ["NVCAM_LIB"] = os.path.abspath(args.lib)
    path = args.binding or os.path.join(ROOT, "bindings", "python", "nvcam", "__init__.py")
    if os.path.isdir(path):  # the package folder, or a folder holding it (or an older nvcam.py)
        for c in ("__init__.py", os.path.join("nvcam", "__init__.py"), "nvcam.py"):
            if os.path.isfile(os.path.join(path, c)):
                path = os.path.join(path, c)
                break
    spec = importlib.util.spec_from_file_location("nvcam", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nvcam"] = mod
    spec.loader.exec_module(mod)
    return mod, path


def find_clips(args):
    fx = args.fixtures
    c1080 = args.clip_1080p or os.path.join(fx, "gpu-h264-1920x1080.mp4")
    c4k = args.clip_4k
    note = ""
    if not c4k:
        cands = sorted(glob.glob(os.path.join(fx, "*h264*4096x2160*.mp4")) + glob.glob(os.path.join(fx, "*4096x2160*h264*.mp4")))
        c4k = cands[0] if cands else None
    if not c4k:
        made = "/tmp/nvcam-roofline/gpu-h264-4096x2160.mp4"
        if not os.path.exists(made):
            os.makedirs(os.path.dirname(made), exist_ok=True)
            for ff in ("ffmpeg-nvdec", "ffmpeg"):
                exe = shutil.which(ff)
                if not exe:
                    continue
                cmd = [exe, "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=4096x2160:rate=30",
                       "-frames:v", "24", "-c:v", "libx264", "-preset", "veryfast", "-g", "24", "-pix_fmt", "yuv420p", made]
                try:
                    subprocess.run(cmd, check=True, timeout=120)
                    note = "4K clip made here with %s (testsrc2, libx264, 24 frames)" % ff
                    break
                except Exception as e:  # noqa: BLE001
                    note = "could not make a 4096x2160 clip with %s: %s" % (ff, e)
        if os.path.exists(made):
            c4k = made
            note = note or "4K clip: %s (made earlier)" % made
        else:
            alt = os.path.join(fx, "gpu-h264-3840x2160.mp4")
            if os.path.exists(alt):
                c4k = alt
                note += "; falling back to %s" % alt
    return c1080, c4k, note


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


class Timer:
    """Events around CALLS calls queued behind a spin, on the current torch stream."""

    def __init__(self, torch, calls, rounds):
        self.torch, self.calls, self.rounds = torch, calls, rounds
        self.cycles_per_us = self._calibrate()

    def _calibrate(self):
        t = self.torch
        e0, e1 = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        t.cuda._sleep(1000)
        e0.record()
        t.cuda._sleep(20_000_000)
        e1.record()
        e1.synchronize()
        return 20_000_000 / (e0.elapsed_time(e1) * 1e3)

    def spin_us(self, us):
        self.torch.cuda._sleep(int(us * self.cycles_per_us))

    def gpu(self, call, calls=None):
        """(median µs per call, host-bound flag, median host enqueue µs per call)."""
        t = self.torch
        n = calls or self.calls
        for _ in range(3):
            call()
        t.cuda.current_stream().synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            call()
        enq_us = (time.perf_counter_ns() - t0) / 1e3
        t.cuda.current_stream().synchronize()
        spin = max(2000.0, 3 * enq_us)
        per, hb, enq = [], 0, []
        e0, e1 = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        for _ in range(self.rounds):
            self.spin_us(spin)
            e0.record()
            t0 = time.perf_counter_ns()
            for _ in range(n):
                call()
            t1 = time.perf_counter_ns()
            started = e0.query()  # True: the spin ended before the host finished enqueueing
            e1.record()
            e1.synchronize()
            if started:
                hb += 1
                spin = min(spin * 2, 200_000.0)
            per.append(e0.elapsed_time(e1) * 1e3 / n)
            enq.append((t1 - t0) / 1e3 / n)
        return statistics.median(per), hb, statistics.median(enq)

    def host(self, call, total, per_round):
        """Median host µs of one call, each timed alone, in rounds behind a spin (the GPU queue
        never fills and never runs dry)."""
        t = self.torch
        samples = []
        for _ in range(3):
            call()
        t.cuda.current_stream().synchronize()
        pc = time.perf_counter_ns
        while len(samples) < total:
            self.spin_us(max(1000.0, per_round * 100.0))
            for _ in range(per_round):
                a = pc()
                call()
                samples.append(pc() - a)
            t.cuda.current_stream().synchronize()
        return statistics.median(samples) / 1e3, sorted(samples)[int(len(samples) * 0.9)] / 1e3


class CopyRef:
    def __init__(self, torch, timer):
        self.torch, self.timer, self.cache = torch, timer, {}

    def us(self, nbytes):
        half = nbytes // 2
        if half not in self.cache:
            t = self.torch
            src = t.empty(half, dtype=t.uint8, device="cuda")
            dst = t.empty(half, dtype=t.uint8, device="cuda")
            src.fill_(7)
            self.cache[half] = self.timer.gpu(lambda: dst.copy_(src))[0]
            del src, dst
        return self.cache[half]


# --------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------


class Bench:
    def __init__(self, args, nvcam, torch):
        self.args, self.nv, self.torch = args, nvcam, torch
        self.want = selector(args.rows)
        self.timer = Timer(torch, args.calls, args.rounds)
        self.copy = CopyRef(torch, self.timer)
        self.rows = []
        self.notes = []

    # ---- output
    def header(self):
        print("| frame | conversion | bytes | µs per call | GB/s | copy µs | ratio | note |")
        print("|---|---|---:|---:|---:|---:|---:|---|")

    def row(self, key, frame, conv, nbytes, call, calls=None):
        if not self.want(key):
            return
        try:
            us, hb, enq = self.timer.gpu(call, calls)
        except Exception as e:  # noqa: BLE001
            print("| %s | %s | | | | | | failed: %s |" % (frame, conv, str(e).replace("|", "/")[:200]), flush=True)
            self.rows.append({"key": key, "error": str(e)})
            return
        cu = self.copy.us(nbytes)
        note = "host-bound (%d/%d rounds; enqueue %.1f µs/call)" % (hb, self.args.rounds, enq) if hb else ""
        print("| %s | %s | %.1f MB | %.1f | %.0f | %.1f | %.2f | %s |" % (frame, conv, nbytes / 1e6, us, nbytes / us / 1e3, cu, cu / us, note), flush=True)
        self.rows.append({"key": key, "frame": frame, "conversion": conv, "bytes": nbytes, "us": us, "gbs": nbytes / us / 1e3,
                          "copy_us": cu, "ratio": cu / us, "host_bound_rounds": hb, "enqueue_us": enq})

    def na(self, prefix, why):
        print("| %s | not available: %s | | | | | | |" % (prefix, str(why).replace("|", "/")[:300]), flush=True)
        self.rows.append({"key": prefix, "error": "not available: %s" % why})

    # ---- nvcam rows
    def nvcam_rows(self, size, frames):
        nv, t = self.nv, self.torch
        f = frames[0]
        w, h = f.info.width, f.info.height
        frame = "%dx%d" % (w, h)
        nv12 = w * h * 3 // 2
        fmts = {"BGRA8": (nv.FORMAT_BGRA8, (h, w, 4), t.uint8), "BGR8": (nv.FORMAT_BGR8, (h, w, 3), t.uint8),
                "RGB8": (nv.FORMAT_RGB8, (h, w, 3), t.uint8), "GRAY8": (nv.FORMAT_GRAY8, (h, w), t.uint8),
                "f32": (nv.FORMAT_RGB_F32_PLANAR, (3, h, w), t.float32), "f16": (nv.FORMAT_RGB_F16_PLANAR, (3, h, w), t.float16)}
        names = {"BGRA8": "BGRA8", "BGR8": "BGR8", "RGB8": "RGB8", "GRAY8": "GRAY8", "f32": "planar f32", "f16": "planar f16"}
        for name in SAME:
            key = "%s/same/%s" % (size, name)
            if not self.want(key):
                continue
            fmt, shape, dt = fmts[name]
            out = t.empty(shape, dtype=dt, device="cuda")
            self.row(key, frame, "%s, same size" % names[name], nv12 + out.numel() * out.element_size(),
                     lambda out=out, fmt=fmt: f.convert(fmt, out=out))
            del out
        for mode in ("letterbox", "resize"):
            for name in ("f16", "RGB8"):
                for n in (640, 320):
                    key = "%s/%s/%s/%d" % (size, mode, name, n)
                    if not self.want(key):
                        continue
                    fmt = fmts[name][0]
                    shape = (3, n, n) if name == "f16" else (n, n, 3)
                    out = t.empty(shape, dtype=fmts[name][2], device="cuda")
                    kw = dict(width=n, height=n, letterbox=mode == "letterbox", pad=(114, 114, 114))
                    self.row(key, frame, "%s %s %dx%d" % (names[name], mode, n, n), nv12 + out.numel() * out.element_size(),
                             lambda out=out, fmt=fmt, kw=kw: f.convert(fmt, out=out, **kw))
                    del out
        for key, fmt, dt, kw, label in [
            ("%s/batch16/letterbox-f16/640" % size, nv.FORMAT_RGB_F16_PLANAR, t.float16,
             dict(width=640, height=640, letterbox=True, pad=(114, 114, 114)), "batch of 16, planar f16 letterbox 640x640 (NCHW)"),
            ("%s/batch16/resize-f32/640" % size, nv.FORMAT_RGB_F32_PLANAR, t.float32, dict(width=640, height=640),
             "batch of 16, planar f32 resize 640x640 (NCHW)")]:
            if not self.want(key):
                continue
            if len(frames) < 16:
                self.na(key, "only %d frames held" % len(frames))
                continue
            out = t.empty((16, 3, 640, 640), dtype=dt, device="cuda")
            b = frames[:16]
            self.row(key, frame + " x16", label, 16 * nv12 + out.numel() * out.element_size(),
                     lambda out=out, fmt=fmt, kw=kw: nv.convert_batch(b, fmt, out, **kw))
            del out

    def host_rows(self, f):
        nv, t, a = self.nv, self.torch, self.args
        out_lb = t.empty((3, 640, 640), dtype=t.float16, device="cuda")
        out_bgra = t.empty((f.info.height, f.info.width, 4), dtype=t.uint8, device="cuda")
        kw = dict(width=640, height=640, letterbox=True, pad=(114, 114, 114))
        s = t.cuda.current_stream().cuda_stream
        fn = nv.lib.nvcam_frame_convert
        lines = []
        for name, out, fmt, spec in [("letterbox-f16/640", out_lb, nv.FORMAT_RGB_F16_PLANAR, kw), ("same/BGRA8", out_bgra, nv.FORMAT_BGRA8, {})]:
            conv = "planar f16 letterbox 640x640" if fmt == nv.FORMAT_RGB_F16_PLANAR else "BGRA8 same size"
            key = "host/1080p/%s/python" % name
            if self.want(key):
                med, p90 = self.timer.host(lambda: f.convert(fmt, out=out, **spec), a.host_calls, a.host_round)
                lines.append((key, "Frame.convert (Python binding)", conv, med, p90))
            key = "host/1080p/%s/c" % name
            if self.want(key):
                c = nv.Frame.spec(fmt, device=f.info.device, **spec)
                cref = ctypes.byref(c)
                h, ptr, n = f.handle, out.data_ptr(), out.numel() * out.element_size()

                def ccall():
                    rc = fn(h, cref, ptr, 0, n, s)
                    if rc:
                        raise nv._error(rc, "nvcam_frame_convert")

                med, p90 = self.timer.host(ccall, a.host_calls, a.host_round)
                lines.append((key, "nvcam_frame_convert via ctypes (prebuilt arguments)", conv, med, p90))
        if self.want("host/ctypes-noop"):
            ab = nv.lib.nvcam_abi_version
            med, p90 = self.timer.host(lambda: ab(), a.host_calls, a.host_round)
            lines.append(("host/ctypes-noop", "nvcam_abi_version via ctypes (the ctypes floor)", "-", med, p90))
        if lines:
            print()
            print("Host time per call (1080p frame, %d calls timed one by one, %d per spin):" % (a.host_calls, a.host_round))
            print()
            print("| call | conversion | median µs | p90 µs |")
            print("|---|---|---:|---:|")
            for key, what, conv, med, p90 in lines:
                print("| %s | %s | %.2f | %.2f |" % (what, conv, med, p90))
                self.rows.append({"key": key, "call": what, "conversion": conv, "host_median_us": med, "host_p90_us": p90})
            print()
            self.header()

    # ---- NPP
    def npp_rows(self, size, f):
        keys = [k for k in catalogue() if k.startswith("npp/%s/" % size)]
        if not any(self.want(k) for k in keys):
            return
        t = self.torch
        try:
            npp = Npp(t)
        except Exception as e:  # noqa: BLE001
            self.na("npp/%s" % size, e)
            return
        info = f.info
        w, h = info.width, info.height
        frame = "%dx%d" % (w, h)
        nv12 = w * h * 3 // 2
        bgr = t.empty((h, w, 3), dtype=t.uint8, device="cuda")
        small = t.empty((640, 640, 3), dtype=t.uint8, device="cuda")
        # (key, label, bytes, a function that prepares the call): the conversions, then the resizes
        # of the BGR8 image the conversions wrote.
        cases = [("npp/%s/nv12-bgr8/601" % size, "NPP NV12->BGR8 (nppiNV12ToBGR, BT.601)", nv12 + bgr.numel(),
                  lambda: npp.nv12_to_bgr("nppiNV12ToBGR_8u_P2C3R_Ctx", info, bgr)),
                 ("npp/%s/nv12-bgr8/709csc" % size, "NPP NV12->BGR8 (709CSC: BT.709 limited)", nv12 + bgr.numel(),
                  lambda: npp.nv12_to_bgr("nppiNV12ToBGR_709CSC_8u_P2C3R_Ctx", info, bgr)),
                 ("npp/%s/resize-bgr8/640/super" % size, "NPP resize BGR8 -> 640x640 (SUPER, area)", bgr.numel() + small.numel(),
                  lambda: npp.resize(bgr, small, 8)),
                 ("npp/%s/resize-bgr8/640/linear" % size, "NPP resize BGR8 -> 640x640 (LINEAR)", bgr.numel() + small.numel(),
                  lambda: npp.resize(bgr, small, 2))]
        for key, label, nbytes, prepare in cases:
            if self.want(key):
                try:
                    call = prepare()
                except Exception as e:  # noqa: BLE001
                    self.na(key, e)
                    continue
                self.row(key, frame, label, nbytes, call)
        key = "npp/%s/chain-709csc-super/640" % size
        if self.want(key):
            try:
                c1 = npp.nv12_to_bgr("nppiNV12ToBGR_709CSC_8u_P2C3R_Ctx", info, bgr)
                c2 = npp.resize(bgr, small, 8)
            except Exception as e:  # noqa: BLE001
                self.na(key, e)
            else:
                def chain():
                    c1()
                    c2()
                self.row(key, frame, "NPP chain: NV12->BGR8 709CSC + resize 640x640 SUPER (bytes as nvcam's one pass)",
                         nv12 + small.numel(), chain)

    # ---- CV-CUDA
    def cvcuda_rows(self, size, f, cvcuda):
        keys = [k for k in catalogue() if k.startswith("cvcuda/%s/" % size)]
        if not any(self.want(k) for k in keys):
            return
        if isinstance(cvcuda, str):
            self.na("cvcuda/%s" % size, cvcuda)
            return
        t = self.torch
        info = f.info
        w, h = info.width, info.height
        frame = "%dx%d" % (w, h)
        nv12 = w * h * 3 // 2
        stream = cvcuda.as_stream(t.cuda.current_stream())
        src_t = t.from_dlpack(f)  # (h + h/2, row_bytes), rows pitch apart: zero copy
        src4 = src_t[:, :w].unsqueeze(0).unsqueeze(-1)  # (1, 3h/2, w, 1)
        try:
            src = cvcuda.as_tensor(src4, "NHWC")
            how = "zero-copy (pitched)"
        except Exception as e:  # noqa: BLE001
            self.src_keep = src4.contiguous()
            src = cvcuda.as_tensor(self.src_keep, "NHWC")
            how = "a packed copy (pitched view refused: %s)" % e
        self.notes.append("CV-CUDA %s: NV12 input is %s; cvtcolor YUV2RGB_NV12 uses BT.601 limited range" % (frame, how))
        rgb_t = t.empty((1, h, w, 3), dtype=t.uint8, device="cuda")
        rgb = cvcuda.as_tensor(rgb_t, "NHWC")
        sm_t = t.empty((1, 640, 640, 3), dtype=t.uint8, device="cuda")
        sm = cvcuda.as_tensor(sm_t, "NHWC")
        fl_t = t.empty((1, 640, 640, 3), dtype=t.float32, device="cuda")
        fl = cvcuda.as_tensor(fl_t, "NHWC")
        nchw_t = t.empty((1, 3, 640, 640), dtype=t.float32, device="cuda")
        nchw = cvcuda.as_tensor(nchw_t, "NCHW")
        conv = cvcuda.ColorConversion.YUV2RGB_NV12
        I = cvcuda.Interp
        tries = [
            ("cvcuda/%s/cvtcolor-nv12-rgb8/601" % size, "CV-CUDA cvtcolor NV12->RGB8 (BT.601)", nv12 + rgb_t.numel(),
             lambda: cvcuda.cvtcolor_into(rgb, src, conv, stream=stream)),
            ("cvcuda/%s/advcvtcolor-nv12-rgb8/709" % size, "CV-CUDA advcvtcolor NV12->RGB8 (BT.709)", nv12 + rgb_t.numel(),
             lambda: cvcuda.advcvtcolor_into(rgb, src, conv, cvcuda.ColorSpec.BT709, stream=stream)),
            ("cvcuda/%s/resize-rgb8/640/area" % size, "CV-CUDA resize RGB8 -> 640x640 (AREA)", rgb_t.numel() + sm_t.numel(),
             lambda: cvcuda.resize_into(sm, rgb, I.AREA, stream=stream)),
            ("cvcuda/%s/resize-rgb8/640/linear" % size, "CV-CUDA resize RGB8 -> 640x640 (LINEAR)", rgb_t.numel() + sm_t.numel(),
             lambda: cvcuda.resize_into(sm, rgb, I.LINEAR, stream=stream)),
            ("cvcuda/%s/convertto-rgb8-f32/640" % size, "CV-CUDA convertto RGB8 640x640 -> f32 (x/255)", sm_t.numel() + fl_t.numel() * 4,
             lambda: cvcuda.convertto_into(fl, sm, 1 / 255.0, 0.0, stream=stream)),
        ]

        def chain():
            cvcuda.cvtcolor_into(rgb, src, conv, stream=stream)
            cvcuda.resize_into(sm, rgb, I.AREA, stream=stream)
            cvcuda.convertto_into(fl, sm, 1 / 255.0, 0.0, stream=stream)
            cvcuda.reformat_into(nchw, fl, stream=stream)

        tries.append(("cvcuda/%s/chain-rgb-area-f32-nchw/640" % size,
                      "CV-CUDA chain: cvtcolor + resize AREA 640x640 + convertto f32 + reformat NCHW (bytes as nvcam's one pass)",
                      nv12 + nchw_t.numel() * 4, chain))
        for key, label, nbytes, call in tries:
            if not self.want(key):
                continue
            try:
                call()
                t.cuda.current_stream().synchronize()
            except Exception as e:  # noqa: BLE001
                self.na(key, e)
                continue
            self.row(key, frame, label, nbytes, call)

    # ---- hand-written torch letterbox
    def torch_rows(self, size, f):
        key = "torch/%s/letterbox-f16/640" % size
        if not self.want(key):
            return
        t = self.torch
        F = t.nn.functional
        info = f.info
        w, h = info.width, info.height
        nv12_t = t.from_dlpack(f)
        y = nv12_t[:h, :w]
        uv = nv12_t[h:h + (h + 1) // 2, :w].view(h // 2, w // 2, 2)
        s = min(640 / w, 640 / h)
        iw, ih = round(w * s), round(h * s)
        ox, oy = (640 - iw) // 2, (640 - ih) // 2
        out = t.empty((1, 3, 640, 640), dtype=t.float16, device="cuda")
        pad = 114 / 255.0

        def letterbox():
            yf = (y.float() - 16.0) * (255.0 / 219.0)
            c = uv.permute(2, 0, 1).unsqueeze(0).float() - 128.0  # (1, 2, h/2, w/2)
            c = F.interpolate(c, size=(h, w), mode="nearest")[0] * (255.0 / 224.0)
            u, v = c[0], c[1]
            r = yf + 1.5748 * v
            g = yf - 0.1873 * u - 0.4681 * v
            b = yf + 1.8556 * u
            rgb = (t.stack((r, g, b)).unsqueeze(0) / 255.0).clamp_(0, 1)
            small = F.interpolate(rgb, size=(ih, iw), mode="area")
            out.fill_(pad)
            out[:, :, oy:oy + ih, ox:ox + iw] = small.half()

        self.row(key, "%dx%d" % (w, h), "hand-written PyTorch letterbox 640x640 f16 (BT.709, area; 343 µs at 1080p where it was first measured)",
                 w * h * 3 // 2 + out.numel() * 2, letterbox, calls=min(self.args.calls, 20))


class Npp:
    """NPP through ctypes: libnppc/libnppicc/libnppig .so.13 (or .so.12), NppStreamContext filled
    for torch's current stream from the driver's device attributes."""

    class Ctx(ctypes.Structure):
        _fields_ = [("hStream", ctypes.c_void_p), ("nCudaDeviceId", ctypes.c_int), ("nMultiProcessorCount", ctypes.c_int),
                    ("nMaxThreadsPerMultiProcessor", ctypes.c_int), ("nMaxThreadsPerBlock", ctypes.c_int),
                    ("nSharedMemPerBlock", ctypes.c_size_t), ("nCudaDevAttrComputeCapabilityMajor", ctypes.c_int),
                    ("nCudaDevAttrComputeCapabilityMinor", ctypes.c_int), ("nStreamFlags", ctypes.c_uint),
                    ("hWorkspace", ctypes.c_uint32)]

    class Size(ctypes.Structure):
        _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int)]

    class Rect(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int)]

    @staticmethod
    def find(name):
        dirs = []
        for pat in ("/usr/local/cuda*/lib64", "/usr/local/cuda*/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"):
            dirs += sorted(glob.glob(pat), reverse=True)
        for p in sys.path:
            dirs += glob.glob(os.path.join(p, "nvidia", "cu1*", "lib")) + glob.glob(os.path.join(p, "nvidia", "npp", "lib"))
        for d in dirs:
            for v in ("13", "12"):
                f = os.path.join(d, "lib%s.so.%s" % (name, v))
                if os.path.exists(f):
                    return f
        found = ctypes.util.find_library(name)
        if found:
            return found
        raise OSError("lib%s.so.13 not found (looked in /usr/local/cuda*/lib64, nvidia pip packages, the loader path)" % name)

    def __init__(self, torch):
        self.paths = [self.find(n) for n in ("nppc", "nppicc", "nppig")]
        self.libs = [ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL) for p in self.paths]
        cu = ctypes.CDLL("libcuda.so.1")
        dev = torch.cuda.current_device()
        cudev = ctypes.c_int()
        assert cu.cuDeviceGet(ctypes.byref(cudev), dev) == 0

        def attr(a):
            v = ctypes.c_int()
            r = cu.cuDeviceGetAttribute(ctypes.byref(v), a, cudev)
            if r:
                raise RuntimeError("cuDeviceGetAttribute(%d): %d" % (a, r))
            return v.value

        stream = torch.cuda.current_stream().cuda_stream
        flags = ctypes.c_uint()
        cu.cuStreamGetFlags.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint)]
        cu.cuStreamGetFlags(ctypes.c_void_p(stream), ctypes.byref(flags))
        c = self.Ctx()
        c.hStream = stream
        c.nCudaDeviceId = dev
        c.nMultiProcessorCount = attr(16)  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        c.nMaxThreadsPerMultiProcessor = attr(39)
        c.nMaxThreadsPerBlock = attr(1)
        c.nSharedMemPerBlock = attr(8)
        c.nCudaDevAttrComputeCapabilityMajor = attr(75)
        c.nCudaDevAttrComputeCapabilityMinor = attr(76)
        c.nStreamFlags = flags.value
        c.hWorkspace = 0
        self.ctx = c
        icc, ig = self.libs[1], self.libs[2]
        self.icc, self.ig = icc, ig
        ig.nppiResize_8u_C3R_Ctx.argtypes = [ctypes.c_void_p, ctypes.c_int, self.Size, self.Rect, ctypes.c_void_p, ctypes.c_int,
                                             self.Size, self.Rect, ctypes.c_int, self.Ctx]
        ig.nppiResize_8u_C3R_Ctx.restype = ctypes.c_int

    def version(self):
        try:
            f = self.libs[0].nppGetLibVersion
            f.restype = ctypes.POINTER(ctypes.c_int * 3)
            v = f().contents
            return "%d.%d.%d" % tuple(v)
        except Exception:  # noqa: BLE001
            return "?"

    def nv12_to_bgr(self, sym, info, dst):
        fn = getattr(self.icc, sym)
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_void_p, ctypes.c_int, self.Size, self.Ctx]
        fn.restype = ctypes.c_int
        planes = (ctypes.c_void_p * 2)(info.y_ptr, info.uv_ptr)
        args = (planes, int(info.pitch), ctypes.c_void_p(dst.data_ptr()), dst.shape[1] * 3, self.Size(info.width, info.height), self.ctx)

        def call():
            r = fn(*args)
            if r < 0:
                raise RuntimeError("%s: NppStatus %d" % (sym, r))

        call()
        return call

    def resize(self, src, dst, mode):
        fn = self.ig.nppiResize_8u_C3R_Ctx
        sh, sw = src.shape[0], src.shape[1]
        dh, dw = dst.shape[0], dst.shape[1]
        args = (ctypes.c_void_p(src.data_ptr()), sw * 3, self.Size(sw, sh), self.Rect(0, 0, sw, sh),
                ctypes.c_void_p(dst.data_ptr()), dw * 3, self.Size(dw, dh), self.Rect(0, 0, dw, dh), mode, self.ctx)

        def call():
            r = fn(*args)
            if r < 0:
                raise RuntimeError("nppiResize_8u_C3R_Ctx: NppStatus %d" % r)

        call()
        return call


def load_cvcuda(path):
    """cvcuda from the slim directory (decompressed once into /tmp), or an installed one. Returns
    the module, or a string saying why not."""
    try:
        if path:
            if not os.path.isdir(path):
                return "no slim CV-CUDA at %s (bash scripts/gpu-machine/cvcuda-slim.sh, then carry .cvcuda)" % path
            man = os.path.join(path, "MANIFEST")
            tag = hashlib.sha256(open(man, "rb").read()).hexdigest()[:12] if os.path.exists(man) else "x"
            dst = "/tmp/nvcam-cvcuda-%s" % tag
            if not os.path.exists(os.path.join(dst, ".done")):
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(path, dst, ignore=shutil.ignore_patterns("*.xz"))
                for xz in glob.glob(os.path.join(path, "cvcuda_cu13.libs", "*.xz")):
                    with lzma.open(xz) as src, open(os.path.join(dst, "cvcuda_cu13.libs", os.path.basename(xz)[:-3]), "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 22)
                open(os.path.join(dst, ".done"), "w").close()
            sys.path.insert(0, dst)
        import cvcuda  # noqa: WPS433
        return cvcuda
    except Exception as e:  # noqa: BLE001
        return "import cvcuda failed: %s: %s" % (type(e).__name__, e)


def synthetic_frame(torch, w, h):
    """A device NV12 frame as a torch tensor (random bytes, rows 512-aligned as NVDEC's) with the
    `info` the anchor rows read (width, height, pitch, plane addresses); from_dlpack gives it back."""
    pitch = (w + 511) // 512 * 512
    t = torch.randint(0, 256, (h * 3 // 2, pitch), dtype=torch.uint8, device="cuda")
    class Info:  # noqa: N801
        pass
    i = Info()
    i.width, i.height, i.pitch, i.row_bytes = w, h, pitch, pitch
    i.y_ptr, i.uv_ptr = t.data_ptr(), t.data_ptr() + pitch * h
    i.color_matrix, i.color_range = 1, 1
    t.info = i
    return t


def hold_frames(nv, clip, n=16):
    """Opens the clip on GPU 0 (nvcam's GPU decoder) and holds n distinct decoded frames."""
    cam = nv.Camera.open(clip, device=0, flags=nv.OPEN_LOSSLESS | nv.OPEN_NO_PACING, pool_slots=n + 4)
    frames = []
    try:
        for _ in range(n):
            f = cam.get_frame(20000)
            if f.info.memory != nv.MEMORY_DEVICE:
                raise RuntimeError("%s: frame in host memory (decoder %s)" % (clip, cam.stats().get("decoder")))
            frames.append(f)
    except nv.NvcamError as e:
        if not frames:
            raise
        print("note: %s gave %d frames (%s)" % (clip, len(frames), e))
    return cam, frames


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        print("\n".join(catalogue()))
        return 0
    import torch  # noqa: WPS433

    if args.synthetic:
        nv, binding = None, "none (--synthetic)"
        c1080 = c4k = None
        clip_note = "anchors only, on synthetic NV12 frames (random bytes, 512-byte pitch)"
    else:
        nv, binding = load_nvcam(args)
        nv.Library()
        c1080, c4k, clip_note = find_clips(args)
    drv = "?"
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        v = ctypes.c_int()
        try:
            ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
            drv = "CUDA driver API %d" % v.value
        except Exception:  # noqa: BLE001
            pass
    torch.cuda.init()
    stream = torch.cuda.Stream()
    print("# nvcam conversion roofline%s" % (" — " + args.label if args.label else ""))
    print()
    print("- GPU: %s, driver %s; torch %s (CUDA %s), Python %s" % (torch.cuda.get_device_name(0), drv, torch.__version__, torch.version.cuda,
                                                                   sys.version.split()[0]))
    if nv is not None:
        print("- nvcam: %s (%s), binding %s" % (nv.version(), nv.library_path, binding))
    print("- method: per row, %d rounds of %d calls queued behind torch.cuda._sleep on one torch stream, CUDA events around the "
          "calls, median round / calls; copy = %d torch copy_ of (read + written) / 2 bytes, same way; ratio = copy µs / µs"
          % (args.rounds, args.calls, args.calls))
    if clip_note:
        print("- " + clip_note)
    sel = selector(args.rows)
    cv = None
    if not args.no_cvcuda and any(sel(k) for k in catalogue() if k.startswith("cvcuda/")):
        cv = load_cvcuda(args.cvcuda)
        print("- CV-CUDA: %s" % (cv if isinstance(cv, str) else "%s from %s" % (getattr(cv, "__version__", "?"), os.path.dirname(cv.__file__))))
    print()
    with torch.cuda.stream(stream):
        b = Bench(args, nv, torch)
        held = []
        if args.synthetic:
            b.header()
            for (size, w, h) in SIZES:
                f = synthetic_frame(torch, w, h)
                if not args.no_npp:
                    b.npp_rows(size, f)
                if not args.no_cvcuda:
                    b.cvcuda_rows(size, f, cv if cv is not None else "not loaded")
                if not args.no_torch:
                    b.torch_rows(size, f)
            torch.cuda.synchronize()
            for n in b.notes:
                print("- " + n)
            return 0
        for (size, _w, _h), clip in zip(SIZES, (c1080, c4k)):
            if not any(sel(k) for k in catalogue() if ("/%s/" % size) in ("/" + k + "/")):
                continue
            if not clip or not os.path.exists(clip):
                print("%s: no clip (%s): skipped" % (size, clip))
                continue
            cam, frames = hold_frames(nv, clip)
            held.append((cam, frames))
            i = frames[0].info
            print("%s: %s, %dx%d NV12 pitch %d, matrix %d range %d, decoder %s, %d frames held"
                  % (size, os.path.basename(clip), i.width, i.height, i.pitch, i.color_matrix, i.color_range, cam.stats().get("decoder"), len(frames)))
        print()
        b.header()
        for (cam, frames) in held:
            size = "1080p" if frames[0].info.height <= 1080 else "4k"
            b.nvcam_rows(size, frames)
            if size == "1080p":
                b.host_rows(frames[0])
            if not args.no_npp:
                b.npp_rows(size, frames[0])
            if not args.no_cvcuda:
                b.cvcuda_rows(size, frames[0], cv if cv is not None else "not loaded")
            if not args.no_torch:
                b.torch_rows(size, frames[0])
        torch.cuda.synchronize()
        for n in b.notes:
            print("- " + n)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"label": args.label, "gpu": torch.cuda.get_device_name(0), "driver": drv, "library": nv.library_path,
                           "binding": binding, "rows": b.rows}, fh, indent=1)
        for cam, frames in held:
            for f in frames:
                f.release()
            cam.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
