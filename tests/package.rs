//! The Linux package as a C or C++ integrator meets it. `scripts/release/package.sh linux` packs the cdylib
//! this `cargo test` built into the tarball, which is unpacked in a temporary folder. There the C++
//! example builds with CMake from `find_package(nvcam)` alone, and a C program builds with
//! `pkg-config nvcam` alone; both run on a test source, on the CPU. A package whose CMake
//! targets, pkg-config file or headers are missing or point outside the folder fails here.
//! The FFmpeg libraries must resolve into the package's `lib/` (bundled by `scripts/release/package.sh`), not
//! the system's. Linux only: the Windows zip gets the same files from the documented Windows step.

mod common;
use common::{cdylib, root, show};
use std::path::Path;
use std::process::{Command, Output};

/// Runs `cmd`; a missing program fails with what to install (the test must run on CI, never skip).
fn run(what: &str, cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e} (apt-get install cmake pkg-config build-essential: .ci/packages.txt)"));
    assert!(out.status.success(), "{what} failed\n{}", show(&out));
    out
}

const C_PROGRAM: &str = r#"#include <stdio.h>
#include "nvcam.h"

int main(void) {
    char v[128];
    uint64_t cam = 0, frame = 0;
    nvcam_camera_options_t o;
    nvcam_frame_info_t i;
    if (nvcam_init(NULL) != NVCAM_OK || nvcam_version_string(v, sizeof v) != NVCAM_OK) return 1;
    nvcam_camera_options_init(&o);
    o.device = NVCAM_DEVICE_CPU;
    if (nvcam_camera_open("testsrc://160x120@30", &o, &cam) != NVCAM_OK) return 2;
    if (nvcam_camera_get_frame(cam, 5000, &frame) != NVCAM_OK) return 3;
    i.struct_size = sizeof i;
    if (nvcam_frame_info(frame, &i) != NVCAM_OK) return 4;
    printf("%s: a %ux%u frame\n", v, i.width, i.height);
    nvcam_frame_release(frame);
    nvcam_camera_close(cam, 5000);
    return nvcam_shutdown(5000) == NVCAM_OK ? 0 : 5;
}
"#;

