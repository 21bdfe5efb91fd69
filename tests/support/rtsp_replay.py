#!/usr/bin/env python3
"""A deterministic RTSP server on loopback for nvcam's tests, Python standard library only (the GPU
machine has neither GStreamer nor a network).

    rtsp_replay.py --es CLIP.h264 [--port N] [--fps 30] [--loss 0.02] [--seed 21] [--speed 1.0]

Replays an H.264 Annex-B elementary stream (`ffmpeg -i clip.mp4 -c copy -bsf:v h264_mp4toannexb
-f h264 clip.h264`) as RTP per RFC 6184 (single NAL unit packets, FU-A for NAL units over 1400
bytes, the marker bit on each access unit's last packet, 90 kHz timestamps at --fps, SPS/PPS in the
SDP's sprop-parameter-sets and in band), with RTP interleaved in the RTSP TCP connection
(`RTP/AVP/TCP;interleaved=0-1`; a SETUP for UDP is refused), paced in real time (--speed 2 twice as
fast). Listens on 127.0.0.1 only; port 0 picks a free one. Prints one line on stdout once it
listens:

    READY <port> <access units> <RTP packets> <dropped>

Every session replays the stream from its start with the same RTP packets dropped: a burst of 1 to
3 packets starts at a packet with probability --loss / 2 (so about --loss of all packets go),
drawn once from --seed over packet indices. A session's first and last access units are never
dropped from, so every session starts from a whole IDR and every gap is followed by a packet that
shows it: the receiver can count exactly <dropped> packets lost. Sequence numbers start 1000
before the 16-bit wrap, so each session crosses it early. After the last access unit the server
sends an RTCP BYE (FFmpeg's RTSP demuxer ends the stream on it: the decoder drains, every picture
comes out) and keeps the connection open until the client tears it down.

Each URL path is served for one whole replay: a DESCRIBE of a path whose replay has ended gets
404, so a client that reconnects after the end gets no second copy of the stream. Use one path per
client (rtsp://127.0.0.1:PORT/any/name).

It dies with its parent (PR_SET_PDEATHSIG); SIGTERM stops it.
"""
import argparse
import base64
import ctypes
import random
import signal
import socket
import struct
import sys
import threading
import time

MTU_PAYLOAD = 1400
PT = 96
CLOCK = 90000


def nal_units(data):
    """The NAL units of an Annex-B stream, without start codes or trailing zero bytes."""
    starts = []
    i = data.find(b"\x00\x00\x01")
    while i >= 0:
        starts.append(i + 3)
        i = data.find(b"\x00\x00\x01", i + 3)
    out = []
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        nal = data[s:end].rstrip(b"\x00")
        if nal:
            out.append(nal)
    return out


def access_units(nals):
    """Groups NAL units into access units (H.264 7.4.1.2.3): an AUD, SEI, SPS or PPS after a
    picture's slices, or a slice with first_mb_in_slice 0, starts the next one."""
    aus, cur, has_vcl = [], [], False
    for nal in nals:
        t = nal[0] & 0x1F
        first_slice = t in (1, 5) and len(nal) > 1 and nal[1] & 0x80
        if cur and has_vcl and (t in (6, 7, 8, 9) or 14 <= t <= 18 or first_slice):
            aus.append(cur)
            cur, has_vcl = [], False
        cur.append(nal)
        has_vcl |= t in (1, 5)
    if cur:
        aus.append(cur)
    return aus


def payloads(nal):
    """RFC 6184 payloads for one NAL unit: itself, or FU-A fragments."""
    if len(nal) <= MTU_PAYLOAD:
        return [nal]
    indicator = (nal[0] & 0xE0) | 28
    body = nal[1:]
    chunk = MTU_PAYLOAD - 2
    out = []
    for off in range(0, len(body), chunk):
        header = nal[0] & 0x1F
        if off == 0:
            header |= 0x80
        if off + chunk >= len(body):
            header |= 0x40
        out.append(bytes([indicator, header]) + body[off : off + chunk])
    return out


