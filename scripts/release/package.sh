#!/usr/bin/env bash
# Release packages, from Linux:
#
#   bash scripts/release/package.sh            # both
#   bash scripts/release/package.sh windows    # dist/nvcam-<version>-windows-x64.zip
#   bash scripts/release/package.sh linux      # dist/nvcam-<version>-linux-x64.tar.gz
#
# Windows: nvcam.dll (cross-built with mingw-w64), the FFmpeg 5.1 DLLs it imports (built by
# scripts/build/build-ffmpeg-windows.sh, LGPL, with their licence and build record), include/nvcam.h and
# include/nvcam_labview.h (for LabVIEW's Import Shared Library wizard),
# import libraries (nvcam.def, nvcam.lib for MSVC made by dlltool, libnvcam.dll.a for mingw), the
# LabVIEW folder and a README. Linux: libnvcam.so (RUNPATH $ORIGIN/lib, set with patchelf) and
# nvcam.so (LabVIEW's `nvcam.*` wildcard name) beside it, the FFmpeg 5.1 libraries it needs in lib/
# (built by scripts/build/build-ffmpeg-linux.sh, LGPL, dav1d linked in statically, nothing else: the
# tarball needs only glibc), their licence, the header, the LabVIEW folder and a README. Binaries are stripped of
# debug info.
# Both: include/nvcam.hpp (the header-only C++ wrapper), a CMake package
# (lib/cmake/nvcam/nvcamConfig.cmake: find_package(nvcam), targets nvcam::nvcam and nvcam::cpp) and
# lib/pkgconfig/nvcam.pc, from packaging/, every path relative to the unpacked folder.
#
# NVCAM_PACKAGE_LIB=path/libnvcam.so packages that build instead of running cargo (Linux; the
# package test uses the cdylib its `cargo test` built), NVCAM_PACKAGE_DIST=dir writes there
# instead of dist/.
set -euo pipefail
name=package
. "$(dirname "$0")/common.sh"
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
abi=$(sed -n 's/^#define NVCAM_ABI_VERSION \([0-9]*\).*/\1/p' include/nvcam.h)

# The build integration of package folder $1, whose import or shared library is in folder $2
# below it ("" or "/lib"): the C++ header, the CMake package and the pkg-config file. $3 goes after
# -L in the pkg-config Libs: the Linux run path (Windows finds DLLs beside the program or on PATH).
integration() {
  local d=$1 libdir=$2 rpath=${3:-}
  mkdir -p "$d/lib/cmake/nvcam" "$d/lib/pkgconfig"
  cp bindings/cpp/nvcam.hpp "$d/include/"
  local subst=(-e "s/@VERSION@/$version/g" -e "s/@ABI@/$abi/g" -e "s|@LIBDIR@|$libdir|g" -e "s|@RPATH@|$rpath|g" -e "s|@SODIR@||g")
  sed "${subst[@]}" packaging/nvcamConfig.cmake.in >"$d/lib/cmake/nvcam/nvcamConfig.cmake"
  sed "${subst[@]}" packaging/nvcamConfigVersion.cmake.in >"$d/lib/cmake/nvcam/nvcamConfigVersion.cmake"
  sed "${subst[@]}" packaging/nvcam.pc.in >"$d/lib/pkgconfig/nvcam.pc"
}

# The FFmpeg DLLs Windows image $1 (with its symbol table) delay-loads, from FFmpeg's bin folder $2.
# GNU ld leaves them out of the PE header's import directories (objdump -p does not show them), so
# they come from the image's delay-load descriptors, which dlltool names after the import library:
# __DELAY_IMPORT_DESCRIPTOR_libavcodec_nvcam_dll_a for avcodec_nvcam-59.dll (scripts/build/build-ffmpeg-windows.sh).
delay_loaded() {
  local syms lib f
  syms=$(x86_64-w64-mingw32-nm "$1") || die "nm $1 failed"
  for lib in $(sed -n 's/.* __DELAY_IMPORT_DESCRIPTOR_lib\(.*\)_dll_a$/\1/p' <<<"$syms" | sort -u); do
    f=$(cd "$2" && ls -- "$lib"-[0-9]*.dll 2>/dev/null || true)
    [ "$(grep -c . <<<"$f")" = 1 ] || die "not one FFmpeg DLL in $2 for the delay-load library lib$lib.dll.a: '$f'"
    echo "$f"
  done
}

