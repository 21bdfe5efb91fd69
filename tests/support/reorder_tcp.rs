//! A restreamer's reordering inside RTSP over TCP: a relay on 127.0.0.1 between one RTSP client
//! and an RTSP server that passes the client's requests and the server's replies as they are,
//! and sends a share of the RTP packets interleaved in the connection (`$`, channel, length)
//! after the next 1-3 RTP packets, as a server that forwards RTP it took over
//! UDP passes the network's reordering on. Nothing is dropped or changed. A seeded generator, so
//! a run's pattern is reproducible; it counts what it reordered, so a test can show that
//! reordering happened.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct ReorderingTcpRelay {
    /// The port a client connects to instead of the server's.
    pub port: u16,
    /// RTP packets sent after later ones / RTP packets passed in all.
    pub reordered: Arc<AtomicU64>,
    pub rtp: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// Both sockets of every connection, shut down at drop so the copying threads end.
    open: Arc<Mutex<Vec<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl ReorderingTcpRelay {
    /// Relays 127.0.0.1:`port` → 127.0.0.1:`upstream`, sending an RTP packet late with
    /// probability `share`.
    pub fn start(upstream: u16, share: f64, seed: u64) -> ReorderingTcpRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (reordered, rtp, stop, open) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
        let threshold = (share.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        let thread = {
            let (reordered, rtp, stop, open) = (reordered.clone(), rtp.clone(), stop.clone(), open.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let Ok((client, _)) = listener.accept() else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    n += 1;
                    client.set_nonblocking(false).unwrap();
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                    for s in [&client, &server] {
                        let _ = s.set_nodelay(true);
                        open.lock().unwrap().push(s.try_clone().unwrap());
                    }
                    // Requests: as they are.
                    let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Write);
                    });
                    let (reordered, rtp) = (reordered.clone(), rtp.clone());
                    let state = seed.wrapping_add(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    std::thread::spawn(move || {
                        let _ = replies(server, client, threshold, state, &reordered, &rtp);
                    });
                }
            })
        };
        ReorderingTcpRelay { port, reordered, rtp, stop, open, thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("rtsp://127.0.0.1:{}/cam", self.port)
    }
}

/// The server's side of one connection: RTSP messages as they come, interleaved RTP packets
/// (even channels) some of them late, RTCP (odd channels) as it comes.
fn replies(server: TcpStream, mut client: TcpStream, threshold: u64, mut state: u64, reordered: &AtomicU64, rtp: &AtomicU64) -> std::io::Result<()> {
    let mut r = BufReader::new(server);
    // A packet held back, and how many packets of its channel go before it.
    let mut held: Option<(Vec<u8>, u32)> = None;
    let mut draw = || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    loop {
        let first = match r.fill_buf()? {
            [] => break,
            b => b[0],
        };
        if first == b'$' {
            let mut head = [0u8; 4];
            r.read_exact(&mut head)?;
            let len = u16::from_be_bytes([head[2], head[3]]) as usize;
            let mut frame = head.to_vec();
            frame.resize(4 + len, 0);
            r.read_exact(&mut frame[4..])?;
            if head[1] % 2 != 0 {
                client.write_all(&frame)?;
                continue;
            }
            rtp.fetch_add(1, Ordering::Relaxed);
            if let Some((late, left)) = held.as_mut() {
                client.write_all(&frame)?;
                *left -= 1;
                if *left == 0 {
                    client.write_all(late)?;
                    held = None;
                }
                continue;
            }
            if draw() < threshold {
                held = Some((frame, 1 + (draw() % 3) as u32));
                reordered.fetch_add(1, Ordering::Relaxed);
            } else {
                client.write_all(&frame)?;
            }
            continue;
        }
        // An RTSP message: its header lines, then Content-Length bytes.
        let mut msg = Vec::new();
        let mut body = 0usize;
        loop {
            let mut line = Vec::new();
            if r.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
            if let Some(v) = text.strip_prefix("content-length:") {
                body = v.trim().parse().unwrap_or(0);
            }
            msg.extend_from_slice(&line);
            if line == b"\r\n" || line == b"\n" {
                break;
            }
        }
        let at = msg.len();
        msg.resize(at + body, 0);
        r.read_exact(&mut msg[at..])?;
        client.write_all(&msg)?;
    }
    if let Some((late, _)) = held {
        client.write_all(&late)?;
    }
    let _ = client.shutdown(Shutdown::Write);
    Ok(())
}

impl Drop for ReorderingTcpRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