class Replay:
    def __init__(self, es, fps, loss, seed):
        self.fps = fps
        rng = random.Random(seed)
        self.ssrc = rng.getrandbits(32)
        self.ts0 = rng.getrandbits(32)
        self.seq0 = 65536 - 1000
        aus = access_units(nal_units(es))
        sps = next(n for au in aus for n in au if n[0] & 0x1F == 7)
        pps = next(n for au in aus for n in au if n[0] & 0x1F == 8)
        self.fmtp = "packetization-mode=1;profile-level-id=%s;sprop-parameter-sets=%s,%s" % (
            sps[1:4].hex(),
            base64.b64encode(sps).decode(),
            base64.b64encode(pps).decode(),
        )
        # (access unit index, RTP packet) in sending order.
        self.packets = []
        for i, au in enumerate(aus):
            ts = (self.ts0 + i * CLOCK // fps) & 0xFFFFFFFF
            parts = [p for nal in au for p in payloads(nal)]
            for k, p in enumerate(parts):
                n = len(self.packets)
                marker = 0x80 if k == len(parts) - 1 else 0
                hdr = struct.pack("!BBHII", 0x80, marker | PT, (self.seq0 + n) & 0xFFFF, ts, self.ssrc)
                self.packets.append((i, hdr + p))
        self.aus = len(aus)
        # Drawn once over packet indices: the same packets go in every session.
        self.dropped = set()
        n = 0
        while n < len(self.packets):
            au = self.packets[n][0]
            if 0 < au < self.aus - 1 and rng.random() < loss / 2:
                burst = rng.randint(1, 3)
                self.dropped.update(k for k in range(n, min(n + burst, len(self.packets))) if self.packets[k][0] < self.aus - 1)
                n += burst + 1
            else:
                n += 1


class Client(threading.Thread):
    def __init__(self, server, conn):
        super().__init__(daemon=True)
        self.server, self.conn = server, conn
        self.send_lock = threading.Lock()
        self.stop = threading.Event()
        self.path = None
        self.streamer = None

    def send(self, data):
        with self.send_lock:
            self.conn.sendall(data)

    def reply(self, cseq, code="200 OK", headers=(), body=b""):
        lines = ["RTSP/1.0 " + code, "CSeq: " + cseq, "Server: nvcam-replay"] + list(headers)
        if body:
            lines.append("Content-Length: %d" % len(body))
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def run(self):
        buf = b""
        try:
            while not self.stop.is_set():
                data = self.conn.recv(65536)
                if not data:
                    break
                buf += data
                while buf:
                    if buf[:1] == b"$":
                        # Interleaved data from the client (RTCP receiver reports): skipped.
                        if len(buf) < 4:
                            break
                        n = struct.unpack("!H", buf[2:4])[0]
                        if len(buf) < 4 + n:
                            break
                        buf = buf[4 + n :]
                        continue
                    end = buf.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    head = buf[:end].decode("latin-1").split("\r\n")
                    headers = {}
                    for line in head[1:]:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                    body_len = int(headers.get("content-length", "0"))
                    if len(buf) < end + 4 + body_len:
                        break
                    buf = buf[end + 4 + body_len :]
                    self.request(head[0], headers)
        except OSError:
            pass
        finally:
            self.stop.set()
            try:
                self.conn.close()
            except OSError:
                pass

    def request(self, line, headers):
        method, url, _ = (line.split(" ") + ["", ""])[:3]
        cseq = headers.get("cseq", "0")
        log("%s %s" % (method, url))
        if method == "OPTIONS":
            self.reply(cseq, headers=["Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER"])
        elif method == "DESCRIBE":
            path = url_path(url)
            if path in self.server.ended:
                self.reply(cseq, "404 Not Found")
                return
            self.path = path
            r = self.server.replay
            sdp = "\r\n".join(
                [
                    "v=0",
                    "o=- 1 1 IN IP4 127.0.0.1",
                    "s=nvcam replay",
                    "c=IN IP4 127.0.0.1",
                    "t=0 0",
                    "a=control:*",
                    "a=range:npt=0-",
                    "m=video 0 RTP/AVP %d" % PT,
                    "a=rtpmap:%d H264/%d" % (PT, CLOCK),
                    "a=fmtp:%d %s" % (PT, r.fmtp),
                    "a=framerate:%d" % r.fps,
                    "a=control:track0",
                    "",
                ]
            ).encode()
            base = url.rstrip("/") + "/"
            self.reply(cseq, headers=["Content-Type: application/sdp", "Content-Base: " + base], body=sdp)
        elif method == "SETUP":
            transport = headers.get("transport", "")
            if "TCP" not in transport.upper():
                self.reply(cseq, "461 Unsupported Transport")
                return
            self.reply(
                cseq,
                headers=[
                    "Transport: RTP/AVP/TCP;unicast;interleaved=0-1;ssrc=%08X" % self.server.replay.ssrc,
                    "Session: %08X;timeout=60" % id(self),
                ],
            )
        elif method == "PLAY":
            self.reply(cseq, headers=["Session: %08X" % id(self), "Range: npt=0.000-"])
            if self.streamer is None:
                self.streamer = threading.Thread(target=self.stream, daemon=True)
                self.streamer.start()
        elif method == "TEARDOWN":
            self.reply(cseq, headers=["Session: %08X" % id(self)])
            self.stop.set()
        elif method == "GET_PARAMETER" or method == "SET_PARAMETER":
            self.reply(cseq, headers=["Session: %08X" % id(self)])
        else:
            self.reply(cseq, "501 Not Implemented")

    def stream(self):
        r = self.server.replay
        t0 = time.monotonic()
        period = 1.0 / (r.fps * self.server.speed)
        sent = 0
        try:
            for n, (au, pkt) in enumerate(r.packets):
                if self.stop.is_set():
                    return
                wait = t0 + au * period - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if n in r.dropped:
                    continue
                self.send(b"$\x00" + struct.pack("!H", len(pkt)) + pkt)
                sent += 1
            # RTCP BYE (RFC 3550 6.6): the end of the stream. It goes in a compound packet after
            # an empty receiver report, as RFC 3550 6.1 asks: FFmpeg ignores RTCP packets shorter
            # than an RTP header.
            bye = struct.pack("!BBHI", 0x80, 201, 1, r.ssrc) + struct.pack("!BBHI", 0x81, 203, 1, r.ssrc)
            self.send(b"$\x01" + struct.pack("!H", len(bye)) + bye)
            self.server.ended.add(self.path)
            log("ENDED %s: %d packets sent, %d dropped" % (self.path, sent, len(r.dropped)))
        except OSError:
            self.stop.set()


def url_path(url):
    rest = url.split("://", 1)[-1]
    return "/" + rest.split("/", 1)[1].rstrip("/") if "/" in rest else "/"


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class Server:
    def __init__(self, replay, speed):
        self.replay, self.speed = replay, speed
        self.ended = set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--es", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--loss", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--speed", type=float, default=1.0)
    a = ap.parse_args()
    try:
        # PR_SET_PDEATHSIG: no server outlives the test that started it.
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(a.es, "rb") as f:
        replay = Replay(f.read(), a.fps, a.loss, a.seed)
    server = Server(replay, a.speed)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", a.port))
    ls.listen(16)
    log("replay: %d access units, %d RTP packets, %d dropped, seq from %d" % (replay.aus, len(replay.packets), len(replay.dropped), replay.seq0))
    print("READY %d %d %d %d" % (ls.getsockname()[1], replay.aus, len(replay.packets), len(replay.dropped)), flush=True)
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Client(server, conn).start()


if __name__ == "__main__":
    main()
