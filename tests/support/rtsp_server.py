#!/usr/bin/python3
"""A live RTSP server on loopback for nvcam's tests (GStreamer's gst-rtsp-server, Debian packages
gir1.2-gst-rtsp-server-1.0 and python3-gi; run it with /usr/bin/python3, which python3-gi binds to).

    rtsp_server.py [--port N] [--codec h264|h265] [--size WxH] [--fps N] [--pattern P]
                   [--bitrate KBPS] [--preset P] [--keyint N] [--mount /cam] [--auth USER:PASS] [--not-shared]

Serves one live test stream (videotestsrc, encoded on the fly) at rtsp://127.0.0.1:PORT/MOUNT over
TCP-interleaved and UDP. Listens on 127.0.0.1 only. Port 0 picks a free port. Prints
"READY <port>" on stdout once it listens; SIGTERM stops it cleanly; it dies with its parent.
By default the media is shared: every client sees the same encoder, so a dozen clients cost one
encode.
"""
import argparse
import ctypes
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def pipeline(codec, width, height, fps, pattern, bitrate, preset, keyint=30):
    src = (
        f"videotestsrc is-live=true pattern={pattern} "
        f"! video/x-raw,format=I420,width={width},height={height},framerate={fps}/1"
    )
    if codec == "h264":
        enc = (
            f"x264enc tune=zerolatency speed-preset={preset} key-int-max={keyint} bitrate={bitrate} "
            "! rtph264pay name=pay0 pt=96"
        )
    elif codec in ("h265", "hevc"):
        enc = (
            f"x265enc tune=zerolatency speed-preset={preset} key-int-max={keyint} bitrate={bitrate} "
            "! rtph265pay name=pay0 pt=96"
        )
    else:
        raise SystemExit(f"unknown codec {codec!r} (h264, h265)")
    return f"( {src} ! {enc} )"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--codec", default="h264")
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--pattern", default="ball")
    ap.add_argument("--bitrate", type=int, default=2048, help="kbit/s")
    ap.add_argument("--preset", default="ultrafast", help="encoder speed preset (ultrafast: no CABAC, no deblocking)")
    ap.add_argument("--keyint", type=int, default=30, help="frames between keyframes")
    ap.add_argument("--mount", default="/cam")
    ap.add_argument("--auth", default=None, help="USER:PASS: require basic auth")
    ap.add_argument("--not-shared", action="store_true")
    a = ap.parse_args()
    width, height = (int(v) for v in a.size.lower().split("x"))

    # Die with the process (thread, in fact) that started us, so a failed test leaves nothing behind.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(a.port))

    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(pipeline(a.codec, width, height, a.fps, a.pattern, a.bitrate, a.preset, a.keyint))
    factory.set_shared(not a.not_shared)

    if a.auth:
        user, _, password = a.auth.partition(":")
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        server.set_auth(auth)
        perms = GstRtspServer.RTSPPermissions()
        perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
        perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
        factory.set_permissions(perms)

    server.get_mount_points().add_factory(a.mount, factory)
    if server.attach(None) == 0:
        print(f"FAILED cannot listen on 127.0.0.1:{a.port}", flush=True)
        sys.exit(2)
    # Drop sessions of vanished clients quickly (a killed client otherwise keeps its media alive).
    pool = server.get_session_pool()
    GLib.timeout_add_seconds(1, lambda: (pool.cleanup(), True)[1])

    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, lambda *_: (loop.quit(), False)[1])
    print(f"READY {server.get_bound_port()}", flush=True)
    loop.run()


if __name__ == "__main__":
    main()
