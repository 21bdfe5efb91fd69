//! `cargo xtask gen`: writes every generated mirror of the C ABI and of the kernels' ABI from the
//! Rust sources.
//! `cargo xtask gen --check` writes nothing and fails when a committed mirror differs.

mod cuda;
mod headers;
mod python;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["gen"] => false,
        ["gen", "--check"] => true,
        _ => {
            eprintln!("usage: cargo xtask gen [--check]");
            return ExitCode::from(2);
        }
    };
    // Cargo's run-time value, not the compile-time one: a binary built for another checkout that
    // shares this target directory must still write into the checkout it runs for.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let root = manifest.parent().expect("xtask/ is in the repository").to_path_buf();
    let stale: Vec<_> = generated(&root).into_iter().filter(|(path, text)| !current(&root, path, text, check)).collect();
    if check && !stale.is_empty() {
        for (path, _) in &stale {
            eprintln!("{path} differs from what the Rust sources generate: run `cargo xtask gen` and commit it");
        }
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// (path relative to the repository root, contents) of every generated file.
fn generated(root: &Path) -> Vec<(&'static str, String)> {
    let mut b = headers::parse(root);
    let layouts = python::layouts(&b);
    let python = python::module(&b);
    let (cuh, params_layout) = cuda::generate(root);
    vec![
        ("include/nvcam.h", headers::c_header(&mut b, &layouts)),
        ("include/nvcam_labview.h", headers::labview_header(root)),
        ("bindings/python/nvcam/_ffi.py", python),
        ("src/ffi/layout.rs", headers::rust_layout(&layouts)),
        ("kernels/nvcam_abi.cuh", cuh),
        ("src/gpu/params_layout.rs", params_layout),
    ]
}

/// Whether `path` already holds `text`; if not and this is no check, writes it. Only a changed
/// file is rewritten, so an up-to-date tree keeps its timestamps.
fn current(root: &Path, path: &str, text: &str, check: bool) -> bool {
    let full = root.join(path);
    if std::fs::read_to_string(&full).ok().as_deref() == Some(text) {
        return true;
    }
    if !check {
        std::fs::write(&full, text).unwrap_or_else(|e| panic!("writing {}: {e}", full.display()));
        eprintln!("wrote {path}");
    }
    false
}
