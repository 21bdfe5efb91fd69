#!/usr/bin/python3
"""A live RTSP server on loopback for nvcam's tests (GStreamer's gst-rtsp-server, Debian packages
gir1.2-gst-rtsp-server-1.0 and python3-gi; run it with /usr/bin/python3, which python3-gi binds to).

    rtsp_server.py [--port N] [--codec h264|h265] [--size WxH] [--fps N] [--pattern P]
                   [--bitrate KBPS] [--preset P] [--keyint N] [--mount /cam] [--auth USER:PASS] [--not-shared]
                   [--delay-ms N] [--sr-capture-time]
                   [--auth-digest USER:PASS] [--multicast] [--no-udp-send] [--tls PEM]
                   [--protocols tcp|udp] [--count-udp]

Serves one live test stream (videotestsrc, encoded on the fly) at rtsp://127.0.0.1:PORT/MOUNT over
TCP-interleaved and UDP. Listens on 127.0.0.1 only. Port 0 picks a free port. Prints
"READY <port>" on stdout once it listens; SIGTERM stops it cleanly; it dies with its parent.
By default the media is shared: every client sees the same encoder, so a dozen clients cost one
encode.

--delay-ms N holds every encoded frame N ms before it is sent (a camera's capture-to-send
latency); --sr-capture-time makes the RTCP sender reports map RTP time to the capture clock
(rtpbin rtcp-sync-send-time=false), as cameras do, so a client can recover each frame's capture
time from them. With --sr-capture-time the server also prints, to stderr, the mean time from
each frame's capture to its payloading on its own clock ("CAPTURE_TO_SEND_MS x"), the truth a
client's capture time is checked against.

Transports and credentials (RTSP over TCP-interleaved and over the HTTP tunnel, which
gst-rtsp-server answers on the same port, always work):
--auth-digest USER:PASS requires Digest authentication (and offers only Digest; with --auth as well
both are offered). --multicast also offers UDP multicast, from a pool of 239.255.42.x addresses
with TTL 1 (the group is sent through the default route's interface, looped back to this host).
--no-udp-send is a firewall that drops everything the server sends over UDP (RTP and RTCP, unicast
and multicast) while the RTSP connection works: the SETUP over UDP succeeds, no packet arrives.
--tls PEM serves rtsps:// (TLS on the RTSP connection) with the certificate and key in PEM.
--protocols tcp|udp offers only that lower transport: a SETUP asking for the other is answered
461 Unsupported Transport (as UDP-only cameras answer TCP).

What clients did, on stderr, for the tests to check: "SETUP <udp|udp-mcast|tcp> tunneled=<bool>"
for each SETUP, "TEARDOWN" for each TEARDOWN, and with --count-udp "UDP_SENT <n>" (every 50 ms
while it grows): the packets (RTP and RTCP) the server has sent over UDP so far.

--drop-log PATH writes a line for every RTP packet the lossy network (--loss) drops, to PATH:
"DROP seq=<RTP sequence number> rtpts=<RTP timestamp> pts=<the clip's timestamp, ns>", so a test
can tell which pictures lost data.
"""
import argparse
import ctypes
import os
import signal
import socket
import stat
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
gi.require_version("GstRtsp", "1.0")
from gi.repository import Gio, GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402


def netsim(loss, jitter_ms, duplicate):
    """A lossy network between the payloader and the sinks, per RTP packet: `loss` is the drop
    probability (GStreamer's netsim). Jitter and duplicates go through `Scrambler` instead (netsim's
    delay mode pushes data before its segment, which the RTSP server's media asserts on): the
    payloader's packets go to an appsink, and an appsrc named pay0 sends them on. Empty when
    all are zero."""
    if not (loss or jitter_ms or duplicate):
        return ""
    tail = f"! netsim drop-probability={loss} " if loss else ""
    if jitter_ms or duplicate:
        tail += "! appsink name=scramble_in emit-signals=true sync=true max-buffers=0 drop=false appsrc name=scramble_out is-live=true do-timestamp=true format=time "
    return tail


