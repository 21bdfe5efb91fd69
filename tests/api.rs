//! The contract around the C API: the committed header is what the code generates, and the README
//! documents every function and status code as they are.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

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

#[test]
fn committed_header_matches_generated() {
    // build.rs has just regenerated include/nvcam.h; in a git checkout it must equal the commit.
    if !root().join(".git").exists() {
        eprintln!("not a git checkout: skipping the committed-header comparison");
        return;
    }
    let out = Command::new("git")
        .args(["diff", "--exit-code", "--", "include/nvcam.h"])
        .current_dir(root())
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "include/nvcam.h differs from what the code generates; commit the regenerated header:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
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
    ] {
        assert!(fns.iter().any(|x| x == f), "{f} missing from the header");
    }
}

#[test]
fn readme_documents_every_function_and_status_code() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for f in exported_functions() {
        assert!(readme.contains(&format!("`{f}(")), "README's API table lacks {f}");
    }
    for (code, name, _) in nvcam::status::ALL {
        let row = format!("| {code} | `{name}` |");
        assert!(readme.contains(&row), "README's status table lacks {row}");
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
