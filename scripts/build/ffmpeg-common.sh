# What scripts/build/build-ffmpeg-windows.sh and scripts/build/build-ffmpeg-linux.sh share, sourced by both:
# the source (Debian 12's own FFmpeg source package, Debian's patches applied), the private copy of
# the ffnvcodec headers the NVDEC hwaccels use, and the components nvcam uses. The caller sets
# `root`, `work` and `name` (its log prefix) before sourcing; each build's cache key covers this
# file too (`ffmpeg_build_key`).

die() { echo "$name: $*" >&2; exit 1; }
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

# nvcam's patches to FFmpeg, applied in name order (see scripts/build/ffmpeg-patches/README.md).
ffmpeg_patches() { ls "$root"/scripts/build/ffmpeg-patches/*.patch; }

# The cache key of a build: its own script, this file and the patches.
ffmpeg_build_key() { cat "$1" "$root/scripts/build/ffmpeg-common.sh" $(ffmpeg_patches) | sha256sum | cut -c1-16; }

# Sets `srcdir` and `version`: the source tree in $work/src (kept for the next rebuild), fetched
# with `apt-get source` (adding deb-src to /etc/apt/sources.list.d/debian.sources when apt has no
# source entries).
ffmpeg_source() {
  mkdir -p "$work/src"; cd "$work/src"
  srcdir=$(find "$work/src" -maxdepth 1 -mindepth 1 -type d -name 'ffmpeg-*' | head -n1)
  if [ -z "$srcdir" ] || [ ! -f "$srcdir/configure" ]; then
    rm -rf "$work/src"/*
    if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      local list=/etc/apt/sources.list.d/debian.sources
      [ -f "$list" ] || die "apt has no deb-src entries and there is no $list to add them to"
      echo "$name: adding deb-src to $list" >&2
      $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' "$list"
      $SUDO apt-get update -qq
    fi
    apt-get source -qq --only-source ffmpeg 2>&1 | grep -v 'unsandboxed' >&2 || true
    srcdir=$(find "$work/src" -maxdepth 1 -mindepth 1 -type d -name 'ffmpeg-*' | head -n1)
    [ -n "$srcdir" ] && [ -f "$srcdir/configure" ] || die "apt-get source ffmpeg gave no source tree in $work/src"
  fi
  version=$(cat "$srcdir/RELEASE" 2>/dev/null || basename "$srcdir")
  case "$version" in 5.1*) ;; *) die "expected FFmpeg 5.1 (the system build's version), got $version" ;; esac
  ffmpeg_patch
}

# Applies nvcam's patches to the kept source tree once; a tree patched by other patches (an older
# set) is unpacked afresh from the source package first.
ffmpeg_patch() {
  local want have
  want=$(cat $(ffmpeg_patches) | sha256sum | cut -c1-16)
  have=$(cat "$srcdir/.nvcam-patches" 2>/dev/null || true)
  [ "$have" = "$want" ] && return 0
  if [ -n "$have" ]; then
    local dsc; dsc=$(ls "$work"/src/ffmpeg_*.dsc | head -n1)
    rm -rf "$srcdir"
    (cd "$work/src" && dpkg-source -q -x "$dsc" "$srcdir" >&2) || die "could not unpack $dsc again"
  fi
  local p
  for p in $(ffmpeg_patches); do
    patch -d "$srcdir" -p1 -N -s <"$p" >&2 || die "patch $(basename "$p") does not apply"
  done
  echo "$want" >"$srcdir/.nvcam-patches"
}

# The ffnvcodec headers in $work/include with a private .pc file; pkg-config sees only that one, so
# none of the host's libraries is picked up. Starts $work/include, $work/pkgconfig and $work/build
# afresh.
ffnvcodec_private() {
  [ -f /usr/include/ffnvcodec/dynlink_cuviddec.h ] || die "/usr/include/ffnvcodec missing (apt-get install libffmpeg-nvenc-dev)"
  rm -rf "$work/include" "$work/pkgconfig" "$work/build"
  mkdir -p "$work/include" "$work/pkgconfig" "$work/build"
  cp -r /usr/include/ffnvcodec "$work/include/"
  local v; v=$(sed -n 's/^Version: *//p' /usr/share/pkgconfig/ffnvcodec.pc)
  printf 'prefix=%s\nincludedir=${prefix}/include\n\nName: ffnvcodec\nDescription: ffnvcodec headers (private copy)\nVersion: %s\nCflags: -I${includedir}\n' \
    "$work" "$v" >"$work/pkgconfig/ffnvcodec.pc"
  export PKG_CONFIG_LIBDIR="$work/pkgconfig" PKG_CONFIG_PATH=""
}

