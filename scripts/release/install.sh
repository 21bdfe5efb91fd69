#!/usr/bin/env bash
# Installs nvcam's Linux build under a prefix, the way C and C++ users expect a library:
#
#   bash scripts/release/install.sh /usr/local                 # as root (or: sudo bash ...)
#   bash scripts/release/install.sh PREFIX [PACKAGE]            # PACKAGE: an unpacked tarball or its .tar.gz
#
# Without PACKAGE it makes the tarball first (scripts/release/package.sh linux: cargo's release
# library, stripped, with its FFmpeg; NVCAM_PACKAGE_LIB as there). It writes
#
#   PREFIX/lib/libnvcam.so                 RUNPATH $ORIGIN/nvcam: its FFmpeg, not the system's
#   PREFIX/lib/nvcam/                      the FFmpeg 5.1 libraries it needs (private: no clash
#                                          with a system FFmpeg of the same sonames)
#   PREFIX/include/nvcam.h, nvcam.hpp, nvcam_labview.h
#   PREFIX/lib/pkgconfig/nvcam.pc          pkg-config's default path for /usr and /usr/local
#   PREFIX/lib/cmake/nvcam/                find_package(nvcam)'s default path for those prefixes
#   PREFIX/share/doc/nvcam/                README, licences (nvcam's and FFmpeg's), the LabVIEW folder
#   PREFIX/share/nvcam/install-manifest.txt   every file written, to remove them: xargs rm < it
#
# so that `pkg-config --modversion nvcam` and `find_package(nvcam)` work with no variables for
# /usr/local and /usr; another prefix needs PKG_CONFIG_PATH=PREFIX/lib/pkgconfig and
# CMAKE_PREFIX_PATH=PREFIX, as any library there does. Programs built against it run with no
# LD_LIBRARY_PATH (the pkg-config Libs and the CMake target record PREFIX/lib as their run path).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "install: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 PREFIX [unpacked-package-folder | package.tar.gz]" >&2; exit 2; }
mkdir -p "$1" || die "cannot create $1"
prefix=$(cd "$1" && pwd)
for tool in patchelf readelf; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install patchelf binutils: .ci/packages.txt)"
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

pkg=${2:-}
if [ -z "$pkg" ]; then
  NVCAM_PACKAGE_DIST="$work/dist" bash "$root/scripts/release/package.sh" linux >&2
  pkg=$(ls "$work"/dist/nvcam-*-linux-x64.tar.gz)
fi
if [ -f "$pkg" ]; then
  tar -C "$work" -xzf "$pkg"
  pkg=$(ls -d "$work"/nvcam-*-linux-x64)
fi
[ -f "$pkg/libnvcam.so" ] && [ -f "$pkg/include/nvcam.h" ] || die "$pkg is not an unpacked nvcam Linux package"
version=$(sed -n 's/^Version: //p' "$pkg/lib/pkgconfig/nvcam.pc")
abi=$(sed -n 's/^#define NVCAM_ABI_VERSION \([0-9]*\).*/\1/p' "$pkg/include/nvcam.h")
[ -n "$version" ] && [ -n "$abi" ] || die "no version or ABI in $pkg"

manifest=()
put() { # put SRC DEST [MODE]
  install -D -m "${3:-644}" "$1" "$2"
  manifest+=("$2")
}
put "$pkg/libnvcam.so" "$prefix/lib/libnvcam.so" 755
patchelf --set-rpath '$ORIGIN/nvcam' "$prefix/lib/libnvcam.so"
for f in "$pkg"/lib/*.so.*; do put "$f" "$prefix/lib/nvcam/$(basename "$f")" 755; done
for f in nvcam.h nvcam.hpp nvcam_labview.h; do put "$pkg/include/$f" "$prefix/include/$f"; done
subst=(-e "s/@VERSION@/$version/g" -e "s/@ABI@/$abi/g" -e "s|@LIBDIR@|/lib|g" -e 's|@RPATH@| -Wl,-rpath,${libdir}|g' -e "s|@SODIR@|/lib|g")
# The prefix by name (the package's ${pcfiledir}/../.. would print as PREFIX/lib/pkgconfig/../..).
sed "${subst[@]}" -e "s|^prefix=.*|prefix=$prefix|" "$root/packaging/nvcam.pc.in" >"$work/nvcam.pc"
sed "${subst[@]}" "$root/packaging/nvcamConfig.cmake.in" >"$work/nvcamConfig.cmake"
sed "${subst[@]}" "$root/packaging/nvcamConfigVersion.cmake.in" >"$work/nvcamConfigVersion.cmake"
put "$work/nvcam.pc" "$prefix/lib/pkgconfig/nvcam.pc"
put "$work/nvcamConfig.cmake" "$prefix/lib/cmake/nvcam/nvcamConfig.cmake"
put "$work/nvcamConfigVersion.cmake" "$prefix/lib/cmake/nvcam/nvcamConfigVersion.cmake"
doc="$prefix/share/doc/nvcam"
for f in README.md LICENSE-MIT LICENSE-APACHE; do put "$pkg/$f" "$doc/$f"; done
(cd "$pkg" && find licenses labview -type f) >"$work/docs"
while read -r f; do put "$pkg/$f" "$doc/$f"; done <"$work/docs"

# The installed library finds its FFmpeg in lib/nvcam/, whatever the machine has.
resolved=$(env -u LD_LIBRARY_PATH ldd "$prefix/lib/libnvcam.so")
if grep -E 'lib(av|sw)[a-z]*\.so' <<<"$resolved" | grep -vqF "=> $prefix/lib/nvcam/"; then
  die "ldd does not resolve FFmpeg into $prefix/lib/nvcam:"$'\n'"$resolved"
fi
mkdir -p "$prefix/share/nvcam"
manifest+=("$prefix/share/nvcam/install-manifest.txt")
printf '%s\n' "${manifest[@]}" >"$prefix/share/nvcam/install-manifest.txt"
# The loader's cache, for hosts that dlopen "libnvcam.so" by name from a system prefix.
if [ "$(id -u)" = 0 ] && { [ "$prefix" = /usr/local ] || [ "$prefix" = /usr ]; } && command -v ldconfig >/dev/null; then
  ldconfig
fi
echo "nvcam $version installed under $prefix (${#manifest[@]} files, listed in $prefix/share/nvcam/install-manifest.txt)"
