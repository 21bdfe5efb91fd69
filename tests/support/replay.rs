//! The deterministic RTSP replay server (`rtsp_replay.py` next to this file): an H.264
//! elementary stream as RTP inside the RTSP TCP connection, the same packets dropped in every
//! session, on 127.0.0.1. Python's standard library only, so it runs where GStreamer does not
//! (the GPU machine).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The script: from the GPU bundle (`$BUNDLE_WITH/tests/support`), else from the checkout the
/// test runs in, else from the one it was built in.
fn script() -> PathBuf {
    let rel = "tests/support/rtsp_replay.py";
    let candidates = [
        std::env::var_os("BUNDLE_WITH").map(|w| PathBuf::from(w).join(rel)),
        std::env::var_os("CARGO_MANIFEST_DIR").map(|d| PathBuf::from(d).join(rel)),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file()).unwrap_or_else(|| panic!("{rel} not found (bundle: scripts/gpu-machine/gpu-bundle.sh carries it)"))
}

pub struct ReplayServer {
    child: Child,
    pub port: u16,
    /// Access units in the stream (pictures).
    pub access_units: usize,
    /// RTP packets in one replay, and how many of them every session loses.
    pub packets: usize,
    pub dropped: usize,
    stderr: Arc<Mutex<String>>,
}

impl ReplayServer {
    /// Serves `es` (H.264 Annex B) with about `loss` of its RTP packets dropped in bursts of 1-3,
    /// drawn from `seed`; returns once it listens.
    pub fn start(es: &Path, loss: f64, seed: u64) -> ReplayServer {
        let mut child = Command::new("python3")
            .arg(script())
            .arg("--es")
            .arg(es)
            .args(["--loss", &loss.to_string(), "--seed", &seed.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 (the replay server)");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut err, buf) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = err.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        // Parsing a few MB of H.264 takes a moment on a busy machine.
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the replay server did not start: {}", stderr.lock().unwrap())
        });
        let f: Vec<usize> = line.strip_prefix("READY ").unwrap_or_else(|| panic!("replay server said {line:?}")).split(' ').map(|v| v.parse().unwrap()).collect();
        ReplayServer { child, port: f[0] as u16, access_units: f[1], packets: f[2], dropped: f[3], stderr }
    }

    /// A URL of its own for one client: each path is replayed once (a reconnect after the end
    /// gets 404, not a second copy).
    pub fn url(&self, name: &str) -> String {
        format!("rtsp://127.0.0.1:{}/{name}", self.port)
    }

    /// What the server logged (requests, and each replay's end).
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