# dav1d, the software AV1 decoder (FFmpeg 5.1's own 'av1' decoder only drives a hardware
# accelerator): Debian 12's dav1d source package, kept in $work/src beside FFmpeg's, built with
# meson/ninja as a static PIC library into $work/dav1d and linked into libavcodec, so the package
# stays self-contained. $1 is "linux" or "windows" (a meson cross file for x86_64-w64-mingw32).
# Its .pc goes into the private pkg-config folder, so run after ffnvcodec_private. BSD-2-Clause:
# the caller copies $dav1d_src/COPYING into share/licenses/dav1d.
dav1d_private() {
  local build="$work/dav1d-build" out="$work/dav1d" t0; t0=$(date +%s)
  for tool in meson ninja; do command -v "$tool" >/dev/null || die "$tool not found (apt-get install meson ninja-build)"; done
  mkdir -p "$work/src"
  dav1d_src=$(find "$work/src" -maxdepth 1 -mindepth 1 -type d -name 'dav1d-*' | head -n1)
  if [ -z "$dav1d_src" ] || [ ! -f "$dav1d_src/meson.build" ]; then
    (cd "$work/src" && apt-get source -qq --only-source dav1d 2>&1 | grep -v 'unsandboxed' >&2 || true)
    dav1d_src=$(find "$work/src" -maxdepth 1 -mindepth 1 -type d -name 'dav1d-*' | head -n1)
    [ -n "$dav1d_src" ] && [ -f "$dav1d_src/meson.build" ] || die "apt-get source dav1d gave no source tree in $work/src"
  fi
  dav1d_version=$(basename "$dav1d_src" | sed 's/^dav1d-//')
  rm -rf "$build" "$out"
  local opts=(--prefix="$out" --libdir=lib --buildtype=release --default-library=static -Db_pic=true
              -Denable_tools=false -Denable_tests=false -Denable_examples=false -Denable_docs=false)
  if [ "$1" = windows ]; then
    cat >"$work/meson-cross-mingw64.txt" <<EOF2
[binaries]
c = 'x86_64-w64-mingw32-gcc'
ar = 'x86_64-w64-mingw32-ar'
strip = 'x86_64-w64-mingw32-strip'
windres = 'x86_64-w64-mingw32-windres'
pkgconfig = 'false'

[host_machine]
system = 'windows'
cpu_family = 'x86_64'
cpu = 'x86_64'
endian = 'little'
EOF2
    opts+=(--cross-file "$work/meson-cross-mingw64.txt")
  fi
  echo "$name: building dav1d $dav1d_version (static, $1)" >&2
  meson setup "$build" "$dav1d_src" "${opts[@]}" >"$work/dav1d-setup.log" 2>&1 || { tail -n 30 "$work/dav1d-setup.log" >&2; die "meson setup of dav1d failed"; }
  ninja -C "$build" -j"$jobs" install >"$work/dav1d-build.log" 2>&1 || { tail -n 30 "$work/dav1d-build.log" >&2; die "dav1d build failed"; }
  [ -f "$out/lib/libdav1d.a" ] && [ -f "$out/lib/pkgconfig/dav1d.pc" ] || die "dav1d installed no libdav1d.a / dav1d.pc in $out"
  cp "$out/lib/pkgconfig/dav1d.pc" "$work/pkgconfig/"
  rm -rf "$build"
  echo "$name: dav1d built in $(($(date +%s) - t0)) s" >&2
}

# dav1d's line in BUILD-INFO.txt.
dav1d_info() {
  echo "Linked in statically: dav1d $dav1d_version (Debian source package $(basename "$dav1d_src"), BSD-2-Clause,"
  echo "share/licenses/dav1d/COPYING), meson --buildtype=release --default-library=static -Db_pic=true."
}

