#!/usr/bin/env python3
"""A scripted hostile camera on 127.0.0.1 (stdlib only): every connection gets one protocol-level
attack, chosen by --mode. It prints "READY <port>" on stdout once it listens, and one line per
connection ("CONN") on stderr, so a test can count the client's reconnects.

RTSP modes (every request is answered the same way, whatever it asks):
  big-header     a 200 OK whose header holds a 1 MiB line
  big-sdp        OPTIONS answered, DESCRIBE answered with a 10 MiB SDP (Content-Length says so)
  bad-sdp        DESCRIBE answered with an SDP of malformed lines (no v=, broken m= and rtpmap)
  auth-loop      401 with a new digest nonce (stale=TRUE) to every request, for ever
  redirect-loop  302 to the next path on this server, for ever
  silent         accepts the connection and never sends a byte
  slow           a valid OPTIONS/DESCRIBE answer, one byte a second
HTTP MJPEG modes (multipart/x-mixed-replace, 30 parts a second; --jpeg FILE is a real JPEG):
  mjpeg-no-boundary  the Content-Type has no boundary; parts are still sent with one
  mjpeg-huge-length  every part claims Content-Length 2^62
  mjpeg-65535        the JPEG's SOF claims 65535x65535
  mjpeg-truncated    every JPEG cut short at a different point
Run with /usr/bin/python3; the process ends with its parent (PR_SET_PDEATHSIG on Linux)."""
import argparse
import ctypes
import os
import random
import socket
import sys
import threading
import time

RTSP_MODES = ("big-header", "big-sdp", "bad-sdp", "auth-loop", "redirect-loop", "silent", "slow")
HTTP_MODES = ("mjpeg-no-boundary", "mjpeg-huge-length", "mjpeg-65535", "mjpeg-truncated")


def die_with_parent():
    try:
        ctypes.CDLL("libc.so.6").prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except OSError:
        pass


def read_request(conn, buf):
    """One RTSP request's head (and its body, by Content-Length): (head text, rest of buf), or
    (None, b"") at the connection's end."""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None, b""
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    text = head.decode("latin-1")
    length = 0
    for line in text.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip() or 0)
    while len(rest) < length:
        d = conn.recv(65536)
        if not d:
            return None, b""
        rest += d
    return text, rest[length:]


def cseq(text):
    for line in text.split("\r\n"):
        k, _, v = line.partition(":")
        if k.strip().lower() == "cseq":
            return v.strip()
    return "0"


SDP_OK = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=cam\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\n"
          "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=control:track1\r\n")
SDP_BAD = ("x=what\r\nm=video\r\nm=video -1 RTP/AVP 96 97 98 99 100\r\na=rtpmap:96\r\n"
           "a=rtpmap:97 H264/0\r\na=rtpmap:98 /90000/-1\r\na=fmtp:96 sprop-parameter-sets=!!!!,====\r\n"
           "a=control:\r\nm=audio 99999999999999999999 RTP/AVP\r\nc=IN IP4\r\nb=AS:-5\r\n\0\0\0\r\n")


def rtsp(conn, mode, port, state):
    buf = b""
    while True:
        req, buf = read_request(conn, buf)
        if req is None:
            return
        method, _, rest = req.partition(" ")
        seq = cseq(req)
        if mode == "big-header":
            conn.sendall(b"RTSP/1.0 200 OK\r\nCSeq: %s\r\nX-Junk: " % seq.encode() + b"a" * (1 << 20) + b"\r\n\r\n")
        elif mode in ("big-sdp", "bad-sdp", "slow"):
            if method == "DESCRIBE":
                if mode == "big-sdp":
                    body = SDP_OK.encode() + b"a=x-junk:" + b"j" * (10 << 20) + b"\r\n"
                else:
                    body = (SDP_BAD if mode == "bad-sdp" else SDP_OK).encode()
                msg = (b"RTSP/1.0 200 OK\r\nCSeq: %s\r\nContent-Type: application/sdp\r\nContent-Length: %d\r\n\r\n"
                       % (seq.encode(), len(body))) + body
            else:
                msg = b"RTSP/1.0 200 OK\r\nCSeq: %s\r\nPublic: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n\r\n" % seq.encode()
            if mode == "slow":
                for i in range(len(msg)):
                    conn.sendall(msg[i:i + 1])
                    time.sleep(1)
            else:
                conn.sendall(msg)
        elif mode == "auth-loop":
            with state["lock"]:
                state["n"] += 1
                nonce = "%032x" % random.getrandbits(128)
            conn.sendall(b"RTSP/1.0 401 Unauthorized\r\nCSeq: %s\r\nWWW-Authenticate: Digest realm=\"cam%d\", "
                         b"nonce=\"%s\", stale=TRUE\r\n\r\n" % (seq.encode(), state["n"], nonce.encode()))
        elif mode == "redirect-loop":
            with state["lock"]:
                state["n"] += 1
                n = state["n"]
            conn.sendall(b"RTSP/1.0 302 Moved\r\nCSeq: %s\r\nLocation: rtsp://127.0.0.1:%d/cam%d\r\n\r\n"
                         % (seq.encode(), port, n))


def jpeg_with_size(jpg, w, h):
    """The JPEG with every SOFn's height and width replaced."""
    b = bytearray(jpg)
    i = 2
    while i + 4 <= len(b) and b[i] == 0xFF:
        marker, seglen = b[i + 1], int.from_bytes(b[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            b[i + 5:i + 7] = h.to_bytes(2, "big")
            b[i + 7:i + 9] = w.to_bytes(2, "big")
        if marker == 0xDA:
            break
        i += 2 + seglen
    return bytes(b)


def mjpeg(conn, mode, jpg):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return
        buf += d
    ctype = "multipart/x-mixed-replace" if mode == "mjpeg-no-boundary" else "multipart/x-mixed-replace;boundary=frame"
    conn.sendall(("HTTP/1.0 200 OK\r\nContent-Type: %s\r\n\r\n" % ctype).encode())
    big = jpeg_with_size(jpg, 65535, 65535)
    rng = random.Random(54)
    while True:
        body, length = jpg, len(jpg)
        if mode == "mjpeg-huge-length":
            length = 1 << 62
        elif mode == "mjpeg-65535":
            body, length = big, len(big)
        elif mode == "mjpeg-truncated":
            body = jpg[:rng.randrange(1, len(jpg))]
            length = len(body)
        conn.sendall(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % length + body + b"\r\n")
        time.sleep(1 / 30)


def serve(conn, args, port, state):
    try:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if args.mode == "silent":
            while conn.recv(65536):
                pass
        elif args.mode in RTSP_MODES:
            rtsp(conn, args.mode, port, state)
        else:
            mjpeg(conn, args.mode, state["jpeg"])
    except OSError:
        pass
    finally:
        conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=RTSP_MODES + HTTP_MODES)
    p.add_argument("--jpeg", help="a real JPEG image (the HTTP modes)")
    args = p.parse_args()
    die_with_parent()
    state = {"lock": threading.Lock(), "n": 0, "jpeg": open(args.jpeg, "rb").read() if args.jpeg else b""}
    if args.mode in HTTP_MODES and not state["jpeg"].startswith(b"\xff\xd8"):
        sys.exit("hostile_server: the HTTP modes need --jpeg with a JPEG image")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    port = s.getsockname()[1]
    print("READY %d" % port, flush=True)
    while True:
        conn, _ = s.accept()
        print("CONN", file=sys.stderr, flush=True)
        threading.Thread(target=serve, args=(conn, args, port, state), daemon=True).start()


if __name__ == "__main__":
    main()
