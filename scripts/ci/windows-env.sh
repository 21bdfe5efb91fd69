# Environment for the Windows x64 cross-build and its tests under Wine. Source it (bash):
#
#   . scripts/ci/windows-env.sh
#   cargo build --release --target x86_64-pc-windows-gnu      # target/x86_64-pc-windows-gnu/release/nvcam.dll
#   cargo test  --release --target x86_64-pc-windows-gnu      # test executables run under Wine
#
# The FFmpeg it links against comes from `bash scripts/build/build-ffmpeg-windows.sh` (target/ffmpeg-windows);
# .cargo/config.toml points ffmpeg-sys-next's pkg-config and bindgen at it with target-specific
# variables, so `cargo build --target x86_64-pc-windows-gnu` works without this file too. This adds
# what running needs: Wine as cargo's runner, with the FFmpeg DLLs on Wine's DLL path.
_nvcam_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$_nvcam_root/scripts/ci/wine-run.sh"
export WINEPREFIX="${WINEPREFIX:-$_nvcam_root/target/wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
unset _nvcam_root