# dav1d's licence beside FFmpeg's in the prefix.
dav1d_licence() {
  mkdir -p "$prefix/share/licenses/dav1d"
  cp "$dav1d_src/COPYING" "$prefix/share/licenses/dav1d/"
}

# configure compiles its command line into every library (avcodec_configuration() and the like),
# and that line names $prefix and $work, folders of the machine that built it. The libraries ship,
# so they say <prefix> and <build> there instead, as BUILD-INFO.txt does ($work before $prefix:
# the one path begins with the other). Run in $work/build after configure.
ffmpeg_hide_paths() {
  sed -i "/^#define FFMPEG_CONFIGURATION /{s#$work#<build>#g; s#$prefix#<prefix>#g}" config.h
}

# After make install: the libraries ($@) must not name the build's folders.
ffmpeg_check_paths() {
  local named; named=$(grep -lF -- "$prefix" "$@" || true)
  [ -z "$named" ] || die "these libraries name $prefix, a folder of this machine: $named"
}

# --- what nvcam uses, the same on Linux and Windows ---
join() { local IFS=,; echo "$*"; }
# The network whitelist's protocols that need no external library, and TLS (tls, https, rtmps,
# rtmpts, rtsps through mbedTLS). A build of another protocol appends to this list before
# ffmpeg_configure.
protocols=(file pipe tcp udp rtp srtp http httpproxy rtmp rtmpt crypto data tls https rtmps rtmpts libsrt)
demuxers=(mov matroska mpegts h264 hevc mjpeg mpjpeg avi flv live_flv rtsp rtp sdp concat)
decoders=(h264 hevc mjpeg ffv1 mpeg4 mpeg2video vp8 vp9 av1 libdav1d rawvideo)
hwaccels=(h264_nvdec hevc_nvdec mjpeg_nvdec mpeg4_nvdec mpeg2_nvdec vp8_nvdec vp9_nvdec av1_nvdec)
parsers=(h264 hevc mjpeg mpeg4video mpegvideo vp8 vp9 av1)
bsfs=(h264_mp4toannexb hevc_mp4toannexb)
filters=(testsrc testsrc2 format scale null)
# Recordings remux the camera's packets into these (src/record/), written through the file protocol.
muxers=(matroska mp4)
# What configure must have enabled (it silently drops what it cannot build); a build appends its own.
wants=(CONFIG_NVDEC CONFIG_CUDA CONFIG_H264_NVDEC_HWACCEL CONFIG_HEVC_NVDEC_HWACCEL CONFIG_LAVFI_INDEV
       CONFIG_TESTSRC2_FILTER CONFIG_RTSP_DEMUXER CONFIG_HTTP_PROTOCOL CONFIG_SRTP_PROTOCOL
       CONFIG_MATROSKA_MUXER CONFIG_MP4_MUXER CONFIG_FILE_PROTOCOL
       CONFIG_H264_MP4TOANNEXB_BSF CONFIG_HEVC_MP4TOANNEXB_BSF CONFIG_SWSCALE CONFIG_LIBDAV1D_DECODER
       CONFIG_MBEDTLS CONFIG_TLS_PROTOCOL CONFIG_HTTPS_PROTOCOL CONFIG_RTMPS_PROTOCOL CONFIG_VERSION3
       CONFIG_LIBSRT CONFIG_LIBSRT_PROTOCOL)

# The libraries' private name: configure's --build-suffix puts it into every file name (Linux
# libavformat_nvcam.so.59, Windows avformat_nvcam-59.dll), soname, import library and .pc file, and
# patch 0005 puts NVCAM_ before every symbol version (NVCAM_LIBAVFORMAT_59). A host process that has
# loaded the distribution's FFmpeg (same major versions) then holds other files with other version
# names, so no loader can bind nvcam's references to the host's libraries or the host's to these.
# nvcam_init checks the suffix in each library's configuration line (src/ffmpeg/own.rs).
ffmpeg_suffix=_nvcam

