#!/bin/sh
# pkg-config for the Linux target's build scripts (.cargo/config.toml names it): ffmpeg-sys-next
# runs it before nvcam's build.rs, and when target/ffmpeg-linux is missing its own message asks to
# install FFmpeg or set FFMPEG_DIR, which would lead to a system FFmpeg without nvcam's patches.
# The search path is the one .cargo/config.toml sets (PKG_CONFIG_LIBDIR): only that build.
lib=$(cd "$(dirname "$0")/../.." && pwd)/target/ffmpeg-linux/lib/pkgconfig
if [ ! -f "$lib/libavformat.pc" ]; then
  msg="nvcam links only its own FFmpeg build, and $lib has none: run 'bash scripts/build/build-ffmpeg-linux.sh' (about 4 minutes, once), then build again"
  echo "$msg" >&2
  # ffmpeg-sys-next folds the line above into its own advice. Said to cargo on its build script's
  # stdout, the parent's (OUT_DIR is set only in a build script), cargo prints it as the first error.
  if [ -n "${OUT_DIR:-}" ] && [ -w "/proc/$PPID/fd/1" ]; then
    echo "cargo::error=$msg" >"/proc/$PPID/fd/1" 2>/dev/null || true
  fi
  exit 1
fi
exec pkg-config "$@"
