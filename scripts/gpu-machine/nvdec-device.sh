#!/usr/bin/env bash
# The direct-NVDEC checks and benchmarks on the GPU machine, inside the bundle's environment:
#   bash scripts/gpu-machine/gpu-bundle.sh --with fixtures --with scripts     # here (the shared bundle, fixed)
#   (or with --only gpu,gpu_nvdec,gpu_integrity,gpu_convert --pack, carrying target/gpu-bundle.tar.xz
#   and unpacking it there first, where the whole bundle would not fit in a call)
#   bash .gpu-bundle/run.sh bash .gpu-bundle/with/scripts/gpu-machine/nvdec-device.sh STEP...   # there
# The fixture encoders (make_*) are skipped there: the clips travel in the bundle, and the GPU
# machine's ffmpeg has no encoders.
# Steps run in the order given, each under its own time limit and all under BUDGET_S seconds
# (default 540), so a hang or a slow step still leaves the others' output. Logs go to $OUT.
#   check          GPU, driver, libnvcuvid, fixtures
#   nvdec-tests    tests/gpu_nvdec.rs (bit-exact, ordering, resolution change, recovery, AUTO,
#                  recording beside 16 NVDEC cameras changes no frame)
#   integrity      tests/gpu_integrity.rs (dropped and damaged packets in files, and RTP packets
#                  dropped inside an RTSP TCP connection by the bundle's replay server: every decoder's
#                  marks against the software path's), then under compute-sanitizer --tool memcheck
#   hostile        tests/gpu_hostile.rs (mutated H.264/HEVC/JPEG streams through NVDEC and nvJPEG beside
#                  healthy GPU cameras: no sticky CUDA error), then under compute-sanitizer --tool memcheck
#                  (hostile-plain, memcheck-hostile: one of the two)
#   gpu-suite      tests/gpu.rs (the GPU path's suite; AUTO means direct NVDEC)
#   memcheck-nvdec tests/gpu_nvdec.rs under compute-sanitizer --tool memcheck
#   memcheck-gpu   tests/gpu.rs under compute-sanitizer --tool memcheck (the storm test: churn-memcheck)
#   convert-tests  tests/gpu_convert.rs (kernels vs the CPU twin at every size, stream hand-off)
#   memcheck-convert  tests/gpu_convert.rs under compute-sanitizer --tool memcheck
#   racecheck-convert tests/gpu_convert.rs under compute-sanitizer --tool racecheck
#   python-gpu     bindings/python/test_gpu.py with the bundle's libnvcam.so (torch/CuPy zero copy,
#                  DLPack outliving a reconnect, convert into tensors, batch); bundle --with bindings/python
#   memcheck-python  the same Python suite under compute-sanitizer --tool memcheck (every process)
#   convert-contended  tests/gpu_convert.rs while another process keeps the GPU busy (a CuPy loop of
#                  kernels, allocations and frees): the tests must not depend on having the GPU alone
#   bench-convert  examples/convert_bench (conversion vs copy GB/s, host download, N = 16 fp16 letterbox;
#                  CONVERT_BENCH_ARGS='--cams 0' skips the N cameras part)
#   kernel-bench   scripts/bench/convert-kernel-bench.py: the kernels alone vs a copy (CuPy); bundle --with kernels
#   soak           tests/soak.rs on GPU 0 for SOAK_S seconds (default 300; no RTSP: no GStreamer there)
#   memcheck-soak  the same under compute-sanitizer memcheck for MEMCHECK_SOAK_S (default 120)
#   bench-h264     nvdec_bench on the 1080p H.264 4 Mbit/s clip (all backends, N = 1, 7, 16, 32, CLI)
#   bench-hevc     the same on the 1080p HEVC 2 Mbit/s clip
#   variants       direct NVDEC at N = 16, 32 with the old context lock shared per context, and display delay 4
#   churn-memcheck the GPU reconnect storm test (scaled to 8 steady + 4 churned) under memcheck
#   churn-bench    examples/churn_bench: 96 steady + 32 churned 1080p30 cameras, nvdec and ffmpeg-hw
#   churn-oldlock  the same, direct NVDEC only, with NVCAM_NVDEC_CTXLOCK=context (the old shared lock)
#   reuse-tests    the two reconnect-reuse tests of tests/gpu_nvdec.rs, then the same with NVCAM_NVDEC_REUSE=0
#   churn-reuse    churn_bench direct NVDEC only, loop + burst phases, decoder reuse on (the default)
#   paced128       churn_bench: 128 paced 1080p30 cameras on direct NVDEC, nothing else (fps, gaps, CPU cores)
#   churn-noreuse  the same with NVCAM_NVDEC_REUSE=0 (a new decoder at every reconnect, as before)
#   latency        32 paced 1080p30 cameras (no B-frames), decode latency at low latency and throughput
#   bench16        nvdec_bench, direct NVDEC, N = 16 (throughput mode against the 4,927 fps before)
#   hw-churn       churn_bench, FFmpeg hwaccel only: 96 steady + 32 churned, every phase, an 11 s
#                  baseline (each steady camera passes the end of its looped clip), stage timings
#   hw-latency     32 paced cameras of the 40-frame no-B clip (a loop every 1.3 s), low latency, on
#                  FFmpeg's hwaccel: as now, then with NVCAM_HW_LOOP_FLUSH=1 (drain + flush per loop)
#   nvdec-loop     churn_bench direct NVDEC, reuse on: 96 steady + 32 reconnecting in a loop for 6 s,
#                  stage timings and hand-off (where a late steady frame waited)
#   nvdec-loop-poll10  the same with the reconnecting threads polling their stats every 10 ms, not 1
#   upload-churn   churn_bench, software decode + upload: 32 steady + 8 churned, every phase
#   formats        the camera-format GPU tests of tests/gpu.rs: every JPEG layout on every decoder,
#                  10-bit HEVC bit-exact P016 (and NV12 with NVCAM_OPEN_8BIT), the zero-allocation
#                  steady state (8-bit and P016) and the 10-bit/4:2:2 refusals
#   memcheck-formats  the same under compute-sanitizer --tool memcheck
#   bench-mjpeg    churn_bench: 64 paced 1080p30 MJPEG 4:2:2 cameras on direct NVDEC (stage timings),
#                  16 and 32 in software + upload, 4:2:0 at 64 on NVDEC; nvdec_bench unpaced MJPEG
#   bench-nvjpeg   churn_bench, paced: the noisy 1080p 4:2:2 MJPEG camera (~45 Mbit/s) at 64 and 720p
#                  4:2:2 at 128, each on nvJPEG (batched) and direct NVDEC; dmon's jpg share per run
#   jpeg-tests     every JPEG layout on every decoder (nvJPEG required), damaged JPEGs on every decoder
#   memcheck-jpeg  the layout and damaged-JPEG tests under compute-sanitizer memcheck
#   nvjpeg-more    AUTO at 64 noisy cameras; 48 steady nvJPEG cameras beside 16 reconnecting and
#                  opening/closing; the layout test without nvJPEG (AUTO on NVDEC, the log line)
#   bench-hevc10   nvdec_bench direct NVDEC, N = 16 and 32: 1080p HEVC Main10 (P016) against Main (NV12)
#   sessions       tests/gpu_sessions.rs: cameras past the GPU's decode sessions (288 on an H200) stream
#                  in software + upload, none FAILED; cameras past the engines' capacity; "any GPU" placement (two tests need 2 GPUs: REQUIRE_GPUS=2 on the two-GPU machine makes one GPU a failure);
#                  SESSIONS_FILTER=any_gpu runs only the placement tests
#   memcheck-sessions  under compute-sanitizer --tool memcheck, the tests SESSIONS_MEMCHECK_FILTER names
#                  (default any_gpu: the fall-back to software + upload at the configured cap, and
#                  placement; the 300-camera run to the driver's own limit takes over 300 s under memcheck;
#                  the engine-capacity tests run there for memory errors only: memcheck slows 112 cameras
#                  to about 5 fps each, NVML read 9 % busy, so no capacity is learned and their load
#                  assertions fail by design of the measurement, not of the code)
#   fleet          churn_bench baseline: FLEET_N (default 308: an H200's 288 sessions + 20) paced cameras of
#                  FLEET_CLIP (default the 1080p HEVC test clip), backend FLEET_BACKEND (auto; `any` for every
#                  GPU), FLEET_SECONDS (10); the fleet line and dmon's `dec` column (decoder load) beside it
#   goal           the engines' limit for FLEET_CLIP, measured in the same call: nvdec_bench's raw direct-NVDEC
#                  rate at RAW_CAMS (64) unpaced cameras, then the fleet at N = 0.95 x raw / 30 (GOAL_N
#                  overrides) and at N + 20 (FLEET_BACKEND, FLEET_SECONDS as for fleet)
#   share-tests    tests/gpu_share.rs (a published GPU camera's frames mapped in another process, byte
#                  for byte; SIGKILL on either side, GPU memory back), then under compute-sanitizer
#                  memcheck following every process (--target-processes all)
#   bench-share    examples/share_bench on the 1080p H.264 clip, GPU 0, N = 1, 4, 16: each process
#                  opening the camera against one publishing and N attached
set -u
out=${OUT:-/tmp}
b=$GPU_BUNDLE
fix=$BUNDLE_WITH/fixtures
nvdec_test=$(ls "$b"/tests/gpu_nvdec-* | head -1)
gpu_test=$(ls "$b"/tests/gpu-* | head -1)
convert_test=$(ls "$b"/tests/gpu_convert-* 2>/dev/null | head -1)
integrity_test=$(ls "$b"/tests/gpu_integrity-* 2>/dev/null | head -1)
hostile_test=$(ls "$b"/tests/gpu_hostile-* 2>/dev/null | head -1)
sessions_test=$(ls "$b"/tests/gpu_sessions-* 2>/dev/null | head -1)
share_test=$(ls "$b"/tests/gpu_share-* 2>/dev/null | head -1)
deadline=$(( $(date +%s) + ${BUDGET_S:-540} ))
rc=0
left() { echo $(( deadline - $(date +%s) )); }
# step NAME LIMIT_S CMD...: runs CMD under min(LIMIT_S, time left); skipped when under 15 s are left.
step() {
  local name=$1 lim=$2; shift 2
  local l; l=$(left)
  if [ "$l" -lt 15 ]; then echo; echo "##### $name: SKIPPED (budget spent)"; return 0; fi
  [ "$lim" -gt "$l" ] && lim=$l
  echo; echo "##### $name (limit ${lim}s, $(date +%T))"
  local t0; t0=$(date +%s)
  timeout "$lim" "$@"; local r=$?
  echo "##### $name: exit $r after $(( $(date +%s) - t0 ))s"
  [ $r -ne 0 ] && rc=1
  return 0
}
summary() { grep -E "^test |test result|panicked|frames equal|frames exact|exact|resumed|AUTO:|ERROR SUMMARY|differs" "$@" | grep -v "\.\.\. ignored" ; }
# bench "ENV..." ARGS...: one nvdec_bench run (as a command line for `step`), output kept in bench.log.
bench() { local envs=$1; shift; echo "env $envs '$b/bin/nvdec_bench' $* --csv '$out/bench.csv' 2>>'$out/bench-stderr.log' | tee -a '$out/bench.log' | grep -E '^nvdec_bench|^RESULT|^\\|'; exit \${PIPESTATUS[0]}"; }
# fleet_run NAME N: churn_bench's baseline with N paced cameras of FLEET_CLIP, the fleet line, the
# CPU by thread, and dmon's `dec` column (decoder load) beside it.
fleet_run() {
  local name=$1 n=$2 d
  nvidia-smi dmon -s u -d 1 > "$out/dmon-$name.log" 2>&1 & d=$!
  step "$name" 200 bash -c "'$b/bin/churn_bench' '$fix/${FLEET_CLIP:-gpu-hevc-1920x1080.mp4}' --steady $n --churn 0 --backends ${FLEET_BACKEND:-auto} --phases baseline --seconds ${FLEET_SECONDS:-10} 2>'$out/$name-stderr.log' | tee '$out/$name.log'; r=\${PIPESTATUS[0]}; grep -cE 'exhausted' '$out/$name-stderr.log' | sed 's/^/log lines naming exhausted sessions: /'; exit \$r"
  kill $d 2>/dev/null; wait $d 2>/dev/null
  awk -v n="$name" '$1 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ {s[$1] += $5; c[$1]++; if ($5 > m[$1]) m[$1] = $5} END {for (g in s) printf "%s: GPU %s dmon dec %% mean %.0f, max %d\n", n, g, s[g] / c[g], m[g]}' "$out/dmon-$name.log"
}
# jrun NAME LIMIT_S CLIP N BACKEND [MORE ARGS]: one paced churn_bench run (library info lines kept,
# nvJPEG's worker line shown) with dmon's `jpg` column (the JPEG engines' share) sampled beside it.
jrun() {
  local name=$1 lim=$2 clip=$3 n=$4 be=$5 d; shift 5
  nvidia-smi dmon -s u -d 1 > "$out/dmon-$name.log" 2>&1 & d=$!
  step "$name" "$lim" bash -c "CHURN_LOG=info '$b/bin/churn_bench' '$clip' --steady $n --backends $be ${*:---churn 0 --phases baseline --seconds ${NVJPEG_SECONDS:-6}} 2>>'$out/nvjpeg-stderr-$name.log' | tee -a '$out/nvjpeg.log'; r=\${PIPESTATUS[0]}; grep -E 'nvJPEG worker|JPEG engine|nvJPEG [0-9.]+ loaded|not available' '$out/nvjpeg-stderr-$name.log' | tail -4; exit \$r"
  kill $d 2>/dev/null; wait $d 2>/dev/null
  awk -v n="$name" '$1 ~ /^[0-9]+$/ && $6 ~ /^[0-9]+$/ {s += $6; c++; if ($6 > m) m = $6; v = v " " $6} END {printf "%s: dmon jpg %% mean %.0f, max %d, one a second:%s\n", n, c ? s / c : 0, m, v}' "$out/dmon-$name.log"
}
for what in "$@"; do
case "$what" in
share-tests)
  step share-tests 120 bash -c "'$share_test' --test-threads 1 --nocapture > '$out/tests-share.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|frames compared' '$out/tests-share.log'; [ \$r -ne 0 ] && grep -A12 panicked '$out/tests-share.log' | head -40; exit \$r"
  step memcheck-share 240 bash -c "compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 --log-file '$out/memcheck-share.%p.log' '$share_test' --test-threads 1 --nocapture > '$out/memcheck-share-tests.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|frames compared' '$out/memcheck-share-tests.log'; [ \$r -ne 0 ] && grep -A12 panicked '$out/memcheck-share-tests.log' | head -40; cat '$out'/memcheck-share.*.log | grep -E 'ERROR SUMMARY' | sort | uniq -c; exit \$r"
  ;;
