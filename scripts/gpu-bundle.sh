#!/usr/bin/env bash
# The project's copy of ../shared/gpu/bundle, with two fixes: it works from a git worktree (where
# .git is a file), and it turns the shared FFmpeg lib/ symlinks, which arrive here as 23-byte text
# files naming their target, back into real files (the device otherwise fails with 'file too short').
# Packs what the GPU tests, examples and benchmarks need into .gpu-bundle/ at the project root, for a
# machine that has an NVIDIA GPU and driver but no Rust toolchain and no FFmpeg libraries.
#
#   scripts/gpu-bundle.sh [--debug] [--benches] [--with PATH]... [-- EXTRA CARGO ARGS]
#
# Then, on the GPU machine, from the project root (the bundle must travel with the working tree):
#   bash .gpu-bundle/run.sh                 # every test executable, ignored tests included
#   bash .gpu-bundle/run.sh CMD ARGS...     # any command with the bundle's environment set
#
# The bundle holds: every test executable, example and (with --benches) bench that cargo builds, the
# project's shared libraries, nvcam's own FFmpeg (target/ffmpeg-linux, with nvcam's patches: what
# every build links, so the GPU tests run it too), the shared ffmpeg CLI with NVDEC for side-by-side
# baselines (`ffmpeg-nvdec`, with the shared FFmpeg libraries it was built with in a folder of its
# own), and each --with PATH.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
# FFmpeg with NVDEC for the GPU machine: ../shared/gpu beside the checkout, or NVCAM_GPU_SHARED.
here=${NVCAM_GPU_SHARED:-$(cd "$root/.." && pwd)/shared/gpu}
[ -d "$here/ffmpeg/lib" ] || { echo "bundle: no FFmpeg build at $here/ffmpeg (set NVCAM_GPU_SHARED)" >&2; exit 2; }
profile=release; benches=0; withs=(); extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --benches) benches=1 ;;
    --with) withs+=("$2"); shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "bundle: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# The GPU tests drive the NVDEC fault hooks.
flag=(--features test-hooks); [ "$profile" = release ] && flag+=(--release)
out="$root/.gpu-bundle"
mkdir -p "$root/.git/info" 2>/dev/null || true
true
rm -rf "$out"; mkdir -p "$out/tests" "$out/bin" "$out/lib"

list_execs() { python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind = m["target"]["kind"][0]
        print(("test" if m["profile"]["test"] else kind) + "\t" + m["executable"])
'; }

echo "bundle: building ($profile)..." >&2
cargo build "${flag[@]}" --all-targets "${extra[@]}" >&2
{ cargo test "${flag[@]}" --no-run --message-format=json "${extra[@]}" 2>/dev/null | list_execs
  cargo build "${flag[@]}" --examples --bins --message-format=json "${extra[@]}" 2>/dev/null | list_execs
  [ "$benches" = 1 ] && cargo bench --no-run --message-format=json "${extra[@]}" 2>/dev/null | list_execs || true
} | sort -u | while IFS=$'\t' read -r kind exe; do
  case "$kind" in test) dst="$out/tests" ;; *) dst="$out/bin" ;; esac
  cp "$exe" "$dst/" && strip --strip-debug "$dst/$(basename "$exe")" 2>/dev/null || true
done
find "target/$profile" -maxdepth 1 -name 'lib*.so' -exec cp {} "$out/lib/" \;
# The FFmpeg the build linked (build.rs made sure it is current), one real file per soname.
for f in target/ffmpeg-linux/lib/lib*.so.*.*.*; do
  cp "$f" "$out/lib/$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
done
# The CLI needs its own build's libraries (CUVID decoders, swresample), which must not be the ones
# nvcam's programs load: they get them through a wrapper, on a search path of their own.
ffdir="$out/ffmpeg-nvdec"
mkdir -p "$ffdir/lib"
cp -a "$here/ffmpeg/lib/." "$ffdir/lib/"
# The shared copy's symlinks arrive as small files naming their target: make them real files.
for f in "$ffdir"/lib/*; do
  if [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -lt 64 ]; then
    t=$(cat "$f"); rm -f "$f"
    case "$f" in *.so) ;; *) [ -f "$ffdir/lib/$t" ] && cp "$ffdir/lib/$t" "$f" ;; esac
  fi
done
cp "$here/ffmpeg/bin/ffmpeg" "$ffdir/ffmpeg"
cat > "$out/bin/ffmpeg-nvdec" <<'WRAP'
#!/bin/sh
d=$(cd "$(dirname "$0")/../ffmpeg-nvdec" && pwd)
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/ffmpeg" "$@"
WRAP
chmod +x "$out/bin/ffmpeg-nvdec"
for w in "${withs[@]}"; do mkdir -p "$out/with/$(dirname "$w")"; cp -a "$w" "$out/with/$w"; done

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine from the project root: sets the bundle's environment, then runs the given
# command, or every test executable with its ignored tests included.
cd "$(dirname "$0")/.."
b="$PWD/.gpu-bundle"
export LD_LIBRARY_PATH="$b/lib:${LD_LIBRARY_PATH:-}"
export PATH="$b/bin:$PATH"
export CARGO_MANIFEST_DIR="$PWD" GPU_BUNDLE="$b" REQUIRE_GPU=1
[ -d "$b/with" ] && export BUNDLE_WITH="$b/with"
if [ $# -gt 0 ]; then exec "$@"; fi
fail=0
for t in "$b"/tests/*; do
  echo "=== $(basename "$t")"
  "$t" --include-ignored || fail=1
done
exit $fail
RUN
chmod +x "$out/run.sh"
du -sh "$out" >&2
ls -R "$out" | head -50 >&2
echo "bundle: ready; on the GPU machine carry .gpu-bundle and run: bash .gpu-bundle/run.sh" >&2
