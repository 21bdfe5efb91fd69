//! The scripted hostile server (`hostile_server.py` next to this file) as a child process: one
//! attack per server, its port, and how many connections it accepted. Used by the tests' kit
//! (`tests/common/hostile.rs`) and the hostile soak (`examples/hostile_soak.rs`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/hostile_server.py");
/// The scripted server's attacks (`hostile_server.py --mode`), RTSP first.
pub const HOSTILE_RTSP_MODES: [&str; 7] = ["big-header", "big-sdp", "bad-sdp", "auth-loop", "redirect-loop", "silent", "slow"];
pub const HOSTILE_HTTP_MODES: [&str; 4] = ["mjpeg-no-boundary", "mjpeg-huge-length", "mjpeg-65535", "mjpeg-truncated"];

/// The scripted hostile server: a child process that dies with this test.
pub struct Hostile {
    child: Child,
    pub port: u16,
    /// Connections the server accepted so far.
    pub conns: Arc<AtomicUsize>,
}

impl Hostile {
    /// Starts the server for one attack (`jpeg`: the image the MJPEG modes send).
    pub fn start(mode: &str, jpeg: Option<&Path>) -> Hostile {
        let python = std::env::var("NVCAM_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
        let mut cmd = Command::new(&python);
        cmd.arg(SCRIPT).args(["--mode", mode]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(j) = jpeg {
            cmd.arg("--jpeg").arg(j);
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {python} {SCRIPT}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("READY ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("hostile_server.py {mode}: no READY line: {line:?}"));
        // One stderr line per connection the server accepted.
        let conns = Arc::new(AtomicUsize::new(0));
        let (c, err) = (conns.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                if l == "CONN" {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Hostile { child, port, conns }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