windows() {
  local T=x86_64-pc-windows-gnu name="nvcam-$version-windows-x64"
  local d="$stage/$name"
  for tool in x86_64-w64-mingw32-strip x86_64-w64-mingw32-dlltool x86_64-w64-mingw32-objdump x86_64-w64-mingw32-nm x86_64-w64-mingw32-gcc; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install mingw-w64)"
  done
  bash scripts/build/build-ffmpeg-windows.sh >/dev/null
  cargo build --release --target "$T" --lib
  local dll="target/$T/release/nvcam.dll" ff="target/ffmpeg-windows"
  mkdir -p "$d/include" "$d/lib" "$d/licenses/FFmpeg" "$d/licenses/dav1d"
  x86_64-w64-mingw32-strip --strip-debug -o "$d/nvcam.dll" "$dll"
  # A plain LoadLibraryW of nvcam.dll works only while it imports FFmpeg delay-loaded (src/win_loader.rs).
  local plain; plain=$(x86_64-w64-mingw32-objdump -p "$d/nvcam.dll" | sed -n 's/^\s*DLL Name: //p')
  for dep in $plain; do
    [ ! -f "$ff/bin/$dep" ] || die "nvcam.dll imports $dep the ordinary way, not delay-loaded (is .cargo/config.toml's PKG_CONFIG_LIBDIR for the Windows target lib/delayload/pkgconfig?)"
  done
  # The FFmpeg DLLs nvcam.dll delay-loads, and the ones those import (avdevice needs avfilter).
  local need=() next=(nvcam.dll) seen=" "
  while [ ${#next[@]} -gt 0 ]; do
    local cur=${next[0]}; next=("${next[@]:1}")
    local f="$d/$cur" deps; [ -f "$f" ] || f="$ff/bin/$cur"
    deps=$(x86_64-w64-mingw32-objdump -p "$f" | sed -n 's/^\s*DLL Name: //p')
    [ "$cur" != nvcam.dll ] || deps=$(delay_loaded "$dll" "$ff/bin")
    for dep in $deps; do
      if [ -f "$ff/bin/$dep" ] && [[ "$seen" != *" $dep "* ]]; then
        seen+="$dep "; need+=("$dep"); next+=("$dep")
      fi
    done
  done
  [ ${#need[@]} -ge 4 ] || die "nvcam.dll delay-loads too few FFmpeg DLLs: ${need[*]}"
  for dep in "${need[@]}"; do cp "$ff/bin/$dep" "$d/"; done
  cp "$ff/share/licenses/ffmpeg/"* "$d/licenses/FFmpeg/"
  cp "$ff/share/licenses/dav1d/"* "$d/licenses/dav1d/"
  mkdir -p "$d/licenses/mbedtls"; cp "$ff/share/licenses/mbedtls/"* "$d/licenses/mbedtls/"
  mkdir -p "$d/licenses/srt"; cp "$ff/share/licenses/srt/"* "$d/licenses/srt/"
  cp LICENSE-MIT LICENSE-APACHE "$d/"
  cp include/nvcam.h include/nvcam_labview.h "$d/include/"
  cp -r labview-example "$d/labview"
  integration "$d" /lib
  # The build's FFmpeg prefix is a folder of this machine: it must not ship.
  local leaks; leaks=$(grep -rlF -- "$root/$ff" "$d" || true)
  [ -z "$leaks" ] || die "the package names $root/$ff: $leaks"
  # Import libraries: a .def from the DLL's own export table, a .lib for MSVC (dlltool writes the
  # same short-import format FFmpeg's own .lib files use), and a mingw .dll.a.
  {
    echo "LIBRARY nvcam.dll"
    echo "EXPORTS"
    x86_64-w64-mingw32-objdump -p "$d/nvcam.dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' \
      | sed -nE 's/^\s*\[ *[0-9]+\] (.*)$/    \1/p'
  } >"$d/lib/nvcam.def"
  local n; n=$(grep -c '^    nvcam_' "$d/lib/nvcam.def")
  [ "$n" -ge 20 ] || die "only $n exports in nvcam.def"
  x86_64-w64-mingw32-dlltool -m i386:x86-64 -d "$d/lib/nvcam.def" -D nvcam.dll -l "$d/lib/nvcam.lib"
  cp "target/$T/release/libnvcam.dll.a" "$d/lib/"
  # The .lib must link: a C program against it (GNU ld reads the same COFF import format as link.exe).
  x86_64-w64-mingw32-gcc -std=c11 -I "$d/include" tests/c/harness.c "$d/lib/nvcam.lib" -static -pthread \
    -o "$stage/link-check.exe" || die "linking tests/c/harness.c against nvcam.lib failed"
  local imports; imports=$(x86_64-w64-mingw32-objdump -p "$stage/link-check.exe")  # not piped into grep -q: SIGPIPE + pipefail
  grep -q 'DLL Name: nvcam.dll' <<<"$imports" || die "link check: no import of nvcam.dll"
  local ffv; ffv=$(head -n1 "$ff/BUILD-INFO.txt" | awk '{print $2}')
  sed -e "s/@VERSION@/$version/g" -e "s/@ABI@/$abi/g" -e "s/@FFMPEG@/$ffv/g" -e "s/@NEXPORTS@/$n/g" \
      -e "s/@FFDLLS@/$(printf '%s, ' "${need[@]}" | sed 's/, $//')/" >"$d/README.md" <<'EOF'
# nvcam @VERSION@ for Windows x64

Camera frames (RTSP, files, a test source) decoded by FFmpeg on the CPU or on NVIDIA GPUs, for
LabVIEW, C/C++ and Python hosts through a C ABI (ABI version @ABI@). Project: see the nvcam README.

## What is in this folder

| file | what |
|---|---|
| `nvcam.dll` | the library: @NEXPORTS@ `nvcam_*` functions, C calling convention, x64 |
| @FFDLLS@ | FFmpeg @FFMPEG@ (LGPL v3+), the DLLs `nvcam.dll` loads (delay-loaded, from this folder); TLS is mbedTLS inside `avformat_nvcam-59.dll`; the DLLs' names are their own, so another FFmpeg the host loaded cannot take their place |
| `include/nvcam.h` | the C header (every function, struct and status code is documented there) |
| `include/nvcam_labview.h` | the same declarations in plain C for LabVIEW's Import Shared Library wizard (no `#if`, no includes) |
| `lib/nvcam.lib` | import library for MSVC (`link ... nvcam.lib`), made by mingw-w64's dlltool |
| `lib/nvcam.def` | the export list; `lib /def:lib\nvcam.def /machine:x64 /out:nvcam.lib` remakes the .lib with MSVC's own tool |
| `lib/libnvcam.dll.a` | import library for mingw-w64 (gcc/clang) |
| `include/nvcam.hpp` | the header-only C++17 wrapper (RAII handles, exceptions) |
| `lib/cmake/nvcam/` | CMake package: `find_package(nvcam)` with this folder in `CMAKE_PREFIX_PATH`, targets `nvcam::nvcam` (C) and `nvcam::cpp` (C++) |
| `lib/pkgconfig/nvcam.pc` | pkg-config file (`PKG_CONFIG_PATH=<this folder>/lib/pkgconfig`) |
| `labview/` | how to call every function from LabVIEW (Call Library Function Nodes), and `nvcam-errors.txt` |
| `LICENSE-MIT`, `LICENSE-APACHE` | nvcam's licence: either, at your option |
| `licenses/FFmpeg/` | FFmpeg's licence (LGPL v3; the GPL v3 it refers to), its terms and how these DLLs were configured and built |
| `licenses/mbedtls/` | mbedTLS's licence (Apache-2.0), the TLS library linked into the avformat DLL |
| `licenses/srt/` | libsrt's licence (MPL-2.0), the SRT library linked into the avformat DLL (`srt://`) |
| `licenses/dav1d/` | the licence (BSD-2-Clause) of dav1d, the AV1 decoder linked into the avcodec DLL |

## Install

Keep `nvcam.dll` and the FFmpeg DLLs **in one folder**, any folder: `nvcam.dll` loads the FFmpeg
DLLs from its own folder (at `nvcam_init`), however the host loads it. From C/C++ a plain
`LoadLibraryW(L"C:\\path\\to\\nvcam.dll")` works, with no search flags and no change to `PATH`, the
current directory or the process's DLL search path; so do LabVIEW (`LoadLibraryEx` with
`LOAD_WITH_ALTERED_SEARCH_PATH`), Python's ctypes, and a program linked with `nvcam.lib` that finds
`nvcam.dll` next to its `.exe` or on `PATH`. If an FFmpeg DLL is missing there, `nvcam_init`
returns `NVCAM_E_FFMPEG` and `nvcam_last_error` names it. For LabVIEW read
`labview/README.md` (64-bit LabVIEW; library name `nvcam.dll`; copy `nvcam-errors.txt` to
`<LabVIEW>\user.lib\errors\`).

## What the target machine needs

- 64-bit Windows 10 or later (the Rust standard library in nvcam.dll needs Windows 10 APIs).
- For the CPU path: nothing else. No Visual C++ runtime (the DLLs use the msvcrt.dll that every
  Windows has), no FFmpeg install, no CUDA toolkit.
- For the GPU path: only the NVIDIA display driver. nvcam links against nothing of NVIDIA's: it loads
  `nvcuda.dll` (CUDA driver API) and `nvcuvid.dll` (NVDEC) at run time, both of which the driver
  installs; no CUDA toolkit or CUDA runtime DLL is used. Without them the camera decodes on the CPU
  and says so in its stats and log.
- Oldest driver: nvcam uses the CUDA driver API through cudarc (with its CUDA 13.0 bindings,
  resolving each function at run time) and the NVDEC API at the level of NVIDIA Video Codec SDK
  headers 11.1; the functions it calls exist in every driver that supports NVDEC with those
  headers. NVIDIA documents Video Codec SDK 11.1 as needing driver 470 or newer (Windows: 471.41 or
  newer). This package was not run on a Windows GPU: the minimum driver is what the APIs require,
  not a tested value. The CPU path was tested under Wine.

## Paths and URLs

String arguments (URLs, file paths, FFmpeg options, the log path) are UTF-8, or text in the
system ANSI code page (e.g. Windows-1252), which is what LabVIEW passes: a string that is valid
UTF-8 is read as UTF-8, any other is converted from the ANSI code page. So LabVIEW paths with
characters such as "é" work as they are, and so do UTF-8 strings from other hosts.

## Stopping a wait (LabVIEW Abort, other hosts)

`nvcam_camera_cancel_wait(cam)` wakes every thread blocked in a get_frame on that camera
(`NVCAM_E_CANCELLED`, -8028). For LabVIEW, `nvcam_camera_get_frame_lv` with the node's Instance Data
Pointer and the Call Library Function Node callbacks `nvcam_lv_reserve` / `nvcam_lv_unreserve` /
`nvcam_lv_abort` make the Abort button end a waiting node at once: `labview/README.md` has the
settings.

## Licences

nvcam is MIT OR Apache-2.0 (`LICENSE-MIT`, `LICENSE-APACHE`). The FFmpeg DLLs are LGPL v3 or later, built from Debian 12's FFmpeg
@FFMPEG@ source package without GPL or non-free parts (`licenses/FFmpeg/BUILD-INFO.txt` has the
exact configure line); you may replace them with your own build of the same FFmpeg version and
options. The avformat DLL contains mbedTLS (Apache-2.0, `licenses/mbedtls/LICENSE`; the reason for
LGPL v3), its TLS, and libsrt (MPL-2.0, `licenses/srt/LICENSE`; unmodified source: Debian 12's srt
source package) with the GNU C++ runtime and winpthreads it needs; the avcodec DLL contains dav1d
(BSD-2-Clause, `licenses/dav1d/COPYING`), the AV1 decoder. All are statically linked from Debian 12's
source packages (their versions are in `BUILD-INFO.txt`).
EOF
  rm -f "$dist/$name.zip"
  (cd "$stage" && python3 - "$name" "$dist/$name.zip" <<'PY'
import os, sys, zipfile
name, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for base, dirs, files in os.walk(name):
        dirs.sort()
        for f in sorted(files):
            z.write(os.path.join(base, f))
PY
  )
  echo "$dist/$name.zip ($(du -h "$dist/$name.zip" | cut -f1))"
}

linux() {
  local name="nvcam-$version-linux-x64"
  local d="$stage/$name"
  local lib=${NVCAM_PACKAGE_LIB:-}
  for tool in patchelf readelf objdump ldd strip; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install patchelf binutils: .ci/packages.txt)"
  done
  local ff; ff=$(bash scripts/build/build-ffmpeg-linux.sh) || die "scripts/build/build-ffmpeg-linux.sh failed"
  if [ -z "$lib" ]; then
    cargo build --release --lib
    lib=target/release/libnvcam.so
  fi
  mkdir -p "$d/include" "$d/lib" "$d/licenses/FFmpeg" "$d/licenses/dav1d"
  # cargo linked the library against $ff with a RUNPATH to $ff/lib (build.rs); in the package it
  # finds the same libraries in lib/ instead.
  strip --strip-debug -o "$d/libnvcam.so" "$lib"
  patchelf --set-rpath '$ORIGIN/lib' "$d/libnvcam.so"
  local runpath; runpath=$(readelf -d "$d/libnvcam.so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [ "$runpath" = '$ORIGIN/lib' ] || die "libnvcam.so's RUNPATH is '$runpath', not \$ORIGIN/lib"
  ln -s libnvcam.so "$d/nvcam.so"
  # The FFmpeg libraries libnvcam.so needs, and the ones those need (avdevice needs avfilter), by soname.
  local need=() next=(libnvcam.so) seen=" "
  while [ ${#next[@]} -gt 0 ]; do
    local cur=${next[0]}; next=("${next[@]:1}")
    local f="$d/$cur"; [ -f "$f" ] || f="$ff/lib/$cur"
    for dep in $(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
      case "$dep" in
        libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|libgcc_s.so.1|ld-linux-x86-64.so.2) continue ;;
      esac
      [ -f "$ff/lib/$dep" ] || die "$cur needs $dep, which is neither glibc nor in $ff/lib"
      if [[ "$seen" != *" $dep "* ]]; then seen+="$dep "; need+=("$dep"); next+=("$dep"); fi
    done
  done
  [ ${#need[@]} -ge 4 ] || die "libnvcam.so needs too few FFmpeg libraries: ${need[*]}"
  for dep in "${need[@]}"; do cp -L "$ff/lib/$dep" "$d/lib/$dep"; done
  # Every FFmpeg symbol libnvcam.so imports (name and version) is defined by the bundled libraries,
  # and has their private version (NVCAM_LIBAVFORMAT_59: a plain LIBAVFORMAT_59 could bind to a
  # host's FFmpeg).
  local defined missing public
  defined=$(for dep in "${need[@]}"; do objdump -T "$d/lib/$dep" | awk 'NF > 2 && !/\*UND\*/ && $(NF-1) ~ /^NVCAM_LIB(AV|SW)/ {print $(NF), $(NF-1)}'; done | sed 's/[()]//g' | sort -u)
  [ -n "$defined" ] || die "the bundled FFmpeg defines no NVCAM_ symbol versions (scripts/build/ffmpeg-patches/0005)"
  missing=$(objdump -T "$d/libnvcam.so" | awk 'NF > 2 && /\*UND\*/ && $(NF-1) ~ /^\(NVCAM_LIB(AV|SW)/ {print $(NF), $(NF-1)}' | sed 's/[()]//g' | sort -u | comm -23 - <(echo "$defined"))
  [ -z "$missing" ] || die "the bundled FFmpeg lacks symbols libnvcam.so imports: $missing"
  public=$(objdump -T "$d/libnvcam.so" | awk '/\*UND\*/ && $NF ~ /^(av|sws_|swr_)/ && $(NF-1) !~ /^\(NVCAM_LIB/ {print $NF, $(NF-1)}')
  [ -z "$public" ] || die "libnvcam.so imports FFmpeg symbols without nvcam's private versions: $public"
  # The loader resolves every FFmpeg library into lib/, whatever the machine has installed.
  local resolved; resolved=$(env -u LD_LIBRARY_PATH ldd "$d/libnvcam.so")
  for dep in "${need[@]}"; do
    grep -q "$dep => $d/lib/$dep " <<<"$resolved" || die "ldd libnvcam.so does not resolve $dep into lib/:"$'\n'"$resolved"
  done
  cp "$ff/share/licenses/ffmpeg/"* "$d/licenses/FFmpeg/"
  cp "$ff/share/licenses/dav1d/"* "$d/licenses/dav1d/"
  mkdir -p "$d/licenses/mbedtls"; cp "$ff/share/licenses/mbedtls/"* "$d/licenses/mbedtls/"
  mkdir -p "$d/licenses/srt"; cp "$ff/share/licenses/srt/"* "$d/licenses/srt/"
  cp LICENSE-MIT LICENSE-APACHE "$d/"
  cp include/nvcam.h include/nvcam_labview.h "$d/include/"
  cp -r labview-example "$d/labview"
  integration "$d" "" ' -Wl,-rpath,${libdir}'
  # The build's FFmpeg prefix is a path of this machine: no text file (a .pc or CMake file) and no
  # RUNPATH may name it, nor any string in a library (the FFmpeg builds scrub their configure line,
  # which avcodec_configuration() returns, of it).
  local leaks f; leaks=$(grep -rlF -- "$ff" "$d" || true)
  for f in "$d/libnvcam.so" "$d"/lib/*.so.*; do
    readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -qF -- "$ff" && leaks="$leaks $f"
  done
  [ -z "$leaks" ] || die "the package names $ff: $leaks"
  local glibc; glibc=$(objdump -T "$d/libnvcam.so" "$d"/lib/*.so.* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)
  local ffv; ffv=$(head -n1 "$ff/BUILD-INFO.txt" | awk '{print $2}')
  sed -e "s/@VERSION@/$version/g" -e "s/@ABI@/$abi/g" -e "s/@FFMPEG@/$ffv/g" -e "s/@GLIBC@/${glibc#GLIBC_}/g" \
      -e "s/@FFLIBS@/$(printf '`lib\/%s`, ' "${need[@]}" | sed 's/, $//')/" >"$d/README.md" <<'EOF'
# nvcam @VERSION@ for Linux x86-64

Camera frames (RTSP, files, a test source) decoded by FFmpeg on the CPU or on NVIDIA GPUs, for
LabVIEW, C/C++ and Python hosts through a C ABI (ABI version @ABI@).

| file | what |
|---|---|
| `libnvcam.so` | the library (`dlopen` it, or link with `-L. -lnvcam`); finds the FFmpeg libraries in `lib/` through its RUNPATH (`$ORIGIN/lib`) |
| `nvcam.so` | a link to `libnvcam.so`, so LabVIEW's library name `nvcam.*` (which becomes `nvcam.dll` on Windows and `nvcam.so` on Linux) works on both with the same VIs |
| @FFLIBS@ | FFmpeg @FFMPEG@ (LGPL v3+, mbedTLS and libsrt linked in), the shared libraries `libnvcam.so` needs |
| `include/nvcam.h` | the C header |
| `include/nvcam_labview.h` | the same declarations in plain C for LabVIEW's Import Shared Library wizard |
| `include/nvcam.hpp` | the header-only C++17 wrapper (RAII handles, exceptions) |
| `lib/cmake/nvcam/` | CMake package: `find_package(nvcam)` with this folder in `CMAKE_PREFIX_PATH`, targets `nvcam::nvcam` (C) and `nvcam::cpp` (C++) |
| `lib/pkgconfig/nvcam.pc` | pkg-config file: `PKG_CONFIG_PATH=<this folder>/lib/pkgconfig pkg-config --cflags --libs nvcam` |
| `labview/` | how to call every function from LabVIEW, and `nvcam-errors.txt` |
| `LICENSE-MIT`, `LICENSE-APACHE` | nvcam's licence: either, at your option |
| `licenses/FFmpeg/` | FFmpeg's licence (LGPL v3 with mbedTLS in it; its files are LGPL v2.1+), its terms and how these libraries were configured and built |
| `licenses/mbedtls/` | mbedTLS's licence (Apache-2.0), the TLS library linked into `libavformat` |
| `licenses/srt/` | libsrt's licence (MPL-2.0), the SRT library linked into `libavformat` (`srt://`) |
| `licenses/dav1d/` | the licence (BSD-2-Clause) of dav1d, the AV1 decoder linked into libavcodec |

Keep `libnvcam.so` and `lib/` together (move the folder as a whole).

## What the machine needs

- Linux x86-64 with glibc @GLIBC@ or newer (the newest glibc symbol version these libraries use).
  Nothing else for the CPU path: FFmpeg is in `lib/`, built without external libraries.
- For the GPU path, only the NVIDIA driver: `libcuda.so.1` and `libnvcuvid.so.1` are loaded at run
  time; no CUDA toolkit or runtime. Without them the camera decodes on the CPU.
- The bundled FFmpeg has TLS (mbedTLS, linked in): `rtsps://`, `https://` and `rtmps://` verify the
  camera's certificate against the system's trust store (`/etc/ssl/certs/ca-certificates.crt` and
  the other usual bundles), a CA file or a pinned fingerprint. It carries nvcam's patches to FFmpeg
  (RTP gap reports, TLS verification), and nvcam is built and tested only with it: keep `lib/` as it is.

Strings (URLs, paths, FFmpeg options) are UTF-8; on Linux nothing else is accepted
(`NVCAM_E_INVALID_ARGUMENT`). `include/nvcam_labview.h` is for LabVIEW's Import Shared Library wizard.

## Licences

nvcam is MIT OR Apache-2.0 (`LICENSE-MIT`, `LICENSE-APACHE`). The FFmpeg libraries are LGPL v3 or later (mbedTLS 2.28, Apache-2.0,
`licenses/mbedtls/LICENSE`, is linked into them), built from Debian 12's
FFmpeg @FFMPEG@ source package without GPL or non-free parts (`licenses/FFmpeg/BUILD-INFO.txt` has
the exact configure line); you may replace them with your own build of the same FFmpeg version.
libavcodec contains dav1d (BSD-2-Clause, `licenses/dav1d/COPYING`), the AV1 decoder, statically
linked from Debian 12's dav1d source package (its version is in `BUILD-INFO.txt`). libavformat
contains libsrt (MPL-2.0, `licenses/srt/LICENSE`; unmodified source: Debian 12's srt source package,
its version in `BUILD-INFO.txt`) and the GNU C++ runtime it needs (GPL v3 with the GCC Runtime
Library Exception), linked statically.
EOF
  rm -f "$dist/$name.tar.gz"
  tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$dist/$name.tar.gz" "$name"
  echo "$dist/$name.tar.gz ($(du -h "$dist/$name.tar.gz" | cut -f1); FFmpeg: ${need[*]}; glibc >= ${glibc#GLIBC_})"
}

case "$what" in
  all) windows; linux ;;
  windows) windows ;;
  linux) linux ;;
esac