# Runs configure in $work/build with the shared arguments, then the build's own ("$@"), and
# checks `wants` and that the result is LGPL (v3: mbedTLS is Apache-2.0). Sets `conf` (the whole
# line, for BUILD-INFO.txt). Needs `prefix`, `srcdir`, `mbedtls_prefix` (mbedtls_build).
ffmpeg_configure() {
  conf=(
    --prefix="$prefix"
    --enable-shared --disable-static --build-suffix="$ffmpeg_suffix"
    --disable-programs --disable-doc --disable-debug --disable-autodetect
    --disable-everything --disable-swresample --disable-postproc
    --enable-network
    --enable-version3 --enable-mbedtls --enable-libsrt
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
    "$@"
  )
  cd "$work/build"
  echo "$name: configuring FFmpeg $version" >&2
  "$srcdir/configure" "${conf[@]}" >configure.log 2>&1 || { tail -n 30 configure.log ffbuild/config.log >&2 || true; die "configure failed"; }
  local want
  for want in "${wants[@]}"; do
    grep -qs "^#define $want 1" config.h config_components.h || die "configure did not enable $want (see $work/build/configure.log)"
  done
  grep -q '^#define CONFIG_GPL 0' config.h || die "this build must be LGPL (v3: mbedTLS is Apache-2.0)"
  ffmpeg_hide_paths
}

# The licences of what the prefix holds (FFmpeg's LGPL v3 and the GPL v3 it refers to, mbedTLS's
# Apache-2.0, dav1d's BSD-2-Clause, libsrt's MPL-2.0) in share/licenses/; FFmpeg's example sources are no part of a
# runtime.
ffmpeg_licences() {
  rm -rf "$prefix/share/ffmpeg"
  mkdir -p "$prefix/share/licenses/ffmpeg" "$prefix/share/licenses/mbedtls"
  cp "$srcdir/COPYING.LGPLv2.1" "$srcdir/COPYING.LGPLv3" "$srcdir/COPYING.GPLv3" "$srcdir/LICENSE.md" "$prefix/share/licenses/ffmpeg/"
  cp "$mbedtls_license" "$prefix/share/licenses/mbedtls/LICENSE"
  dav1d_licence
  srt_licence
}

# mbedTLS's lines in BUILD-INFO.txt.
mbedtls_info() {
  echo "TLS: mbedTLS $mbedtls_version (Apache-2.0, share/licenses/mbedtls/LICENSE; Debian's 'mbedtls' source package),"
  echo "static, linked into libavformat ($1). The FFmpeg libraries are LGPL v3 or later (--enable-version3)."
}

