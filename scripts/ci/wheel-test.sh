#!/usr/bin/env bash
# The Python wheels as a user meets them (CI's last step, after the Windows step):
#
#   bash scripts/ci/wheel-test.sh          # both wheels (CI)
#   bash scripts/ci/wheel-test.sh linux    # the Linux wheel only
#
# 1. Both wheels into dist/ (scripts/release/wheel.sh; the Windows one needs the Windows step's toolchain),
#    and their metadata: licence expression and files, classifiers, supported Pythons.
# 2. Linux: `pip install` of the manylinux wheel (no index: nothing is downloaded, numpy is not
#    installed) into a fresh virtual environment; from outside the repository, `import nvcam` must
#    load the library inside the installed package, a testsrc camera on the CPU must deliver a
#    320x240 frame, and the process must have mapped libavcodec from the package's lib/ (ldd says
#    the same), not the system's. With the system's TLS libraries hidden (empty files of their
#    names first on LD_LIBRARY_PATH), it opens an rtsps camera by pin and an https one by CA file
#    (tests/support/tls_fixture.py's servers) and refuses an unknown CA with E_TLS_VERIFY.
# 3. From source, as the README says: `pip install <checkout>` and `pip install -e <checkout>`, each
#    into a fresh venv (the build backend comes from PyPI; cargo builds the library, which step 1
#    already built, so it has nothing to do). The installed package loads its own library, the
#    editable one the checkout's target/release, and each takes a testsrc frame.
# 4. Windows: pip accepts the win_amd64 wheel for that platform (`pip install --platform win_amd64
#    --target`), and nvcam.dll from the unpacked wheel, loaded the way ctypes loads it
#    (tests/wine/ctypes_load.c, mingw-w64, under Wine with no FFmpeg on the DLL path), delivers a
#    frame with avcodec_nvcam-59.dll from the wheel's folder. There is no Windows Python here (none comes
#    from a package registry), so `import nvcam` itself does not run under Wine.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
die() { echo "wheel-test: FAILED: $*" >&2; exit 1; }
step() { echo; echo "== wheel-test: $*"; }
t0=$(date +%s)
what=${1:-all}
case "$what" in all|linux) ;; *) echo "usage: $0 [all|linux]" >&2; exit 2 ;; esac
py=${NVCAM_TEST_PYTHON:-python3}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
work="$root/target/wheel-test"
rm -rf "$work"; mkdir -p "$work"

step "wheels (scripts/release/wheel.sh)"
bash scripts/release/wheel.sh "$what"
lwheel=$(ls dist/nvcam-"$version"-py3-none-manylinux_*_x86_64.whl)
wwheel=dist/nvcam-"$version"-py3-none-win_amd64.whl
wheels=("$lwheel")
if [ "$what" = all ]; then
  [ -f "$wwheel" ] || die "$wwheel was not written"
  wheels+=("$wwheel")
fi
for w in "${wheels[@]}"; do
  "$py" -m zipfile -t "$w" >/dev/null || die "$w is not a valid zip"
  echo "$w: $(du -h "$w" | cut -f1), $("$py" -m zipfile -l "$w" | tail -n +2 | wc -l) files"
  # What PyPI shows of a wheel; the licence files are named in METADATA and carried in .dist-info.
  "$py" - "$w" "$version" <<'PY' || die "$w: its metadata lacks what a PyPI wheel carries"
import email.parser, sys, zipfile
w, version = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(w)
info = "nvcam-%s.dist-info/" % version
m = email.parser.Parser().parsestr(z.read(info + "METADATA").decode())
assert m["Metadata-Version"] in ("2.4", "2.5"), m["Metadata-Version"]
# FFmpeg LGPL v3 (with mbedTLS, Apache-2.0), libsrt MPL-2.0, dav1d BSD-2-Clause.
assert m["License-Expression"] == "(MIT OR Apache-2.0) AND LGPL-3.0-or-later AND Apache-2.0 AND MPL-2.0 AND BSD-2-Clause", m["License-Expression"]
files = m.get_all("License-File")
for f in ("LICENSE-MIT", "LICENSE-APACHE"):
    assert f in files, files