bench-share)
  # Each reader's first 30 frames (its start: CUDA context, pool mapping) left out of the latency.
  step bench-share 200 bash -c "'$b/bin/share_bench' --url '$fix/bench-h264-1920x1080.mp4' --n 1,4,16 --frames 240 --skip 30 2>'$out/bench-share-stderr.log' | tee '$out/bench-share.log'; r=\${PIPESTATUS[0]}; [ \$r -ne 0 ] && tail -20 '$out/bench-share-stderr.log'; exit \$r"
  step bench-share-cpu 200 bash -c "'$b/bin/share_bench' --url '$fix/bench-h264-1920x1080.mp4' --n 1,4,16 --frames 240 --skip 30 --cpu 2>>'$out/bench-share-stderr.log' | tee -a '$out/bench-share.log'; r=\${PIPESTATUS[0]}; [ \$r -ne 0 ] && tail -20 '$out/bench-share-stderr.log'; exit \$r"
  ;;
check)
  step check 20 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,utilization.decoder --format=csv; ldconfig -p | grep -i nvcuvid; compute-sanitizer --version | tail -1; nproc; ls $fix | wc -l"
  ;;
nvdec-tests)
  step nvdec-tests 180 bash -c "'$nvdec_test' --include-ignored --skip make_ --test-threads 1 --nocapture > '$out/tests-nvdec.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|exact|equal|unmapped|reconfigures|resumed|AUTO:|differs|recording on NVDEC|ERROR' '$out/tests-nvdec.log' | grep -v 'ignored\$'; exit \$r"
  ;;
