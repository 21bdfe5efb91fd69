#!/usr/bin/env python3
"""MD5 of every conversion route's output for fixed inputs: a table to hold two builds against
(a refactor that says "bytes unchanged" runs this with the old and the new library and diffs).

    NVCAM_LIB=path/to/libnvcam.so python3 scripts/gpu-machine/convert-md5.py FIXTURES_DIR [cpu|gpu]

Inputs: the first picture of an 8-bit H.264 clip (NV12) and of a 10-bit HEVC clip (P016),
decoded on the CPU (`cpu`) or into device memory on GPU 0 (`gpu`: NVDEC where it takes the
stream). Outputs: every format, same size and resized (bilinear up, area down), a window, a
letterbox with pad, normalisation (mean/std), and a chroma siting override; each converted to host
memory. One line per case: `<clip> <case> <md5> <bytes>`.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
import nvcam  # noqa: E402

fixtures = sys.argv[1]
where = sys.argv[2] if len(sys.argv) > 2 else "cpu"
device = nvcam.DEVICE_CPU if where == "cpu" else 0
clips = ["gpu-h264-640x360.mp4", "hevc10-1366x768-12.mkv"]
formats = [
    ("bgra8", nvcam.FORMAT_BGRA8), ("bgr8", nvcam.FORMAT_BGR8), ("rgb8", nvcam.FORMAT_RGB8),
    ("gray8", nvcam.FORMAT_GRAY8), ("rgbf32", nvcam.FORMAT_RGB_F32_PLANAR),
    ("rgbf16", nvcam.FORMAT_RGB_F16_PLANAR),
]
cases = [
    ("same", {}),
    ("up-bilinear", {"width": 1000, "height": 700}),
    ("down-area", {"width": 301, "height": 167}),
    ("roi", {"roi": (33, 17, 250, 190)}),
    ("letterbox", {"width": 416, "height": 416, "letterbox": True, "pad": (114, 114, 114)}),
    ("normalised", {"width": 224, "height": 224, "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}),
    ("siting-topleft", {"siting": nvcam.SITING_TOPLEFT}),
]
lib = nvcam.Library()
for clip in clips:
    cam = nvcam.Camera.open(os.path.join(fixtures, clip), device=device, flags=nvcam.OPEN_NO_PACING)
    try:
        f = cam.get_frame(10000)
        with f:
            for fname, fmt in formats:
                for cname, spec in cases:
                    try:
                        c = nvcam.Frame.spec(fmt, **spec)
                        b = bytearray(f.convert_size(c))
                        f.convert_into(c, b, len(b))
                        print("%s %s/%s %s %d" % (clip, fname, cname, hashlib.md5(b).hexdigest(), len(b)))
                    except nvcam.NvcamError as e:
                        print("%s %s/%s refused %s" % (clip, fname, cname, e.code))
    finally:
        cam.close()
lib.shutdown()