for end in ("COPYING.LGPLv2.1", "dav1d/COPYING", "mbedtls/LICENSE", "srt/LICENSE"):
    assert any(f.endswith(end) for f in files), (end, files)
for f in files:
    z.getinfo(info + "licenses/" + f)
assert m["Summary"] and m["Requires-Python"] == ">=3.8", (m["Summary"], m["Requires-Python"])
cls = m.get_all("Classifier")
assert "Typing :: Typed" in cls and "Programming Language :: Python :: 3 :: Only" in cls, cls
assert not [c for c in cls if c.startswith("License ::")], "PEP 639: no licence classifiers beside License-Expression"
z.getinfo("nvcam/py.typed")
z.getinfo("nvcam/licenses/FFmpeg/COPYING.LGPLv2.1")
z.getinfo("nvcam/licenses/dav1d/COPYING")
print("%s: License-Expression %s; License-File %s; %d classifiers" % (w.split("/")[-1], m["License-Expression"], ", ".join(files), len(cls)))
PY
done

step "Linux: pip install $lwheel into a fresh venv, import nvcam, a testsrc frame"
"$py" -m venv "$work/venv" || die "python3 -m venv failed (apt-get install python3-venv: .ci/packages.txt)"
"$work/venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$lwheel" || die "pip install $lwheel failed"
# smoke <venv> <wheel|source|editable>: from outside the repository, import nvcam from that venv,
# check where the package and its library come from, and take a testsrc frame on the CPU.
smoke() {
  (cd "$work" && env -u NVCAM_LIB -u LD_LIBRARY_PATH -u PYTHONPATH "$1/bin/python" - "$version" "$2" "$root" <<'PY')
import os, sys
import nvcam
version, kind, root = sys.argv[1:]
here = os.path.dirname(nvcam.__file__)
if kind == "editable":
    assert here == os.path.join(root, "bindings", "python", "nvcam"), here
    assert nvcam.library_path == os.path.join(root, "target", "release", "libnvcam.so"), nvcam.library_path
else:
    assert "site-packages" in here, here
    assert os.path.dirname(nvcam.library_path) == here, "library not from the package: %s" % nvcam.library_path
assert nvcam.__version__ == version, (nvcam.__version__, version)
assert os.path.isfile(os.path.join(here, "py.typed"))
library = nvcam.Library()
cam = nvcam.Camera.open("testsrc://320x240@30", device=nvcam.DEVICE_CPU)
f = cam.get_frame(3000)
i = f.info
assert (i.width, i.height) == (320, 240), (i.width, i.height)
data = f.to_numpy_nv12()  # bytes: numpy is not installed in this venv
assert isinstance(data, bytes) and len(data) == 320 * 360, (type(data), len(data))
f.release()
cam.close()
library.shutdown()
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libav" in l or "libsw" in l]
av = sorted({m for m in maps if "libavcodec" in m})
if kind == "wheel":
    assert av and all(m.startswith(os.path.join(here, "lib") + "/") for m in av), av
print("%s, %s: %s (nvcam %s) from %s: a %dx%d frame; libavcodec from %s" % (
    kind, sys.executable, nvcam.version(), nvcam.__version__, nvcam.library_path, i.width, i.height, av[0]))
PY
}
smoke "$work/venv" wheel || die "the Linux wheel's smoke test failed"
site=$(ls -d "$work"/venv/lib/python3*/site-packages/nvcam)
deps=$(env -u LD_LIBRARY_PATH ldd "$site/libnvcam.so")
echo "$deps" | grep -E 'libav|libsw'
if echo "$deps" | grep -E 'lib(av|sw)' | grep -qv "=> $site/lib/"; then die "ldd: an FFmpeg library resolves outside the package"; fi

