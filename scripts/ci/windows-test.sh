#!/usr/bin/env bash
# The Windows step: cross-builds nvcam.dll from Linux and runs its tests under Wine.
#
#   bash scripts/ci/windows-test.sh
#
# 1. FFmpeg 5.1 for Windows (scripts/build/build-ffmpeg-windows.sh; cached in target/ffmpeg-windows).
# 2. `cargo test --release --features test-hooks --target x86_64-pc-windows-gnu --no-run` (mingw-w64).
# 3. The clips and reference decodes the file tests compare with, made on Linux by the Linux `core`,
#    `codecs`, `gpu_integrity`, `hostile` and `fuzz_parsers` tests and `recording_exact`'s path test (the ffmpeg CLI with x264/x265; Wine cannot run Linux programs for a Windows
#    test).
#    The tls test's certificates and servers (tests/support/tls_fixture.py) are made on Linux too.
# 4. Every Rust test executable under Wine (scripts/ci/wine-run.sh is cargo's runner), CPU path;
#    tests/tls.rs against the rtsps and https servers of tests/support/tls_fixture.py, which this
#    script starts on Linux (NVCAM_TLS_FIXTURE names them); the
#    tests listed in SKIP below do not run, each with its reason printed (a test file left out
#    whole is not cross-built either: only what runs is built).
# 5. `cargo build --release --target x86_64-pc-windows-gnu` (no test hooks: the DLL that ships), its
#    exports against include/nvcam.h; tests/c/harness.c and tests/c/dlopen_stress.c (LoadLibrary/GetProcAddress/FreeLibrary) and the
#    C++ wrapper's example, built with mingw-w64 and run under Wine; the release zip
#    (scripts/release/package.sh windows), and the example built against it by CMake (find_package) alone;
#    tests/wine/plain_load.c: a plain LoadLibraryW of the zip's nvcam.dll from other folders, also
#    in a host that loaded another avformat-59.dll first (tests/wine/host_avformat.c).
# 6. RTSP across Wine: the GStreamer server of the RTSP tests, on Linux loopback, streamed by the
#    Windows example program (nvcam_view.exe) under Wine; and an open of a closed port. SRT the same
#    way: Debian's ffmpeg CLI as the listener (with a passphrase), the right and a wrong one.
#
# Exits non-zero if anything failed or could not run, including a missing wine64 or mingw-w64.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
T=x86_64-pc-windows-gnu
out="$root/target/$T/tmp"
die() { echo "windows-test: FAILED: $*" >&2; exit 1; }
step() { echo; echo "== windows-test: $*"; }
t_start=$(date +%s)

