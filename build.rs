//! Regenerates include/nvcam.h from the C-facing modules with cbindgen. The header is committed;
//! `.ci/run` fails when the committed copy differs from what the code generates.

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    for f in ["src/api.rs", "src/status.rs", "src/ffi.rs", "cbindgen.toml"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rustc-env=NVCAM_TARGET={}", std::env::var("TARGET").unwrap());
    let cfg = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let gen = cbindgen::Builder::new()
        .with_config(cfg)
        .with_src(dir.join("src/api.rs"))
        .with_src(dir.join("src/status.rs"))
        .with_src(dir.join("src/ffi.rs"))
        .generate();
    match gen {
        Ok(b) => {
            b.write_to_file(dir.join("include/nvcam.h"));
        }
        // Let rustc report syntax errors with better messages.
        Err(cbindgen::Error::ParseSyntaxError { .. }) => {}
        Err(e) => panic!("cbindgen: {e:?}"),
    }
}
