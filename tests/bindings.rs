//! The host-language bindings against the cdylib this `cargo test` built: the Python ctypes suite,
//! the C++ RAII wrapper's example, and LabVIEW's error-code file against `nvcam::ffi::status::ALL`.

mod common;
use common::{cdylib, root, show};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};


/// Runs `cmd` to completion within `limit`, killing it past that; `None` if the program is missing.
fn run(mut cmd: Command, limit: Duration) -> Option<Output> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("spawning {cmd:?}: {e}"),
    };
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).ok();
        v
    });
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let s = child.wait().expect("wait");
            let (o, e) = (t_out.join().unwrap(), t_err.join().unwrap());
            panic!(
                "{cmd:?} ran past {limit:?} and was killed ({s})\n--- stdout\n{}\n--- stderr\n{}",
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&e)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Output { status, stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() })
}

#[test]
fn python_binding_suite_passes() {
    let lib = cdylib();
    let mut cmd = Command::new("python3");
    cmd.arg("bindings/python/test_nvcam.py").current_dir(root()).env("NVCAM_LIB", &lib);
    let Some(out) = run(cmd, Duration::from_secs(300)) else {
        eprintln!("note: no python3 on PATH; skipping the Python binding suite");
        return;
    };
    assert!(out.status.success(), "the Python binding suite failed\n{}", show(&out));
    // unittest reports on stderr; keep the summary visible with --nocapture.
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{}", err.lines().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"));
    assert!(err.contains("\nOK"), "unittest did not report OK\n{}", show(&out));
}

#[test]
fn cpp_wrapper_compiles_and_runs() {
    if !cfg!(unix) {
        eprintln!("note: the C++ example build line is for unix toolchains; skipping");
        return;
    }
    let lib = cdylib();
    let deps = lib.parent().unwrap();
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nvcam_cpp_example");
    let mut cc = Command::new("c++");
    cc.current_dir(root())
        .args(["-std=c++17", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", "include", "-I", "bindings/cpp"])
        .arg("bindings/cpp/example.cpp")
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", deps.display()))
        .arg("-lnvcam")
        .arg(format!("-Wl,-rpath,{}", deps.display()));
    let Some(out) = run(cc, Duration::from_secs(300)) else {
        eprintln!("note: no c++ compiler on PATH; skipping the C++ wrapper test");
        return;
    };
    assert!(out.status.success(), "compiling bindings/cpp/example.cpp failed\n{}", show(&out));

    let mut ex = Command::new(&exe);
    ex.args(["testsrc://320x240@30", "10"]);
    let out = run(ex, Duration::from_secs(120)).expect("the example just built");
    assert!(out.status.success(), "the C++ example failed\n{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("frame ")).count(), 10, "{text}");
    assert!(text.contains("second release: NVCAM_E_STALE_HANDLE (-8013)"), "{text}");
    assert!(text.contains("stats: state=STREAMING"), "{text}");
    assert!(text.contains("delivered=10 "), "{text}");
    assert!(text.trim_end().ends_with("ok"), "{text}");
}

/// `(code, text)` of every `<nierror code="…">text</nierror>` in a LabVIEW error-code file.
fn parse_error_file(xml: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find("<nierror") {
        rest = &rest[i..];
        let open_end = rest.find('>').expect("unterminated <nierror");
        let tag = &rest[..open_end];
        let code = tag
            .split("code=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("no code attribute in {tag}"));
        let code: i32 = code.parse().unwrap_or_else(|_| panic!("bad code {code:?}"));
        let close = rest.find("</nierror>").expect("missing </nierror>");
        let text = rest[open_end + 1..close]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        out.push((code, text));
        rest = &rest[close + "</nierror>".len()..];
    }
    out
}

#[test]
fn labview_error_file_lists_every_status_code() {
    let path = root().join("labview-example/nvcam-errors.txt");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.is_ascii(), "keep the file ASCII: it declares ISO-8859-1 and LabVIEW reads it as such");
    let xml = String::from_utf8(bytes).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\""), "LabVIEW error files start with the XML declaration");
    assert!(xml.contains("<nidocument>") && xml.trim_end().ends_with("</nidocument>"));
    assert_eq!(xml.matches("<nicomment>").count(), 1);
    assert_eq!(xml.matches("<nierror").count(), xml.matches("</nierror>").count());

    let entries = parse_error_file(&xml);
    let expected: Vec<_> = nvcam::ffi::status::ALL.iter().filter(|(c, _, _)| *c != nvcam::NVCAM_OK).collect();
    // What the file should contain, printed when it does not.
    let skeleton: String = expected
        .iter()
        .map(|(c, n, d)| format!("<nierror code=\"{c}\">\r\n{n}: {d}. …\r\n</nierror>\r\n"))
        .collect();

    for (code, name, desc) in &expected {
        let hits: Vec<_> = entries.iter().filter(|(c, _)| c == code).collect();
        assert_eq!(hits.len(), 1, "{name} ({code}) must appear exactly once in {}\n{skeleton}", path.display());
        let want = format!("{name}: {desc}");
        assert!(
            hits[0].1.starts_with(&want),
            "{name} ({code}): the entry must start with {want:?} (nvcam_status_text), got {:?}\n{skeleton}",
            hits[0].1
        );
        assert!((-8999..=-8000).contains(code), "{name} outside LabVIEW's user range");
    }
    for (code, text) in &entries {
        assert!(
            expected.iter().any(|(c, _, _)| c == code),
            "{code} ({text}) is in the error file but not in nvcam::ffi::status::ALL"
        );
    }
    // LabVIEW owns code 0 ("no error"); the file must not redefine it.
    assert!(entries.iter().all(|(c, _)| *c != 0));
    assert_eq!(entries.len(), expected.len());
}
