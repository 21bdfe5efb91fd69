#!/usr/bin/env bash
# Cross-builds FFmpeg 5.1 for Windows x64 as DLLs with mingw-w64, with only what nvcam uses, LGPL.
#
#   bash scripts/build/build-ffmpeg-windows.sh        # prints the prefix: target/ffmpeg-windows
#
# The source is Debian 12's own FFmpeg source package (`apt-get source ffmpeg`, the version the Linux
# build links against, Debian's patches applied); this script adds `deb-src` to
# /etc/apt/sources.list.d/debian.sources when apt has no source entries. The NVDEC hwaccels use the
# ffnvcodec headers of Debian's libffmpeg-nvenc-dev, copied into a private include folder (the cross
# compiler must not see /usr/include). Nothing is linked against the NVIDIA driver: FFmpeg loads
# nvcuda.dll and nvcuvid.dll at run time. dav1d (software AV1) is cross-built from Debian 12's source
# package as a static library and linked into the avcodec DLL, which so needs no other DLL.
#
# Result (the prefix, target/ffmpeg-windows/): bin/*.dll (avcodec-59, avdevice-59, avfilter-8,
# avformat-59, avutil-57, swscale-6), lib/lib*.dll.a (mingw import libraries), bin/*.lib (MSVC import
# libraries, where the toolchain made them), include/, lib/pkgconfig/, share/licenses/ffmpeg/ (the
# LGPL text), share/licenses/dav1d/ (BSD-2-Clause) and BUILD-INFO.txt (version and configure line); and lib/delayload/: delay-load import
# libraries of the same names with pkg-config files that point at them, which is what nvcam.dll
# links (.cargo/config.toml), so that it finds the FFmpeg DLLs in its own folder (src/win_loader.rs
# says how). A stamp keyed by this script's content makes a second run a no-op; change the script
# (or delete the prefix) to rebuild.
#
# Needs: mingw-w64, nasm, meson, ninja-build, dpkg-dev, libffmpeg-nvenc-dev (see .ci/packages.txt). Uses -j2 unless
# JOBS is set. About 3-4 minutes on 2 cores.
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

# --- configure: only what nvcam uses ---
protocols=(file pipe tcp udp rtp http https httpproxy tls rtmp rtmps)
conf=(
  --prefix="$prefix"
  --enable-cross-compile --target-os=mingw32 --arch=x86_64 --cross-prefix=$cross
  --pkg-config=pkg-config
  --enable-shared --disable-static
  --disable-programs --disable-doc --disable-debug --disable-autodetect
  --disable-everything --disable-swresample --disable-postproc
  --enable-network --enable-w32threads --enable-schannel
  --enable-ffnvcodec --enable-cuda --enable-nvdec
  --enable-libdav1d --pkg-config-flags=--static
  --enable-protocol="$(join "${protocols[@]}")"
  --enable-demuxer="$(join "${demuxers[@]}")"
  --enable-muxer="$(join "${muxers[@]}")"
  --enable-decoder="$(join "${decoders[@]}")"
  --enable-hwaccel="$(join "${hwaccels[@]}")"
  --enable-parser="$(join "${parsers[@]}")"
  --enable-bsf="$(join "${bsfs[@]}")"
  --enable-filter="$(join "${filters[@]}")"
  --enable-indev=lavfi
  --extra-cflags="-I$work/include"
)
cd "$work/build"
echo "build-ffmpeg-windows: configuring FFmpeg $version" >&2
"$srcdir/configure" "${conf[@]}" >configure.log 2>&1 || { tail -n 30 configure.log ffbuild/config.log >&2 || true; die "configure failed"; }
# configure silently drops what it cannot build; these must be there.
for want in CONFIG_NVDEC CONFIG_CUDA CONFIG_H264_NVDEC_HWACCEL CONFIG_HEVC_NVDEC_HWACCEL CONFIG_LAVFI_INDEV \
            CONFIG_TESTSRC2_FILTER CONFIG_RTSP_DEMUXER CONFIG_HTTPS_PROTOCOL CONFIG_SCHANNEL \
            CONFIG_MATROSKA_MUXER CONFIG_MP4_MUXER CONFIG_FILE_PROTOCOL \
            CONFIG_H264_MP4TOANNEXB_BSF CONFIG_HEVC_MP4TOANNEXB_BSF CONFIG_SWSCALE CONFIG_LIBDAV1D_DECODER; do
  grep -qs "^#define $want 1" config.h config_components.h || die "configure did not enable $want (see $work/build/configure.log)"
done
grep -q '^#define CONFIG_GPL 0' config.h || die "this build must be LGPL"
ffmpeg_hide_paths
echo "build-ffmpeg-windows: make -j$jobs" >&2
make -j"$jobs" >make.log 2>&1 || { tail -n 40 make.log >&2; die "make failed"; }
rm -rf "$prefix"
make install >install.log 2>&1 || { tail -n 40 install.log >&2; die "make install failed"; }
ffmpeg_check_paths "$prefix"/bin/*.dll

# --- licence and build record (FFmpeg's example sources are no part of a runtime) ---
rm -rf "$prefix/share/ffmpeg"
mkdir -p "$prefix/share/licenses/ffmpeg"
cp "$srcdir/COPYING.LGPLv2.1" "$srcdir/LICENSE.md" "$prefix/share/licenses/ffmpeg/"
dav1d_licence
{
  echo "FFmpeg $version (Debian source package $(basename "$srcdir")), cross-built for Windows x64 with"
  echo "$(${cross}gcc --version | head -n1), LGPL v2.1 or later (no --enable-gpl, no --enable-nonfree)."
  echo "Built by nvcam's scripts/build/build-ffmpeg-windows.sh. Source: Debian's 'ffmpeg' source package"
  echo "(https://sources.debian.org/src/ffmpeg/) or https://ffmpeg.org/releases/ffmpeg-${version}.tar.xz."
  dav1d_info
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
# name: nvcam finds the descriptors by those names (__DELAY_IMPORT_DESCRIPTOR_libavcodec_dll_a).
dl="$prefix/lib/delayload"
mkdir -p "$dl/pkgconfig"
for def in "$prefix"/lib/*.def; do
  dll=$(basename "$def" .def)    # avcodec-59
  (cd "$dl" && ${cross}dlltool -m i386:x86-64 -d "$def" -D "$dll.dll" -y "lib${dll%-*}.dll.a") \
    || die "dlltool could not make a delay-load library from $def"
done
for pc in "$prefix"/lib/pkgconfig/*.pc; do
  grep -q '^libdir=' "$pc" || die "no libdir= line in $pc"
  sed "s#^libdir=.*#libdir=$dl#" "$pc" >"$dl/pkgconfig/$(basename "$pc")"
done
syms=$(${cross}nm "$dl/libavcodec.dll.a")  # not piped into grep -q: SIGPIPE + pipefail
grep -q ' __DELAY_IMPORT_DESCRIPTOR_libavcodec_dll_a$' <<<"$syms" && [ -f "$dl/pkgconfig/libavcodec.pc" ] \
  || die "no delay-load library for avcodec in $dl"

cd "$root"; rm -rf "$work/build"
touch "$stamp"
echo "build-ffmpeg-windows: FFmpeg $version installed in $prefix" >&2
echo "$prefix"
