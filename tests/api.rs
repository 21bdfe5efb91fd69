//! The contract around the C API: the committed headers and Python module are what the code
//! generates, and the API guide (docs/api.md) documents every function and status code as they are.

mod common;
use common::root;
use std::process::Command;

fn header() -> String {
    std::fs::read_to_string(root().join("include/nvcam.h")).unwrap()
}

fn exported_functions() -> Vec<String> {
    header()
        .lines()
        .filter_map(|l| l.strip_prefix("int32_t "))
        .filter_map(|l| l.split('(').next())
        .map(str::to_string)
        .collect()
}

/// Every file `cargo xtask gen` writes: the C header, the LabVIEW wizard's variant, the Python
/// ctypes module, rustc's check of the C structs' layouts, the kernels' CUDA header and rustc's side
/// of its layout check.
const GENERATED: [&str; 6] = [
    "include/nvcam.h",
    "include/nvcam_labview.h",
    "bindings/python/nvcam/_ffi.py",
    "src/ffi/layout.rs",
    "kernels/nvcam_abi.cuh",
    "src/gpu/params_layout.rs",
];

#[test]
fn committed_mirrors_match_generated() {
    if !root().join("xtask/Cargo.toml").exists() {
        eprintln!("no xtask/ (not a source checkout): skipping the generated-file comparison");
        return;
    }
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--package", "xtask", "--", "gen", "--check"])
        .current_dir(root())
        .output()
        .expect("cargo");
    assert!(
        out.status.success(),
        "a generated file differs from what the Rust sources generate:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !root().join(".git").exists() {
        eprintln!("not a git checkout: skipping the check that the generated files are committed");
        return;
    }
    for f in GENERATED {
        let tracked = Command::new("git").args(["ls-files", "--error-unmatch", f]).current_dir(root()).output().expect("git");
        assert!(tracked.status.success(), "{f} is generated but not committed");
    }
}

/// LabVIEW's Import Shared Library wizard parses a header with its own C parser: give it plain C
/// declarations only (no conditionals, includes, static assertions, inline functions, stdint
/// typedefs or function pointers), and every export except the few it cannot express.
#[test]
fn labview_header_is_plain_c_and_declares_every_wizard_function() {
    let lv = std::fs::read_to_string(root().join("include/nvcam_labview.h")).unwrap();
    let mut in_comment = false;
    for (n, line) in lv.lines().enumerate() {
        let t = line.trim_start();
        if in_comment || t.starts_with("/*") {
            in_comment = !t.contains("*/");
            continue;
        }
        if let Some(d) = t.strip_prefix('#') {
            assert!(d.starts_with("define "), "line {}: only #define may appear, got {line:?}", n + 1);
        }
        for bad in ["_Static_assert", "static", "inline", "extern", "int32_t", "int64_t", "int8_t", "int16_t", "size_t", "(*", "enum ", "union "] {
            assert!(!t.contains(bad), "line {}: {bad:?} in {line:?}", n + 1);
        }
    }
    let lv_fns: Vec<&str> = lv.lines().filter_map(|l| l.strip_prefix("int ")).filter_map(|l| l.split('(').next()).collect();
    let by_hand = ["nvcam_lv_reserve", "nvcam_lv_unreserve", "nvcam_lv_abort", "nvcam_camera_get_frame_lv", "nvcam_log_set_callback"];
    for f in exported_functions() {
        let listed = lv_fns.contains(&f.as_str());
        assert_eq!(listed, !by_hand.contains(&f.as_str()), "{f}: in the LabVIEW header: {listed}");
        if !listed {
            assert!(lv.contains(&f), "{f} is left out of the LabVIEW header without a word on it");
        }
    }
}

