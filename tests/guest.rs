//! nvcam is a guest in its host's process: whatever FFmpeg the host has loaded (the distribution's,
//! of the same major versions, through python3-av, python3-opencv, gst-libav or its own link), and
//! whichever comes first, nvcam runs on its own build, with its patches, and the host's FFmpeg
//! keeps its own log callback.
//!
//! Three hosts, each a process of its own that prints what it saw (tests/c/guest_host.c's lines):
//! a C program linked against Debian's libavutil.so.57 and libavformat.so.59 ahead of libnvcam,
//! and Python (tests/support/guest_host.py, nvcam's binding) loading Debian's libavformat.so.59
//! with RTLD_GLOBAL before libnvcam, or after it. In each, nvcam must refuse an rtsps camera whose
//! certificate its CA did not sign before any RTSP request (Debian's FFmpeg ignores `ca_file` and
//! plays), decode AV1 (dav1d) and report RTP packets lost over TCP (Debian's FFmpeg reports none).
//! The servers are real (tests/support/rtsp.rs's GStreamer RTSP server, TLS and a lossy network).

mod common;
#[path = "support/rtsp.rs"]
mod rtsp;

use common::*;
use nvcam::{NVCAM_E_TLS_VERIFY, NVCAM_OK};
use rtsp::{RtspServer, Stream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// One host at a time: each runs two RTSP servers and decodes, on a 2-core machine.
static ONE_HOST: Mutex<()> = Mutex::new(());

/// The distribution's FFmpeg that the hosts load (Debian's libavformat59 and libavutil57, from
/// the `ffmpeg` package in .ci/packages.txt).
const DEBIAN_AVFORMAT: &str = "libavformat.so.59";

/// The servers and files of one host's run.
struct Scene {
    tls: RtspServer,
    lossy: RtspServer,
    wrong_ca: PathBuf,
    av1: PathBuf,
}

impl Scene {
    fn start(name: &str) -> Scene {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvcam-guest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let openssl = |args: &[&str]| {
            let o = Command::new("openssl").args(args).current_dir(&dir).output().expect("the openssl CLI");
            assert!(o.status.success(), "openssl {args:?}: {}", show(&o));
        };
        // The camera's own certificate (IP 127.0.0.1), and a CA that signed nothing here.
        for (name, ext) in [("camera", &["-addext", "subjectAltName=IP:127.0.0.1"][..]), ("other_ca", &[][..])] {
            let (subj, key, crt) = (format!("/CN=nvcam guest {name}"), format!("{name}.key"), format!("{name}.crt"));
            let mut args = vec!["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", &subj, "-keyout", &key, "-out", &crt];
            args.extend_from_slice(ext);
            openssl(&args);
        }
        let pem = dir.join("camera.pem");
        let cert_and_key = std::fs::read_to_string(dir.join("camera.crt")).unwrap() + &std::fs::read_to_string(dir.join("camera.key")).unwrap();
        std::fs::write(&pem, cert_and_key).unwrap();
        let av1 = clip("av1_160x120.mkv", "160x120", 20, "libaom-av1", &["-cpu-used", "8", "-row-mt", "1", "-g", "10"]);
        Scene {
            tls: RtspServer::start(Stream::default().size(160, 120).bitrate(300).tls(pem.to_str().unwrap())),
            lossy: RtspServer::start(Stream::default().network(0.05, 0, 0.0)),
            wrong_ca: dir.join("other_ca.crt"),
            av1,
        }
    }

    /// The host's arguments: RTSPS_URL WRONG_CA_FILE AV1_FILE LOSSY_RTSP_URL.
    fn args(&self) -> Vec<String> {
        vec![
            format!("rtsps://127.0.0.1:{}/cam", self.tls.port),
            self.wrong_ca.display().to_string(),
            self.av1.display().to_string(),
            self.lossy.url(),
        ]
    }

    /// Runs `cmd` (a host given [`Scene::args`]) and checks everything it reports.
    fn check(&self, host: &str, mut cmd: Command, log_check: bool) {
        let ld = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
        // cargo puts `<profile>/` before `deps/`: the fresh libnvcam.so first (see tests/c_harness.rs).
        let paths = std::iter::once(deps_dir()).chain(std::env::split_paths(&ld)).collect::<Vec<_>>();
        cmd.args(self.args()).env("LD_LIBRARY_PATH", std::env::join_paths(paths).unwrap()).env("NVCAM_LIB", cdylib());
        let slug: String = host.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvcam-guest-{slug}.log"));
        let (ok, out) = run_logged(cmd, &log, Duration::from_secs(60));
        let line = |key: &str| -> Vec<String> {
            let l = out.lines().find_map(|l| l.strip_prefix(&format!("{key} "))).unwrap_or_else(|| panic!("{host}: no {key} line\n{out}"));
            l.split(' ').map(str::to_string).collect()
        };
        let code = |v: &[String]| v[0].parse::<i32>().unwrap();
        assert_eq!(code(&line("INIT")), NVCAM_OK, "{host}: nvcam_init\n{out}");
        // Not vacuous: the host's FFmpeg is in the process beside nvcam's own.
        let mapped: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("MAPPED ")).collect();
        let base = |p: &&str| p.rsplit('/').next().unwrap_or(p).to_string();
        assert!(mapped.iter().map(base).any(|b| b == DEBIAN_AVFORMAT || b.starts_with(&format!("{DEBIAN_AVFORMAT}."))), "{host}: Debian's libavformat is not mapped\n{out}");
        assert!(mapped.iter().map(base).any(|b| b.starts_with("libavformat_nvcam.so.59")), "{host}: nvcam's libavformat is not mapped\n{out}");
        // A wrong CA is a certificate refusal, before any RTSP request reached the server.
        let tls = line("TLS");
        assert_eq!(code(&tls), NVCAM_E_TLS_VERIFY, "{host}: the rtsps camera with a wrong CA\n{out}");
        assert!(tls.join(" ").contains("unknown issuer"), "{host}: {out}");
        assert_eq!(self.tls.setups(), Vec::<String>::new(), "{host}: RTSP reached the server whose certificate failed\n{}", self.tls.stderr_text());
        let av1 = line("AV1");
        assert_eq!((code(&av1), av1[1].as_str(), av1[2].as_str()), (NVCAM_OK, "160", "120"), "{host}: AV1 through dav1d\n{out}");
        let loss = line("LOSS");
        assert_eq!(code(&loss), NVCAM_OK, "{host}: the lossy camera\n{out}");
        let lost: u64 = loss[1].parse().unwrap();
        assert!(lost > 0, "{host}: no RTP loss reported over TCP through a 5 % lossy server ({} frames)\n{out}", loss[2]);
        if log_check {
            let l = line("HOSTLOG");
            assert_eq!((l[0].as_str(), l[1].as_str()), ("1", "0"), "{host}: the host's av_log callback: its own line seen, lines not its own\n{out}");
        }
        assert!(ok, "{host} failed\n{out}");
    }
}

