//! A lossy network for UDP protocols other than RTP (SRT): a relay on 127.0.0.1 that forwards
//! datagrams between one client and an upstream port, dropping each one, in either direction,
//! with a given probability (a seeded generator, so a run's pattern is reproducible). It also
//! notes when the upstream's first SRT data packet passed (the sender's clock starts there) and
//! counts what it dropped, so a test can show that losses happened.
//!
//! [`LossyRelay::start_mutating`] makes the same relay a hostile one (the RTP/RTCP legs of
//! `mutating_relay.rs`): each datagram from the upstream is replaced by what a mutator returns.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct LossyRelay {
    /// The port a client sends to instead of the upstream's.
    pub port: u16,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Datagrams dropped / forwarded, both directions together.
    pub dropped: Arc<AtomicU64>,
    pub passed: Arc<AtomicU64>,
    /// When the first SRT data packet (not a control packet) came from the upstream.
    pub first_data: Arc<OnceLock<Instant>>,
}

impl LossyRelay {
    /// Relays 127.0.0.1:`port` ↔ 127.0.0.1:`upstream`, dropping a datagram with probability `loss`.
    pub fn start(upstream: u16, loss: f64, seed: u64) -> LossyRelay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(("127.0.0.1", upstream)).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let port = front.local_addr().unwrap().port();
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let (stop, dropped, passed, first_data) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(OnceLock::new()));
        let threshold = (loss.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        let mut threads = Vec::new();
        for up in [true, false] {
            let (front, back) = (front.try_clone().unwrap(), back.try_clone().unwrap());
            let (client, stop, dropped, passed, first_data) = (client.clone(), stop.clone(), dropped.clone(), passed.clone(), first_data.clone());
            let mut state = seed.wrapping_mul(2).wrapping_add(up as u64) | 1;
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    let (n, to_client) = if up {
                        match front.recv_from(&mut buf) {
                            Ok((n, from)) => {
                                *client.lock().unwrap() = Some(from);
                                (n, None)
                            }
                            Err(_) => continue,
                        }
                    } else {
                        match back.recv(&mut buf) {
                            Ok(n) => {
                                // An SRT packet whose first bit is 0 carries data.
                                if n > 16 && buf[0] & 0x80 == 0 {
                                    first_data.get_or_init(Instant::now);
                                }
                                (n, *client.lock().unwrap())
                            }
                            Err(_) => continue,
                        }
                    };
                    // xorshift64*: one draw per datagram.
                    state ^= state >> 12;
                    state ^= state << 25;
                    state ^= state >> 27;
                    if state.wrapping_mul(0x2545_f491_4f6c_dd1d) < threshold {
                        dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    passed.fetch_add(1, Ordering::Relaxed);
                    if up {
                        let _ = back.send(&buf[..n]);
                    } else if let Some(c) = to_client {
                        let _ = front.send_to(&buf[..n], c);
                    }
                }
            }));
        }
        LossyRelay { port, stop, threads, dropped, passed, first_data }
    }
}

/// What a mutating relay sends on for one datagram from the upstream (none, it, or several).
pub type Mutate = Box<dyn FnMut(&[u8]) -> Vec<Vec<u8>> + Send>;

impl LossyRelay {
    /// A relay whose upstream side is `back` (a bound socket the upstream sends to): datagrams
    /// from it go through `mutate` to 127.0.0.1:`client`; datagrams to the relay's own `port`
    /// go unchanged to 127.0.0.1:`upstream`. Nothing is dropped.
    pub fn start_mutating(back: UdpSocket, client: u16, upstream: u16, mut mutate: Mutate) -> LossyRelay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        }
        let port = front.local_addr().unwrap().port();
        let (stop, dropped, passed, first_data) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(OnceLock::new()));
        let mut threads = Vec::new();
        for up in [true, false] {
            let (front, back) = (front.try_clone().unwrap(), back.try_clone().unwrap());
            let (stop, passed) = (stop.clone(), passed.clone());
            let mut mutate = if up { None } else { Some(std::mem::replace(&mut mutate, Box::new(|p: &[u8]| vec![p.to_vec()]))) };
            threads.push(std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    if up {
                        if let Ok((n, _)) = front.recv_from(&mut buf) {
                            let _ = back.send_to(&buf[..n], ("127.0.0.1", upstream));
                            passed.fetch_add(1, Ordering::Relaxed);
                        }
                    } else if let Ok((n, _)) = back.recv_from(&mut buf) {
                        for p in mutate.as_mut().unwrap()(&buf[..n]) {
                            let _ = front.send_to(&p, ("127.0.0.1", client));
                        }
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        LossyRelay { port, stop, threads, dropped, passed, first_data }
    }
}

impl Drop for LossyRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