zero-allocs)
  step zero-allocs 60 bash -c "'$gpu_test' --test-threads 1 --nocapture zero_allocs hw_session_cap > '$out/tests-gpu.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|decoder [0-9]|cap 2' '$out/tests-gpu.log'; exit \$r"
  ;;
integrity)
  step integrity 120 bash -c "'$integrity_test' --skip make_ --test-threads 1 --nocapture > '$out/tests-integrity.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|pictures|marked' '$out/tests-integrity.log'; exit \$r"
  step memcheck-integrity 240 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-integrity.log' '$integrity_test' --skip make_ --test-threads 1 --nocapture > '$out/memcheck-integrity-tests.log' 2>&1; r=\$?; grep -E '^test |test result|pictures' '$out/memcheck-integrity-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-integrity.log' | sort | uniq -c; exit \$r"
  ;;
hostile|hostile-plain|memcheck-hostile)
  [ "$what" != memcheck-hostile ] && step hostile 180 bash -c "'$hostile_test' --skip make_ --test-threads 1 --nocapture > '$out/tests-hostile.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|pictures|sps churn' '$out/tests-hostile.log'; exit \$r"
  [ "$what" != hostile-plain ] && step memcheck-hostile 360 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-hostile.log' '$hostile_test' --skip make_ --test-threads 1 --nocapture > '$out/memcheck-hostile-tests.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|exact|sps churn' '$out/memcheck-hostile-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-hostile.log' | sort | uniq -c; exit \$r"
  ;;
