#!/usr/bin/env bash
# The project's copy of ../shared/gpu/bundle, with two fixes: it works from a git worktree (where
# .git is a file), and it turns the shared FFmpeg lib/ symlinks, which arrive here as 23-byte text
# files naming their target, back into real files (the device otherwise fails with 'file too short').
# Packs what the GPU tests, examples and benchmarks need into .gpu-bundle/ at the project root, for a
# machine that has an NVIDIA GPU and driver but no Rust toolchain and no FFmpeg libraries.
#
#   scripts/gpu-machine/gpu-bundle.sh [--debug] [--benches] [--only NAME,...] [--pack] [--with PATH]... [-- EXTRA CARGO ARGS]
#
# --only keeps just the test executables, examples and benches of those target names (the working
# tree and what travels with it may be 64 MiB in all, and a test that links nvcam statically is
# 17 MB). --pack also writes target/gpu-bundle.tar.xz, a third of the size: carry that and unpack
# it there first (`tar xJf target/gpu-bundle.tar.xz`).
#
# Then, on the GPU machine, from the project root (the bundle must travel with the working tree):
#   bash .gpu-bundle/run.sh                 # every test executable, ignored tests included
#   bash .gpu-bundle/run.sh CMD ARGS...     # any command with the bundle's environment set
#
# The bundle holds: every test executable, example and (with --benches) bench that cargo builds, the
# project's shared libraries, nvcam's own FFmpeg 5.1 (target/ffmpeg-linux, from
# scripts/build/build-ffmpeg-linux.sh: the patched build every other build links, whose RTP gap reports the
# loss tests check) in lib/, the shared ffmpeg CLI with NVDEC (bin/ffmpeg-nvdec, for side-by-side
# baselines and reference decodes) with the shared FFmpeg it was built against beside it, what
# tests/gpu_integrity.rs needs (its clips, made here, and the RTSP replay server), and each
# --with PATH.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
# FFmpeg with NVDEC for the GPU machine: ../shared/gpu beside the checkout, or NVCAM_GPU_SHARED.
here=${NVCAM_GPU_SHARED:-$(cd "$root/.." && pwd)/shared/gpu}
[ -d "$here/ffmpeg/lib" ] || { echo "bundle: no FFmpeg build at $here/ffmpeg (set NVCAM_GPU_SHARED)" >&2; exit 2; }
profile=release; benches=0; withs=(); extra=(); only=""; pack=0
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --benches) benches=1 ;;
    --with) withs+=("$2"); shift ;;
    --only) only=",$2,"; shift ;;
    --pack) pack=1 ;;
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
        print(("test" if m["profile"]["test"] else kind) + "\t" + m["target"]["name"] + "\t" + m["executable"])
'; }

