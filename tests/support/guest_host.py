#!/usr/bin/python3
"""A Python host that has the distribution's FFmpeg (Debian's libavformat.so.59, with RTLD_GLOBAL,
as python3-av or python3-opencv bring it) in its process beside nvcam: tests/guest.rs runs it.
`first` loads Debian's libavformat before libnvcam, `after` loads it once libnvcam is loaded (before
nvcam_init). It runs the guest checks through nvcam's Python binding (NVCAM_LIB names the library)
and prints the lines tests/c/guest_host.c prints (INIT, MAPPED, TLS, AV1, LOSS), which the test reads.

    guest_host.py first|after RTSPS_URL WRONG_CA_FILE AV1_FILE LOSSY_RTSP_URL
"""
import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN = "libavformat.so.59"


def main():
    order, tls_url, wrong_ca, av1, lossy = sys.argv[1:6]
    if order == "first":
        ctypes.CDLL(DEBIAN, mode=ctypes.RTLD_GLOBAL)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))
    import nvcam

    if order == "after":
        ctypes.CDLL(DEBIAN, mode=ctypes.RTLD_GLOBAL)
    try:
        library = nvcam.Library()
        print("INIT 0", flush=True)
    except nvcam.NvcamError as e:
        print("INIT %d %s" % (e.code, e.args[2]), flush=True)
        return 1
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line[line.find("/"):].strip() if "/" in line else ""
            name = os.path.basename(path)
            if (name.startswith("libav") or name.startswith("libsw")) and path not in seen:
                seen.append(path)
                print("MAPPED " + path, flush=True)

    cpu = dict(device=nvcam.DEVICE_CPU, open_timeout_ms=5000, stall_timeout_ms=3000, reconnect_min_ms=200, reconnect_max_ms=1000)
    try:
        nvcam.Camera.open(tls_url, tls_ca_file=wrong_ca, **cpu).close(2000)
        print("TLS 0 opened", flush=True)
    except nvcam.NvcamError as e:
        print("TLS %d %s" % (e.code, e.args[2]), flush=True)

    width = height = 0
    try:
        cam = nvcam.Camera.open(av1, **cpu)
        frame = cam.get_frame(5000)
        width, height = frame.info.width, frame.info.height
        frame.release()
        cam.close(2000)
        rc = 0
    except nvcam.NvcamError as e:
        rc = e.code
    print("AV1 %d %d %d" % (rc, width, height), flush=True)

    lost = frames = 0
    try:
        cam = nvcam.Camera.open(lossy, transport=nvcam.TRANSPORT_TCP, **cpu)
        end = time.monotonic() + 10.0
        while time.monotonic() < end and lost == 0:
            f = cam.try_get_frame(200)
            if f is not None:
                frames += 1
                f.release()
            lost = cam.stats_struct().packets_lost
        cam.close(2000)
        rc = 0
    except nvcam.NvcamError as e:
        rc = e.code
    print("LOSS %d %d %d" % (rc, lost, frames), flush=True)
    library.shutdown(5000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
