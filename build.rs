//! Regenerates include/nvcam.h from the C surface (`src/ffi/`, and the status codes) with
//! cbindgen. The header is committed; the test suite fails when the committed copy differs from
//! what the code generates.

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // The C surface, in header order: types and constants, status codes, then one file per object.
    let sources = [
        "src/ffi/types.rs",
        "src/status.rs",
        "src/ffi/library.rs",
        "src/ffi/camera.rs",
        "src/ffi/frame.rs",
        "src/ffi/log.rs",
        "src/ffi/gpu.rs",
    ];
    for f in sources.iter().chain(&["cbindgen.toml"]) {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rustc-env=NVCAM_TARGET={}", std::env::var("TARGET").unwrap());
    let cfg = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let gen = sources.iter().fold(cbindgen::Builder::new().with_config(cfg), |b, f| b.with_src(dir.join(f))).generate();
    match gen {
        Ok(b) => {
            b.write_to_file(dir.join("include/nvcam.h"));
        }
        // Let rustc report syntax errors with better messages.
        Err(cbindgen::Error::ParseSyntaxError { .. }) => {}
        Err(e) => panic!("cbindgen: {e:?}"),
    }
}
