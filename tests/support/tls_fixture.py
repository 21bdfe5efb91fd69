#!/usr/bin/python3
"""The servers of nvcam's TLS tests (tests/tls.rs), on loopback, with certificates made here by the
openssl CLI: rtsps:// (tests/support/rtsp_server.py --tls, GStreamer) and https:// MJPEG (this
process: http.server wrapped in ssl, multipart/x-mixed-replace). Run with /usr/bin/python3 (the
RTSP servers need python3-gi).

    tls_fixture.py --dir DIR --clip H264.mp4 --mjpeg FRAMES.mjpeg

One server per certificate, shared by every test of a run:
  good        signed by CA "ca", subjectAltName IP:127.0.0.1 (streams --clip / --mjpeg)
  wrong_host  signed by "ca", subjectAltName DNS:camera.example
  expired     signed by "ca", IP:127.0.0.1, expired yesterday
  own         the camera's own self-signed certificate (CN camera, no SAN)
and a second CA, "other", that signed none of them; https servers with the good certificate that
speak only TLS 1.0 (https_tls10), 1.1 (https_tls11) or 1.3 (https_tls13), and one that redirects
to a plaintext http:// server (https_redirect_plain) which logs each request it gets to
http_plain_log; an rtsps server that redirects every request to a plaintext rtsp:// listener
(rtsps_redirect_plain) which logs each connection it accepts to rtsp_plain_log. Every streaming
server asks for the user viewer with the password s3cret-tls (RTSP Basic, HTTP Basic).

Writes DIR/fixture.env (KEY=VALUE lines: ca_file, other_ca_file, pin_own, pin_good, key_own (a
private key file, for tests that look for it in logs), rtsps_<name>, https_<name> URLs without
credentials, rtsps_<name>_log: the RTSP server's stderr, with its SETUP lines) and prints READY on
stdout. It exits, stopping its servers, when its stdin closes (the test process that started it
ended; with --until-killed it ignores stdin) or on SIGTERM. The Windows step (scripts/ci/windows-test.sh) starts it on Linux and points
the Windows tests under Wine at the file with NVCAM_TLS_FIXTURE: a Windows process under Wine
cannot start Linux programs.
"""
import argparse
import base64
import http.server
import os
import signal
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import warnings

USER, PASSWORD = "viewer", "s3cret-tls"
HERE = os.path.dirname(os.path.abspath(__file__))


def openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_pki(d):
    for ca in ("ca", "other"):
        openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=nvcam test CA {ca}",
                "-keyout", f"{ca}.key", "-out", f"{ca}.crt")
    for name, san, days in (("good", "IP:127.0.0.1", 2), ("wrong_host", "DNS:camera.example", 2), ("expired", "IP:127.0.0.1", -1)):
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(f"subjectAltName={san}\n")
        openssl(d, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=nvcam test camera",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-days", str(days),
                "-extfile", f"{name}.ext", "-out", f"{name}.crt")
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=camera",
            "-keyout", "own.key", "-out", "own.crt")
    for name in ("good", "wrong_host", "expired", "own"):
        with open(os.path.join(d, f"{name}.pem"), "w") as f:
            f.write(open(os.path.join(d, f"{name}.crt")).read() + open(os.path.join(d, f"{name}.key")).read())


def fingerprint(d, name):
    out = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", f"{name}.crt"], cwd=d,
                         check=True, capture_output=True, text=True).stdout
    return out.strip().rsplit("=", 1)[1]


def jpeg_frames(path):
    """The JPEG images of a raw MJPEG file (ffmpeg -f mjpeg), split at their end markers: entropy-
    coded data never holds an unstuffed FF D9."""
    data = open(path, "rb").read()
    frames, start = [], 0
    while True:
        end = data.find(b"\xff\xd9", start)
        if end < 0:
            break
        frames.append(data[start:end + 2])
        start = end + 2
    if not frames or not frames[0].startswith(b"\xff\xd8"):
        sys.exit(f"tls_fixture: {path} holds no JPEG images")
    return frames


