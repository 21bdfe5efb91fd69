//! The docs keep working: every code block in README.md and docs/*.md that claims to be runnable
//! compiles and runs, every relative link resolves, and the README links every page of docs/.
//!
//! A block is runnable when the line right before its opening fence is `<!-- runnable -->`
//! (docs/development.md, "Runnable examples in the docs"):
//!
//! * ` ```c `: compiled as C11 with `-Wall -Wextra -Werror` against `include/nvcam.h`, linked to the
//!   cdylib this `cargo test` built (`<profile>/deps/`, as tests/c_harness.rs finds it), and run.
//! * ` ```python `: run by `python3` with `bindings/python` on `PYTHONPATH` and `NVCAM_LIB` naming
//!   that cdylib (as tests/bindings.rs runs the binding's suite).
//!
//! * ` ```sh `: run by `bash -e` (so one command a line: `a && b` hides a's failure) in a fresh folder that looks like a checkout (every top-level
//!   entry of this one linked in, `target/release` naming the cdylib this `cargo test` built,
//!   `target/ffmpeg-linux` the FFmpeg build) and holds `app.c`, the README's C example, with
//!   `NVCAM_PACKAGE_LIB` naming that cdylib so the release scripts package it instead of running
//!   cargo, and no `LD_LIBRARY_PATH`: within [`SH_LIMIT`]. Lines that need a full cargo build, the
//!   network or root are not marked runnable.
//!
//! Each C and Python block must exit 0 within [`LIMIT`]. The examples use `testsrc://` and closed ports on loopback,
//! so they need no network and no GPU. Linux only in practice: scripts/ci/windows-test.sh leaves this
//! file out under Wine (its SKIP list says why).

mod common;
use common::{cdylib, deps_dir, root, run_logged as run};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const MARK: &str = "<!-- runnable -->";
const LIMIT: Duration = Duration::from_secs(60);
/// A shell block packs, unpacks, compiles and configures CMake: a few seconds each, idle.
const SH_LIMIT: Duration = Duration::from_secs(300);


/// README.md and docs/*.md: the pages whose runnable blocks run.
fn doc_pages() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

struct Block {
    /// `README.md:123`: the file and line of the opening fence.
    place: String,
    lang: String,
    code: String,
}

/// The runnable blocks of `path`. A marker that is not followed by a fenced block is an error, so
/// a block cannot stop being checked by an edit that separates the two.
fn runnable_blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rel = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() != MARK {
            continue;
        }
        let fence = lines.get(i + 1).copied().unwrap_or("");
        let lang = fence.strip_prefix("```").unwrap_or_else(|| {
            panic!("{rel}:{}: `{MARK}` must be directly followed by a fenced code block", i + 1)
        });
        let lang = lang.trim().to_string();
        let end = (i + 2..lines.len())
            .find(|&j| lines[j].trim_end() == "```")
            .unwrap_or_else(|| panic!("{rel}:{}: the runnable block never closes", i + 2));
        let code = lines[i + 2..end].iter().map(|l| format!("{l}\n")).collect();
        out.push(Block { place: format!("{rel}:{}", i + 2), lang, code });
    }
    out
}

fn blocks_of(lang: &str) -> Vec<Block> {
    let all: Vec<Block> = doc_pages().iter().flat_map(|p| runnable_blocks(p)).collect();
    for b in &all {
        assert!(
            b.lang == "c" || b.lang == "python" || b.lang == "sh",
            "{}: runnable blocks are ```c, ```python or ```sh, not ```{}",
            b.place,
            b.lang
        );
    }
    all.into_iter().filter(|b| b.lang == lang).collect()
}

/// A file name for a block: `README.md:70` → `docs-README.md-70`.
fn stem(b: &Block) -> String {
    format!("docs-{}", b.place.replace(['/', ':'], "-"))
}


#[test]
fn runnable_c_blocks_compile_and_run() {
    let blocks = blocks_of("c");
    assert!(blocks.len() >= 2, "expected the README's and troubleshooting.md's C examples, found {}", blocks.len());
    let target = env!("NVCAM_TARGET");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let deps = deps_dir();
    cdylib();
    let mut failed = Vec::new();
    for b in &blocks {
        let src = tmp.join(format!("{}.c", stem(b)));
        let exe = tmp.join(stem(b));
        std::fs::write(&src, &b.code).expect("write C source");
        let mut cc = cc::Build::new()
            .target(target)
            .host(target)
            .opt_level(0)
            .cargo_metadata(false)
            .get_compiler()
            .to_command();
        cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .arg("-I")
            .arg(root().join("include"))
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(&deps)
            .arg("-lnvcam")
            .arg(format!("-Wl,-rpath,{}", deps.display()));
        let (ok, text) = run(cc, &tmp.join(format!("{}.cc.log", stem(b))), LIMIT);
        if !ok {
            failed.push(format!("{}: does not compile\n{text}", b.place));
            continue;
        }
        // cargo puts `<profile>/` before `deps/` on LD_LIBRARY_PATH, which beats the rpath: a stale
        // library from an earlier `cargo build` would run instead of the fresh one.
        let ld = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
        let mut paths = vec![deps.clone()];
        paths.extend(std::env::split_paths(&ld));
        let mut cmd = Command::new(&exe);
        cmd.env("LD_LIBRARY_PATH", std::env::join_paths(paths).expect("library path"));
        let (ok, text) = run(cmd, &tmp.join(format!("{}.log", stem(b))), LIMIT);
        println!("--- {} (C)\n{text}", b.place);
        if !ok {
            failed.push(format!("{}: compiles, but its run failed\n{text}", b.place));
        }
    }
    assert!(failed.is_empty(), "{} of {} runnable C blocks failed:\n{}", failed.len(), blocks.len(), failed.join("\n"));
}

