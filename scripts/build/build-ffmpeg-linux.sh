#!/usr/bin/env bash
# Builds FFmpeg 5.1 for Linux x86-64 as shared libraries with only what nvcam uses and nvcam's
# patches (scripts/build/ffmpeg-patches/), LGPL, for every Linux build: `cargo build` and `cargo test` link
# it and run on it (.cargo/config.toml, build.rs), the release tarball and the Python wheel bundle it.
#
#   bash scripts/build/build-ffmpeg-linux.sh          # prints the prefix: target/ffmpeg-linux
#
# The source is Debian 12's own FFmpeg source package (`apt-get source ffmpeg`, Debian's patches
# applied); the libraries have private names and symbol versions (libavcodec_nvcam.so.59 with
# NVCAM_LIBAVCODEC_59, ...: ffmpeg_suffix in ffmpeg-common.sh), so a process that has loaded
# Debian's libavcodec.so.59 (LIBAVCODEC_59) keeps nvcam on these. scripts/release/package.sh checks
# that every FFmpeg symbol libnvcam.so imports is defined here. This script adds `deb-src` to
# /etc/apt/sources.list.d/debian.sources when apt has no source entries. The NVDEC hwaccels and the
# CUDA hwcontext use the ffnvcodec headers of Debian's libffmpeg-nvenc-dev; nothing links against
# the NVIDIA driver (FFmpeg loads libcuda.so.1 and libnvcuvid.so.1 at run time).
#
# Only glibc: --disable-autodetect keeps every external library out (no zlib, no gnutls, no
# libdrm/vaapi/vdpau/X11), so the libraries need libc, libm and (for the CUDA loader) libdl, nothing
# else. Two libraries are built from Debian 12's source packages as static PIC libraries and
# linked in, so no system library is needed: dav1d (software AV1: FFmpeg 5.1's own AV1 decoder needs a
# hardware accelerator) into libavcodec (ffmpeg-common.sh's dav1d_private), mbedTLS 2.28 (TLS:
# tls, https, rtmps, rtsps; Apache-2.0) into libavformat (mbedtls_build in ffmpeg-common.sh), and
# libsrt 1.5 (srt://, MPL-2.0, encrypted with that mbedTLS, its C++ runtime static) into libavformat
# too (srt_build); with
# Apache-2.0 code in them the libraries are LGPL v3 or later (--enable-version3).
#
# Result (the prefix, target/ffmpeg-linux/): lib/lib{avcodec,avdevice,avfilter,avformat,avutil,
# swscale}_nvcam.so.* with RUNPATH=$ORIGIN (so they find each other in whatever folder they are copied to),
# include/, lib/pkgconfig/ (lib*_nvcam.pc, and a copy of each under FFmpeg's own name, libavcodec.pc,
# the names ffmpeg-sys-next looks up: they link -lavcodec_nvcam), share/licenses/ffmpeg/ (the LGPL text and BUILD-INFO.txt: version and
# configure line), share/licenses/dav1d/ (its BSD-2-Clause text), share/licenses/{mbedtls,srt}/. A stamp keyed by the content of this script, ffmpeg-common.sh and the patches
# makes a second run a no-op; change one of them (or delete the prefix) to rebuild. build.rs refuses
# to build nvcam against a prefix whose stamp is not the current key.
#
# Needs: gcc, make, nasm, meson, ninja-build, dpkg-dev, patchelf, libffmpeg-nvenc-dev (see
# .ci/packages.txt). Uses -j2 unless JOBS is set. About 4 minutes on 2 cores, dav1d 1.5 of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix="$root/target/ffmpeg-linux"
work="$root/target/ffmpeg-linux-build"
jobs=${JOBS:-2}
name=build-ffmpeg-linux
. "$root/scripts/build/ffmpeg-common.sh"
key=$(ffmpeg_build_key "$0")
stamp="$prefix/.stamp-$key"

if [ -f "$stamp" ]; then
  echo "$prefix"
  exit 0
fi
t0=$(date +%s)

for tool in gcc make nasm dpkg-source pkg-config patchelf readelf objdump; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install build-essential nasm dpkg-dev patchelf pkg-config)"
done

# --- source: Debian 12's ffmpeg source package ---
ffmpeg_source

# --- ffnvcodec headers, private to this build (configure finds them through pkg-config) ---
ffnvcodec_private
# glibc 2.35 versioned a new hypot (same function, no SVID error handling); the old one keeps these
# libraries at glibc 2.34, the floor libnvcam.so itself has (Rust's std built on 2.36 uses 2.34's
# pthread and dl symbols): RHEL 9 and its rebuilds ship 2.34. A .symver for a function a file does
# not call adds nothing to it.
dav1d_private linux
printf '__asm__(".symver hypot,hypot@GLIBC_2.2.5");\n' >"$work/include/nvcam-glibc-compat.h"

# --- mbedTLS, static and private to this build ---
CFLAGS="-include $work/include/nvcam-glibc-compat.h" mbedtls_build linux
# --- libsrt on that mbedTLS, static and private to this build ---
CFLAGS="-include $work/include/nvcam-glibc-compat.h" srt_build linux
# libsrt's std::random_device makes the static C++ runtime call arc4random, new in glibc 2.36: a
# private one from getrandom (2.25), hidden in libavformat, keeps the 2.34 floor. It comes after
# the C++ runtime on the link line, so the runtime's reference binds to it.
mkdir -p "$work/compat"
printf '%s\n' '#include <stdint.h>' '#include <sys/random.h>' \
  '__attribute__((visibility("hidden"))) uint32_t arc4random(void) {' \
  '  uint32_t v; while (getrandom(&v, sizeof v, 0) != sizeof v) {} return v; }' >"$work/compat/arc4random.c"