gpu-suite)
  step gpu-suite 180 bash -c "'$gpu_test' --include-ignored --skip make_ --test-threads 1 > '$out/tests-gpu.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|decoder [0-9]|reconnects|leaked|cap 2|frames equal' '$out/tests-gpu.log'; [ \$r -ne 0 ] && grep -A8 panicked '$out/tests-gpu.log' | head -40; exit \$r"
  ;;
memcheck-nvdec)
  step memcheck-nvdec 200 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck.log' '$nvdec_test' --include-ignored --skip make_ --test-threads 1 --nocapture > '$out/memcheck-tests.log' 2>&1; r=\$?; grep -E '^test |test result|exact|equal|unmapped|resumed|AUTO:|reconfigures' '$out/memcheck-tests.log' | grep -v 'ignored\$'; grep -E 'ERROR SUMMARY' '$out/memcheck.log' | sort | uniq -c; exit \$r"
  ;;
memcheck-gpu)
  # The storm test runs scaled under the sanitizer: step churn-memcheck.
  step memcheck-gpu 240 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-gpu.log' '$gpu_test' --include-ignored --skip make_ --skip reconnect_storm --test-threads 1 > '$out/memcheck-gpu-tests.log' 2>&1; r=\$?; grep -E '^test |test result' '$out/memcheck-gpu-tests.log' | tail -12; [ \$r -ne 0 ] && grep -A8 panicked '$out/memcheck-gpu-tests.log' | head -40; grep -E 'ERROR SUMMARY' '$out/memcheck-gpu.log' | sort | uniq -c; cat '$out/memcheck-gpu.log' >> '$out/memcheck.log'; rm -f '$out/memcheck-gpu.log'; exit \$r"
  ;;
convert-tests)
  step convert-tests 150 bash -c "'$convert_test' --include-ignored --test-threads 1 --nocapture > '$out/tests-convert.log' 2>&1; r=\$?; grep -E '^test |test result|GPU - CPU|release_after_stream:|NVDEC frame|^batch ' '$out/tests-convert.log'; grep -A6 panicked '$out/tests-convert.log' | head -40; exit \$r"
  ;;