/// The test below runs on Linux only, but the Windows step builds every test executable for Windows.
#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}
#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}

/// The README's C example, built by the `cc` line in its comment exactly as written and run as a
/// user runs it: no `LD_LIBRARY_PATH`, from another folder. The line names `include` and
/// `target/release` relative to the checkout; a scratch folder links those names to the header and
/// to the cdylib this `cargo test` built, so a stale `target/release` cannot stand in for it.
#[test]
fn readme_c_build_line_runs_as_written() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: the README's cc line is for Linux");
        return;
    }
    let block = blocks_of("c").into_iter().find(|b| b.place.starts_with("README.md:")).expect("the README's runnable C block");
    let line = block
        .code
        .lines()
        .find_map(|l| l.split("/* ").nth(1).filter(|c| c.starts_with("cc app.c")))
        .and_then(|c| c.split(" */").next())
        .unwrap_or_else(|| panic!("{}: no `/* cc app.c ... */` comment", block.place))
        .to_string();
    cdylib();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-readme-cc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("target")).expect("scratch folder");
    symlink(&root().join("include"), &dir.join("include")).expect("symlink include");
    symlink(&deps_dir(), &dir.join("target/release")).expect("symlink target/release");
    std::fs::write(dir.join("app.c"), &block.code).expect("write app.c");
    let mut cc = Command::new("sh");
    cc.arg("-c").arg(&line).current_dir(&dir);
    let (ok, text) = run(cc, &dir.join("cc.log"), LIMIT);
    assert!(ok, "{}: `{line}` failed\n{text}", block.place);
    let mut app = Command::new(dir.join("a.out"));
    app.env_remove("LD_LIBRARY_PATH").current_dir("/");
    let (ok, text) = run(app, &dir.join("a.out.log"), LIMIT);
    assert!(ok, "{}: built by `{line}`, ./a.out did not run with no LD_LIBRARY_PATH\n{text}", block.place);
    println!("`{line}`: a.out ran from / with no LD_LIBRARY_PATH\n{text}");
}

/// The shell blocks, each in its own fresh folder as a user pastes them into a checkout: the
/// documented pkg-config, by-hand cc and CMake routes against the tarball and the install script,
/// line by line (`bash -e`: a line that fails fails the block). Prevents a documented command that
/// does not run as written, as `PKG_CONFIG_PATH=... cc $(pkg-config ...)` did.
#[test]
fn runnable_sh_blocks_run_in_a_fresh_folder() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: the docs' shell blocks are for Linux");
        return;
    }
    let blocks = blocks_of("sh");
    assert!(blocks.len() >= 2, "expected api.md's tarball and install blocks, found {}", blocks.len());
    let app = blocks_of("c").into_iter().find(|b| b.place.starts_with("README.md:")).expect("the README's runnable C block");
    let lib = cdylib();
    let mut failed = Vec::new();
    for b in &blocks {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(stem(b));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("target")).expect("fresh folder");
        for e in std::fs::read_dir(root()).expect("checkout") {
            let name = e.expect("checkout entry").file_name();
            match name.to_str().unwrap_or("") {
                "target" | "dist" | ".git" => {}
                // The release scripts copy this folder into the package: a link would go in as a link.
                "labview-example" => {
                    let st = Command::new("cp").arg("-a").arg(root().join(&name)).arg(&dir).status().expect("cp");
                    assert!(st.success(), "copy labview-example");
                }
                _ => symlink(&root().join(&name), &dir.join(&name)).expect("link a checkout entry"),
            }
        }
        symlink(&deps_dir(), &dir.join("target/release")).expect("link target/release");
        symlink(&root().join("target/ffmpeg-linux"), &dir.join("target/ffmpeg-linux")).expect("link target/ffmpeg-linux");
        std::fs::write(dir.join("app.c"), &app.code).expect("write app.c");
        std::fs::write(dir.join("block.sh"), &b.code).expect("write the block");
        let mut cmd = Command::new("bash");
        cmd.args(["-e", "block.sh"]).current_dir(&dir).env_remove("LD_LIBRARY_PATH").env("NVCAM_PACKAGE_LIB", &lib);
        let (ok, text) = run(cmd, &dir.join("block.log"), SH_LIMIT);
        println!("--- {} (sh)\n{text}", b.place);
        if !ok {
            failed.push(format!("{}: failed\n{text}", b.place));
        }
    }
    assert!(failed.is_empty(), "{} of {} runnable shell blocks failed:\n{}", failed.len(), blocks.len(), failed.join("\n"));
}

