"""Opens a camera (the built-in test pattern by default), prints a few frames and the stats.

    python3 bindings/python/example.py [URL] [FRAMES]
    python3 bindings/python/example.py rtsp://user:pass@10.0.0.5/stream 50
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nvcam  # noqa: E402


def main():
    url = sys.argv[1] if len(sys.argv) > 1 else "testsrc://320x240@30"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print("%s from %s" % (nvcam.version(), nvcam.library_path))
    with nvcam.Library(log_level=nvcam.LOG_WARN):
        try:
            cam = nvcam.Camera.open(url, device=nvcam.DEVICE_CPU)
        except nvcam.NvcamError as e:
            print("open failed: %s" % e)
            return 1
        with cam:
            for _ in range(count):
                try:
                    frame = cam.get_frame(timeout_ms=2000)
                except nvcam.NvcamError as e:
                    print("get_frame: %s" % e)
                    if e.code != nvcam.E_TIMEOUT:
                        break
                    continue
                with frame:
                    i = frame.info
                    pixels = frame.to_numpy_nv12()
                    mean_y = sum(pixels[: i.width]) / i.width if isinstance(pixels, bytes) else pixels[0, : i.width].mean()
                    print(
                        "frame seq=%d %dx%d pitch=%d nv12_size=%d pts_us=%d memory=%s first-row mean Y=%.1f"
                        % (i.seq, i.width, i.height, i.pitch, i.nv12_size, i.pts_us,
                           "host" if i.memory == nvcam.MEMORY_HOST else "device", mean_y)
                    )
            stats = cam.stats()
            print("stats: " + ", ".join("%s=%s" % kv for kv in sorted(stats.items())))
        for level, text in nvcam.log_drain():
            print("log[%d] %s" % (level, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