class Mjpeg(http.server.BaseHTTPRequestHandler):
    frames = []
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if self.headers.get("Authorization") != want:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="camera"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=nvcamframe")
        self.end_headers()
        i = 0
        try:
            while True:
                jpg = self.frames[i % len(self.frames)]
                self.wfile.write(b"--nvcamframe\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpg))
                self.wfile.write(jpg + b"\r\n")
                self.wfile.flush()
                i += 1
                time.sleep(1 / 30)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a refused handshake is what the tests expect


class Plain(http.server.BaseHTTPRequestHandler):
    """The plaintext server a redirect points at: it logs each request's line to its log file (the
    test counts them) and answers 404."""
    log_path = None
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with open(self.log_path, "a") as f:
            f.write(f"{self.command} {self.path}\n")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Redirect(http.server.BaseHTTPRequestHandler):
    """Redirects every request to the plaintext server (`target`)."""
    target = None
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()


class RtspRedirect(socketserver.StreamRequestHandler):
    """An rtsps server that answers every request with a redirect to `target` (plaintext rtsp)."""
    target = None

    def handle(self):
        try:
            self.connection.do_handshake()
            while True:
                cseq = None
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    if line.lower().startswith(b"cseq:"):
                        cseq = line.split(b":", 1)[1].strip().decode()
                    if line in (b"\r\n", b"\n"):
                        break
                self.wfile.write(f"RTSP/1.0 302 Moved Temporarily\r\nCSeq: {cseq}\r\nLocation: {self.target}\r\n\r\n".encode())
        except (ssl.SSLError, OSError):
            pass


class Count(socketserver.BaseRequestHandler):
    """A plaintext listener that logs each connection it accepts to `log_path`."""
    log_path = None

    def handle(self):
        with open(self.log_path, "a") as f:
            f.write("connection\n")


class TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass


def https_server(d, name, handler=Mjpeg, version=None):
    """An https server with certificate `name`; `version`: the one TLS version it speaks."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, f"{name}.crt"), os.path.join(d, f"{name}.key"))
    if version is not None:
        # OpenSSL 3 speaks TLS 1.0/1.1 only at security level 0.
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = ctx.maximum_version = version
    srv = Server(("127.0.0.1", 0), handler)
    # The handshake runs in the request's thread, so a client that fails it blocks nobody.
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def rtsps_server(d, name, clip):
    log = open(os.path.join(d, f"rtsps-{name}.log"), "w")
    cmd = [sys.executable, os.path.join(HERE, "rtsp_server.py"), "--tls", os.path.join(d, f"{name}.pem"),
           "--auth", f"{USER}:{PASSWORD}"]
    if clip:
        cmd += ["--clip", clip]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True)
    return p, log.name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--clip", required=True, help="H.264 clip the good rtsps server streams")
    ap.add_argument("--mjpeg", required=True, help="raw MJPEG file the https servers stream")
    ap.add_argument("--until-killed", action="store_true", help="run until SIGTERM, not until stdin closes")
    a = ap.parse_args()
    d = os.path.abspath(a.dir)
    os.makedirs(d, exist_ok=True)
    make_pki(d)
    Mjpeg.frames = jpeg_frames(a.mjpeg)
    env = {"ca_file": os.path.join(d, "ca.crt"), "other_ca_file": os.path.join(d, "other.crt"),
           "pin_own": fingerprint(d, "own"), "pin_good": fingerprint(d, "good"), "key_own": os.path.join(d, "own.key")}
    procs = []

    def stop(*_, code=0):
        for p in procs:
            (p[0] if isinstance(p, tuple) else p).terminate()
        os._exit(code)

    signal.signal(signal.SIGTERM, stop)
    for name in ("good", "wrong_host", "expired", "own"):
        p, log = rtsps_server(d, name, os.path.abspath(a.clip) if name == "good" else None)
        procs.append((p, name, log))
        env[f"https_{name}"] = f"https://127.0.0.1:{https_server(d, name)}/video.mjpg"
    for p, name, log in procs:
        line = p.stdout.readline()
        if not line.startswith("READY "):
            print(f"tls_fixture: the rtsps server {name} did not start: {open(log).read()[-2000:]}", file=sys.stderr)
            stop(code=1)
        env[f"rtsps_{name}"] = f"rtsps://127.0.0.1:{int(line.split()[1])}/cam"
        env[f"rtsps_{name}_log"] = log
    procs = [p for p, _, _ in procs]
    # Servers of one TLS version nvcam does not speak, and an https redirect to plaintext.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        versions = {"tls10": ssl.TLSVersion.TLSv1, "tls11": ssl.TLSVersion.TLSv1_1, "tls13": ssl.TLSVersion.TLSv1_3}
        for key, v in versions.items():
            env[f"https_{key}"] = f"https://127.0.0.1:{https_server(d, 'good', version=v)}/video.mjpg"
    Plain.log_path = env["http_plain_log"] = os.path.join(d, "http-plain.log")
    open(Plain.log_path, "w").close()
    plain = Server(("127.0.0.1", 0), Plain)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    Redirect.target = f"http://127.0.0.1:{plain.server_address[1]}/video.mjpg"
    env["https_redirect_plain"] = f"https://127.0.0.1:{https_server(d, 'good', Redirect)}/video.mjpg"
    Count.log_path = env["rtsp_plain_log"] = os.path.join(d, "rtsp-plain.log")
    open(Count.log_path, "w").close()
    count = TcpServer(("127.0.0.1", 0), Count)
    threading.Thread(target=count.serve_forever, daemon=True).start()
    RtspRedirect.target = f"rtsp://127.0.0.1:{count.server_address[1]}/cam"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "good.crt"), os.path.join(d, "good.key"))
    redirect = TcpServer(("127.0.0.1", 0), RtspRedirect)
    redirect.socket = ctx.wrap_socket(redirect.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=redirect.serve_forever, daemon=True).start()
    env["rtsps_redirect_plain"] = f"rtsps://127.0.0.1:{redirect.server_address[1]}/cam"
    with open(os.path.join(d, "fixture.env.part"), "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in env.items())
    os.replace(os.path.join(d, "fixture.env.part"), os.path.join(d, "fixture.env"))
    print("READY", flush=True)
    try:
        if a.until_killed:
            while True:
                signal.pause()
        while sys.stdin.read(4096):
            pass
    finally:
        stop()


if __name__ == "__main__":
    main()
