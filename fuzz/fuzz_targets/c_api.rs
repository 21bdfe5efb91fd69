//! libFuzzer target for the C API: the input bytes are a program of calls (one opcode byte, then
//! the arguments it needs), run on one thread against a library that stays initialized between
//! inputs (with an occasional shutdown/init in the program). Each status must be one the header's
//! `Returns:` line documents for that function; every buffer has guard bytes that must stay
//! untouched. Sources are cheap and local only: fixed test-pattern URLs, and arbitrary bytes
//! behind an unknown scheme (refused by the URL parser), so no input can block on the network.
//!
//! Run: `cargo +nightly fuzz run c_api -- -max_total_time=300` (from the repository root).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvcam::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, CString};
use std::sync::{Mutex, OnceLock};

const GUARD: usize = 32;

fn documented() -> &'static BTreeMap<String, BTreeSet<i32>> {
    static DOC: OnceLock<BTreeMap<String, BTreeSet<i32>>> = OnceLock::new();
    DOC.get_or_init(|| {
        let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../include/nvcam.h")).unwrap();
        let code_of: BTreeMap<&str, i32> = nvcam::ffi::status::ALL.iter().map(|(c, n, _)| (*n, *c)).collect();
        let (mut map, mut pending) = (BTreeMap::new(), None);
        for line in header.lines() {
            if let Some(i) = line.find("Returns:") {
                pending = Some(
                    line[i + 8..]
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .filter_map(|t| code_of.get(t).copied())
                        .collect::<BTreeSet<i32>>(),
                );
            } else if let Some(d) = line.trim_start().strip_prefix("int32_t nvcam_") {
                let name = format!("nvcam_{}", d.split('(').next().unwrap());
                map.insert(name, pending.take().unwrap_or_default());
            }
        }
        // SAFETY: NULL = defaults; a valid level.
        unsafe {
            nvcam_log_init(std::ptr::null(), NVCAM_LOG_OFF);
            nvcam_init(std::ptr::null());
        }
        map
    })
}

fn check(name: &str, code: i32) -> i32 {
    assert!(documented()[name].contains(&code), "{name} returned {code}, which its Returns: line does not list");
    code
}

/// The input, read as a stream of arguments (zeros once it runs out).
struct In<'a>(&'a [u8]);

impl In<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |a, _| (a << 8) | self.u8() as u64)
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = (self.u8() as usize).min(max).min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a.to_vec()
    }
}

struct State {
    cams: Vec<u64>,
    frames: Vec<u64>,
}

static STATE: Mutex<State> = Mutex::new(State { cams: Vec::new(), frames: Vec::new() });

fn pick(i: &mut In, v: &[u64]) -> u64 {
    match i.u8() % 8 {
        0 => 0,
        1 => i.u64(),
        _ if !v.is_empty() => v[i.u8() as usize % v.len()],
        _ => i.u64(),
    }
}

/// A buffer of `len` bytes with guards, at offset `mis` (0..7) from 8-byte alignment.
fn guarded(len: usize, mis: usize) -> (Vec<u64>, usize) {
    (vec![0xa5a5_a5a5_a5a5_a5a5u64; (2 * GUARD + len + mis).div_ceil(8) + 1], GUARD + mis)
}

fn intact(v: &[u64], off: usize, len: usize) -> bool {
    // SAFETY: the Vec's bytes.
    let b = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 8) };
    b[..off].iter().chain(&b[off + len..]).all(|&x| x == 0xa5)
}

fn text(i: &mut In, name: &str, f: impl FnOnce(*mut c_char, i32) -> i32) {
    let len = i.u8() as usize;
    let (mut v, off) = guarded(len, (i.u8() % 8) as usize);
    // SAFETY: inside the Vec.
    let p = unsafe { v.as_mut_ptr().cast::<u8>().add(off) };
    let p = if i.u8() % 16 == 0 { std::ptr::null_mut() } else { p };
    check(name, f(p.cast(), if i.u8() % 16 == 0 { -(len as i32) } else { len as i32 }));
    assert!(intact(&v, off, len), "{name}: guard bytes changed");
}