#[test]
fn linux_tarball_builds_with_cmake_and_pkg_config_alone() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: the Linux tarball's test; the Windows zip is made by the Windows step");
        return;
    }
    let version = env!("CARGO_PKG_VERSION");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("src")).unwrap();
    run(
        "scripts/release/package.sh linux",
        Command::new("bash").current_dir(root()).args(["scripts/release/package.sh", "linux"]).env("NVCAM_PACKAGE_LIB", cdylib()).env("NVCAM_PACKAGE_DIST", tmp.join("dist")),
    );
    let name = format!("nvcam-{version}-linux-x64");
    run("tar", Command::new("tar").arg("-C").arg(&tmp).arg("-xzf").arg(tmp.join("dist").join(format!("{name}.tar.gz"))));
    let pkg = tmp.join(&name);
    for f in ["libnvcam.so", "include/nvcam.h", "include/nvcam.hpp", "lib/cmake/nvcam/nvcamConfig.cmake", "lib/cmake/nvcam/nvcamConfigVersion.cmake", "lib/pkgconfig/nvcam.pc", "lib/libavcodec_nvcam.so.59", "licenses/FFmpeg/COPYING.LGPLv2.1", "licenses/dav1d/COPYING", "licenses/srt/LICENSE", "LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(pkg.join(f).is_file(), "{name}/{f} is missing from the tarball");
    }

    // C++: the example's sources without the repository's nvcam.hpp beside them, so the package's
    // header and targets are what it builds with.
    let src = tmp.join("src");
    for f in ["example.cpp", "CMakeLists.txt"] {
        std::fs::copy(root().join("bindings/cpp").join(f), src.join(f)).unwrap();
    }
    let build = tmp.join("build");
    run("cmake configure", Command::new("cmake").arg("-S").arg(&src).arg("-B").arg(&build).arg(format!("-DCMAKE_PREFIX_PATH={}", pkg.display())).arg("-DCMAKE_BUILD_TYPE=Release"));
    run("cmake --build", Command::new("cmake").arg("--build").arg(&build));
    let exe = build.join("nvcam_example");
    // FFmpeg comes from the package's lib/ (libnvcam.so's RUNPATH $ORIGIN/lib), whatever the
    // machine has installed: ldd resolves every libav*/libsw* there.
    let ldd = run("ldd", Command::new("ldd").arg(&exe).env_remove("LD_LIBRARY_PATH"));
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let ff: Vec<&str> = ldd.lines().map(str::trim).filter(|l| l.starts_with("libav") || l.starts_with("libsw")).collect();
    assert!(ff.len() >= 4, "the example loads too few FFmpeg libraries:\n{ldd}");
    let lib = pkg.join("lib");
    for l in &ff {
        assert!(l.contains(&format!("=> {}/", lib.display())), "{l}: not the package's lib/\n{ldd}");
    }
    let out = run("the C++ example", bare(&mut Command::new(&exe)).args(["testsrc://320x240@30", "5"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("frame ")).count(), 5, "{text}");
    // The program needs "libnvcam.so", not the path of the folder it was built against.
    let dynamic = run("readelf", Command::new("readelf").arg("-d").arg(&exe));
    let needed = String::from_utf8_lossy(&dynamic.stdout);
    assert!(needed.contains("Shared library: [libnvcam.so]"), "the example does not need libnvcam.so by name:\n{needed}");
    // A version the package is not (0.x: another minor) is refused.
    let mut other = std::fs::read_to_string(src.join("CMakeLists.txt")).unwrap();
    other = other.replace("find_package(nvcam 0.1 REQUIRED)", "find_package(nvcam 0.99 REQUIRED)");
    std::fs::write(src.join("CMakeLists.txt"), other).unwrap();
    let refused = Command::new("cmake").arg("-S").arg(&src).arg("-B").arg(tmp.join("build-other")).arg(format!("-DCMAKE_PREFIX_PATH={}", pkg.display())).output().unwrap();
    assert!(!refused.status.success(), "find_package(nvcam 0.99) accepted version {version}\n{}", show(&refused));

    // C: pkg-config alone, and the same flags by hand (docs/api.md). Each program runs as built:
    // no LD_LIBRARY_PATH, from a folder that is not the package's.
    let c = src.join("c_example.c");
    std::fs::write(&c, C_PROGRAM).unwrap();
    let flags = run("pkg-config", Command::new("pkg-config").args(["--cflags", "--libs", "nvcam"]).env("PKG_CONFIG_PATH", pkg.join("lib/pkgconfig")));
    let flags = String::from_utf8_lossy(&flags.stdout).split_whitespace().map(String::from).collect::<Vec<_>>();
    let by_hand = vec![format!("-I{}", pkg.join("include").display()), format!("-L{}", pkg.display()), format!("-Wl,-rpath,{}", pkg.display()), "-lnvcam".into()];
    let mut ran = Vec::new();
    for (route, flags) in [("pkg-config", flags), ("by hand", by_hand)] {
        let cexe = tmp.join(format!("c_example_{}", route.replace(' ', "_")));
        run(&format!("cc ({route})"), Command::new("cc").args(["-std=c11", "-Wall", "-Werror"]).arg(&c).args(&flags).arg("-o").arg(&cexe));
        let out = run(&format!("the C program ({route}), with no LD_LIBRARY_PATH"), bare(&mut Command::new(&cexe)));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("a 160x120 frame"), "{route}: {text}");
        ran.push(format!("{route}: {}", text.trim()));
    }
    eprintln!("{name}: CMake (nvcam::cpp), pkg-config and by-hand builds ran: {}", ran.join("; "));
}

/// `cmd` as a user's shell starts it: cargo test puts its own folders on LD_LIBRARY_PATH, which
/// would find libnvcam.so for a program whose run path does not. The working folder is the
/// filesystem root, so nothing is found relative to the package either.
fn bare(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("LD_LIBRARY_PATH").current_dir("/")
}

