//! Build settings of the library: on Linux, the link to nvcam's own FFmpeg build. The generated
//! headers and bindings are not written here but by `cargo xtask gen` (xtask/), which CI checks:
//! a build must not rewrite committed files.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=NVCAM_TARGET={}", std::env::var("TARGET").unwrap());
    if std::env::var("TARGET").unwrap() == "x86_64-unknown-linux-gnu" {
        ffmpeg_linux(&dir);
    }
}

/// The Linux build links target/ffmpeg-linux, FFmpeg with nvcam's patches (.cargo/config.toml
/// points ffmpeg-sys-next's pkg-config there, for this triple only, the one that script builds
/// for). Its libraries have private names (libavformat_nvcam.so.59), which no system folder holds:
/// the RUNPATH makes the tests, examples and the cdylib find them with no LD_LIBRARY_PATH. The packages replace it with `$ORIGIN/lib` (scripts/release/package.sh).
/// A build made from other scripts or patches than the checkout's is refused: the code would be
/// tested against an FFmpeg that is not the one it ships with.
fn ffmpeg_linux(dir: &Path) {
    let prefix = dir.join("target/ffmpeg-linux");
    for f in ["scripts/build/build-ffmpeg-linux.sh", "scripts/build/ffmpeg-common.sh", "scripts/build/ffmpeg-patches"] {
        println!("cargo:rerun-if-changed={f}");
    }
    // A directory is scanned whole: a rebuild (which replaces the prefix) reruns this.
    println!("cargo:rerun-if-changed={}", prefix.display());
    let rebuild = "run 'bash scripts/build/build-ffmpeg-linux.sh' (about 4 minutes, cached), then build again";
    let lib = prefix.join("lib");
    if !lib.join("libavformat_nvcam.so.59").exists() {
        panic!("nvcam links only its own FFmpeg build, and {} has none: {rebuild}", lib.display());
    }
    // The script's own cache key, so the two can never disagree on what "current" means.
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"root=$1 name=build.rs; . "$root/scripts/build/ffmpeg-common.sh" && ffmpeg_build_key "$root/scripts/build/build-ffmpeg-linux.sh""#)
        .arg("build.rs")
        .arg(dir)
        .output()
        .expect("bash (to compute scripts/build/build-ffmpeg-linux.sh's cache key)");
    let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success() && key.len() == 16, "computing the FFmpeg build key failed: {}", String::from_utf8_lossy(&out.stderr));
    if !prefix.join(format!(".stamp-{key}")).exists() {
        panic!("{} was built from other FFmpeg scripts or patches than this checkout's: {rebuild}", prefix.display());
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}
