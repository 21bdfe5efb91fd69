//! Processes of a shared camera (`examples/share_peer.rs`) as the sharing tests start, read and
//! kill them (SIGKILL on Linux, TerminateProcess on Windows: neither lets the process clean up).

use super::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Stdio};

/// The peer program, built by `cargo test` with the tests (examples are built with them), or the
/// GPU bundle's copy (`GPU_BUNDLE`).
pub fn peer_program() -> PathBuf {
    if let Ok(b) = std::env::var("GPU_BUNDLE") {
        return PathBuf::from(b).join("bin").join("share_peer");
    }
    let p = deps_dir().parent().expect("profile dir").join("examples").join(format!("share_peer{}", std::env::consts::EXE_SUFFIX));
    assert!(
        p.is_file(),
        "{} is missing: run the whole test command (cargo test builds examples), or build it with `cargo build --release --features test-hooks --example share_peer`",
        p.display()
    );
    let age = |q: &std::path::Path| std::fs::metadata(q).and_then(|m| m.modified()).expect("mtime");
    assert!(age(&p) >= age(&cdylib()), "{} is older than the library it tests: build it again", p.display());
    p
}

/// A running peer process and its stdout, line by line.
pub struct Peer {
    pub child: Child,
    out: BufReader<ChildStdout>,
    pub lines: Vec<String>,
}

impl Peer {
    pub fn start(args: &[&str]) -> Peer {
        Self::start_as(args, None)
    }

    pub fn start_as(args: &[&str], uid: Option<u32>) -> Peer {
        Self::start_in(args, uid, &[])
    }

    /// Starts the peer as user `uid` (its group the same number) with supplementary `groups`
    /// (the calling process must be root to play another user).
    pub fn start_in(args: &[&str], uid: Option<u32>, groups: &[u32]) -> Peer {
        let mut c = Command::new(peer_program());
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).env("NVCAM_LOG_LEVEL", "warn");
        #[cfg(target_os = "linux")]
        if let Some(u) = uid {
            use std::os::unix::process::CommandExt;
            let groups = groups.to_vec();
            // SAFETY: only async-signal-safe calls between fork and exec. The groups are set
            // here, before the user changes (std's own uid/gid would drop them).
            unsafe {
                c.pre_exec(move || {
                    let ok = libc::setgroups(groups.len(), groups.as_ptr()) == 0 && libc::setgid(u) == 0 && libc::setuid(u) == 0;
                    if ok {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        assert!(uid.is_none() && groups.is_empty(), "another user's process is started on Linux only");
        let mut child = c.spawn().expect("start share_peer");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        Peer { child, out, lines: Vec::new() }
    }

    /// Reads lines until one starts with `prefix` (returned) or the process ends (panics, with
    /// what it printed).
    pub fn until(&mut self, prefix: &str) -> String {
        loop {
            let mut l = String::new();
            if self.out.read_line(&mut l).expect("read a line") == 0 {
                let err = self.stderr();
                panic!("share_peer ended before printing '{prefix}': {:?}\nstdout: {:?}\nstderr: {err}", self.child.try_wait(), self.lines);
            }
            let l = l.trim_end().to_string();
            self.lines.push(l.clone());
            if l.starts_with(prefix) {
                return l;
            }
        }
    }

    /// Waits for the process to end; its status and the rest of its stdout.
    pub fn finish(&mut self) -> (bool, Vec<String>) {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.out, &mut rest).expect("stdout");
        self.lines.extend(rest.lines().map(str::to_string));
        let ok = self.child.wait().expect("wait").success();
        (ok, self.lines.clone())
    }

    pub fn stderr(&mut self) -> String {
        let mut e = String::new();
        if let Some(mut s) = self.child.stderr.take() {
            let _ = self.child.kill();
            let _ = std::io::Read::read_to_string(&mut s, &mut e);
        }
        e
    }

    pub fn kill9(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: a signal to our own child, which has not been waited for.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL)
        };
        // TerminateProcess: the process ends where it is, as with SIGKILL.
        #[cfg(windows)]
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `F <seq> <hash>` lines: hash by sequence number.
pub fn frames_of(lines: &[String]) -> BTreeMap<u64, u64> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("F "))
        .map(|l| {
            let (s, h) = l.split_once(' ').expect("F seq hash");
            (s.parse().expect("seq"), u64::from_str_radix(h, 16).expect("hash"))
        })
        .collect()
}

/// The `S` line's numbers: decoded, delivered, dropped, skipped, state, source decoded.
pub fn stats_line(lines: &[String]) -> Vec<u64> {
    let s = lines.iter().find_map(|l| l.strip_prefix("S ")).unwrap_or_else(|| panic!("no S line in {lines:?}"));
    s.split(' ').map(|v| v.parse().expect("a number")).collect()
}