gcc -O2 -fPIC -c "$work/compat/arc4random.c" -o "$work/compat/arc4random.o" && ar rcs "$work/compat/libnvcam-glibc-compat.a" "$work/compat/arc4random.o" \
  || die "could not build the arc4random stand-in"
sed -i "s#-l:libstdc++.a#-l:libstdc++.a -L$work/compat -lnvcam-glibc-compat#" "$work/pkgconfig/srt.pc"

# --- configure: what nvcam uses (ffmpeg-common.sh), threads, TLS through mbedTLS ---
wants+=(HAVE_PTHREADS)
ffmpeg_configure \
  --enable-pthreads \
  --extra-cflags="-I$work/include -I$mbedtls_prefix/include -include $work/include/nvcam-glibc-compat.h" \
  --extra-ldflags="-L$mbedtls_prefix/lib"
echo "build-ffmpeg-linux: make -j$jobs" >&2
make -j"$jobs" >make.log 2>&1 || { tail -n 40 make.log >&2; die "make failed"; }
rm -rf "$prefix"
make install >install.log 2>&1 || { tail -n 40 install.log >&2; die "make install failed"; }
ffmpeg_check_paths "$prefix"/lib/lib*.so.*.*.*

# --- each library finds the others beside it; only glibc (and libgcc_s) may be needed ---
for f in "$prefix"/lib/lib*.so.*.*.*; do
  patchelf --set-rpath '$ORIGIN' "$f"
  for n in $(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case "$n" in
      libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|libgcc_s.so.1|ld-linux-x86-64.so.2) ;;
      libav*.so.*|libsw*.so.*) [ -e "$prefix/lib/$n" ] || die "$(basename "$f") needs $n, which is not in this build" ;;
      *) die "$(basename "$f") needs $n: only glibc and this build's libraries are allowed" ;;
    esac
  done
done

# --- private names and versions: each library defines only NVCAM_ versions and needs only those
# of its siblings (a plain LIBAVUTIL_57 reference could bind to Debian's libavutil.so.57) ---
for f in "$prefix"/lib/lib*.so.*.*.*; do
  base=$(basename "$f"); short=${base%%"$ffmpeg_suffix".so.*}
  case "$base" in lib*"$ffmpeg_suffix".so.*) ;; *) die "$base has no private name (--build-suffix=$ffmpeg_suffix)" ;; esac
  readelf -d "$f" | grep -q "Library soname: \[$short$ffmpeg_suffix\.so\.[0-9]*\]" || die "$base has no private soname"
  defs=$(readelf -V --wide "$f" | sed -n '/Version definition section/,/Version needs section/p' | grep -o 'Name: [A-Z0-9_]*' | sed 's/Name: //')
  echo "$defs" | grep -qx "NVCAM_$(echo "${short#lib}" | tr a-z A-Z | sed 's/^/LIB/')_[0-9]*" || die "$base defines no NVCAM_ symbol version (patch 0005)"
  needs=$(readelf -V --wide "$f" | sed -n '/Version needs section/,$p' | grep -o 'Name: [A-Z0-9_.]*' | sed 's/Name: //' | grep -v '^GLIBC_\|^GCC_' || true)
  bad=$(echo "$needs" | grep -v '^NVCAM_LIB' | grep . || true)
  [ -z "$bad" ] || die "$base needs symbol versions that are not this build's: $bad"
done
# ffmpeg-sys-next looks the libraries up by FFmpeg's own pkg-config names.
for pc in "$prefix"/lib/pkgconfig/lib*"$ffmpeg_suffix".pc; do
  cp "$pc" "${pc%"$ffmpeg_suffix".pc}.pc"
done

glibc=$(objdump -T "$prefix"/lib/lib*.so.*.*.* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)
[ "$glibc" = GLIBC_2.34 ] || die "the libraries need $glibc; expected GLIBC_2.34 at most (a new versioned glibc symbol? see nvcam-glibc-compat.h)"

# --- licences and build record ---
ffmpeg_licences
{
  echo "FFmpeg $version (Debian source package $(basename "$srcdir")), built for Linux x86-64 with"
  echo "$(gcc --version | head -n1) on $(ldd --version | head -n1 | sed 's/^ldd //'), LGPL v3 or later (--enable-version3"
  echo "for mbedTLS; no --enable-gpl, no --enable-nonfree). Built by nvcam's scripts/build/build-ffmpeg-linux.sh. Source:"
  echo "Debian's 'ffmpeg' source package (https://sources.debian.org/src/ffmpeg/) or https://ffmpeg.org/releases/ffmpeg-${version}.tar.xz."
  mbedtls_info "trust store: the system's CA bundle file"
  echo "RUNPATH set to \$ORIGIN with patchelf after the build; hypot bound to its GLIBC_2.2.5 version (glibc 2.34 suffices)."
  dav1d_info
  srt_info
  echo
  echo "configure ${conf[*]}" | sed "s#$work#<build>#g; s#$prefix#<prefix>#g"
} >"$prefix/BUILD-INFO.txt"
cp "$prefix/BUILD-INFO.txt" "$prefix/share/licenses/ffmpeg/"

cd "$root"; rm -rf "$work/build"
touch "$stamp"
echo "build-ffmpeg-linux: FFmpeg $version installed in $prefix ($(($(date +%s) - t0)) s)" >&2
echo "$prefix"
