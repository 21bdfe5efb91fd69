//! The hand-written NVDEC struct layouts (src/gpu/nvdec/sys.rs) against NVIDIA's headers: compiles
//! tests/c/nvcuvid_layout.c with the system C compiler and compares every size and offset. Where
//! the headers are not installed (`apt-get install libffmpeg-nvenc-dev`) the test says so and
//! passes: the same numbers are also compile-time assertions in the crate.

use std::path::Path;
use std::process::Command;

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
