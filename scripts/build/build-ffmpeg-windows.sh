#!/usr/bin/env bash
# Cross-builds FFmpeg 5.1 for Windows x64 as DLLs with mingw-w64, with only what nvcam uses (the
# same list as the Linux build: ffmpeg-common.sh), LGPL v3 or later.
#
#   bash scripts/build/build-ffmpeg-windows.sh        # prints the prefix: target/ffmpeg-windows
#
# The source is Debian 12's own FFmpeg source package (`apt-get source ffmpeg`, the version the Linux
# build links against, Debian's patches applied); this script adds `deb-src` to
# /etc/apt/sources.list.d/debian.sources when apt has no source entries. The NVDEC hwaccels use the
# ffnvcodec headers of Debian's libffmpeg-nvenc-dev, copied into a private include folder (the cross
# compiler must not see /usr/include). Nothing is linked against the NVIDIA driver: FFmpeg loads
# nvcuda.dll and nvcuvid.dll at run time. dav1d (software AV1) is cross-built from Debian 12's source
# package as a static library and linked into the avcodec DLL, which so needs no other DLL. TLS
# is the Linux build's: mbedTLS 2.28 from Debian 12's source package, cross-built as a static
# library and linked into the avformat DLL (ffmpeg-common.sh's mbedtls_build), with nvcam's patch,
# so a camera's certificate is verified the same way on both (the system trust store here is
# Windows' ROOT store, read through crypt32); libsrt 1.5 (srt://, MPL-2.0) is cross-built on that
# mbedTLS the same way (srt_build), with its C++ runtime and winpthread static. Apache-2.0 code makes the libraries LGPL v3 or later
# (--enable-version3). The DLLs may import only Windows' own DLLs and each other (checked below).
#
# Result (the prefix, target/ffmpeg-windows/): bin/*.dll with private names (avcodec_nvcam-59,
# avdevice_nvcam-59, avfilter_nvcam-8, avformat_nvcam-59, avutil_nvcam-57, swscale_nvcam-6:
# ffmpeg_suffix in ffmpeg-common.sh; Windows reuses a loaded module of the same name for every
# import of it, so a host that loaded another avformat-59.dll keeps nvcam on these),
# lib/lib*_nvcam.dll.a (mingw import libraries), bin/*.lib (MSVC import
# libraries, where the toolchain made them), include/, lib/pkgconfig/, share/licenses/ffmpeg/ (the
# LGPL v3 text and the GPL v3 it refers to), share/licenses/mbedtls/ (Apache-2.0), share/licenses/srt/ (MPL-2.0), share/licenses/dav1d/
# (BSD-2-Clause) and BUILD-INFO.txt (versions and configure line); and lib/delayload/: delay-load import
# libraries of the same names with pkg-config files that point at them, which is what nvcam.dll
# links (.cargo/config.toml), so that it finds the FFmpeg DLLs in its own folder (src/win_loader.rs
# says how). A stamp keyed by this script, ffmpeg-common.sh and the patches makes a second run a
# no-op; change one of them (or delete the prefix) to rebuild.
#
# Needs: mingw-w64, nasm, meson, ninja-build, cmake, dpkg-dev, libffmpeg-nvenc-dev (see .ci/packages.txt). Uses -j2 unless
# JOBS is set. About 4-5 minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix="$root/target/ffmpeg-windows"
work="$root/target/ffmpeg-windows-build"
jobs=${JOBS:-2}
cross=x86_64-w64-mingw32-
name=build-ffmpeg-windows
. "$root/scripts/build/ffmpeg-common.sh"
key=$(ffmpeg_build_key "$0")
stamp="$prefix/.stamp-$key"

if [ -f "$stamp" ]; then
  echo "$prefix"
  exit 0
fi

for tool in ${cross}gcc ${cross}ar ${cross}nm ${cross}dlltool nasm dpkg-source pkg-config; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install mingw-w64 nasm dpkg-dev)"
done

# --- source: Debian 12's ffmpeg source package ---
ffmpeg_source

# --- ffnvcodec headers, private to this build (configure finds them through pkg-config) ---
ffnvcodec_private
dav1d_private windows

# --- mbedTLS, cross-built, static and private to this build (the Linux build's TLS) ---
mbedtls_build windows
# --- libsrt on that mbedTLS, cross-built, static (threads: the static winpthread) ---
srt_build windows

# --- configure: what nvcam uses (ffmpeg-common.sh), Windows threads, TLS through mbedTLS ---
# The system trust store is Windows' ROOT store, read through crypt32 (the TLS patch); mbedTLS's
# entropy uses advapi32 and Winsock is ws2_32: all system DLLs. A DLL that no symbol needs is not
# imported, so only avformat imports them. mbedTLS's bignum divides 128-bit integers (__udivti3):
# -static-libgcc takes that from libgcc.a instead of importing libgcc_s_seh-1.dll, which Windows
# does not have.
ffmpeg_configure \
  --enable-cross-compile --target-os=mingw32 --arch=x86_64 --cross-prefix=$cross \
  --pkg-config=pkg-config \
  --enable-w32threads \
  --extra-cflags="-I$work/include -I$mbedtls_prefix/include" \
  --extra-ldflags="-L$mbedtls_prefix/lib -static-libgcc" \
  --extra-libs="-lcrypt32 -ladvapi32 -lws2_32"