class Scrambler:
    """Sends each RTP packet after a uniform 0..jitter_ms delay (so packets overtake each
    other) and a share of them twice, as a congested network with a flapping route does."""

    def __init__(self, media, jitter_ms, duplicate):
        import random
        import threading

        self.rng = random.Random(21)
        self.jitter = jitter_ms / 1000.0
        self.duplicate = duplicate
        self.lock = threading.Lock()
        self.timers = threading
        element = media.get_element()
        self.out = element.get_by_name("pay0")
        element.get_by_name("scramble_in").connect("new-sample", self.on_sample)

    def on_sample(self, sink):
        sample = sink.emit("pull-sample")
        if self.out.get_property("caps") is None:
            self.out.set_property("caps", sample.get_caps())
        buf = sample.get_buffer().copy_deep()
        with self.lock:
            delay = self.rng.uniform(0, self.jitter)
            twice = self.rng.random() < self.duplicate
        for _ in range(2 if twice else 1):
            t = self.timers.Timer(delay, lambda b=buf: self.push(b))
            t.daemon = True
            t.start()
        return Gst.FlowReturn.OK

    def push(self, buf):
        with self.lock:
            b = buf.copy()
            b.pts = Gst.CLOCK_TIME_NONE
            b.dts = Gst.CLOCK_TIME_NONE
            self.out.emit("push-buffer", b)


def log_drops(media, path):
    """Logs the RTP packets netsim drops: those that go into it and do not come out before the
    next goes in (without delays it pushes or drops each packet at once)."""
    it, sim = media.get_element().iterate_recurse(), None
    while sim is None:
        res, e = it.next()
        if res != Gst.IteratorResult.OK:
            raise SystemExit("--drop-log: no netsim in the pipeline")
        if e.get_factory() is not None and e.get_factory().get_name() == "netsim":
            sim = e
    out = open(path, "a", buffering=1)
    queue = []

    def rtp(buf):
        head = buf.extract_dup(0, 8)
        return (head[2] << 8 | head[3], int.from_bytes(head[4:8], "big"), buf.pts)

    def on_in(_pad, info):
        # netsim has pushed or dropped every packet before this one: what did not come out was
        # dropped. (A buffer list is split into buffers on its way in, each passing this probe.)
        while queue:
            s = queue.pop(0)
            out.write(f"DROP seq={s[0]} rtpts={s[1]} pts={s[2]}\n")
        queue.append(rtp(info.get_buffer()))
        return Gst.PadProbeReturn.OK

    def on_out(_pad, info):
        seq = rtp(info.get_buffer())[0]
        queue[:] = [s for s in queue if s[0] != seq]
        return Gst.PadProbeReturn.OK

    sim.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, on_in)
    sim.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, on_out)


def name_last(tail):
    """Names the last element of a network simulator's chain pay0 (what the server streams)."""
    if "scramble_out" in tail:
        return tail.replace("name=scramble_out", "name=pay0")
    return tail.replace("! netsim", "! netsim name=pay0", 1)


def payload(codec, tail):
    """The payloader, named pay0 for the RTSP server; with a network simulator after it, the
    simulator's output is what the server streams (it is named pay0 instead)."""
    pay = "rtph264pay" if codec == "h264" else "rtph265pay"
    if tail:
        return f"! {pay} pt=96 config-interval=-1 {name_last(tail)}"
    return f"! {pay} name=pay0 pt=96"


def clip_pipeline(path, codec, tail):
    """A known clip, streamed at its own rate (the server's sinks sync to its timestamps), so a
    client can check every frame it gets against the clip's own."""
    demux = "qtdemux" if path.endswith((".mp4", ".mov")) else "matroskademux"
    parse = "h264parse" if codec == "h264" else "h265parse"
    return f"( filesrc location={path} ! {demux} ! {parse} {payload(codec, tail)} )"


def pipeline(codec, width, height, fps, pattern, bitrate, preset, keyint=30, delay_ms=0):
    src = (
        f"videotestsrc is-live=true pattern={pattern} "
        f"! video/x-raw,format=I420,width={width},height={height},framerate={fps}/1"
    )
    hold = (
        f"! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 min-threshold-time={delay_ms * 1000000} "
        if delay_ms > 0
        else ""
    )
    if codec == "h264":
        enc = (
            f"x264enc tune=zerolatency speed-preset={preset} key-int-max={keyint} bitrate={bitrate} "
            f"{hold}! rtph264pay name=pay0 pt=96"
        )
    elif codec in ("h265", "hevc"):
        enc = (
            f"x265enc tune=zerolatency speed-preset={preset} key-int-max={keyint} bitrate={bitrate} "
            f"{hold}! rtph265pay name=pay0 pt=96"
        )
    else:
        raise SystemExit(f"unknown codec {codec!r} (h264, h265)")
    return f"( {src} ! {enc} )"