# EXTRA CARGO ARGS that name targets (`-- --test gpu --example churn_bench`) build only those: on
# a 2-core machine every test and example of the project takes many minutes to link (the
# library itself is always built).
sel=(--all-targets); ex=(--examples --bins)
tests=("${extra[@]}")
if [ ${#extra[@]} -gt 0 ]; then
  sel=(--lib); ex=(); tests=()
  # `cargo test --example X` would build X again as a test harness: the tests' list drops them.
  for ((i = 0; i < ${#extra[@]}; i++)); do
    if [ "${extra[$i]}" = --example ]; then i=$((i + 1)); else tests+=("${extra[$i]}"); fi
  done
fi
echo "bundle: building ($profile)..." >&2
cargo build "${flag[@]}" "${sel[@]}" "${extra[@]}" >&2
{ cargo test "${flag[@]}" --no-run --message-format=json "${tests[@]}" 2>/dev/null | list_execs
  cargo build "${flag[@]}" "${ex[@]}" --message-format=json "${extra[@]}" 2>/dev/null | list_execs
  [ "$benches" = 1 ] && cargo bench --no-run --message-format=json "${extra[@]}" 2>/dev/null | list_execs || true
} | sort -u | while IFS=$'\t' read -r kind name exe; do
  [ -n "$only" ] && [[ "$only" != *",$name,"* ]] && continue
  case "$kind" in test) dst="$out/tests" ;; *) dst="$out/bin" ;; esac
  cp "$exe" "$dst/" && strip --strip-debug "$dst/$(basename "$exe")" 2>/dev/null || true
done
find "target/$profile" -maxdepth 1 -name 'lib*.so' -exec cp {} "$out/lib/" \;
strip --strip-debug "$out"/lib/lib*.so
# libnvcam.so loads the FFmpeg it was built and tested with (private names, libavformat_nvcam.so.59):
# the shared copy's libraries are other files, without nvcam's patches.
ff="$root/target/ffmpeg-linux/lib"
[ -f "$ff/libavformat_nvcam.so.59" ] || { echo "bundle: no FFmpeg build in $ff (bash scripts/build/build-ffmpeg-linux.sh)" >&2; exit 2; }
for f in "$ff"/lib*.so.*.*.*; do
  cp "$f" "$out/lib/$(objdump -p "$f" | awk '/SONAME/{print $2}')"
done
# The shared CLI keeps its own libraries (encoders and muxers for references that nvcam's build
# lacks), apart from lib/, which a wrapper puts first for it alone.
mkdir -p "$out/ffmpeg-nvdec/lib"
cp -a "$here/ffmpeg/lib/." "$out/ffmpeg-nvdec/lib/"
# The shared copy's symlinks arrive as small files naming their target: make them real files.
for f in "$out"/ffmpeg-nvdec/lib/*; do
  if [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -lt 64 ]; then
    t=$(cat "$f"); rm -f "$f"
    case "$f" in *.so) ;; *) [ -f "$out/ffmpeg-nvdec/lib/$t" ] && cp "$out/ffmpeg-nvdec/lib/$t" "$f" ;; esac
  fi
done
cp "$here/ffmpeg/bin/ffmpeg" "$out/ffmpeg-nvdec/ffmpeg"
cat > "$out/bin/ffmpeg-nvdec" <<'CLI'
#!/bin/sh
d=$(cd "$(dirname "$0")/../ffmpeg-nvdec" && pwd)
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/ffmpeg" "$@"
CLI
chmod +x "$out/bin/ffmpeg-nvdec"
# tests/gpu_integrity.rs on a machine with no encoders and no GStreamer: its clips (the RTSP
# replay's elementary stream among them), made here, and the stdlib-only replay server. Reference
# decodes cached beside the clips stay behind: the GPU machine remakes them with ffmpeg-nvdec.
echo "bundle: making tests/gpu_integrity.rs's clips..." >&2
cargo test "${flag[@]}" --test gpu_integrity -- --ignored --exact make_integrity_fixtures >&2
# tests/gpu_hostile.rs's mutated streams, made here for the same reason.
echo "bundle: making tests/gpu_hostile.rs's streams..." >&2
cargo test "${flag[@]}" --test gpu_hostile -- --ignored --exact make_hostile_gpu_fixtures >&2
mkdir -p "$out/with/fixtures" "$out/with/tests/support"
for f in target/tmp/fixtures/integrity-*.mp4 target/tmp/fixtures/replay-*.mp4 target/tmp/fixtures/replay-*.h264 target/tmp/fixtures/hostile-gpu-*; do
  cp "$f" "$out/with/fixtures/"
done
cp tests/support/rtsp_replay.py "$out/with/tests/support/"
# A folder's contents join what is there already (with/fixtures above).
for w in "${withs[@]}"; do
  mkdir -p "$out/with/$(dirname "$w")"
  if [ -d "$w" ]; then mkdir -p "$out/with/$w"; cp -a "$w/." "$out/with/$w/"; else cp -a "$w" "$out/with/$w"; fi
done

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine from the project root: sets the bundle's environment, then runs the given
# command, or every test executable with its ignored tests included.
# The bundle's own folder, whatever it is named (a session may carry it under another name).
b=$(cd "$(dirname "$0")" && pwd)
cd "$b/.."
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
if [ "$pack" = 1 ]; then
  XZ_OPT=${XZ_OPT:--6 -T0} tar cJf target/gpu-bundle.tar.xz .gpu-bundle
  du -h target/gpu-bundle.tar.xz >&2
fi
ls -R "$out" | head -50 >&2
echo "bundle: ready; on the GPU machine carry .gpu-bundle and run: bash .gpu-bundle/run.sh" >&2