/// The C host, linked with Debian's FFmpeg first on its link line, then libnvcam.
fn c_host() -> PathBuf {
    let target = env!("NVCAM_TARGET");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nvcam-guest-host");
    let deps = deps_dir();
    cdylib();
    let mut cmd = cc::Build::new().target(target).host(target).opt_level(1).cargo_metadata(false).get_compiler().to_command();
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("tests/c/guest_host.c"))
        .arg("-o")
        .arg(&out)
        .args(["-Wl,--no-as-needed", "-l:libavutil.so.57", &format!("-l:{DEBIAN_AVFORMAT}")])
        .arg("-L")
        .arg(&deps)
        .arg("-lnvcam")
        .arg(format!("-Wl,-rpath,{}", deps.display()));
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler {cmd:?}: {e}"));
    assert!(o.status.success(), "compiling tests/c/guest_host.c against Debian's FFmpeg (libavformat59, libavutil57):\n{cmd:?}\n{}", show(&o));
    out
}

fn python_host(order: &str) -> Command {
    let python = std::env::var("NVCAM_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let mut cmd = Command::new(python);
    cmd.arg(root().join("tests/support/guest_host.py")).arg(order);
    cmd
}

/// A C application linked against the distribution's FFmpeg, which sets its own av_log callback:
/// nvcam still verifies certificates, decodes AV1 and reports loss, and the application's av_log
/// line still reaches its callback, with none of nvcam's FFmpeg lines. Prevents: nvcam bound to
/// the host's unpatched FFmpeg by sonames (no certificate check, no loss report), and nvcam and
/// the host taking each other's log callback.
#[test]
fn c_host_linked_to_the_distributions_ffmpeg_keeps_nvcams_own_and_its_log() {
    let _one = ONE_HOST.lock().unwrap_or_else(|e| e.into_inner());
    let exe = c_host();
    Scene::start("c").check("C host", Command::new(exe), true);
}

/// Python that loaded Debian's libavformat.so.59 with RTLD_GLOBAL before libnvcam (as
/// `import av` or `import cv2` does first). Prevents: the loader reusing the host's libraries
/// for nvcam's by soname, or binding nvcam's symbols to the first definition in the global scope.
#[test]
fn python_that_loaded_the_distributions_ffmpeg_first_keeps_nvcams_own() {
    let _one = ONE_HOST.lock().unwrap_or_else(|e| e.into_inner());
    Scene::start("py-first").check("Python, Debian's FFmpeg first", python_host("first"), false);
}

/// Python that loads Debian's libavformat.so.59 with RTLD_GLOBAL after libnvcam, before
/// nvcam_init. Prevents: nvcam's lazily bound calls resolving to the host's FFmpeg once it joins
/// the global scope.
#[test]
fn python_that_loads_the_distributions_ffmpeg_after_nvcam_keeps_nvcams_own() {
    let _one = ONE_HOST.lock().unwrap_or_else(|e| e.into_inner());
    Scene::start("py-after").check("Python, Debian's FFmpeg after nvcam", python_host("after"), false);
}

/// Every FFmpeg function libnvcam.so imports carries nvcam's private symbol version
/// (`NVCAM_LIBAVFORMAT_59`), never FFmpeg's own (`LIBAVFORMAT_59`) or none. Prevents: a reference
/// that the loader may bind to the first libavformat.so.59 in the process, the host's.
#[test]
fn libnvcam_imports_ffmpeg_only_at_nvcams_own_versions() {
    let o = Command::new("objdump").arg("-T").arg(cdylib()).output().expect("objdump (binutils)");
    assert!(o.status.success(), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let mut ffmpeg = 0;
    for l in text.lines().filter(|l| l.contains("*UND*")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let name = f[f.len() - 1];
        if !["av_", "avcodec_", "avformat_", "avdevice_", "avutil_", "sws_", "avio_", "avfilter_"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        ffmpeg += 1;
        let version = f[f.len() - 2];
        assert!(version.starts_with("(NVCAM_LIB") || version.starts_with("NVCAM_LIB"), "libnvcam.so imports {name} at {version}: {l}");
    }
    assert!(ffmpeg > 50, "only {ffmpeg} FFmpeg imports found in libnvcam.so:\n{text}");
}
