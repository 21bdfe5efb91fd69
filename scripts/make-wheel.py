#!/usr/bin/env python3
"""Writes an nvcam wheel from an unpacked release package, with the standard library only (no
build backend, nothing downloaded). scripts/wheel.sh calls it; by hand:

    python3 scripts/make-wheel.py linux   <unpacked nvcam-<v>-linux-x64>   dist/
    python3 scripts/make-wheel.py windows <unpacked nvcam-<v>-windows-x64> dist/

The wheel holds the package ``nvcam/`` (bindings/python/nvcam: ``__init__.py``, ``py.typed``, and a
``_version.py`` with the crate's version), the native library and the FFmpeg libraries it needs
beside it, and FFmpeg's licence under ``nvcam/licenses/FFmpeg/``:

- linux: ``nvcam/libnvcam.so`` (RUNPATH ``$ORIGIN/lib``, as in the tarball) and
  ``nvcam/lib/lib*.so.N``. The platform tag is ``manylinux_<X>_<Y>_x86_64`` where glibc X.Y is the
  newest glibc symbol version any of the libraries uses (PEP 600: such a wheel runs on glibc X.Y
  and newer); every library they need must be glibc's, libgcc_s or one in the wheel.
- windows: ``nvcam/nvcam.dll`` and the FFmpeg DLLs beside it (Python 3.8+ loads a DLL by full path
  with LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, so Windows finds them there), tag ``win_amd64``.

``py3-none``: the package is pure Python over ctypes; it works with any CPython 3.8+.
"""

import base64
import hashlib
import io
import os
import re
import stat
import subprocess
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_SRC = os.path.join(ROOT, "bindings", "python", "nvcam")
# Libraries a manylinux wheel may need from the system (PEP 600 / auditwheel's policy, the subset
# that matters here).
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
               "ld-linux-x86-64.so.2"}
# 1980-01-01, or SOURCE_DATE_EPOCH: the same inputs give the same wheel.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))


def cargo_field(name):
    text = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    pkg = text.split("[package]", 1)[1].split("\n[", 1)[0]
    m = re.search(r'^%s\s*=\s*"([^"]*)"' % name, pkg, re.M)
    if not m:
        sys.exit("make-wheel: no %s in Cargo.toml's [package]" % name)
    return m.group(1)


def readelf_needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def newest_glibc(paths):
    out = subprocess.run(["objdump", "-T"] + paths, check=True, capture_output=True, text=True).stdout
    vers = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"\bGLIBC_([0-9]+\.[0-9]+(?:\.[0-9]+)?)\b", out)}
    if not vers:
        sys.exit("make-wheel: no glibc symbol versions found in %s" % paths)
    return max(vers)[:2]


def linux_files(pkg):
    """(archive name, file path) of the native part, and the platform tag."""
    lib = os.path.join(pkg, "libnvcam.so")
    libdir = os.path.join(pkg, "lib")
    ff = sorted(f for f in os.listdir(libdir) if re.match(r"lib(av|sw)[a-z]+\.so\.[0-9]+$", f))
    if len(ff) < 4:
        sys.exit("make-wheel: %s has too few FFmpeg libraries: %s" % (libdir, ff))
    files = [("nvcam/libnvcam.so", lib)] + [("nvcam/lib/" + f, os.path.join(libdir, f)) for f in ff]
    runpath = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    if "[$ORIGIN/lib]" not in runpath:
        sys.exit("make-wheel: %s has no RUNPATH $ORIGIN/lib (package it with scripts/package.sh linux)" % lib)
    for _, path in files:
        for n in readelf_needed(path):
            if n not in SYSTEM_LIBS and n not in ff:
                sys.exit("make-wheel: %s needs %s, which is neither a system library of the manylinux policy nor in the wheel" % (path, n))
    major, minor = newest_glibc([p for _, p in files])
    return files, "manylinux_%d_%d_x86_64" % (major, minor)


def windows_files(pkg):
    dlls = sorted(f for f in os.listdir(pkg) if f.lower().endswith(".dll"))
    if "nvcam.dll" not in dlls or len(dlls) < 5:
        sys.exit("make-wheel: %s lacks nvcam.dll or its FFmpeg DLLs: %s" % (pkg, dlls))
    return [("nvcam/" + f, os.path.join(pkg, f)) for f in dlls], "win_amd64"


def metadata(version, summary, license_):
    readme = """# nvcam

Camera frames (RTSP, files, a built-in test source) decoded by FFmpeg on NVIDIA GPUs or the CPU,
through nvcam's C ABI (ctypes, no compiled extension). The wheel carries the library and the LGPL
FFmpeg 5.1 libraries it needs; the GPU path needs only the NVIDIA driver.

```python
import nvcam
with nvcam.Library(), nvcam.Camera.open("testsrc://640x480@30", device=nvcam.DEVICE_CPU) as cam:
    with cam.get_frame(1000) as frame:
        print(frame.info.width, frame.info.height, len(frame.copy_nv12()))
```

numpy (``pip install nvcam[numpy]``), PyTorch and CuPy are optional.
"""
    return (
        "Metadata-Version: 2.1\n"
        "Name: nvcam\n"
        "Version: %s\n"
        "Summary: %s\n"
        "License: %s\n"
        "Requires-Python: >=3.8\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Topic :: Multimedia :: Video\n"
        "Provides-Extra: numpy\n"
        'Requires-Dist: numpy; extra == "numpy"\n'
        "Description-Content-Type: text/markdown\n"
        "\n%s" % (version, summary, license_, readme)
    )


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("linux", "windows"):
        sys.exit(__doc__)
    platform, pkg, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    version = cargo_field("version")
    native, tag = (linux_files if platform == "linux" else windows_files)(pkg)
    entries = []  # (archive name, bytes, executable)
    for f in ("__init__.py", "py.typed"):
        entries.append(("nvcam/" + f, open(os.path.join(PKG_SRC, f), "rb").read(), False))
    entries.append(("nvcam/_version.py", ('version = "%s"\n' % version).encode(), False))
    for name, path in native:
        entries.append((name, open(path, "rb").read(), True))
    lic = os.path.join(pkg, "licenses", "FFmpeg")
    for f in sorted(os.listdir(lic)):
        entries.append(("nvcam/licenses/FFmpeg/" + f, open(os.path.join(lic, f), "rb").read(), False))
    info = "nvcam-%s.dist-info" % version
    wheel_meta = "Wheel-Version: 1.0\nGenerator: nvcam scripts/make-wheel.py\nRoot-Is-Purelib: false\nTag: py3-none-%s\n" % tag
    entries.append((info + "/METADATA", metadata(version, cargo_field("description"), cargo_field("license")).encode(), False))
    entries.append((info + "/WHEEL", wheel_meta.encode(), False))
    entries.append((info + "/top_level.txt", b"nvcam\n", False))
    record = "".join(record_line(n, d) + "\n" for n, d, _ in entries) + info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode(), False))

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "nvcam-%s-py3-none-%s.whl" % (version, tag))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data, exe in entries:
            zi = zipfile.ZipInfo(name, date_time=time.gmtime(EPOCH)[:6])
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = ((0o755 if exe else 0o644) | stat.S_IFREG) << 16
            z.writestr(zi, data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    print("%s (%.1f MB, %d files)" % (path, os.path.getsize(path) / 1e6, len(entries)))


if __name__ == "__main__":
    main()
