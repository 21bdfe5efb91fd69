//! C programs against the cdylib, compiled and run inside `cargo test`:
//!
//! * `tests/c/harness.c`, linked to `libnvcam` with `-lnvcam`: every contract of `include/nvcam.h`
//!   from a C host (layouts, versions, status texts, NULL pointers, struct_size, made-up, stale and
//!   wrong-type handles, calls before init, frames, copies, clones, registry, logging, last error,
//!   stats, close, shutdown, re-init).
//! * `tests/c/dlopen_stress.c`, which loads the library with `dlopen` and resolves every export by
//!   name: 3 cameras, 70 leaked clones, 4 threads for 2 s, shutdown with everything leaked, every
//!   leaked handle afterwards, re-init, `dlclose`, a second `dlopen`.
//!
//! `cargo test` builds the cdylib into `<profile>/deps/` (not `<profile>/`), next to this test's
//! executable, so the profile directory comes from `current_exe()` and `--release` and `--target`
//! both work. The C compiler is the one the `cc` crate picks for this target (`CC` is honoured).
#![cfg(target_os = "linux")]

mod common;
use common::{cdylib, root};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `<target>/<profile>/deps`, where this test binary and the fresh `libnvcam.so` live (checked:
/// the programs here link that library, never one from `<profile>/`).
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a parent directory").to_path_buf();
    assert_eq!(deps.file_name().and_then(|n| n.to_str()), Some("deps"), "test binary is not in <profile>/deps: {exe:?}");
    deps
}

/// Compiles `tests/c/<name>.c` into CARGO_TARGET_TMPDIR with the target's C compiler; warnings are
/// errors, so the header must compile cleanly as C11.
fn compile(name: &str, link_nvcam: bool) -> PathBuf {
    let target = env!("NVCAM_TARGET");
    let src = root().join("tests/c").join(format!("{name}.c"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvcam-{name}"));
    let deps = deps_dir();
    let mut cmd = cc::Build::new()
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .cargo_metadata(false)
        .get_compiler()
        .to_command();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&out);
    if link_nvcam {
        cdylib();
        cmd.arg("-L").arg(&deps).arg("-lnvcam").arg(format!("-Wl,-rpath,{}", deps.display()));
    }
    cmd.arg("-ldl");
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler {cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "compiling {} failed ({}):\n{cmd:?}\n{}{}",
        src.display(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Runs `exe` with `args` for at most `limit`, stdout and stderr interleaved into one log; returns
/// whether it exited 0 and everything it printed.
fn run(exe: &Path, args: &[&std::ffi::OsStr], limit: Duration) -> (bool, String) {
    // cargo puts `<profile>/` before `deps/` on LD_LIBRARY_PATH, which beats the rpath: a stale
    // libnvcam.so from an earlier `cargo build` would be tested instead of the fresh one.
    let ld = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    let mut paths = vec![deps_dir()];
    paths.extend(std::env::split_paths(&ld));
    let mut cmd = Command::new(exe);
    cmd.args(args).env("LD_LIBRARY_PATH", std::env::join_paths(paths).expect("library path"));
    let (ok, text) = common::run_logged(cmd, &exe.with_extension("log"), limit);
    (ok, format!("[{}]\n{text}", exe.display()))
}

/// The functions `include/nvcam.h` declares.
fn header_functions() -> BTreeSet<String> {
    let h = std::fs::read_to_string(root().join("include/nvcam.h")).expect("read include/nvcam.h");
    let set: BTreeSet<String> = h
        .lines()
        .filter_map(|l| l.strip_prefix("int32_t "))
        .filter_map(|l| l.split_once('(').map(|(name, _)| name.trim().to_string()))
        .filter(|n| n.starts_with("nvcam_"))
        .collect();
    assert!(set.len() >= 20, "found only {} functions in the header: {set:?}", set.len());
    set
}

/// The `nvcam_*` functions the cdylib exports, by `nm -D` (None if nm is not installed).
fn exported_functions(so: &Path) -> Option<BTreeSet<String>> {
    let o = Command::new("nm").args(["-D", "--defined-only"]).arg(so).output().ok()?;
    if !o.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace().rev();
                let name = f.next()?;
                let kind = f.next()?;
                (kind == "T" && name.starts_with("nvcam_")).then(|| name.to_string())
            })
            .collect(),
    )
}

#[test]
fn c_harness_checks_every_contract() {
    let exe = compile("harness", true);
    let (ok, out) = run(&exe, &[], Duration::from_secs(120));
    println!("{out}");
    assert!(ok, "tests/c/harness.c failed:\n{out}");
    assert!(out.contains("c harness: ") && out.contains("all checks passed"), "no summary line:\n{out}");
}

#[test]
fn dlopen_leak_70_clones_and_threads() {
    // The C program resolves a fixed list by name; it must be the header's whole list, and the
    // library must export nothing the header does not declare.
    let header = header_functions();
    let src = std::fs::read_to_string(root().join("tests/c/dlopen_stress.c")).unwrap();
    let listed: BTreeSet<String> = src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("X(").and_then(|r| r.split(')').next()).map(str::to_string))
        .collect();
    assert_eq!(listed, header, "NVCAM_SYMBOLS in tests/c/dlopen_stress.c differs from include/nvcam.h");
    let so = cdylib();
    match exported_functions(&so) {
        Some(exported) => assert_eq!(exported, header, "the cdylib's nvcam_* exports differ from the header"),
        None => println!("nm not available: export list not compared"),
    }

    let exe = compile("dlopen_stress", false);
    let (ok, out) = run(&exe, &[so.as_os_str()], Duration::from_secs(120));
    println!("{out}");
    assert!(ok, "tests/c/dlopen_stress.c failed:\n{out}");
    assert!(out.contains("dlopen stress: ") && out.contains("all checks passed"), "no summary line:\n{out}");
}

