#!/usr/bin/env bash
# Python wheels, from Linux:
#
#   bash scripts/wheel.sh              # both, into dist/
#   bash scripts/wheel.sh linux        # dist/nvcam-<version>-py3-none-manylinux_<glibc>_x86_64.whl
#   bash scripts/wheel.sh windows      # dist/nvcam-<version>-py3-none-win_amd64.whl
#
# Each wheel is made from the release package of its platform (scripts/package.sh: the Linux
# tarball with libnvcam.so and its bundled FFmpeg, the Windows zip with nvcam.dll and the FFmpeg
# DLLs) by scripts/make-wheel.py, which writes the wheel with Python's standard library (no build
# backend, nothing downloaded). The Linux wheel's library is a plain `cargo build --release` (no
# test hooks) unless NVCAM_PACKAGE_LIB names another; the Windows one needs the Windows toolchain
# of the README's Windows section. NVCAM_PACKAGE_DIST=dir writes there instead of dist/.
#
#   pip install dist/nvcam-*-manylinux_*.whl
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
case "$what" in all|windows|linux) ;; *) echo "usage: $0 [all|windows|linux]" >&2; exit 2 ;; esac
die() { echo "wheel: $*" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$version" ] || die "no version in Cargo.toml"
dist=${NVCAM_PACKAGE_DIST:-dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

linux() {
  NVCAM_PACKAGE_DIST="$tmp" bash scripts/package.sh linux >&2 || die "scripts/package.sh linux failed"
  tar -C "$tmp" -xzf "$tmp/nvcam-$version-linux-x64.tar.gz"
  rm -f "$dist/nvcam-$version-py3-none-manylinux_"*.whl
  python3 scripts/make-wheel.py linux "$tmp/nvcam-$version-linux-x64" "$dist"
}

windows() {
  NVCAM_PACKAGE_DIST="$tmp" bash scripts/package.sh windows >&2 || die "scripts/package.sh windows failed"
  python3 -m zipfile -e "$tmp/nvcam-$version-windows-x64.zip" "$tmp"
  python3 scripts/make-wheel.py windows "$tmp/nvcam-$version-windows-x64" "$dist"
}

case "$what" in
  all) linux; windows ;;
  linux) linux ;;
  windows) windows ;;
esac