memcheck-convert|racecheck-convert)
  tool=${what%-convert}
  # Every kernel variant at the sizes that differ in shape (4K adds only launch time here).
  export NVCAM_CONVERT_SIZES=${NVCAM_CONVERT_SIZES:-1366x768,161x97}
  # The tiled box filter in both its kernels (area4 at 4K, area below), two formats.
  export NVCAM_TILED_SIZES=${NVCAM_TILED_SIZES:-4096x2160,1366x768} NVCAM_TILED_QUICK=1
  step "$what" 240 bash -c "compute-sanitizer --tool $tool --error-exitcode 99 --log-file '$out/$tool-convert.log' '$convert_test' --include-ignored --test-threads 1 --nocapture > '$out/$tool-convert-tests.log' 2>&1; r=\$?; grep -E '^test |test result|panicked' '$out/$tool-convert-tests.log'; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' '$out/$tool-convert.log' | sort | uniq -c; [ \$r -ne 0 ] && { grep -A6 panicked '$out/$tool-convert-tests.log' | head -20; grep -B2 -A12 -m2 -E '^========= (Invalid|Error|Race|Program hit)' '$out/$tool-convert.log'; }; exit \$r"
  ;;
python-gpu)
  py=$BUNDLE_WITH/bindings/python/test_gpu.py
  if [ ! -f "$py" ]; then echo "##### python-gpu: no $py (bundle with --with bindings/python)"; rc=1; else
  step python-gpu 120 bash -c "NVCAM_LIB='$b/lib/libnvcam.so' python3 '$py' > '$out/python-gpu.log' 2>&1; r=\$?; grep -E '^test_|^python-gpu|^torch|^cupy|^DLPack|^frame.convert|^convert_batch|REQUIRE_GPU|^(FAIL|ERROR):' '$out/python-gpu.log'; [ \$r -ne 0 ] && grep -B2 -A15 -E '^(FAIL|ERROR):' '$out/python-gpu.log' | head -80; exit \$r"
  fi
  ;;
memcheck-python)
  py=$BUNDLE_WITH/bindings/python/test_gpu.py
  step memcheck-python 300 bash -c "NVCAM_LIB='$b/lib/libnvcam.so' compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 --log-file '$out/memcheck-python.log' python3 '$py' > '$out/memcheck-python-tests.log' 2>&1; r=\$?; grep -E '^python-gpu|^(FAIL|ERROR):' '$out/memcheck-python-tests.log'; [ \$r -ne 0 ] && tail -40 '$out/memcheck-python-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-python.log' | sort | uniq -c; exit \$r"
  ;;
convert-contended)
  # The neighbour: another process's kernels, allocations and frees for as long as the tests run.
  cat > "$out/neighbour.py" <<'PY'
import cupy as cp, time, sys
end = time.time() + float(sys.argv[1])
a = cp.random.random((4096, 4096), dtype=cp.float32)
while time.time() < end:
    b = cp.empty((int(time.time() * 1000) % 64 + 1) * 1 << 20, dtype=cp.uint8); b.fill(1); del b
    a = a @ a; a /= cp.abs(a).max() + 1
    cp.cuda.Stream.null.synchronize()
PY
  step convert-contended 200 bash -c "python3 '$out/neighbour.py' 190 > '$out/neighbour.log' 2>&1 & n=\$!; sleep 3; '$convert_test' --include-ignored --test-threads 1 > '$out/convert-contended.log' 2>&1; r=\$?; kill \$n 2>/dev/null; grep -E '^test |test result' '$out/convert-contended.log'; grep -A6 panicked '$out/convert-contended.log' | head -40; tail -3 '$out/neighbour.log'; exit \$r"
  ;;
kernel-bench)
  step kernel-bench 90 bash -c "python3 '$BUNDLE_WITH/scripts/bench/convert-kernel-bench.py' '$BUNDLE_WITH/kernels/nvcam_kernels.fatbin' 2>&1 | tee '$out/kernel-bench.log'"
  ;;
bench-convert)
  step bench-convert 150 bash -c "'$b/bin/convert_bench' --fixtures '$fix' ${CONVERT_BENCH_ARGS:-} 2>>'$out/bench-stderr.log' | tee '$out/bench-convert.log'"
  ;;
soak)
  soak_test=$(ls "$b"/tests/soak-* | head -1)
  step soak $(( ${SOAK_S:-300} + 60 )) bash -c "NVCAM_SOAK_SECONDS=${SOAK_S:-300} NVCAM_SOAK_DEVICE=0 NVCAM_SOAK_RTSP=0 '$soak_test' --nocapture > '$out/soak.log' 2>&1; r=\$?; grep -E '^soak|^test |test result|panicked' '$out/soak.log'; exit \$r"
  ;;
memcheck-soak)
  soak_test=$(ls "$b"/tests/soak-* | head -1)
  step memcheck-soak $(( ${MEMCHECK_SOAK_S:-120} + 90 )) bash -c "NVCAM_SOAK_SECONDS=${MEMCHECK_SOAK_S:-120} NVCAM_SOAK_DEVICE=0 NVCAM_SOAK_RTSP=0 NVCAM_SOAK_MIN_FPS=1 compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-soak.log' '$soak_test' --nocapture > '$out/memcheck-soak-tests.log' 2>&1; r=\$?; grep -E '^soak|^test |test result|panicked' '$out/memcheck-soak-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-soak.log' | sort | uniq -c; exit \$r"
  ;;
