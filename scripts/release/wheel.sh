#!/usr/bin/env bash
# Python wheels, from Linux:
#
#   bash scripts/release/wheel.sh              # both, into dist/
#   bash scripts/release/wheel.sh linux        # dist/nvcam-<version>-py3-none-manylinux_<glibc>_x86_64.whl
#   bash scripts/release/wheel.sh windows      # dist/nvcam-<version>-py3-none-win_amd64.whl
#
# Each wheel is built by the package's own build backend (scikit-build-core, pyproject.toml: the
# same metadata as `pip install .`) from the release package of its platform (scripts/release/package.sh:
# the Linux tarball with libnvcam.so and its bundled FFmpeg, the Windows zip with nvcam.dll and the
# FFmpeg DLLs): NVCAM_PACKAGE_DIR names the unpacked package, and bindings/python/CMakeLists.txt
# puts its library, FFmpeg and FFmpeg's licence into the wheel instead of running cargo. The tag is
# forced: py3-none (ctypes, any CPython 3.8+) and the package's platform. The Linux one is
# manylinux_<X>_<Y>_x86_64 where glibc X.Y is the newest glibc symbol version any of the libraries
# uses (PEP 600: such a wheel runs on glibc X.Y and newer); every library they need must be
# glibc's, libgcc_s or one in the wheel.
#
# The backend comes from PyPI into pip's isolated build environment; pip itself runs in a venv
# under target/ (python3-venv), so no pip is needed on the system. The Linux wheel's library is a
# plain `cargo build --release` (no test hooks) unless NVCAM_PACKAGE_LIB names another; the
# Windows one needs the Windows toolchain of the README's Windows section.
# NVCAM_PACKAGE_DIST=dir writes there instead of dist/.
#
#   pip install dist/nvcam-*-manylinux_*.whl
set -euo pipefail
name=wheel
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

venv="$root/target/wheel-build-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || die "python3 -m venv failed (apt-get install python3-venv: .ci/packages.txt)"

# build <unpacked package> <platform tag>: the wheel into $dist.
build() {
  local pkg=$1 plat=$2 out="$tmp/out-$2"
  rm -f "$dist/nvcam-$version-py3-none-$plat.whl"
  NVCAM_PACKAGE_DIR="$pkg" "$venv/bin/python" -m pip wheel -q --no-deps --disable-pip-version-check \
    --config-settings=wheel.tags="py3-none-$plat" -w "$out" "$root" >&2 || die "pip wheel ($plat) failed"
  local whl="$out/nvcam-$version-py3-none-$plat.whl"
  [ -f "$whl" ] || die "the backend did not write $(basename "$whl"): $(ls "$out")"
  mv "$whl" "$dist/"
  echo "$dist/$(basename "$whl") ($(du -h "$dist/$(basename "$whl")" | cut -f1))"
}

linux() {
  NVCAM_PACKAGE_DIST="$tmp" bash scripts/release/package.sh linux >&2 || die "scripts/release/package.sh linux failed"
  tar -C "$tmp" -xzf "$tmp/nvcam-$version-linux-x64.tar.gz"
  local pkg="$tmp/nvcam-$version-linux-x64"
  readelf -d "$pkg/libnvcam.so" | grep -qF '[$ORIGIN/lib]' \
    || die "$pkg/libnvcam.so has no RUNPATH \$ORIGIN/lib (package it with scripts/release/package.sh linux)"
  # The manylinux policy's system libraries (PEP 600 / auditwheel, the subset that matters here).
  local system=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 ld-linux-x86-64.so.2 "
  local f n
  for f in "$pkg/libnvcam.so" "$pkg"/lib/*.so.*; do
    for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p'); do
      [[ "$system" == *" $n "* ]] || [ -f "$pkg/lib/$n" ] \
        || die "$f needs $n, which is neither a system library of the manylinux policy nor in the wheel"
    done
  done
  local glibc
  glibc=$(objdump -T "$pkg/libnvcam.so" "$pkg"/lib/*.so.* | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n1)
  [ -n "$glibc" ] || die "no glibc symbol versions in $pkg"
  local major=${glibc%%.*} rest=${glibc#*.}
  build "$pkg" "manylinux_${major}_${rest%%.*}_x86_64"
}

windows() {
  NVCAM_PACKAGE_DIST="$tmp" bash scripts/release/package.sh windows >&2 || die "scripts/release/package.sh windows failed"
  python3 -m zipfile -e "$tmp/nvcam-$version-windows-x64.zip" "$tmp"
  build "$tmp/nvcam-$version-windows-x64" win_amd64
}

case "$what" in
  all) linux; windows ;;
  linux) linux ;;
  windows) windows ;;
esac