/// `scripts/release/install.sh PREFIX` lays the package out as C and C++ users expect of a library
/// under a prefix: `PREFIX/lib/pkgconfig/nvcam.pc` and `PREFIX/lib/cmake/nvcam/`, the places
/// pkg-config and `find_package` search by default for /usr/local and /usr, so that those need no
/// variables; here a scratch prefix is named to them as any other prefix is. The programs run as
/// built, from /, with no LD_LIBRARY_PATH, with the installed library's FFmpeg from
/// `PREFIX/lib/nvcam/`. Prevents an install whose paths or run paths point back into the package.
#[test]
fn install_to_a_prefix_serves_pkg_config_and_cmake() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: the Linux install script's test");
        return;
    }
    let version = env!("CARGO_PKG_VERSION");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install");
    let _ = std::fs::remove_dir_all(&tmp);
    let prefix = tmp.join("usr/local");
    std::fs::create_dir_all(tmp.join("src")).unwrap();
    run(
        "scripts/release/install.sh",
        Command::new("bash").current_dir(root()).arg("scripts/release/install.sh").arg(&prefix).env("NVCAM_PACKAGE_LIB", cdylib()),
    );
    let pc_path = run("pkg-config's search path", Command::new("pkg-config").args(["--variable", "pc_path", "pkg-config"]));
    let pc_path = String::from_utf8_lossy(&pc_path.stdout);
    assert!(pc_path.split(':').any(|d| d.trim() == "/usr/local/lib/pkgconfig"), "pkg-config does not search /usr/local/lib/pkgconfig: {pc_path}");
    for f in ["lib/libnvcam.so", "lib/nvcam/libavcodec_nvcam.so.59", "include/nvcam.h", "include/nvcam.hpp", "lib/pkgconfig/nvcam.pc", "lib/cmake/nvcam/nvcamConfig.cmake", "share/doc/nvcam/LICENSE-MIT", "share/doc/nvcam/licenses/FFmpeg/COPYING.LGPLv2.1", "share/nvcam/install-manifest.txt"] {
        assert!(prefix.join(f).is_file(), "PREFIX/{f} was not installed");
    }
    let pc = |args: &[&str]| {
        let out = run("pkg-config", Command::new("pkg-config").args(args).arg("nvcam").env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(pc(&["--modversion"]), version);
    let flags = pc(&["--cflags", "--libs"]);
    assert!(flags.contains(&format!("-I{}/include", prefix.display())) && !flags.contains(".."), "pkg-config flags name the prefix plainly: {flags}");
    let c = tmp.join("src/c_example.c");
    std::fs::write(&c, C_PROGRAM).unwrap();
    let cexe = tmp.join("c_example");
    run("cc (installed pkg-config)", Command::new("cc").args(["-std=c11", "-Wall", "-Werror"]).arg(&c).args(flags.split_whitespace()).arg("-o").arg(&cexe));
    let out = run("the C program against the install, with no LD_LIBRARY_PATH", bare(&mut Command::new(&cexe)));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a 160x120 frame"), "{}", show(&out));
    let ldd = run("ldd", Command::new("ldd").arg(&cexe).env_remove("LD_LIBRARY_PATH"));
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    for l in ldd.lines().map(str::trim).filter(|l| l.starts_with("libav") || l.starts_with("libsw") || l.starts_with("libnvcam")) {
        assert!(l.contains(&format!("=> {}/lib/", prefix.display())), "{l}: not from the prefix\n{ldd}");
    }
    for f in ["example.cpp", "CMakeLists.txt"] {
        std::fs::copy(root().join("bindings/cpp").join(f), tmp.join("src").join(f)).unwrap();
    }
    let build = tmp.join("build");
    run("cmake configure", Command::new("cmake").arg("-S").arg(tmp.join("src")).arg("-B").arg(&build).arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())).arg("-DCMAKE_BUILD_TYPE=Release"));
    run("cmake --build", Command::new("cmake").arg("--build").arg(&build));
    let out = run("the C++ example against the install", bare(&mut Command::new(build.join("nvcam_example"))).args(["testsrc://320x240@30", "3"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("frame ")).count(), 3, "{text}");
    eprintln!("installed under {}: pkg-config {version}, C and C++ (find_package) programs ran", prefix.display());
}