bench-h264)
  step bench-h264 120 bash -c "$(bench "" "$fix/bench-h264-1920x1080.mp4" --label h264-1080p-4M --seconds "${SECONDS_WIN:-2.5}" --warmup 0.7)"
  ;;
bench-hevc)
  step bench-hevc 120 bash -c "$(bench "" "$fix/bench-hevc-1920x1080.mp4" --label hevc-1080p-2M --seconds "${SECONDS_WIN:-2.5}" --warmup 0.7)"
  ;;
variants)
  step ctxlock-per-context 30 bash -c "$(bench NVCAM_NVDEC_CTXLOCK=context "$fix/bench-h264-1920x1080.mp4" --label h264-ctxlock-per-context --backends nvdec --cams 16,32 --cli none --seconds 2.5 --warmup 0.7)"
  step display-delay-4 20 bash -c "$(bench NVCAM_NVDEC_DISPLAY_DELAY=4 "$fix/bench-h264-1920x1080.mp4" --label h264-delay4 --backends nvdec --cams 16 --cli none --seconds 2.5 --warmup 0.7)"
  ;;
churn-memcheck)
  step churn-memcheck 100 bash -c "NVCAM_CHURN_TEST=8,4,4,0 compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-churn.log' '$gpu_test' --include-ignored --test-threads 1 --nocapture reconnect_storm > '$out/memcheck-churn-tests.log' 2>&1; r=\$?; grep -E '^test |test result|^churn|panicked' '$out/memcheck-churn-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-churn.log' | sort | uniq -c; exit \$r"
  ;;
churn-bench)
  step churn-bench 120 bash -c "'$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends nvdec,ffmpeg-hw --seconds 3 --rounds 2 2>'$out/churn-stderr.log' | tee '$out/churn.log'"
  ;;
reuse-tests)
  step reuse-tests 90 bash -c "'$nvdec_test' --test-threads 1 --nocapture reconnect_ > '$out/tests-reuse.log' 2>&1; r=\$?; NVCAM_NVDEC_REUSE=0 '$nvdec_test' --test-threads 1 --nocapture reconnect_ > '$out/tests-noreuse.log' 2>&1; r2=\$?; for f in tests-reuse tests-noreuse; do echo \"-- \$f\"; grep -E '^test |test result|panicked|exact|across a reconnect|differs' '$out/'\$f.log; done; exit \$(( r | r2 ))"
  ;;
paced128)
  step paced128 60 bash -c "'$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 128 --churn 0 --backends nvdec --phases baseline --seconds 5 2>'$out/paced128-stderr.log' | tee '$out/paced128.log'"
  ;;
churn-reuse|churn-noreuse)
  reuse=1; [ "$what" = churn-noreuse ] && reuse=0
  step "$what" 75 bash -c "NVCAM_NVDEC_REUSE=$reuse '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends nvdec --phases loop,burst --seconds 3 --rounds 2 2>'$out/$what-stderr.log' | tee '$out/$what.log'"
  ;;
churn-oldlock)
  step churn-oldlock 60 bash -c "NVCAM_NVDEC_CTXLOCK=context '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends nvdec --phases loop,burst --seconds 3 --rounds 2 2>'$out/churn-oldlock-stderr.log' | tee '$out/churn-oldlock.log'"
  ;;
latency)
  step latency-low 40 bash -c "'$b/bin/churn_bench' '$fix/nvdec-h264-nob-1920x1080.mp4' --steady 32 --churn 0 --backends nvdec,ffmpeg-hw --phases baseline --seconds 4 --latency low 2>>'$out/latency-stderr.log' | tee -a '$out/latency.log'"
  step latency-throughput 30 bash -c "'$b/bin/churn_bench' '$fix/nvdec-h264-nob-1920x1080.mp4' --steady 32 --churn 0 --backends nvdec --phases baseline --seconds 4 --latency throughput 2>>'$out/latency-stderr.log' | tee -a '$out/latency.log'"
  ;;
bench16)
  step bench16 40 bash -c "$(bench "" "$fix/bench-h264-1920x1080.mp4" --label h264-1080p-4M --backends nvdec --cams 16 --cli none --seconds 3 --warmup 1)"
  ;;
hw-churn)
  step hw-churn 110 bash -c "CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends ffmpeg-hw --seconds 3 --baseline-seconds 11 --rounds 2 2>'$out/hw-churn-stderr.log' | tee '$out/hw-churn.log'"
  ;;
hw-latency)
  step hw-latency 40 bash -c "CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/nvdec-h264-nob-1920x1080.mp4' --steady 32 --churn 0 --backends ffmpeg-hw --phases baseline --seconds 4 --latency low 2>>'$out/hw-latency-stderr.log' | tee -a '$out/hw-latency.log'"
  step hw-latency-loopflush 40 bash -c "NVCAM_HW_LOOP_FLUSH=1 CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/nvdec-h264-nob-1920x1080.mp4' --steady 32 --churn 0 --backends ffmpeg-hw --phases baseline --seconds 4 --latency low 2>>'$out/hw-latency-stderr.log' | tee -a '$out/hw-latency.log'"
  ;;