echo "build-ffmpeg-windows: make -j$jobs" >&2
make -j"$jobs" >make.log 2>&1 || { tail -n 40 make.log >&2; die "make failed"; }
rm -rf "$prefix"
make install >install.log 2>&1 || { tail -n 40 install.log >&2; die "make install failed"; }
ffmpeg_check_paths "$prefix"/bin/*.dll

# --- the DLLs import only system DLLs and each other: no TLS library, no MinGW runtime DLL ---
# (wsock32: libsrt's MinGW link names it beside ws2_32; both are Windows' own Winsock DLLs.)
allowed=" kernel32.dll msvcrt.dll ws2_32.dll wsock32.dll crypt32.dll advapi32.dll bcrypt.dll user32.dll ole32.dll shell32.dll secur32.dll "
for f in "$prefix"/bin/*.dll; do
  for n in $(${cross}objdump -p "$f" | sed -n 's/^\s*DLL Name: //p' | tr 'A-Z' 'a-z'); do
    case "$allowed" in *" $n "*) continue ;; esac
    case "$n" in api-ms-win-*) continue ;; esac
    [ -e "$prefix/bin/$n" ] || [ -n "$(find "$prefix/bin" -maxdepth 1 -iname "$n")" ] \
      || die "$(basename "$f") imports $n: only system DLLs and this build's are allowed"
  done
done
for f in "$prefix"/bin/*.dll; do
  case "$(basename "$f")" in *"$ffmpeg_suffix"-[0-9]*.dll) ;; *) die "$(basename "$f") has no private name (--build-suffix=$ffmpeg_suffix)" ;; esac
done
imports=$(${cross}objdump -p "$prefix"/bin/avformat"$ffmpeg_suffix"-*.dll)  # not piped into grep -q: SIGPIPE + pipefail
for n in crypt32.dll; do
  grep -qi "DLL Name: $n" <<<"$imports" || die "avformat does not import $n (the ROOT-store code is not compiled in)"
done

# --- licences and build record ---
ffmpeg_licences
{
  echo "FFmpeg $version (Debian source package $(basename "$srcdir")), cross-built for Windows x64 with"
  echo "$(${cross}gcc --version | head -n1), LGPL v3 or later (--enable-version3 for mbedTLS; no --enable-gpl, no --enable-nonfree)."
  echo "Built by nvcam's scripts/build/build-ffmpeg-windows.sh. Source: Debian's 'ffmpeg' source package"
  echo "(https://sources.debian.org/src/ffmpeg/) or https://ffmpeg.org/releases/ffmpeg-${version}.tar.xz."
  mbedtls_info "trust store: Windows' ROOT store, through crypt32"
  dav1d_info
  srt_info
  echo
  echo "configure ${conf[*]}" | sed "s#$work#<build>#g; s#$prefix#<prefix>#g"
} >"$prefix/BUILD-INFO.txt"
cp "$prefix/BUILD-INFO.txt" "$prefix/share/licenses/ffmpeg/"

# --- delay-load import libraries: what nvcam.dll links ---
# With ordinary imports Windows resolves nvcam.dll's FFmpeg DLLs by the host's search order, which
# leaves out nvcam.dll's own folder unless the host asks for it; delay-loaded, they are loaded at
# first use, from that folder (src/win_loader.rs). One per DLL, from the export list FFmpeg's own
# link used (lib/<name>-<major>.def), named as the ordinary one so that the same -l flags find it.
# dlltool names the library's symbols after the output path as given, so it is given as a bare file
# name: nvcam finds the descriptors by those names (__DELAY_IMPORT_DESCRIPTOR_libavcodec_nvcam_dll_a).
# The .pc files are there under both names: FFmpeg's (libavcodec.pc, which ffmpeg-sys-next looks up)
# and the build's (libavcodec_nvcam.pc, which the others' Requires name); both link -lavcodec_nvcam.
dl="$prefix/lib/delayload"
mkdir -p "$dl/pkgconfig"
for def in "$prefix"/lib/*.def; do
  dll=$(basename "$def" .def)    # avcodec_nvcam-59
  (cd "$dl" && ${cross}dlltool -m i386:x86-64 -d "$def" -D "$dll.dll" -y "lib${dll%-*}.dll.a") \
    || die "dlltool could not make a delay-load library from $def"
done
for pc in "$prefix"/lib/pkgconfig/*.pc; do
  grep -q '^libdir=' "$pc" || die "no libdir= line in $pc"
  sed "s#^libdir=.*#libdir=$dl#" "$pc" >"$dl/pkgconfig/$(basename "$pc")"
  case "$pc" in *"$ffmpeg_suffix".pc) cp "$dl/pkgconfig/$(basename "$pc")" "$dl/pkgconfig/$(basename "$pc" "$ffmpeg_suffix.pc").pc" ;; esac
done
syms=$(${cross}nm "$dl/libavcodec$ffmpeg_suffix.dll.a")  # not piped into grep -q: SIGPIPE + pipefail
grep -q " __DELAY_IMPORT_DESCRIPTOR_libavcodec${ffmpeg_suffix}_dll_a\$" <<<"$syms" && [ -f "$dl/pkgconfig/libavcodec.pc" ] \
  || die "no delay-load library for avcodec in $dl"

cd "$root"; rm -rf "$work/build"
touch "$stamp"
echo "build-ffmpeg-windows: FFmpeg $version installed in $prefix" >&2
echo "$prefix"
