#!/usr/bin/env bash
# Runs on the GPU machine inside the bundle's environment (carried with `--with scripts/gpu-machine/gpu-device.sh`):
#   bash .gpu-bundle/run.sh bash .gpu-bundle/with/scripts/gpu-machine/gpu-device.sh [check] [suite] [bench] [memcheck]
# Logs go to $OUT when set. Each step has its own time limit so a hang still leaves output.
set -u
out=${OUT:-/tmp}
b=$GPU_BUNDLE
gpu_test=$(ls "$b"/tests/gpu-* | head -1)
fix=$BUNDLE_WITH/fixtures
rc=0
step() { echo; echo "##### $*"; }
for what in "$@"; do
case "$what" in
check)
  step check
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
  compute-sanitizer --version | tail -1
  ffmpeg-nvdec -hide_banner -hwaccels | tr '\n' ' '; echo
  ls -la "$fix"
  ;;
suite)
  step "suite: $gpu_test"
  timeout 300 "$gpu_test" --include-ignored --skip make_ --test-threads 1 --nocapture 2>&1 | tee "$out/suite.log" | grep -E "^test |test result|panicked|frames equal|reconnects|leaked|decoder [0-9]|cap 2|no CUDA error" ; rc=$((rc | ${PIPESTATUS[0]}))
  ;;
bench)
  step "bench: nvcam"
  clip=$fix/bench-h264-1920x1080.mp4
  timeout 150 "$b"/bin/gpu_bench "$clip" --seconds 8 --cams 1,16 2>&1 | tee "$out/bench.log" | grep -E "RESULT|device|clip|context|panicked|error" ; rc=$((rc | ${PIPESTATUS[0]}))
  step "bench: ffmpeg-nvdec (same clip, -stream_loop 9: 3000 frames per process)"
  for n in 1 16; do
    t0=$(date +%s.%N)
    for i in $(seq $n); do
      ffmpeg-nvdec -hide_banner -loglevel error -hwaccel cuda -hwaccel_output_format cuda -stream_loop 9 -i "$clip" -autoscale 0 -f null - &
    done
    wait
    t1=$(date +%s.%N)
    python3 -c "n=$n; dt=$t1-$t0; print(f'RESULT ffmpeg-nvdec procs={n} fps={n*3000/dt:.0f} per_process={3000/dt:.0f} wall={dt:.2f}s')" | tee -a "$out/bench.log"
  done
  ;;
memcheck)
  step "memcheck: whole GPU suite under compute-sanitizer --tool memcheck"
  timeout 420 compute-sanitizer --tool memcheck --error-exitcode 99 --log-file "$out/memcheck.log" "$gpu_test" --include-ignored --skip make_ --test-threads 1 > "$out/memcheck-tests.log" 2>&1; r=$?
  echo "memcheck exit $r"; rc=$((rc | r))
  grep -E "^test |test result" "$out/memcheck-tests.log"
  grep -E "ERROR SUMMARY|Program hit|Invalid" "$out/memcheck.log" | sort | uniq -c | head -20
  ;;
esac
done
exit $rc
