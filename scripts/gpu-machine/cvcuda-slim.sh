#!/usr/bin/env bash
# Makes a slim CV-CUDA (cvcuda-cu13 0.19, Python 3.12, x86_64) for examples/convert_roofline.py to
# carry to a device machine, whose calls carry at most 64 MiB: the wheel is 128 MB (187 MB unpacked,
# nearly all of it libcvcuda's cubins for nine GPU architectures, stored uncompressed).
#
#   bash scripts/gpu-machine/cvcuda-slim.sh [--wheel FILE.whl] [--out DIR] [--py 312] [--keep-arch 90]
#
# Default --out is .cvcuda at the repository root (git-ignored through .git/info/exclude). The result:
#   DIR/cvcuda/__init__.py, DIR/cvcuda/tv/*.py      the package's Python files (no .pyi stubs)
#   DIR/cvcuda/_cvcuda.cpython-3XX-x86_64-linux-gnu.so   the extension for one Python, stripped
#   DIR/cvcuda_cu13.libs/libnvcv_types-*.so         stripped
#   DIR/cvcuda_cu13.libs/libcvcuda-*.so.xz          stripped, cubins of other architectures than
#                                                   --keep-arch (default sm_90: H100/H200) blanked
#                                                   (scripts/gpu-machine/fatbin-keep-arch.py), xz-compressed
# The benchmark decompresses libcvcuda into a copy of DIR under /tmp on the device (Python's lzma,
# no xz needed there) and imports cvcuda from that copy. Needs: python3 (pip), readelf, strip, xz.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
here=$(cd "$(dirname "$0")" && pwd)
wheel=""; out="$root/.cvcuda"; py=312; keep=90
while [ $# -gt 0 ]; do
  case "$1" in
    --wheel) wheel=$2; shift ;;
    --out) out=$2; shift ;;
    --py) py=$2; shift ;;
    --keep-arch) keep=$2; shift ;;
    *) echo "cvcuda-slim: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$wheel" ]; then
  dl=/tmp/cvcuda-whl
  mkdir -p "$dl"
  wheel=$(ls "$dl"/cvcuda_cu13-0.19.*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    python3 -m pip download --no-deps --only-binary=:all: --python-version "${py:0:1}.${py:1}" --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d "$dl" 'cvcuda-cu13==0.19.*' >&2
    wheel=$(ls "$dl"/cvcuda_cu13-0.19.*.whl | head -1)
  fi
fi
work=$(mktemp -d /tmp/cvcuda-slim.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "cvcuda-slim: unpacking $wheel" >&2
python3 -m zipfile -e "$wheel" "$work/x"
x=$work/x
ext=$(ls "$x"/cvcuda/_cvcuda.cpython-"$py"-x86_64-linux-gnu.so)
rm -rf "$out"; mkdir -p "$out/cvcuda/tv" "$out/cvcuda_cu13.libs"
cp "$x"/cvcuda/__init__.py "$out/cvcuda/"
cp "$x"/cvcuda/tv/*.py "$out/cvcuda/tv/"
cp "$ext" "$out/cvcuda/"
cp "$x"/cvcuda_cu13.libs/libnvcv_types-*.so.* "$out/cvcuda_cu13.libs/"
strip --strip-unneeded "$out"/cvcuda/_cvcuda.*.so "$out"/cvcuda_cu13.libs/libnvcv_types-*.so.*
big=$(ls "$x"/cvcuda_cu13.libs/libcvcuda-*.so.*)
name=$(basename "$big")
cp "$big" "$work/$name"
strip --strip-unneeded "$work/$name"
python3 "$here/fatbin-keep-arch.py" "$work/$name" --keep "$keep" >&2
echo "cvcuda-slim: compressing $name (xz -6, about a minute)" >&2
xz -T0 -6 -c "$work/$name" > "$out/cvcuda_cu13.libs/$name.xz"
cp "$x"/cvcuda_cu13-*.dist-info/licenses/LICENSE.md "$out/" 2>/dev/null || true
{
  echo "slim cvcuda-cu13 from $(basename "$wheel") (scripts/gpu-machine/cvcuda-slim.sh): Python $py, cubins sm_$keep only"
  (cd "$out" && find . -type f | sort | xargs sha256sum)
} > "$out/MANIFEST"
du -sh "$out" >&2
find "$out" -type f -printf "%10s %P\n" | sort -k2 >&2