step "Linux: the installed wheel opens rtsps:// (pinned) and https:// (CA file) cameras, the system's TLS libraries hidden"
# The wheel's TLS is mbedTLS inside its libavformat. Hidden without a mount: empty files named as
# the system's TLS libraries (OpenSSL, GnuTLS and its nettle, mbedTLS) come first on
# LD_LIBRARY_PATH, so any load of one fails ("file too short"); and none may be mapped after the
# cameras streamed. The servers are tests/tls.rs's (tests/support/tls_fixture.py, with python3-gi).
tls="$work/tls"; hide="$work/hide-tls"
mkdir -p "$tls" "$hide"
for l in libssl.so.3 libcrypto.so.3 libgnutls.so.30 libnettle.so.8 libhogweed.so.6 libmbedtls.so.14 libmbedx509.so.1 libmbedcrypto.so.7; do : >"$hide/$l"; done
ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc2=size=320x240:rate=30 -frames:v 60 -pix_fmt yuv420p -c:v libx264 -preset ultrafast -g 30 -bf 0 "$tls/clip.mp4" \
  && ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc2=size=320x240:rate=30 -frames:v 30 -pix_fmt yuvj420p -c:v mjpeg -f mjpeg "$tls/clip.mjpeg" \
  || die "the ffmpeg CLI could not make the TLS test clips"
gpy=/usr/bin/python3
: >"$tls/fixture.log"
"$gpy" tests/support/tls_fixture.py --dir "$tls/srv" --clip "$tls/clip.mp4" --mjpeg "$tls/clip.mjpeg" --until-killed >>"$tls/fixture.log" 2>&1 &
tls_pid=$!
trap 'kill "$tls_pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q '^READY' "$tls/fixture.log" && break; sleep 0.1; done
grep -q '^READY' "$tls/fixture.log" || die "tests/support/tls_fixture.py did not start: $(cat "$tls/fixture.log")"
(cd "$work" && env -u NVCAM_LIB -u PYTHONPATH LD_LIBRARY_PATH="$hide" "$work/venv/bin/python" - "$tls/srv/fixture.env" <<'PY') || die "the wheel's TLS cameras failed"
import sys
import nvcam
env = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]))
cred = lambda u: u.replace("://", "://viewer:s3cret-tls@", 1)
library = nvcam.Library()
for url, kw in ((env["rtsps_own"], dict(tls_pin_sha256=env["pin_own"])), (env["https_good"], dict(tls_ca_file=env["ca_file"]))):
    cam = nvcam.Camera.open(cred(url), device=nvcam.DEVICE_CPU, **kw)
    for _ in range(5):
        f = cam.get_frame(5000)
        assert (f.info.width, f.info.height) == (320, 240)
        f.release()
    cam.close()
    print("%s (%s): 5 frames of 320x240" % (url, ", ".join(kw)))
try:
    nvcam.Camera.open(cred(env["rtsps_good"]), device=nvcam.DEVICE_CPU)
    raise SystemExit("a certificate of an unknown CA was accepted")
except nvcam.NvcamError as e:
    assert e.code == nvcam.E_TLS_VERIFY and "unknown issuer" in str(e), (e.code, str(e))
    print("unknown CA refused: %s" % e)
library.shutdown()
tls_maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if any(n in l for n in ("libssl", "libcrypto.so", "libgnutls", "libmbed", "libnettle"))})
assert not tls_maps, "a TLS library of the system was loaded: %s" % tls_maps
print("no system TLS library mapped; LD_LIBRARY_PATH hides them")
PY
kill "$tls_pid" 2>/dev/null || true