# --- tools: missing ones fail the step, they never skip it ---
wine=${NVCAM_WINE64:-/usr/lib/wine/wine64}
[ -x "$wine" ] || die "wine64 not found at $wine (apt-get install wine64)"
# The Python with GStreamer's bindings (python3-gi), as tests/support/rtsp.rs uses it.
py=${NVCAM_TEST_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || die "$py not found (python3-gi, see .ci/packages.txt)"
for tool in x86_64-w64-mingw32-gcc x86_64-w64-mingw32-g++ x86_64-w64-mingw32-objdump cargo rustc; do
  command -v "$tool" >/dev/null || die "$tool not found (see .ci/packages.txt)"
done
if command -v rustup >/dev/null; then
  rustup target add "$T" >/dev/null 2>&1 || die "rustup target add $T failed"
fi
ls "$(rustc --print target-libdir --target "$T")"/libstd-*.rlib >/dev/null 2>&1 \
  || die "Rust's standard library for $T is not installed (rustup target add $T)"

# Tests that cannot run under Wine, by test binary, and why. Each must name one existing test (the
# list is checked), each is printed when it is left out, and docs/windows.md lists them.
SKIP=(
  "api committed_mirrors_match_generated|runs cargo and git, Linux programs (Wine starts Linux programs without a waitable handle or exit code); the same test runs on Linux, and .ci/run regenerates the files and diffs them"
  "bindings python_binding_suite_passes|Python ctypes suite: needs a Windows Python (the Linux python3 cannot load a Windows DLL)"
  "bindings cpp_wrapper_compiles_and_runs|runs the Linux c++; this script builds the same example with x86_64-w64-mingw32-g++ and runs it under Wine below"
  "rtsp *|every test starts, SIGSTOPs, restarts and kills the Linux GStreamer server it talks to: a Windows process under Wine cannot manage Linux processes (Rust's Command gets 'Invalid handle'); RTSP through Wine is checked below with the same server"
  "rtsp_loss *|every test starts the Linux GStreamer server (a lossy network on loopback) and decodes the clip with the Linux ffmpeg CLI for its reference: neither can be started from a Windows process under Wine; the marking logic is the same code, and tests/gpu_integrity.rs checks it under Wine on files with dropped and damaged packets"
  "gpu_integrity tcp_interleaved_loss_marks_the_same_pictures_on_every_decoder|streams from the Linux replay server (tests/support/rtsp_replay.py, run by python3), which a Windows process under Wine cannot start or stop; the file tests of tests/gpu_integrity.rs run"
  "rtsp_transport *|every test starts the Linux GStreamer server (Digest, multicast, HTTP tunnel, TLS, a UDP firewall): a Windows process under Wine cannot start or stop Linux processes"
  "recording event_clips_hold_pre_and_post_exactly_and_name_their_frames|decodes the recorded files with the Linux ffmpeg CLI and probes them with ffprobe (Linux programs a Windows process under Wine cannot run); a_clip_of_a_stream_with_b_frames_decodes_to_the_delivered_frames checks recorded files under Wine by decoding them with nvcam itself"
  "recording errors_end_a_recording_never_the_camera_and_handles_are_checked|uses /proc (a Linux path) and ffprobe"
  "recording a_full_disk_ends_the_recording_not_the_camera_and_counts_its_loss|runs its child under the Linux sh (ulimit -f, SIGXFSZ ignored) and decodes the file with the Linux ffmpeg CLI"
  "recording a_reconnect_splits_the_recording_and_a_close_finishes_it|decodes the recorded files with the Linux ffmpeg CLI and probes them with ffprobe (Linux programs a Windows process under Wine cannot run)"
  "recording a_killed_process_leaves_playable_files|kills a child process and decodes its files with the Linux ffmpeg CLI"
  "recording rtp_loss_inside_a_recording_is_reported|starts the Linux GStreamer server (a lossy network on loopback)"
  "recording a_resolution_change_starts_a_new_part|starts and restarts the Linux GStreamer server, and probes the files with ffprobe"
  "recording a_size_change_inside_a_session_starts_a_new_part|makes its source with the Linux ffmpeg CLI (concat demuxer) and probes and decodes the parts with ffprobe and ffmpeg"
  "recording_exact every_end_of_an_h264_clip_with_b_frames_is_exact|starts the Linux GStreamer server and decodes the recorded files with the Linux ffmpeg CLI (Linux programs a Windows process under Wine cannot start); paths_are_claimed_and_the_clock_runs_without_a_cache runs under Wine"
  "recording_exact every_end_of_an_hevc_clip_with_b_frames_is_exact|the same, on HEVC"
  "recording_exact across_a_reconnect_the_status_is_the_files|starts the Linux GStreamer server and decodes the parts with the Linux ffmpeg CLI"
  "recording_exact an_h264_recording_started_with_the_open_ends_at_trigger_plus_post|streams from the Linux GStreamer server and decodes the recorded files with the Linux ffmpeg CLI (Linux programs a Windows process under Wine cannot start)"
  "recording_exact an_hevc_recording_started_with_the_open_ends_at_trigger_plus_post|the same, on HEVC"
  "recording_exact an_h264_recording_across_server_restarts_keeps_every_picture|kills and restarts the Linux GStreamer server, which a Windows process under Wine cannot manage"
  "recording_exact an_hevc_recording_across_server_restarts_keeps_every_picture|the same, on HEVC"
  "recording_exact a_recording_across_host_reconnects_keeps_every_picture|streams from the Linux GStreamer server and decodes the parts with the Linux ffmpeg CLI (Linux programs a Windows process under Wine cannot start)"
  "recording_exact a_recording_across_stalls_and_server_kills_keeps_every_picture|stops, kills and restarts the Linux GStreamer server, which a Windows process under Wine cannot manage"
  "recording_exact an_existing_file_is_never_replaced|streams from the Linux GStreamer server; the no-replace rename's Windows call (MoveFileExW without MOVEFILE_REPLACE_EXISTING) is compiled in the step but not run"
  "recording_exact an_open_gop_clip_holds_and_counts_only_what_decodes|decodes the recorded files with the Linux ffmpeg CLI (and makes its clip with it)"
  "srt *|every test starts Debian's ffmpeg CLI (a Linux program) as the SRT listener and decodes its reference with it: a Windows process under Wine cannot start Linux programs; SRT through Wine is checked below (the Linux listener, nvcam_view.exe under Wine, the right and a wrong passphrase)"
  "hostile_servers *|every test starts the Linux python3 hostile server (tests/support/hostile_server.py), which a Windows process under Wine cannot start or stop, and reads the camera's thread CPU from /proc; the limits it checks are FFmpeg's rtsp.c and nvcam's worker, the same code in the Windows build"
  "hostile_relay *|every test starts the Linux python3 GStreamer RTSP server (tests/support/rtsp_server.py), which a Windows process under Wine cannot start or stop, and reads the camera's thread CPU from /proc; what it checks is FFmpeg's RTP demuxer (patched the same way in the Windows build) and nvcam's worker, the same code in the Windows build"
  "guest *|Linux hosts (a C program linked against Debian's libavformat.so.59, python3 loading it with RTLD_GLOBAL) and the Linux GStreamer servers, none of which a Windows process under Wine can start; the Windows case, a host that loaded another avformat-59.dll first, is tests/wine/plain_load.c --host-ffmpeg below"
  "share eight_processes_read_one_rtsp_session_and_every_frame_is_exact|streams from the Linux GStreamer RTSP server (and counts its SETUPs), which a Windows process under Wine cannot start or stop; the other sharing tests publish testsrc and clip cameras and run under Wine with share_peer.exe processes"
  "share another_users_process_cannot_attach_either_way|starts processes as another uid (Linux): Wine runs every process as one Windows user with one SID, so the pipe's DACL and the token checks cannot be shown refusing anyone; the Linux run checks the shared publisher's refusal"
  "docs *|compiles the docs' runnable C blocks with the Linux C compiler and runs their Python blocks with the Linux python3 against the Linux library (neither can be started from a Windows process under Wine); its checks of links are text only and the same on Linux"
)
# Test files left out whole: not cross-built, their tests counted from the Linux build.
skipped_whole() { local s; for s in "${SKIP[@]}"; do [ "${s%%|*}" = "$1 *" ] && return 0; done; return 1; }
for s in "${SKIP[@]}"; do
  k=${s%%|*}; [ "${k#* }" != "*" ] || [ -f "tests/${k%% *}.rs" ] || die "SKIP names tests/${k%% *}.rs, which does not exist (update the list)"
done

step "FFmpeg 5.1 for Windows (cached in target/ffmpeg-windows)"
bash scripts/build/build-ffmpeg-windows.sh
. scripts/ci/windows-env.sh

# The tests' build first and the shipped build after the tests: nvcam.dll has one file name
# whatever the features, so cargo recompiles nvcam whenever the feature set changes from one build
# to the next. In this order it is compiled twice (test hooks, then without), and the release zip
# here and the wheel after this step find the plain one built; the other order compiled it thrice.
step "cross-build of the tests: cargo test --release --features test-hooks --target $T --no-run"
# Only the test executables that run: the library's unit tests and every tests/*.rs not left out whole.
built=(--lib)
for f in tests/*.rs; do t=$(basename "$f" .rs); skipped_whole "$t" || built+=(--test "$t"); done
cargo test --release --features test-hooks --target "$T" --no-run "${built[@]}"
# The sharing tests' peer processes (tests/common/peers.rs): built after the tests, with the same
# features (nvcam is not compiled again), so it is newer than the nvcam.dll it tests.
cargo build --release --features test-hooks --target "$T" --example share_peer

step "clips and reference decodes for the file tests, made on Linux (cargo test --release --test core, --test codecs, --test gpu_integrity, recording_exact's path test, --test tls, --test hostile, --test fuzz_parsers)"
# .ci/run sets NVCAM_LINUX_TESTS_PASSED=1: its `cargo test --release --features test-hooks` has just
# run these suites (every other one too) into the same target/tmp/fixtures, so running them
# again would only repeat them. A clip that is still missing fails the Windows test that needs it.
if [ "${NVCAM_LINUX_TESTS_PASSED:-}" = 1 ]; then
  echo "made by the Linux test run before this step (NVCAM_LINUX_TESTS_PASSED=1)"
else
  cargo test --release --features test-hooks --test core -- --quiet
  cargo test --release --features test-hooks --test codecs -- --quiet
  cargo test --release --features test-hooks --test gpu_integrity -- --quiet
  cargo test --release --features test-hooks --test tls -- --quiet
  cargo test --release --features test-hooks --test hostile -- --quiet
  # The parser fuzzers' seed clips (a second of fuzzing each is enough to make them).
  NVCAM_FUZZ_PARSER_SECONDS=1 cargo test --release --features test-hooks --test fuzz_parsers -- --quiet
  # Its clip (rec-exact-h264-bf3.mp4) is the one recording_exact's path test reads under Wine.
  cargo test --release --features test-hooks --test recording_exact -- --quiet --exact paths_are_claimed_and_the_clock_runs_without_a_cache
fi
mkdir -p "$out"
[ -L "$out/fixtures" ] || rm -rf "$out/fixtures"
ln -sfn ../../tmp/fixtures "$out/fixtures"

step "Wine prefix (target/wine)"
"$root/scripts/ci/wine-run.sh" wineboot --init >/dev/null 2>&1 || die "wineboot failed"

step "NVIDIA's NVDEC headers as mingw lays them out (tests/c/nvcuvid_layout.c under Wine)"
x86_64-w64-mingw32-gcc -I/usr/include/ffnvcodec tests/c/nvcuvid_layout.c -o "$out/nvcuvid_layout.exe" \
  || die "compiling tests/c/nvcuvid_layout.c with mingw failed (libffmpeg-nvenc-dev installed?)"
"$root/scripts/ci/wine-run.sh" "$out/nvcuvid_layout.exe" >"$out/nvcuvid_layout-c.txt" || die "nvcuvid_layout.exe failed under Wine"
export NVCAM_NVCUVID_LAYOUT_C="$out/nvcuvid_layout-c.txt"
grep -q '^CUVIDDECODECREATEINFO 112' "$NVCAM_NVCUVID_LAYOUT_C" || die "unexpected LLP64 layout: $(head -n 8 "$NVCAM_NVCUVID_LAYOUT_C")"

failed=()
summary=()
list_tests() { # binary selector -> test names
  cargo test -q --release --features test-hooks --target "$T" "$@" -- --list --format terse 2>/dev/null | sed -n 's/: test$//p'
}
run_bin() { # name, cargo selector...
  local name=$1; shift
  local args=() n_skip=0 all=""
  if skipped_whole "$name"; then
    all=$(cargo test -q --release --features test-hooks "$@" -- --list --format terse 2>/dev/null | sed -n 's/: test$//p')
    [ -n "$all" ] || die "could not list the tests of tests/$name.rs (Linux build)"
    local why; for s in "${SKIP[@]}"; do [ "${s%%|*}" = "$name *" ] && why=${s#*|}; done
    n_skip=$(grep -c . <<<"$all")
    echo "SKIPPED under Wine (not cross-built): all $n_skip tests of tests/$name.rs: $why"
    summary+=("$(printf '%-16s %6s %6s %7s %8s %14s   %s' "$name" 0 0 0 "$n_skip" 0 "ok (left out whole)")")
    return
  fi
  local s_; for s_ in "${SKIP[@]}"; do [ "${s_%% *}" = "$name" ] && { all=$(list_tests "$@"); break; }; done
  for s in "${SKIP[@]}"; do
    local key=${s%%|*} why=${s#*|}
    [ "${key%% *}" = "$name" ] || continue
    local test=${key#* }
    grep -qx "$test" <<<"$all" || die "SKIP names $name::$test, which does not exist (update the list)"
    args+=(--skip "$test"); n_skip=$((n_skip + 1))
    echo "SKIPPED under Wine: $name::$test: $why"
  done
  local log="$out/wine-test-$name.log" rc=0
  echo "-- $name under Wine"
  timeout 900 cargo test --release --features test-hooks --target "$T" "$@" -- --exact --show-output "${args[@]}" >"$log" 2>&1 || rc=$?
  grep -E '^test |^test result|panicked|not run' "$log" | grep -v ' \.\.\. ok$' || true
  local res; res=$(grep '^test result:' "$log" | tail -n1)
  local gpu_not_run; gpu_not_run=$(grep -c 'not run (REQUIRE_GPU=1' "$log" || true)
  local p f i
  p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$res"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$res")
  i=$(sed -nE 's/.* ([0-9]+) ignored.*/\1/p' <<<"$res")
  if [ "$rc" != 0 ] || [ -z "$res" ]; then
    failed+=("$name"); tail -n 40 "$log"
  fi
  summary+=("$(printf '%-16s %6s %6s %7s %8s %14s   %s' "$name" "${p:-?}" "${f:-?}" "${i:-?}" "$n_skip" "$gpu_not_run" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (rc $rc)")")")
}