# --- TLS: mbedTLS, linked statically into libavformat ---
# Debian 12's mbedtls source package (2.28 LTS, Apache-2.0), built as static, position-independent
# libraries into a private prefix, `mbedtls_prefix` ($work/mbedtls), with cmake, for $1: "linux", or
# "windows" (mingw-w64; its entropy uses CryptGenRandom, advapi32). One build per target serves
# every library linked against it (libavformat's TLS; a transport needing the same crypto links
# the same prefix). CFLAGS from the caller's environment are added. mbedTLS's debug messages name
# their source files: the macro prefix map keeps this machine's folders out of the libraries
# (ffmpeg_check_paths). FFmpeg's version script (Linux) and export list (Windows) keep its symbols
# inside libavformat, so the package stays self-contained and no system TLS library is loaded.
# Apache-2.0 is compatible with the LGPL only in version 3: the FFmpeg libraries become LGPL v3 or
# later (--enable-version3). Sets `mbedtls_version`; `mbedtls_license` names the licence file to ship.
mbedtls_build() {
  local target=$1 dest="$work/mbedtls" src
  local cross_args=()
  case "$target" in
    linux) ;;
    windows) cross_args=(-DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER=x86_64-w64-mingw32-gcc
                         -DCMAKE_AR="$(command -v x86_64-w64-mingw32-ar)" -DCMAKE_RANLIB="$(command -v x86_64-w64-mingw32-ranlib)") ;;
    *) die "mbedtls_build: unknown target $target (linux or windows)" ;;
  esac
  mbedtls_prefix=$dest
  src=$(find "$work/mbedtls-src" -maxdepth 1 -mindepth 1 -type d -name 'mbedtls-2.28*' 2>/dev/null | head -n1 || true)
  if [ -z "$src" ] || [ ! -f "$src/CMakeLists.txt" ]; then
    command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"
    rm -rf "$work/mbedtls-src"; mkdir -p "$work/mbedtls-src"
    (cd "$work/mbedtls-src" && apt-get source -qq --only-source mbedtls 2>&1 | grep -v 'unsandboxed' >&2 || true)
    src=$(find "$work/mbedtls-src" -maxdepth 1 -mindepth 1 -type d -name 'mbedtls-2.28*' | head -n1)
    [ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || die "apt-get source mbedtls gave no mbedTLS 2.28 source tree in $work/mbedtls-src"
  fi
  mbedtls_version=$(basename "$src" | sed 's/^mbedtls-//')
  mbedtls_license="$src/LICENSE"
  local cflags="-fmacro-prefix-map=$src/=mbedtls-$mbedtls_version/ ${CFLAGS:-}"
  if [ -f "$dest/lib/libmbedtls.a" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$mbedtls_version $target $cflags" ]; then
    return 0
  fi
  echo "$name: building mbedTLS $mbedtls_version ($target)" >&2
  rm -rf "$dest" "$work/mbedtls-build"; mkdir -p "$work/mbedtls-build"
  (cd "$work/mbedtls-build" &&
    CFLAGS="$cflags" cmake "$src" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$dest" \
      -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DUSE_STATIC_MBEDTLS_LIBRARY=ON -DUSE_SHARED_MBEDTLS_LIBRARY=OFF \
      -DENABLE_PROGRAMS=OFF -DENABLE_TESTING=OFF -DMBEDTLS_FATAL_WARNINGS=OFF -DLINK_WITH_PTHREAD=OFF "${cross_args[@]}" &&
    make -j"$jobs" && make install) >"$work/mbedtls.log" 2>&1 || { tail -n 30 "$work/mbedtls.log" >&2; die "mbedTLS build failed"; }
  rm -rf "$work/mbedtls-build"
  echo "$mbedtls_version $target $cflags" >"$dest/.version"
}

# --- SRT: libsrt, linked statically into libavformat with the same mbedTLS ---
# Debian 12's srt source package (1.5.1, MPL-2.0), built with cmake as a static, position-independent
# library into a private prefix ($work/srt) for $1 ("linux" or "windows": mingw-w64, its threads from
# the static winpthread), its encryption on mbedtls_build's prefix, without its applications, tests or
# logging (libsrt would print its own lines to stderr; the rejection reasons nvcam reports come
# from FFmpeg's patched libsrt.c). apt-get source takes the newest version apt lists; a mirror
# without the security pool's file gets the release's version instead. libsrt is C++: the srt.pc
# written into the private pkg-config folder (run after ffnvcodec_private) names the C++ runtime
# as its static library (-l:libstdc++.a; Windows: no libgcc_s either, the build links libgcc
# statically), so libavformat needs no C++ runtime at run time; every library is named with -l
# (FFmpeg's configure puts a library given by its path before the object that needs it). Its
# symbols stay inside libavformat like mbedTLS's. MPL-2.0 is file-level copyleft: libsrt's source
# (Debian's package, unmodified) is where BUILD-INFO.txt says. CFLAGS from the caller's environment
# are added. Sets `srt_version` and `srt_license`.
srt_build() {
  local target=$1 dest="$work/srt" mbed=$mbedtls_prefix
  local src t0 cross_args=(); t0=$(date +%s)
  case "$target" in
    linux) ;;
    windows) cross_args=(-DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER=x86_64-w64-mingw32-gcc
                         -DCMAKE_CXX_COMPILER=x86_64-w64-mingw32-g++
                         -DCMAKE_AR="$(command -v x86_64-w64-mingw32-ar)" -DCMAKE_RANLIB="$(command -v x86_64-w64-mingw32-ranlib)"
                         -DPTHREAD_INCLUDE_DIR=/usr/x86_64-w64-mingw32/include
                         -DPTHREAD_LIBRARY=/usr/x86_64-w64-mingw32/lib/libwinpthread.a) ;;
    *) die "srt_build: unknown target $target (linux or windows)" ;;
  esac
  src=$(find "$work/srt-src" -maxdepth 1 -mindepth 1 -type d -name 'srt-1.5*' 2>/dev/null | head -n1 || true)
  if [ -z "$src" ] || [ ! -f "$src/CMakeLists.txt" ]; then
    command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"
    rm -rf "$work/srt-src"; mkdir -p "$work/srt-src"
    local v
    for v in "" $(apt-cache showsrc srt 2>/dev/null | sed -n 's/^Version: //p' | sort -rV); do
      (cd "$work/srt-src" && apt-get source -qq --only-source "srt${v:+=$v}" 2>&1 | grep -v 'unsandboxed' >&2 || true)
      src=$(find "$work/srt-src" -maxdepth 1 -mindepth 1 -type d -name 'srt-1.5*' | head -n1)
      [ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] && break
    done
    [ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || die "apt-get source srt gave no libsrt 1.5 source tree in $work/srt-src"
  fi
  srt_version=$(basename "$src" | sed 's/^srt-//')
  srt_license="$src/LICENSE"
  srt_src_package=$(basename "$(ls "$work"/srt-src/srt_*.dsc | head -n1)" .dsc)
  local flags="-fmacro-prefix-map=$src/=srt-$srt_version/ ${CFLAGS:-}"
  local key="$srt_version $target $flags $mbed"
  if [ ! -f "$dest/lib/libsrt.a" ] || [ "$(cat "$dest/.version" 2>/dev/null)" != "$key" ]; then
    echo "$name: building libsrt $srt_version ($target, static, mbedTLS)" >&2
    rm -rf "$dest" "$work/srt-build"; mkdir -p "$work/srt-build"
    (cd "$work/srt-build" &&
      CFLAGS="$flags" CXXFLAGS="$flags" cmake "$src" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$dest" \
        -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DENABLE_APPS=OFF -DENABLE_TESTING=OFF -DENABLE_UNITTESTS=OFF \
        -DENABLE_LOGGING=OFF -DENABLE_HEAVY_LOGGING=OFF -DENABLE_BONDING=OFF \
        -DENABLE_ENCRYPTION=ON -DUSE_ENCLIB=mbedtls -DSSL_INCLUDE_DIRS="$mbed/include" -DSSL_LIBRARY_DIRS="$mbed/lib" \
        -DSSL_LIBRARIES="$mbed/lib/libmbedtls.a;$mbed/lib/libmbedx509.a;$mbed/lib/libmbedcrypto.a" "${cross_args[@]}" &&
      make -j"$jobs" && make install) >"$work/srt.log" 2>&1 || { tail -n 30 "$work/srt.log" >&2; die "libsrt build failed"; }
    rm -rf "$work/srt-build"
    echo "$key" >"$dest/.version"
    echo "$name: libsrt built in $(($(date +%s) - t0)) s" >&2
  fi
  [ -f "$dest/lib/pkgconfig/srt.pc" ] || die "libsrt installed no srt.pc in $dest"
  local fix=(-e 's/-lstdc++/-l:libstdc++.a/' -e 's#/[^ ]*/lib\([a-z0-9_]*\)\.a#-l:lib\1.a#g' -e "s#^Libs.private: *#Libs.private: -L$mbed/lib #")
  [ "$target" = windows ] && fix+=(-e 's/ -lgcc_s//g')
  sed "${fix[@]}" "$dest/lib/pkgconfig/srt.pc" >"$work/pkgconfig/srt.pc"
}

# libsrt's lines in BUILD-INFO.txt.
srt_info() {
  echo "SRT: libsrt $srt_version (MPL-2.0, share/licenses/srt/LICENSE; source: Debian source package $srt_src_package,"
  echo "https://sources.debian.org/src/srt/, unmodified), static, encryption on the mbedTLS above, linked into libavformat"
  echo "with the GNU C++ runtime (libstdc++, GPL v3 with the GCC Runtime Library Exception) statically."
}

srt_licence() {
  mkdir -p "$prefix/share/licenses/srt"
  cp "$srt_license" "$prefix/share/licenses/srt/LICENSE"
}