fuzz_target!(|data: &[u8]| {
    documented();
    let mut st = STATE.lock().unwrap();
    let mut i = In(data);
    let mut steps = 0;
    while !i.0.is_empty() && steps < 64 {
        steps += 1;
        match i.u8() % 16 {
            0 => {
                let url = match i.u8() % 4 {
                    0 => CString::new("testsrc://64x48@30").unwrap(),
                    1 => CString::new("/nonexistent/nvcam-fuzz.mp4").unwrap(),
                    _ => {
                        let mut u = b"bogus://".to_vec();
                        u.extend(i.bytes(64).into_iter().filter(|&b| b != 0));
                        CString::new(u).unwrap()
                    }
                };
                let ff: Vec<u8> = i.bytes(64).into_iter().filter(|&b| b != 0).collect();
                let ff = CString::new(ff).unwrap();
                let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
                // SAFETY: a live struct.
                unsafe { nvcam_camera_options_init(&mut o) };
                o.device = NVCAM_DEVICE_CPU;
                o.open_timeout_ms = 500;
                o.flags = (i.u8() as u32) & !NVCAM_OPEN_ASYNC & !NVCAM_OPEN_NO_PACING;
                o.pool_slots = (i.u8() % 70) as u32;
                let mut cam = 0;
                // SAFETY: valid strings, struct and out-pointer.
                if check("nvcam_camera_open_ex", unsafe { nvcam_camera_open_ex(url.as_ptr(), ff.as_ptr(), &o, &mut cam) }) == NVCAM_OK {
                    st.cams.push(cam);
                    if st.cams.len() > 2 {
                        let c = st.cams.remove(0);
                        check("nvcam_camera_close", nvcam_camera_close(c, 2000));
                    }
                }
            }
            1 => {
                let c = pick(&mut i, &st.cams);
                let mut f = 0;
                // SAFETY: a live out-pointer.
                if check("nvcam_camera_get_frame", unsafe { nvcam_camera_get_frame(c, (i.u8() % 3) as u32, &mut f) }) == NVCAM_OK {
                    st.frames.push(f);
                }
            }
            2 => {
                let f = pick(&mut i, &st.frames);
                let mut c = 0;
                // SAFETY: a live out-pointer.
                if check("nvcam_frame_clone", unsafe { nvcam_frame_clone(f, &mut c) }) == NVCAM_OK {
                    st.frames.push(c);
                }
            }
            3 => {
                let f = pick(&mut i, &st.frames);
                check("nvcam_frame_release", nvcam_frame_release(f));
            }
            4 | 5 => {
                let f = pick(&mut i, &st.frames);
                let len = (i.u64() % 20_000) as usize;
                let pitch = match i.u8() % 4 {
                    0 => 0,
                    1 => 1u64 << (i.u8() % 64),
                    2 => u64::MAX - (i.u8() as u64),
                    _ => i.u8() as u64 * 3,
                };
                let (mut v, off) = guarded(len, (i.u8() % 8) as usize);
                // SAFETY: inside the Vec, `len` writable bytes.
                let p = unsafe { v.as_mut_ptr().cast::<u8>().add(off) };
                let code = check("nvcam_frame_copy_nv12", unsafe { nvcam_frame_copy_nv12(f, p, pitch, len as u64) });
                assert!(!(pitch >= 1 << 61 && code == NVCAM_OK));
                assert!(intact(&v, off, len), "nvcam_frame_copy_nv12: guard bytes changed (pitch {pitch}, len {len})");
            }
            6 => {
                let f = pick(&mut i, &st.frames);
                let mut info: nvcam_frame_info = Default::default();
                info.struct_size = i.u8() as u32;
                // SAFETY: a live struct.
                check("nvcam_frame_info", unsafe { nvcam_frame_info(f, &mut info) });
            }
            7 => {
                let c = pick(&mut i, &st.cams);
                let mut s: nvcam_camera_stats = Default::default();
                s.struct_size = i.u8() as u32;
                // SAFETY: a live struct.
                check("nvcam_camera_stats", unsafe { nvcam_camera_stats(c, &mut s) });
            }
            8 => {
                let c = pick(&mut i, &st.cams);
                // SAFETY: a guarded buffer of the length passed.
                text(&mut i, "nvcam_camera_last_error", |b, l| unsafe { nvcam_camera_last_error(c, b, l) });
            }
            9 => {
                let code = i.u64() as i32;
                // SAFETY: as above.
                text(&mut i, "nvcam_status_text", |b, l| unsafe { nvcam_status_text(code, b, l) });
            }
            10 => {
                let (mut l, mut n) = (0, 0);
                // SAFETY: as above, and live out-pointers.
                text(&mut i, "nvcam_log_pop", |b, len| unsafe { nvcam_log_pop(&mut l, b, len, &mut n) });
            }
            11 => {
                let c = pick(&mut i, &st.cams);
                let mut n = 0;
                // SAFETY: a live out-pointer.
                check("nvcam_registry_force_release_owner", unsafe { nvcam_registry_force_release_owner(c, &mut n) });
            }
            12 => {
                let c = pick(&mut i, &st.cams);
                check("nvcam_camera_close", nvcam_camera_close(c, 2000));
                st.cams.retain(|&x| x != c);
            }
            13 => {
                let mut g: nvcam_gpu_stats = Default::default();
                g.struct_size = i.u8() as u32;
                // SAFETY: a live struct.
                check("nvcam_gpu_stats", unsafe { nvcam_gpu_stats(i.u8() as i8 as i32, &mut g) });
            }
            14 => {
                let c = pick(&mut i, &st.cams);
                check("nvcam_camera_reconnect", nvcam_camera_reconnect(c));
            }
            _ => {
                if i.u8() == 0xff {
                    check("nvcam_shutdown", nvcam_shutdown(5000));
                    st.cams.clear();
                    st.frames.clear();
                    let c = nvcam_config { struct_size: i.u8() as u32, flags: i.u8() as u32, ..Default::default() };
                    // SAFETY: a live struct.
                    check("nvcam_init", unsafe { nvcam_init(&c) });
                    // SAFETY: NULL = defaults.
                    check("nvcam_init", unsafe { nvcam_init(std::ptr::null()) });
                }
            }
        }
    }
    // Bounded state between inputs: release what this input's frames left behind.
    for f in st.frames.drain(..) {
        nvcam_frame_release(f);
    }
});