/// What the README says a build without nvcam's FFmpeg shows first: cargo prints a build script's
/// `cargo::error` line before its output, and the pkg-config wrapper that ffmpeg-sys-next's build
/// script runs (its child, as here: `sh -c` stands for the build script) says on that script's
/// stdout to run the build script. Prevents ffmpeg-sys-next's advice (FFMPEG_DIR, vcpkg, its
/// `build` feature: all wrong for nvcam) being the first thing a newcomer reads.
#[test]
fn a_build_without_nvcams_ffmpeg_first_says_to_build_it() {
    if !cfg!(target_os = "linux") {
        eprintln!("note: the wrapper is the Linux target's");
        return;
    }
    // A checkout without target/ffmpeg-linux: the wrapper finds the build from its own place.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-ffmpeg-checkout");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("scripts/build")).expect("fresh folder");
    let wrapper = dir.join("scripts/build/pkg-config-ffmpeg-linux.sh");
    std::fs::copy(root().join("scripts/build/pkg-config-ffmpeg-linux.sh"), &wrapper).expect("copy the wrapper");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"sh "$0" --libs --cflags libavutil; echo "exit $?""#)
        .arg(&wrapper)
        .env("OUT_DIR", &dir)
        .output()
        .expect("sh");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let want = format!("nvcam links only its own FFmpeg build, and {} has none: run 'bash scripts/build/build-ffmpeg-linux.sh'", dir.join("target/ffmpeg-linux/lib/pkgconfig").display());
    assert!(stdout.starts_with(&format!("cargo::error={want}")), "the build script's stdout (what cargo reads) lacks nvcam's message first:\n{stdout}");
    assert!(stdout.ends_with("exit 1\n"), "the wrapper must fail:\n{stdout}");
    assert!(stderr.contains(&want), "pkg-config's stderr (what ffmpeg-sys-next folds into its message) lacks nvcam's:\n{stderr}");
}

#[test]
fn runnable_python_blocks_run() {
    let blocks = blocks_of("python");
    assert!(blocks.len() >= 2, "expected the README's and python.md's Python examples, found {}", blocks.len());
    if Command::new("python3").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        eprintln!("note: no python3 on PATH; the {} runnable Python blocks were not run", blocks.len());
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let lib = cdylib();
    let mut failed = Vec::new();
    for b in &blocks {
        let src = tmp.join(format!("{}.py", stem(b)));
        std::fs::write(&src, &b.code).expect("write Python source");
        let mut cmd = Command::new("python3");
        cmd.arg(&src)
            .current_dir(tmp)
            .env("PYTHONPATH", root().join("bindings/python"))
            .env("NVCAM_LIB", &lib)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        let (ok, text) = run(cmd, &tmp.join(format!("{}.py.log", stem(b))), LIMIT);
        println!("--- {} (Python)\n{text}", b.place);
        if !ok {
            failed.push(format!("{}: failed\n{text}", b.place));
        }
    }
    assert!(failed.is_empty(), "{} of {} runnable Python blocks failed:\n{}", failed.len(), blocks.len(), failed.join("\n"));
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown file outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut in_fence = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                in_fence = !in_fence;
                return false;
            }
            !in_fence
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading also gets `-1`, `-2`, ...).
fn anchors(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut set = BTreeSet::new();
    for l in prose(&text) {
        let h = l.trim_start_matches('#');
        if h.len() < l.len() && h.starts_with(' ') {
            let s = slug(h);
            let mut name = s.clone();
            let mut n = 0;
            while !set.insert(name.clone()) {
                n += 1;
                name = format!("{s}-{n}");
            }
        }
    }
    set
}

/// `(target)` of every `[text](target)` in the prose of `text`.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in prose(text) {
        let mut rest = l;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn relative_links_resolve() {
    let mut pages = doc_pages();
    pages.push(root().join("labview-example/README.md"));
    let mut bad = Vec::new();
    let mut n = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let rel = page.strip_prefix(root()).unwrap().display().to_string();
        for t in link_targets(&text) {
            if t.contains("://") || t.starts_with("mailto:") {
                continue;
            }
            n += 1;
            let (file, anchor) = match t.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (t.as_str(), None),
            };
            let target = if file.is_empty() { page.clone() } else { page.parent().unwrap().join(file) };
            if !target.exists() {
                bad.push(format!("{rel}: ({t}): {} does not exist", target.display()));
                continue;
            }
            if let Some(a) = anchor {
                if target.extension().is_some_and(|x| x == "md") && !anchors(&target).contains(a) {
                    bad.push(format!("{rel}: ({t}): no heading with anchor #{a} in {file}"));
                }
            }
        }
    }
    assert!(n >= 20, "found only {n} relative links: is the link parser broken?");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn readme_links_every_docs_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for page in doc_pages().iter().skip(1) {
        let name = page.file_name().unwrap().to_str().unwrap();
        assert!(readme.contains(&format!("](docs/{name})")), "README.md does not link docs/{name}");
    }
}
