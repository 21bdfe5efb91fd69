//! The hand-written NVDEC struct layouts (src/gpu/nvcuvid/sys.rs) against NVIDIA's headers: compiles
//! tests/c/nvcuvid_layout.c with the system C compiler and compares every size and offset. Where
//! the headers are not installed (`apt-get install libffmpeg-nvenc-dev`) the test says so and
//! passes: the same numbers are also compile-time assertions in the crate. On Windows the numbers
//! are LLP64's, and the C program is compiled by mingw and run under Wine (scripts/ci/windows-test.sh).

#[cfg(not(windows))]
use std::path::Path;
#[cfg(not(windows))]
use std::process::Command;

/// Windows (under Wine): this process cannot run the cross compiler, so scripts/ci/windows-test.sh
/// compiles tests/c/nvcuvid_layout.c with x86_64-w64-mingw32-gcc, runs it under Wine and names its
/// output in NVCAM_NVCUVID_LAYOUT_C. Without it the test fails: the LLP64 layouts must be checked.
#[cfg(windows)]
#[test]
fn nvcuvid_structs_match_nvidia_headers() {
    let f = std::env::var("NVCAM_NVCUVID_LAYOUT_C")
        .expect("NVCAM_NVCUVID_LAYOUT_C is not set: run the Windows tests with scripts/ci/windows-test.sh");
    let c = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("read {f}: {e}")).replace('\r', "");
    let rust = nvcam::diag::nvcuvid_layout_report();
    for (a, b) in c.lines().zip(rust.lines()) {
        assert_eq!(a, b, "C header as mingw lays it out (left) and Rust declaration (right) differ");
    }
    assert_eq!(c.lines().count(), rust.lines().count());
    println!("{} sizes and offsets agree (LLP64, from {f})", c.lines().count());
}

#[cfg(not(windows))]
#[test]
fn nvcuvid_structs_match_nvidia_headers() {
    let inc = Path::new("/usr/include/ffnvcodec");
    if !inc.join("dynlink_cuviddec.h").exists() {
        eprintln!("skipped: {} not installed (libffmpeg-nvenc-dev)", inc.display());
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nvcuvid_layout");
    let t = option_env!("NVCAM_TARGET").unwrap_or("x86_64-unknown-linux-gnu");
    let cc = cc::Build::new().target(t).host(t).opt_level(0).cargo_metadata(false).get_compiler();
    let st = cc
        .to_command()
        .arg(format!("-I{}", inc.display()))
        .arg(root.join("tests/c/nvcuvid_layout.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler");
    assert!(st.success(), "compiling tests/c/nvcuvid_layout.c failed");
    let out = Command::new(&exe).output().expect("run the layout program");
    assert!(out.status.success());
    let c = String::from_utf8(out.stdout).unwrap();
    let rust = nvcam::diag::nvcuvid_layout_report();
    for (a, b) in c.lines().zip(rust.lines()) {
        assert_eq!(a, b, "C header (left) and Rust declaration (right) differ");
    }
    assert_eq!(c.lines().count(), rust.lines().count());
    println!("{} sizes and offsets agree", c.lines().count());
}
