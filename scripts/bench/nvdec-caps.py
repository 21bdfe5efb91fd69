#!/usr/bin/env python3
"""What this GPU's NVDEC takes: cuvidGetDecoderCaps for every codec, chroma format and bit depth
nvcam could hand it, with the output formats the engine offers for each.

Needs only the driver (libcuda, libnvcuvid): no toolkit, no FFmpeg. Run it on a GPU machine:
    python3 scripts/bench/nvdec-caps.py
Output formats (nOutputFormatMask bits): NV12, P016, YUV444, YUV444_16Bit, NV16, P216.
"""
import ctypes
import sys

CODECS = {"MPEG2": 1, "MPEG4": 2, "JPEG": 5, "H264": 4, "HEVC": 8, "VP8": 9, "VP9": 10, "AV1": 11}
CHROMA = {"4:0:0": 0, "4:2:0": 1, "4:2:2": 2, "4:4:4": 3}
OUTPUTS = ["NV12", "P016", "YUV444", "YUV444_16Bit", "NV16", "P216"]


class Caps(ctypes.Structure):
    _fields_ = [
        ("eCodecType", ctypes.c_int), ("eChromaFormat", ctypes.c_int), ("nBitDepthMinus8", ctypes.c_uint),
        ("reserved1", ctypes.c_uint * 3), ("bIsSupported", ctypes.c_ubyte), ("nNumNVDECs", ctypes.c_ubyte),
        ("nOutputFormatMask", ctypes.c_ushort), ("nMaxWidth", ctypes.c_uint), ("nMaxHeight", ctypes.c_uint),
        ("nMaxMBCount", ctypes.c_uint), ("nMinWidth", ctypes.c_ushort), ("nMinHeight", ctypes.c_ushort),
        ("bIsHistogramSupported", ctypes.c_ubyte), ("nCounterBitDepth", ctypes.c_ubyte),
        ("nMaxHistogramBins", ctypes.c_ushort), ("reserved3", ctypes.c_uint * 10),
    ]


assert ctypes.sizeof(Caps) == 88


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    cuvid = ctypes.CDLL("libnvcuvid.so.1")
    assert cuda.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), int(sys.argv[1]) if len(sys.argv) > 1 else 0) == 0
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, dev)
    major, minor = ctypes.c_int(), ctypes.c_int()
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    drv = ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(drv))
    print(f"# {name.value.decode()} (sm_{major.value}{minor.value}), CUDA driver {drv.value}")
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxPushCurrent_v2(ctx) == 0
    print("codec chroma bits engines max outputs")
    for cname, codec in CODECS.items():
        for chname, chroma in CHROMA.items():
            for bits in (8, 10, 12):
                c = Caps(eCodecType=codec, eChromaFormat=chroma, nBitDepthMinus8=bits - 8)
                r = cuvid.cuvidGetDecoderCaps(ctypes.byref(c))
                if r != 0 or not c.bIsSupported:
                    continue
                outs = ",".join(o for i, o in enumerate(OUTPUTS) if c.nOutputFormatMask >> i & 1)
                print(f"{cname} {chname} {bits} {c.nNumNVDECs} {c.nMaxWidth}x{c.nMaxHeight} {outs}")


if __name__ == "__main__":
    main()
