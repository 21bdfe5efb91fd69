#!/usr/bin/env bash
# Runs a Windows x64 program under Wine with nvcam's cross-built FFmpeg DLLs on its DLL path: cargo's
# runner for x86_64-pc-windows-gnu (scripts/ci/windows-env.sh sets CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER
# to this file), and usable by hand: scripts/ci/wine-run.sh target/x86_64-pc-windows-gnu/release/foo.exe
#
# Fails (exit 127) when wine64 is missing: a Windows test that cannot run must not look like a pass.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
wine=${NVCAM_WINE64:-/usr/lib/wine/wine64}
if [ ! -x "$wine" ]; then
  echo "wine-run: $wine not found (apt-get install wine64; or set NVCAM_WINE64)" >&2
  exit 127
fi
# A prefix of our own (created on first use, a few seconds), so a user's ~/.wine is left alone.
export WINEPREFIX=${WINEPREFIX:-$root/target/wine}
export WINEDEBUG=${WINEDEBUG:--all}
ffbin="$root/target/ffmpeg-windows/bin"
[ -d "$ffbin" ] || { echo "wine-run: $ffbin missing (bash scripts/build/build-ffmpeg-windows.sh)" >&2; exit 127; }
# Wine 8.0 lacks bcryptprimitives.dll (ProcessPrng), which Rust's std imports; a stand-in for the
# tests only (tests/wine/bcryptprimitives.c), never packaged: Windows 10 and later have the real one.
shims="$root/target/wine-shims"
shim_src="$root/tests/wine/bcryptprimitives.c"
if [ ! -f "$shims/bcryptprimitives.dll" ] || [ "$shim_src" -nt "$shims/bcryptprimitives.dll" ]; then
  mkdir -p "$shims"
  x86_64-w64-mingw32-gcc -O2 -shared -o "$shims/bcryptprimitives.dll.tmp" "$shim_src" -lbcrypt \
    || { echo "wine-run: cannot build $shim_src (apt-get install mingw-w64)" >&2; exit 127; }
  mv "$shims/bcryptprimitives.dll.tmp" "$shims/bcryptprimitives.dll"
fi
winpath() { local p=${1//\//\\}; echo "Z:$p"; }
# NVCAM_WINE_FFMPEG_PATH=0 leaves the FFmpeg DLLs off the path (to test a DLL that must find them
# next to itself, as in the release zip).
if [ "${NVCAM_WINE_FFMPEG_PATH:-1}" = 0 ]; then
  export WINEPATH="$(winpath "$shims")${WINEPATH:+;$WINEPATH}"
else
  export WINEPATH="$(winpath "$ffbin");$(winpath "$shims")${WINEPATH:+;$WINEPATH}"
fi
exec "$wine" "$@"