# The server binds its multicast sockets to the group's ports without SO_REUSEADDR, and a client
# on this host must bind the same ports (FFmpeg sets SO_REUSEADDR on multicast sockets). Linux
# lets the second bind through when both sockets allow reuse, checked at that bind, so the server's
# sockets get it after SETUP made them and before its reply goes out ("send-message" runs then;
# its context argument does not reach Python, so the sockets are found among our own descriptors).
MCAST_PORTS = (5000, 5999)


def allow_reuse_of_multicast_ports(*_args):
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except (OSError, ValueError):
            continue
        with s:
            try:
                if s.type == socket.SOCK_DGRAM and MCAST_PORTS[0] <= s.getsockname()[1] <= MCAST_PORTS[1]:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            except OSError:
                pass



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
    ap.add_argument("--delay-ms", type=int, default=0)
    ap.add_argument("--sr-capture-time", action="store_true")
    ap.add_argument("--clip", default=None, help="stream this H.264/H.265 file (mp4/mkv) instead of a test source")
    ap.add_argument("--loss", type=float, default=0.0, help="RTP packet drop probability (netsim)")
    ap.add_argument("--jitter-ms", type=int, default=0, help="uniform 0..N ms delay per RTP packet, reordering allowed")
    ap.add_argument("--duplicate", type=float, default=0.0, help="RTP packet duplicate probability")
    ap.add_argument("--auth-digest", default=None, help="USER:PASS: require digest auth")
    ap.add_argument("--multicast", action="store_true", help="offer UDP multicast too")
    ap.add_argument("--no-udp-send", action="store_true", help="drop everything sent over UDP")
    ap.add_argument("--tls", default=None, help="PEM file with certificate and key: serve rtsps")
    ap.add_argument("--protocols", default=None, choices=("tcp", "udp"), help="offer only this lower transport")
    ap.add_argument("--count-udp", action="store_true", help="print UDP_SENT <packets sent over UDP so far>")
    ap.add_argument("--drop-log", default=None, help="log each RTP packet --loss drops to this file")
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
    tail = netsim(a.loss, a.jitter_ms, a.duplicate)
    if a.clip:
        factory.set_launch(clip_pipeline(a.clip, a.codec, tail))
    else:
        launch = pipeline(a.codec, width, height, a.fps, a.pattern, a.bitrate, a.preset, a.keyint, a.delay_ms)
        if tail:
            launch = launch.replace("name=pay0 pt=96", "pt=96 config-interval=-1 " + name_last(tail))
        factory.set_launch(launch)
    if a.jitter_ms or a.duplicate:
        # The scrambler stands for a camera and a network on machines of their own: on a loaded
        # loopback machine its timers (Python threads) would fire late and add jitter beyond what
        # was asked for. A higher priority where allowed (root; otherwise as it is).
        try:
            os.nice(-10)
        except OSError:
            pass
        scramblers = []
        factory.connect("media-configure", lambda _f, media: scramblers.append(Scrambler(media, a.jitter_ms, a.duplicate)))
    factory.set_shared(not a.not_shared)
    if a.drop_log and a.loss:
        factory.connect("media-configure", lambda _f, media: log_drops(media, a.drop_log))
    if a.sr_capture_time:

        class CaptureClockMedia(GstRtspServer.RTSPMedia):
            def do_setup_rtpbin(self, rtpbin):
                rtpbin.set_property("rtcp-sync-send-time", False)
                return True

        factory.set_media_gtype(CaptureClockMedia)

        def on_configure(_factory, media):
            pay = media.get_element().get_by_name("pay0")
            acc = {"n": 0, "sum": 0}

            def probe(pad, info):
                buf = info.get_buffer()
                clock = pay.get_clock()
                ev = pad.get_sticky_event(Gst.EventType.SEGMENT, 0)
                if clock is not None and buf is not None and ev is not None and buf.pts != Gst.CLOCK_TIME_NONE:
                    # The encoder shifts timestamps (and its segment) by 1000 h: compare running times.
                    captured = ev.parse_segment().to_running_time(Gst.Format.TIME, buf.pts)
                    acc["n"] += 1
                    acc["sum"] += clock.get_time() - pay.get_base_time() - captured
                    if acc["n"] % 15 == 0:
                        print(f"CAPTURE_TO_SEND_MS {acc['sum'] / acc['n'] / 1e6:.1f}", file=sys.stderr, flush=True)
                return Gst.PadProbeReturn.OK

            pay.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)

        factory.connect("media-configure", on_configure)

    if a.auth or a.auth_digest or a.tls:
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
        methods = 0
        if a.auth:
            user, _, password = a.auth.partition(":")
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
            methods |= GstRtsp.RTSPAuthMethod.BASIC
        if a.auth_digest:
            user, _, password = a.auth_digest.partition(":")
            auth.add_digest(user, password, token)
            methods |= GstRtsp.RTSPAuthMethod.DIGEST
        if methods:
            auth.set_supported_methods(methods)
        else:
            # TLS without credentials: everyone may watch.
            auth.set_default_token(token)
        if a.tls:
            auth.set_tls_certificate(Gio.TlsCertificate.new_from_file(a.tls))
        server.set_auth(auth)
        perms = GstRtspServer.RTSPPermissions()
        perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
        perms.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
        factory.set_permissions(perms)

    if a.multicast:
        pool = GstRtspServer.RTSPAddressPool()
        if not pool.add_range("239.255.42.1", "239.255.42.254", MCAST_PORTS[0], MCAST_PORTS[1], 1):
            raise SystemExit("cannot add the multicast address range")
        factory.set_address_pool(pool)
        factory.set_protocols(GstRtsp.RTSPLowerTrans.UDP_MCAST | GstRtsp.RTSPLowerTrans.UDP | GstRtsp.RTSPLowerTrans.TCP)
        server.connect(
            "client-connected",
            lambda _srv, client: client.connect("send-message", allow_reuse_of_multicast_ports),
        )


    if a.no_udp_send:
        # A firewall between server and client that drops UDP: the RTSP connection (TCP) works, so
        # a client's UDP SETUP and PLAY succeed, and then no RTP or RTCP packet reaches it. The
        # server's UDP sinks are made when the media is prepared, inside its pipeline.
        def drop(_pad, _info):
            return Gst.PadProbeReturn.DROP

        def on_element(_bin, _sub, element):
            name = element.get_factory().get_name() if element.get_factory() else ""
            if name in ("udpsink", "multiudpsink"):
                element.get_static_pad("sink").add_probe(
                    Gst.PadProbeType.BUFFER | Gst.PadProbeType.BUFFER_LIST, drop
                )

        def on_configure_fw(_factory, media):
            pipe = media.get_element().get_parent()
            pipe.connect("deep-element-added", on_element)

        factory.connect("media-configure", on_configure_fw)

    if a.protocols:
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP if a.protocols == "tcp" else GstRtsp.RTSPLowerTrans.UDP)

    if a.count_udp:
        # Every buffer (or buffer list) reaching a UDP sink is sent to the clients it lists.
        sent = {"n": 0, "shown": 0}

        def count(_pad, info):
            if info.type & Gst.PadProbeType.BUFFER_LIST:
                lst = info.get_buffer_list()
                sent["n"] += lst.length() if lst is not None else 1
            else:
                sent["n"] += 1
            return Gst.PadProbeReturn.OK

        def on_element_count(_bin, _sub, element):
            name = element.get_factory().get_name() if element.get_factory() else ""
            if name in ("udpsink", "multiudpsink"):
                element.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.BUFFER_LIST, count)

        factory.connect("media-configure", lambda _f, media: media.get_element().get_parent().connect("deep-element-added", on_element_count))

        def show():
            if sent["n"] != sent["shown"]:
                sent["shown"] = sent["n"]
                print(f"UDP_SENT {sent['n']}", file=sys.stderr, flush=True)
            return True

        GLib.timeout_add(50, show)

    # What each client asked for, for the tests to check: "SETUP <udp|udp-mcast|tcp> tunneled=<bool>"
    # on stderr (tunneled: RTSP over the HTTP tunnel), and "TEARDOWN" for each TEARDOWN.
    def on_setup(client, ctx):
        trans = ctx.trans.get_transport() if ctx.trans is not None else None
        names = {int(GstRtsp.RTSPLowerTrans.UDP): "udp", int(GstRtsp.RTSPLowerTrans.UDP_MCAST): "udp-mcast",
                 int(GstRtsp.RTSPLowerTrans.TCP): "tcp"}
        lower = names.get(int(trans.lower_transport), str(int(trans.lower_transport))) if trans is not None else "?"
        print(f"SETUP {lower} tunneled={client.get_connection().is_tunneled()}", file=sys.stderr, flush=True)

    def on_teardown(_client, _ctx):
        print("TEARDOWN", file=sys.stderr, flush=True)

    def on_client(_srv, client):
        client.connect("setup-request", on_setup)
        client.connect("teardown-request", on_teardown)

    server.connect("client-connected", on_client)

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