step "from source: pip install $root, and pip install -e $root, each into a fresh venv"
for kind in source editable; do
  "$py" -m venv "$work/venv-$kind" || die "python3 -m venv failed"
  flag=(); [ "$kind" = editable ] && flag=(-e)
  (cd "$work" && "$work/venv-$kind/bin/python" -m pip install -q --disable-pip-version-check "${flag[@]}" "$root") \
    || die "pip install ${flag[*]} $root failed"
  smoke "$work/venv-$kind" "$kind" || die "the $kind install's smoke test failed"
done
"$work/venv-source/bin/python" -m pip show -v --disable-pip-version-check nvcam
# The source install's library goes without cargo's debug info (half its size); the editable one
# loads target/release's and copies none into site-packages.
src_lib=$(ls "$work"/venv-source/lib/python3*/site-packages/nvcam/libnvcam.so)
! readelf -S "$src_lib" | grep -q '\.debug_info' || die "$src_lib keeps its debug info (not stripped)"
[ -z "$(find "$work"/venv-editable/lib -name 'libnvcam*')" ] || die "the editable install copied a library into site-packages: $(find "$work"/venv-editable/lib -name 'libnvcam*')"
echo "source install's library: $(du -h "$src_lib" | cut -f1), no debug info; editable: no library in site-packages"

if [ "$what" = linux ]; then
  step "the Linux wheel and the source installs passed ($(($(date +%s) - t0)) s)"
  exit 0
fi

step "Windows: pip accepts $wwheel for win_amd64; nvcam.dll from the unpacked wheel under Wine"
PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --no-index --disable-pip-version-check --no-deps --platform win_amd64 --only-binary=:all: \
  --target "$work/win" "$wwheel" || die "pip does not accept $wwheel for win_amd64"
[ -f "$work/win/nvcam/nvcam.dll" ] && [ -f "$work/win/nvcam/__init__.py" ] || die "the win_amd64 wheel lacks nvcam/nvcam.dll or nvcam/__init__.py"
# Every DLL that nvcam.dll imports, directly or not, is in the wheel or is Windows' own.
for dll in "$work/win/nvcam/"*.dll; do
  for dep in $(x86_64-w64-mingw32-objdump -p "$dll" | sed -n 's/^\s*DLL Name: //p'); do
    case "$dep" in av*|sw*) [ -f "$work/win/nvcam/$dep" ] || die "$(basename "$dll") imports $dep, which is not in the wheel" ;; esac
  done
done
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Werror -O1 -I include tests/wine/ctypes_load.c -static -o "$work/ctypes_load.exe" \
  || die "compiling tests/wine/ctypes_load.c with mingw failed"
winpath() { local p=${1//\//\\}; echo "Z:$p"; }
# Wine 8.0 lacks bcryptprimitives.dll (Windows 10 has it in System32), and a DLL loaded with
# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS does not search PATH, where scripts/ci/wine-run.sh puts its stand-in:
# beside the .exe (the application folder is searched) it is found; the wheel's folder stays as shipped.
scripts/ci/wine-run.sh wineboot --init >/dev/null 2>&1 || die "wineboot failed"
cp target/wine-shims/bcryptprimitives.dll "$work/" || die "no target/wine-shims/bcryptprimitives.dll (scripts/ci/wine-run.sh builds it)"
out=$(NVCAM_WINE_FFMPEG_PATH=0 timeout 120 scripts/ci/wine-run.sh "$work/ctypes_load.exe" "$(winpath "$work/win/nvcam/nvcam.dll")" 2>&1 | tr -d '\r') \
  || { echo "$out"; die "ctypes_load.exe failed under Wine"; }
echo "$out"
grep -q '^ok$' <<<"$out" || die "ctypes_load.exe did not finish"
grep -qiF "avcodec_nvcam-59.dll from $(winpath "$work/win/nvcam/avcodec_nvcam-59.dll")" <<<"$out" || die "avcodec_nvcam-59.dll was not loaded from the wheel's folder"

step "all passed ($(($(date +%s) - t0)) s)"