nvdec-loop)
  step nvdec-loop 60 bash -c "CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends nvdec --phases loop --seconds 6 2>'$out/nvdec-loop-stderr.log' | tee '$out/nvdec-loop.log'"
  ;;
nvdec-loop-poll10)
  step nvdec-loop-poll10 60 bash -c "CHURN_POLL_MS=10 CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 96 --churn 32 --backends nvdec --phases loop --seconds 6 2>'$out/nvdec-loop-poll10-stderr.log' | tee '$out/nvdec-loop-poll10.log'"
  ;;
upload-churn)
  step upload-churn 90 bash -c "CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/bench-h264-1920x1080.mp4' --steady 32 --churn 8 --backends upload --seconds 3 --rounds 2 2>'$out/upload-churn-stderr.log' | tee '$out/upload-churn.log'"
  ;;
formats)
  step formats 200 bash -c "'$gpu_test' --test-threads 1 --nocapture jpeg_every ten_bit zero_allocs > '$out/tests-formats.log' 2>&1; r=\$?; grep -E '^test |test result|panicked| on (nvdec|ffmpeg-hw|auto|cpu|upload)|HEVC Main10|decoder [0-9]|failures:' '$out/tests-formats.log'; [ \$r -ne 0 ] && grep -A12 panicked '$out/tests-formats.log' | head -40; exit \$r"
  ;;
memcheck-formats)
  step memcheck-formats 300 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-formats.log' '$gpu_test' --test-threads 1 --nocapture jpeg_every ten_bit zero_allocs > '$out/memcheck-formats-tests.log' 2>&1; r=\$?; grep -E '^test |test result' '$out/memcheck-formats-tests.log'; [ \$r -ne 0 ] && grep -A8 panicked '$out/memcheck-formats-tests.log' | head -30; grep -E 'ERROR SUMMARY' '$out/memcheck-formats.log' | sort | uniq -c; exit \$r"
  ;;
bench-mjpeg)
  step mjpeg422-nvdec-64 60 bash -c "CHURN_STAGES=1 '$b/bin/churn_bench' '$fix/bench-mjpeg422-1920x1080.mkv' --steady 64 --churn 0 --backends nvdec --phases baseline --seconds 5 2>'$out/mjpeg-stderr.log' | tee '$out/mjpeg.log'"
  step mjpeg420-nvdec-64 50 bash -c "'$b/bin/churn_bench' '$fix/bench-mjpeg420-1920x1080.mkv' --steady 64 --churn 0 --backends nvdec --phases baseline --seconds 5 2>>'$out/mjpeg-stderr.log' | tee -a '$out/mjpeg.log'"
  for n in 16 32; do
    step mjpeg422-upload-$n 50 bash -c "'$b/bin/churn_bench' '$fix/bench-mjpeg422-1920x1080.mkv' --steady $n --churn 0 --backends upload --phases baseline --seconds 5 2>>'$out/mjpeg-stderr.log' | tee -a '$out/mjpeg.log'"
  done
  # No CLI rows: 64 concurrent ffmpeg-nvdec processes on MJPEG outran the step's minute.
  step mjpeg422-unpaced 60 bash -c "$(bench "" "$fix/bench-mjpeg422-1920x1080.mkv" --label mjpeg422-1080p --backends nvdec --cams 1,16,64 --cli none --seconds 2.5 --warmup 0.7)"
  ;;
bench-nvjpeg)
  # MJPEG on nvJPEG's hardware back end (one decode worker per GPU, the cameras' pictures in
  # batches) against direct NVDEC, in one call: 64 noisy 1080p30 4:2:2 cameras (~45 Mbit/s each)
  # and 128 720p ones, paced; dmon's `jpg` (the JPEG engines' share) sampled beside each run.
  # Needs nvJPEG on the machine (the toolkit's, or NVCAM_NVJPEG_LIBRARY).
  noisy=$fix/bench-mjpeg422-noisy-1920x1080.mkv
  jrun noisy-nvjpeg-64 70 "$noisy" 64 nvjpeg
  jrun noisy-nvdec-64 70 "$noisy" 64 nvdec
  jrun 720p-nvjpeg-128 80 "$fix/bench-mjpeg422-1280x720.mkv" 128 nvjpeg
  jrun 720p-nvdec-128 80 "$fix/bench-mjpeg422-1280x720.mkv" 128 nvdec
  ;;
jpeg-tests)
  # Every JPEG layout on every decoder against FFmpeg (box chroma rule), and damaged JPEGs marked
  # on every decoder, nvJPEG required.
  step jpeg-layouts 150 bash -c "NVCAM_REQUIRE_NVJPEG=1 '$gpu_test' --test-threads 1 --nocapture jpeg_every > '$out/tests-jpeg.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|failures:| on (nvjpeg|auto)' '$out/tests-jpeg.log' | grep -E 'test|panicked|fail|640x480|161x97'; [ \$r -ne 0 ] && grep -A12 panicked '$out/tests-jpeg.log' | head -30; exit \$r"
  step jpeg-damaged 90 bash -c "NVCAM_REQUIRE_NVJPEG=1 '$integrity_test' --test-threads 1 --nocapture damaged_jpegs > '$out/tests-jpeg-damaged.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|^jpeg ' '$out/tests-jpeg-damaged.log'; exit \$r"
  ;;
