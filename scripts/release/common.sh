# What package.sh and wheel.sh share, sourced by both after `set -euo pipefail` with `name` set to
# the word their messages start with: the checkout's root (and the working folder there), `what`
# (the first argument: all, windows or linux), `die`, the crate's `version`, and `dist`, the
# absolute output folder (NVCAM_PACKAGE_DIST, else dist/), made if missing.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
what=${1:-all}
case "$what" in all|windows|linux) ;; *) echo "usage: $0 [all|windows|linux]" >&2; exit 2 ;; esac
die() { echo "$name: $*" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$version" ] || die "no version in Cargo.toml"
dist=${NVCAM_PACKAGE_DIST:-dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