#[test]
fn header_declares_every_export() {
    let fns = exported_functions();
    for f in [
        "nvcam_abi_version", "nvcam_version_string", "nvcam_init", "nvcam_shutdown", "nvcam_status_text",
        "nvcam_last_error", "nvcam_camera_last_error", "nvcam_camera_open", "nvcam_camera_close",
        "nvcam_camera_reconnect", "nvcam_camera_get_frame", "nvcam_camera_stats", "nvcam_frame_clone",
        "nvcam_frame_release", "nvcam_frame_info", "nvcam_frame_copy_nv12", "nvcam_registry_force_release_owner",
        "nvcam_registry_stats", "nvcam_log_init", "nvcam_log_set_callback", "nvcam_log_pop",
        "nvcam_camera_cancel_wait", "nvcam_camera_get_frame_lv", "nvcam_lv_reserve", "nvcam_lv_unreserve",
        "nvcam_lv_abort",
    ] {
        assert!(fns.iter().any(|x| x == f), "{f} missing from the header");
    }
}

#[test]
fn api_guide_documents_every_function_and_status_code() {
    let guide = std::fs::read_to_string(root().join("docs/api.md")).unwrap();
    for f in exported_functions() {
        assert!(guide.contains(&format!("`{f}(")), "docs/api.md's API table lacks {f}");
    }
    for (code, name, _) in nvcam::ffi::status::ALL {
        let row = format!("| {code} | `{name}` |");
        assert!(guide.contains(&row), "docs/api.md's status table lacks {row}");
    }
}

#[test]
fn version_string_names_the_crate_version() {
    let mut buf = [0u8; 64];
    assert_eq!(unsafe { nvcam::nvcam_version_string(buf.as_mut_ptr() as *mut _, 64) }, 0);
    let s = String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap()]).into_owned();
    assert_eq!(s, format!("nvcam {} (abi {})", env!("CARGO_PKG_VERSION"), nvcam::NVCAM_ABI_VERSION));
    assert_eq!(nvcam::nvcam_abi_version(), nvcam::NVCAM_ABI_VERSION);
}

/// One version everywhere a user reads it: the header's NVCAM_VERSION_* and NVCAM_VERSION_STRING,
/// the Python constants, the loaded library's `nvcam_version_string`, Cargo.toml, and the Python
/// package, whose pyproject.toml takes Cargo.toml's. Prevents a header or package that says another
/// version than the library it ships with.
#[test]
fn version_macros_equal_the_library_and_the_packages() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let header = read("include/nvcam.h");
    let define = |name: &str| {
        header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("include/nvcam.h has no {name}"))
            .trim()
            .to_string()
    };
    let parts = ["MAJOR", "MINOR", "PATCH"].map(|p| define(&format!("NVCAM_VERSION_{p}")));
    let crate_version = env!("CARGO_PKG_VERSION");
    assert_eq!(parts.join("."), crate_version, "include/nvcam.h's NVCAM_VERSION_*");
    assert_eq!(define("NVCAM_VERSION_STRING"), format!("\"{crate_version}\""), "include/nvcam.h's NVCAM_VERSION_STRING");
    assert_eq!(
        [nvcam::NVCAM_VERSION_MAJOR, nvcam::NVCAM_VERSION_MINOR, nvcam::NVCAM_VERSION_PATCH].map(|n| n.to_string()),
        parts
    );
    let ffi = read("bindings/python/nvcam/_ffi.py");
    for (p, v) in ["MAJOR", "MINOR", "PATCH"].iter().zip(&parts) {
        assert!(ffi.contains(&format!("\nVERSION_{p} = {v}\n")), "bindings/python/nvcam/_ffi.py's VERSION_{p} is not {v}");
    }
    let mut buf = [0u8; 64];
    assert_eq!(unsafe { nvcam::nvcam_version_string(buf.as_mut_ptr() as *mut _, 64) }, 0);
    let s = String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap()]).into_owned();
    assert!(s.starts_with(&format!("nvcam {crate_version} ")), "nvcam_version_string says {s:?}");
    let cargo = read("Cargo.toml");
    assert!(cargo.contains(&format!("\nversion = \"{crate_version}\"\n")), "Cargo.toml's first version line");
    let py = read("pyproject.toml");
    assert!(
        py.contains("dynamic = [\"version\"") && py.contains("[tool.scikit-build.metadata.version]") && py.contains("input = \"Cargo.toml\""),
        "pyproject.toml must take its version from Cargo.toml"
    );
}