# tests/tls.rs's servers (rtsps and https with the certificates they make), started here on Linux:
# the Windows tests under Wine cannot start Linux programs. They find them through NVCAM_TLS_FIXTURE
# and fail without it. The fixture streams the clips the Linux run of tests/tls.rs made.
step "TLS servers for tests/tls.rs under Wine (tests/support/tls_fixture.py, on Linux)"
tlsdir="$out/tls-fixture"
rm -rf "$tlsdir"
for c in tls_320x240.mp4 tls_mjpeg_320x240.mjpeg; do
  [ -f "$out/fixtures/$c" ] || die "$out/fixtures/$c is missing (made by cargo test --release --features test-hooks --test tls on Linux)"
done
: >"$out/tls-fixture.log"
"$py" tests/support/tls_fixture.py --dir "$tlsdir" --clip "$out/fixtures/tls_320x240.mp4" \
  --mjpeg "$out/fixtures/tls_mjpeg_320x240.mjpeg" --until-killed >>"$out/tls-fixture.log" 2>&1 &
tls_pid=$!
trap 'kill "$tls_pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q '^READY' "$out/tls-fixture.log" && break; sleep 0.1; done
grep -q '^READY' "$out/tls-fixture.log" || die "tests/support/tls_fixture.py did not start: $(cat "$out/tls-fixture.log")"
export NVCAM_TLS_FIXTURE="$tlsdir/fixture.env"
echo "rtsps and https servers up: $(grep -c '^rtsps_[a-z_]*=rtsps' "$NVCAM_TLS_FIXTURE") rtsps, $(grep -c '^https_' "$NVCAM_TLS_FIXTURE") https"

