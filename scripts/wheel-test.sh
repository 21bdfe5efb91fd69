#!/usr/bin/env bash
# The Python wheels as a user meets them (CI's last step, after the Windows step):
#
#   bash scripts/wheel-test.sh          # both wheels (CI)
#   bash scripts/wheel-test.sh linux    # the Linux wheel only
#
# 1. Both wheels into dist/ (scripts/wheel.sh; the Windows one needs the Windows step's toolchain).
# 2. Linux: `pip install` of the manylinux wheel (no index: nothing is downloaded, numpy is not
#    installed) into a fresh virtual environment; from outside the repository, `import nvcam` must
#    load the library inside the installed package, a testsrc camera on the CPU must deliver a
#    320x240 frame, and the process must have mapped libavcodec from the package's lib/ (ldd says
#    the same), not the system's.
# 3. Windows: pip accepts the win_amd64 wheel for that platform (`pip install --platform win_amd64
#    --target`), and nvcam.dll from the unpacked wheel, loaded the way ctypes loads it
#    (tests/wine/ctypes_load.c, mingw-w64, under Wine with no FFmpeg on the DLL path), delivers a
#    frame with avcodec-59.dll from the wheel's folder. There is no Windows Python here (none comes
#    from a package registry), so `import nvcam` itself does not run under Wine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
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

step "wheels (scripts/wheel.sh)"
bash scripts/wheel.sh "$what"
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
done

step "Linux: pip install $lwheel into a fresh venv, import nvcam, a testsrc frame"
"$py" -m venv "$work/venv" || die "python3 -m venv failed (apt-get install python3-venv: .ci/packages.txt)"
"$work/venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$lwheel" || die "pip install $lwheel failed"
(cd "$work" && env -u NVCAM_LIB -u LD_LIBRARY_PATH "$work/venv/bin/python" - "$version" <<'PY') || die "the Linux wheel's smoke test failed"
import os, sys
import nvcam
here = os.path.dirname(nvcam.__file__)
assert "site-packages" in here, here
assert os.path.dirname(nvcam.library_path) == here, "library not from the package: %s" % nvcam.library_path
assert nvcam.__version__ == sys.argv[1], (nvcam.__version__, sys.argv[1])
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
assert av and all(m.startswith(os.path.join(here, "lib") + "/") for m in av), av
print("%s (nvcam %s): a %dx%d frame; libavcodec from %s" % (nvcam.version(), nvcam.__version__, i.width, i.height, av[0]))
PY
site=$(ls -d "$work"/venv/lib/python3*/site-packages/nvcam)
deps=$(env -u LD_LIBRARY_PATH ldd "$site/libnvcam.so")
echo "$deps" | grep -E 'libav|libsw'
if echo "$deps" | grep -E 'lib(av|sw)' | grep -qv "=> $site/lib/"; then die "ldd: an FFmpeg library resolves outside the package"; fi

if [ "$what" = linux ]; then
  step "the Linux wheel passed ($(($(date +%s) - t0)) s)"
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
# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS does not search PATH, where scripts/wine-run.sh puts its stand-in:
# beside the .exe (the application folder is searched) it is found; the wheel's folder stays as shipped.
scripts/wine-run.sh wineboot --init >/dev/null 2>&1 || die "wineboot failed"
cp target/wine-shims/bcryptprimitives.dll "$work/" || die "no target/wine-shims/bcryptprimitives.dll (scripts/wine-run.sh builds it)"
out=$(NVCAM_WINE_FFMPEG_PATH=0 timeout 120 scripts/wine-run.sh "$work/ctypes_load.exe" "$(winpath "$work/win/nvcam/nvcam.dll")" 2>&1 | tr -d '\r') \
  || { echo "$out"; die "ctypes_load.exe failed under Wine"; }
echo "$out"
grep -q '^ok$' <<<"$out" || die "ctypes_load.exe did not finish"
grep -qiF "avcodec-59.dll from $(winpath "$work/win/nvcam/avcodec-59.dll")" <<<"$out" || die "avcodec-59.dll was not loaded from the wheel's folder"

step "all passed ($(($(date +%s) - t0)) s)"