/// `include/nvcam_labview.h` (the Import Shared Library wizard's header) compiles as plain C, its
/// structs have nvcam.h's sizes, and every prototype agrees with nvcam.h's: the same prototypes,
/// taken from nvcam.h with their stdint types, are redeclared after it, which a C compiler
/// rejects if any parameter or return type differs. `__int64` is `long` here (LP64: the width of
/// `int64_t`), as it is `long long` on Windows x64.
#[test]
fn labview_header_compiles_and_agrees_with_nvcam_h() {
    let nvcam_h = std::fs::read_to_string(root().join("include/nvcam.h")).unwrap();
    let lv = std::fs::read_to_string(root().join("include/nvcam_labview.h")).unwrap();
    let mut c = String::from("#include <stdint.h>\n#include \"nvcam_labview.h\"\n");
    let mut redeclared = 0;
    for l in nvcam_h.lines() {
        let Some(name) = l.strip_prefix("int32_t ").and_then(|r| r.split('(').next()) else { continue };
        if lv.lines().any(|x| x.starts_with(&format!("int {name}("))) {
            c.push_str(l);
            c.push('\n');
            redeclared += 1;
        }
    }
    assert!(redeclared >= 25, "only {redeclared} prototypes shared by the two headers");
    let asserts: Vec<&str> = nvcam_h.lines().filter(|l| l.starts_with("NVCAM_STATIC_ASSERT(sizeof(")).collect();
    assert!(asserts.len() >= 5, "nvcam.h's struct size assertions not found");
    for a in asserts {
        c.push_str(&a.replace("NVCAM_STATIC_ASSERT", "_Static_assert"));
        c.push('\n');
    }
    let src = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nvcam-labview-header.c");
    std::fs::write(&src, c).unwrap();
    let target = env!("NVCAM_TARGET");
    let mut cmd = cc::Build::new().target(target).host(target).opt_level(0).cargo_metadata(false).get_compiler().to_command();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-D__int64=long"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src);
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler {cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "include/nvcam_labview.h does not compile or disagrees with nvcam.h:\n{cmd:?}\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