# The fuzzer runs its full length on Linux; under Wine a shorter run covers the Windows build.
export NVCAM_FUZZ_SECONDS=${NVCAM_FUZZ_SECONDS:-20}
step "Rust tests under Wine (cargo test --release --target $T; runner scripts/ci/wine-run.sh)"
run_bin lib --lib
for f in tests/*.rs; do
  t=$(basename "$f" .rs)
  run_bin "$t" --test "$t"
done

step "cross-build of what ships: cargo build --release --target $T (no test hooks)"
cargo build --release --target "$T" --lib --example nvcam_view
dll="target/$T/release/nvcam.dll"
[ -f "$dll" ] || die "$dll was not built"

step "exports of nvcam.dll against include/nvcam.h"
header=$(sed -nE 's/^[a-z0-9_]+ (nvcam_[a-z0-9_]+)\(.*/\1/p' include/nvcam.h | sort -u)
exports=$(x86_64-w64-mingw32-objdump -p "$dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' \
  | sed -nE 's/^\s*\[ *[0-9]+\] (.*)$/\1/p' | sort -u)
[ "$(echo "$header" | wc -l)" -ge 20 ] || die "found too few functions in include/nvcam.h"
if [ "$header" != "$exports" ]; then
  diff <(echo "$header") <(echo "$exports") >&2 || true
  die "nvcam.dll's exports (right) differ from the header's functions (left)"
fi
echo "nvcam.dll exports exactly the header's $(echo "$exports" | wc -l) functions"
imports=$(x86_64-w64-mingw32-objdump -p "$dll" | sed -n 's/^\s*DLL Name: //p' | sort -fu)
echo "imports: $(tr '\n' ' ' <<<"$imports")"
# FFmpeg must be delay-loaded (src/win_loader.rs): an ordinary import would make a plain
# LoadLibraryW of nvcam.dll fail again wherever the FFmpeg DLLs are not on the host's search path.
for dep in $imports; do
  [ ! -f "target/ffmpeg-windows/bin/$dep" ] || die "nvcam.dll imports $dep the ordinary way, not delay-loaded"
done
delayed=$(x86_64-w64-mingw32-nm "$dll" | sed -n 's/.* __DELAY_IMPORT_DESCRIPTOR_\(.*\)$/\1/p' | sort -u)
[ "$(grep -c . <<<"$delayed")" -ge 4 ] || die "nvcam.dll delay-loads too few FFmpeg DLLs: $delayed"
echo "delay-loaded, through: $(sed 's/_dll_a$/.dll.a/' <<<"$delayed" | tr '\n' ' ')"

step "include/nvcam_labview.h (for LabVIEW's Import Shared Library wizard) as plain C, by mingw"
# Windows' own widths; the struct sizes must be nvcam.h's. __int64 is a keyword of MSVC and of the
# wizard's parser, a macro of mingw's system headers (which the LabVIEW header does not include).
mkdir -p "$out"
{
  echo '#include "nvcam_labview.h"'
  grep '^NVCAM_STATIC_ASSERT(sizeof(' include/nvcam.h | sed 's/^NVCAM_STATIC_ASSERT/_Static_assert/'
} >"$out/labview_header.c"
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -D__int64="long long" -I include "$out/labview_header.c" \
  || die "include/nvcam_labview.h does not compile with mingw"
echo "nvcam_labview.h: $(grep -c '^int nvcam_' include/nvcam_labview.h) functions, $(grep -c '^#define' include/nvcam_labview.h) constants; compiles as C11 with mingw, struct sizes as nvcam.h"

# --- C and C++ hosts built with mingw-w64 ---
cdir="$out/c"
rm -rf "$cdir"; mkdir -p "$cdir"
cp "$dll" "$cdir/"
implib="target/$T/release/libnvcam.dll.a"
c_host() { # name, expected-summary, command...
  local name=$1 want=$2; shift 2
  local rc=0
  echo "-- $name"
  timeout 180 "$@" >"$cdir/$name.log" 2>&1 || rc=$?
  tail -n 3 "$cdir/$name.log"
  if [ "$rc" != 0 ] || ! grep -q "$want" "$cdir/$name.log"; then
    failed+=("$name"); echo "FAILED: $name (exit $rc); log: $cdir/$name.log"; tail -n 30 "$cdir/$name.log"
    summary+=("$(printf '%-16s %s' "$name" "FAILED (rc $rc)")")
  else
    summary+=("$(printf '%-16s %s' "$name" "ok: $(grep -m1 "$want" "$cdir/$name.log" | tr -d '\r')")")
  fi
}
step "C harness and dlopen stress (LoadLibrary/GetProcAddress/FreeLibrary), built with mingw-w64, under Wine"
cflags=(-std=c11 -Wall -Wextra -Werror -pthread -O1 -g -I include -static)
x86_64-w64-mingw32-gcc "${cflags[@]}" tests/c/harness.c "$implib" -o "$cdir/harness.exe" || die "compiling tests/c/harness.c with mingw failed"
x86_64-w64-mingw32-gcc "${cflags[@]}" tests/c/dlopen_stress.c -o "$cdir/dlopen_stress.exe" || die "compiling tests/c/dlopen_stress.c with mingw failed"
x86_64-w64-mingw32-g++ -std=c++17 -Wall -Wextra -pedantic -Werror -I include -I bindings/cpp bindings/cpp/example.cpp "$implib" \
  -static -o "$cdir/nvcam_cpp_example.exe" || die "compiling bindings/cpp/example.cpp with mingw failed"
winpath() { local p=${1//\//\\}; echo "Z:$p"; }
c_host c_harness "all checks passed" "$root/scripts/ci/wine-run.sh" "$cdir/harness.exe"
# The release zip's layout: nvcam.dll with the FFmpeg DLLs beside it, in a folder of its own and not
# on the DLL path; LoadLibraryEx(LOAD_WITH_ALTERED_SEARCH_PATH), as LabVIEW does, must find them there.
mkdir -p "$cdir/pkg"; cp "$dll" target/ffmpeg-windows/bin/*.dll "$cdir/pkg/"
c_host dlopen_stress "all checks passed" env NVCAM_WINE_FFMPEG_PATH=0 "$root/scripts/ci/wine-run.sh" "$cdir/dlopen_stress.exe" "$(winpath "$cdir/pkg/nvcam.dll")"
c_host cpp_example "^ok" "$root/scripts/ci/wine-run.sh" "$cdir/nvcam_cpp_example.exe" "testsrc://320x240@30" 10
if grep -q '^ok' "$cdir/cpp_example.log"; then  # the checks of tests/bindings.rs's cpp_wrapper_compiles_and_runs
  tr -d '\r' <"$cdir/cpp_example.log" >"$cdir/cpp_example.txt"
  [ "$(grep -c '^frame ' "$cdir/cpp_example.txt")" = 10 ] && grep -q 'second release: NVCAM_E_STALE_HANDLE (-8013)' "$cdir/cpp_example.txt" \
    && grep -q 'stats: state=STREAMING' "$cdir/cpp_example.txt" && grep -q 'delivered=10 ' "$cdir/cpp_example.txt" \
    || { failed+=(cpp_example_output); echo "FAILED: the C++ example's output lacks what tests/bindings.rs checks"; cat "$cdir/cpp_example.txt"; }
fi

# The release zip as a mingw CMake user meets it: scripts/release/package.sh windows, unpacked; the C++
# example configured with find_package(nvcam) alone (mingw-w64 as the cross compiler), built, and
# run under Wine from the zip's folder with no FFmpeg on the DLL path (nvcam.dll and the FFmpeg DLLs
# beside the .exe, as a user unpacks them).
step "the release zip: the C++ example built by CMake from find_package(nvcam), run under Wine"
command -v cmake >/dev/null || die "cmake not found (see .ci/packages.txt)"
zipdir="$cdir/zip"
rm -rf "$zipdir"; mkdir -p "$zipdir/src"
NVCAM_PACKAGE_DIST="$zipdir" bash scripts/release/package.sh windows >"$zipdir/package.log" 2>&1 \
  || die "scripts/release/package.sh windows failed: $(tail -n 5 "$zipdir/package.log")"
pkgver=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
python3 -m zipfile -e "$zipdir/nvcam-$pkgver-windows-x64.zip" "$zipdir" || die "unpacking the zip failed"
pkgdir="$zipdir/nvcam-$pkgver-windows-x64"
cp bindings/cpp/example.cpp bindings/cpp/CMakeLists.txt "$zipdir/src/"
{ cmake -S "$zipdir/src" -B "$zipdir/build" -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_CXX_COMPILER=x86_64-w64-mingw32-g++ \
    -DCMAKE_PREFIX_PATH="$pkgdir" -DCMAKE_EXE_LINKER_FLAGS=-static && cmake --build "$zipdir/build"; } >"$zipdir/cmake.log" 2>&1 \
  || die "the CMake build against the zip failed: $(tail -n 15 "$zipdir/cmake.log")"
cp "$zipdir/build/nvcam_example.exe" "$pkgdir/"
c_host zip_cmake_example "^ok" env NVCAM_WINE_FFMPEG_PATH=0 "$root/scripts/ci/wine-run.sh" "$pkgdir/nvcam_example.exe" "testsrc://320x240@30" 5

# A C++ host as the README shows it: a plain LoadLibraryW of the zip's nvcam.dll by its full path,
# with no search flags and no PATH change, from an .exe and a working directory in other folders,
# neither holding FFmpeg: nvcam.dll must load the FFmpeg DLLs from its own folder by itself. Then
# nvcam.dll alone in a folder: it must still load, and nvcam_init must report the missing DLL.
step "plain LoadLibraryW of the zip's nvcam.dll from other folders (tests/wine/plain_load.c)"
plain="$cdir/plain"
mkdir -p "$plain/exe" "$plain/cwd" "$plain/alone"
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Werror -O1 -I include tests/wine/plain_load.c -static -o "$plain/exe/plain_load.exe" \
  || die "compiling tests/wine/plain_load.c with mingw failed"
cp "$pkgdir/nvcam.dll" "$plain/alone/"
c_host plain_load "^ok" env -C "$plain/cwd" NVCAM_WINE_FFMPEG_PATH=0 "$root/scripts/ci/wine-run.sh" "$plain/exe/plain_load.exe" "$(winpath "$pkgdir/nvcam.dll")"
c_host plain_load_alone "^ok" env -C "$plain/cwd" NVCAM_WINE_FFMPEG_PATH=0 "$root/scripts/ci/wine-run.sh" "$plain/exe/plain_load.exe" \
  "$(winpath "$plain/alone/nvcam.dll")" --no-ffmpeg
# A host that loaded another FFmpeg's avformat-59.dll first: nvcam runs on its own DLLs beside it.
mkdir -p "$plain/host"
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Werror -O1 -shared tests/wine/host_avformat.c -o "$plain/host/avformat-59.dll" \
  || die "compiling tests/wine/host_avformat.c with mingw failed"
c_host plain_load_host_ffmpeg "^ok" env -C "$plain/cwd" NVCAM_WINE_FFMPEG_PATH=0 "$root/scripts/ci/wine-run.sh" "$plain/exe/plain_load.exe" \
  "$(winpath "$pkgdir/nvcam.dll")" --host-ffmpeg "$(winpath "$plain/host/avformat-59.dll")"

# A file path with non-ASCII characters, passed as UTF-8: FFmpeg on Windows converts it to UTF-16
# for _wsopen. (The same path in the ANSI code page, as LabVIEW passes it, is tests/text_encoding.rs.)
step "a UTF-8 file path with non-ASCII characters"
upath="$cdir/Kamera-ümlaut-日本.mp4"
cp "$out/fixtures/h264_short_96x64.mp4" "$upath"
c_host utf8_path "snapshot of frame" "$root/scripts/ci/wine-run.sh" "target/$T/release/examples/nvcam_view.exe" "$upath" \
  --seconds 1 --device -1 --png "$cdir/utf8.png"

# --- RTSP through Wine: Linux GStreamer server on 127.0.0.1, Windows nvcam under Wine ---
step "RTSP: the Linux GStreamer server (tests/support/rtsp_server.py) streamed by nvcam_view.exe under Wine"
view="target/$T/release/examples/nvcam_view.exe"
rtsp_check() { # codec
  local codec=$1 port="" pid rc=0
  # Made before the server starts: the background job opens it later, and sed below must find it.
  : >"$cdir/rtsp-server-$codec.log"
  "$py" tests/support/rtsp_server.py --codec "$codec" --size 320x240 --fps 30 >>"$cdir/rtsp-server-$codec.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^READY //p' "$cdir/rtsp-server-$codec.log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    kill "$pid" 2>/dev/null || true
    failed+=("rtsp_$codec"); echo "FAILED: the RTSP server did not start:"; cat "$cdir/rtsp-server-$codec.log"
    summary+=("$(printf '%-16s %s' "rtsp_$codec" "FAILED (server did not start)")")
    return
  fi
  timeout 60 "$root/scripts/ci/wine-run.sh" "$view" "rtsp://127.0.0.1:$port/cam" --seconds 4 --device -1 \
    --png "$cdir/rtsp-$codec.png" >"$cdir/rtsp-$codec.log" 2>&1 || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  tr -d '\r' <"$cdir/rtsp-$codec.log" | grep -E '^t=|snapshot' | tail -n 2
  local last; last=$(tr -d '\r' <"$cdir/rtsp-$codec.log" | grep '^t=' | tail -n1)
  if [ "$rc" = 0 ] && grep -q 'state=streaming 320x240' <<<"$last" && grep -q snapshot "$cdir/rtsp-$codec.log"; then
    summary+=("$(printf '%-16s %s' "rtsp_$codec" "ok: $(sed -E 's/.*(fps=[0-9.]+ decoded=[0-9]+).*/\1/' <<<"$last") from rtsp://127.0.0.1:$port")")
  else
    failed+=("rtsp_$codec"); echo "FAILED: rtsp_$codec (exit $rc)"; tail -n 30 "$cdir/rtsp-$codec.log"
    summary+=("$(printf '%-16s %s' "rtsp_$codec" "FAILED (rc $rc)")")
  fi
}
rtsp_check h264
rtsp_check h265
# A refused connection must fail the open, not hang. On Linux FFmpeg reports "connection refused" at
# once; FFmpeg 5.1 on Windows waits for its connect with select() on the write set only, where
# Winsock never reports a failed connect, so there (and under Wine) it ends as a timeout after
# open_timeout_ms (5 s by default). Either is accepted; the summary shows which.
free_port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rc=0
timeout 60 "$root/scripts/ci/wine-run.sh" "$view" "rtsp://127.0.0.1:$free_port/cam" --seconds 1 --device -1 >"$cdir/rtsp-refused.log" 2>&1 || rc=$?
msg=$(grep -m1 'nvcam_camera_open failed' "$cdir/rtsp-refused.log" | tr -d '\r' || true)
if [ "$rc" = 1 ] && grep -qiE 'refused|NVCAM_E_TIMEOUT: .*timeout after 5000 ms' <<<"$msg"; then
  summary+=("$(printf '%-16s %s' "rtsp_closed_port" "ok: ${msg#*failed: }")")
else
  failed+=(rtsp_closed_port); echo "FAILED: opening a closed port (exit $rc) did not fail as expected:"; cat "$cdir/rtsp-refused.log"
  summary+=("$(printf '%-16s %s' "rtsp_closed_port" "FAILED (rc $rc)")")
fi

# --- SRT through Wine: the Linux ffmpeg CLI as listener (AES passphrase), Windows nvcam under Wine ---
step "SRT: Debian's ffmpeg as the listener on 127.0.0.1, streamed by nvcam_view.exe under Wine"
srt_check() { # name, passphrase the camera gives, what its log must show
  local name=$1 pass=$2 want=$3 port pid rc=0
  port=$("$py" -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  ffmpeg -hide_banner -loglevel error -nostdin -re -stream_loop -1 -i "$out/fixtures/h264_short_96x64.mp4" -c copy -f mpegts \
    "srt://127.0.0.1:$port?mode=listener&passphrase=wine-srt-passphrase" >"$cdir/srt-listener-$name.log" 2>&1 &
  pid=$!
  sleep 1
  timeout 60 "$root/scripts/ci/wine-run.sh" "$view" "srt://127.0.0.1:$port?passphrase=$pass" --seconds 3 --device -1 >"$cdir/srt-$name.log" 2>&1 || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local text; text=$(tr -d '\r' <"$cdir/srt-$name.log")
  # The passphrase in no line but the example's own echo of its URL (nvcam's and FFmpeg's redact it).
  if grep -qE "$want" <<<"$text" && ! grep -v '^opening ' <<<"$text" | grep -q "$pass"; then
    summary+=("$(printf '%-16s %s' "$name" "ok: $(grep -E "$want" <<<"$text" | tail -n1 | cut -c1-110)")")
  else
    failed+=("$name"); echo "FAILED: $name (exit $rc)"; tail -n 30 "$cdir/srt-$name.log"
    summary+=("$(printf '%-16s %s' "$name" "FAILED (rc $rc)")")
  fi
}
srt_check srt_passphrase wine-srt-passphrase 'state=streaming 96x64'
srt_check srt_wrong_pass wrong-srt-passphrase 'NVCAM_E_AUTH.*refused the passphrase'

step "summary ($(($(date +%s) - t_start)) s)"
printf '%-16s %6s %6s %7s %8s %14s   %s\n' "test binary" passed failed ignored skipped "GPU: not run" result
for l in "${summary[@]}"; do echo "$l"; done
echo "(skipped: left out under Wine, reasons above; 'GPU: not run': no NVIDIA GPU under Wine, the test printed so and returned, as on Linux CI; c_harness.rs is Linux-only, its C programs run as c_harness/dlopen_stress)"
if [ ${#failed[@]} -gt 0 ]; then
  die "${failed[*]}"
fi
echo "windows-test: all passed"