memcheck-jpeg)
  step memcheck-jpeg 200 bash -c "NVCAM_REQUIRE_NVJPEG=1 compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-jpeg.log' '$gpu_test' --test-threads 1 --nocapture jpeg_every > '$out/memcheck-jpeg-tests.log' 2>&1; r=\$?; grep -E '^test |test result' '$out/memcheck-jpeg-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-jpeg.log' | sort | uniq -c; exit \$r"
  step memcheck-jpeg-damaged 120 bash -c "NVCAM_REQUIRE_NVJPEG=1 compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-jpeg-damaged.log' '$integrity_test' --test-threads 1 --nocapture damaged_jpegs > '$out/memcheck-jpeg-damaged-tests.log' 2>&1; r=\$?; grep -E '^test |test result|^jpeg ' '$out/memcheck-jpeg-damaged-tests.log'; grep -E 'ERROR SUMMARY' '$out/memcheck-jpeg-damaged.log' | sort | uniq -c; exit \$r"
  ;;
nvjpeg-more)
  # AUTO at 64 noisy cameras (nvJPEG's), cameras reconnecting and opening/closing beside steady
  # nvJPEG ones, and the path without nvJPEG (AUTO on direct NVDEC, one line saying why).
  noisy=$fix/bench-mjpeg422-noisy-1920x1080.mkv
  jrun noisy-auto-64 70 "$noisy" 64 auto
  jrun noisy-nvjpeg-churn 90 "$noisy" 48 nvjpeg --churn 16 --phases loop,openclose --seconds 4 --rounds 2
  step no-nvjpeg 60 bash -c "NVCAM_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13 '$gpu_test' --test-threads 1 --nocapture jpeg_every > '$out/tests-no-nvjpeg.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|nvJPEG not available|640x480 yuvj422p on (nvjpeg|auto)' '$out/tests-no-nvjpeg.log' | sort | uniq -c; exit \$r"
  ;;
bench-hevc10)
  step bench-hevc8 40 bash -c "$(bench "" "$fix/bench-hevc8-1920x1080.mkv" --label hevc8-1080p-2M --backends nvdec --cams 16,32 --cli none --seconds 2.5 --warmup 0.7)"
  step bench-hevc10 40 bash -c "$(bench "" "$fix/bench-hevc10-1920x1080.mkv" --label hevc10-1080p-2M --backends nvdec --cams 16,32 --cli none --seconds 2.5 --warmup 0.7)"
  ;;
sessions)
  step sessions 240 bash -c "'$sessions_test' --test-threads 1 --nocapture ${SESSIONS_FILTER:-} > '$out/tests-sessions.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|^sessions|^any GPU|needs 2|REQUIRE_GPUS|^burst|^load' '$out/tests-sessions.log'; [ \$r -ne 0 ] && grep -A12 panicked '$out/tests-sessions.log' | head -40; exit \$r"
  ;;
memcheck-sessions)
  step memcheck-sessions 300 bash -c "compute-sanitizer --tool memcheck --error-exitcode 99 --log-file '$out/memcheck-sessions.log' '$sessions_test' --test-threads 1 --nocapture ${SESSIONS_MEMCHECK_FILTER:-any_gpu} > '$out/memcheck-sessions-tests.log' 2>&1; r=\$?; grep -E '^test |test result|panicked|^sessions|^any GPU' '$out/memcheck-sessions-tests.log'; [ \$r -ne 0 ] && grep -A12 panicked '$out/memcheck-sessions-tests.log' | head -30; grep -E 'ERROR SUMMARY' '$out/memcheck-sessions.log' | sort | uniq -c; exit \$r"
  ;;
fleet)
  fleet_run fleet "${FLEET_N:-308}"
  ;;
goal)
  clip=$fix/${FLEET_CLIP:-gpu-hevc-1920x1080.mp4}
  step goal-raw 60 bash -c "'$b/bin/nvdec_bench' '$clip' --label raw --backends nvdec --cams ${RAW_CAMS:-64} --cli none --seconds 3 --warmup 1 2>'$out/goal-raw-stderr.log' | tee '$out/goal-raw.log' | grep -E '^RESULT'; exit \${PIPESTATUS[0]}"
  raw=$(awk -F'|' '/^RESULT/ {gsub(/ /, "", $4); r = $4} END {print r + 0}' "$out/goal-raw.log")
  n=${GOAL_N:-$(( raw * 95 / 100 / 30 ))}
  echo "goal: raw direct-NVDEC rate $raw fps at ${RAW_CAMS:-64} cameras; 0.95 x raw / 30 = $(( raw * 95 / 100 / 30 )) cameras; running N = $n and N + 20"
  if [ "$n" -gt 0 ]; then fleet_run goal-n "$n"; fleet_run goal-n20 $(( n + 20 )); fi
  ;;
*) echo "unknown step $what"; rc=1 ;;
esac
done
echo; echo "##### done, $(left)s of the budget left; exit $rc"
exit $rc
