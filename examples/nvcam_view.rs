//! Shows frames flowing: opens a camera (the built-in test source when no URL is given), prints
//! one stats line per second, and writes the latest frame as a PNG snapshot.
//!
//!   cargo run --release --example nvcam_view -- --help
//!
//! It uses only the C API, as a host program would (through the Rust names of the same functions).

use nvcam::*;
use std::ffi::CString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn check(what: &str, code: i32) {
    if code != NVCAM_OK {
        let mut buf = vec![0u8; 1024];
        // SAFETY: buf is writable for buf.len() bytes, the length nvcam_last_error is given.
        unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
        let msg = String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
        eprintln!("{what} failed: {code} {msg}");
        std::process::exit(1);
    }
}

const DEFAULT_URL: &str = "testsrc://1280x720@30";
const DEFAULT_SECONDS: u64 = 5;

/// The snapshot's default place: the OS temp folder, so a run leaves nothing in the checkout.
fn default_png() -> PathBuf {
    std::env::temp_dir().join("nvcam_snapshot.png")
}

fn usage() -> String {
    format!(
        "usage: nvcam_view [URL] [--seconds N] [--png PATH] [--device N|-1]

Opens URL (rtsp://..., a file, testsrc://WxH@FPS), prints one stats line per second and writes
the latest frame as a PNG.

  URL            the source (default: {DEFAULT_URL})
  --seconds N    how long to run, in whole seconds (default: {DEFAULT_SECONDS})
  --png PATH     where the snapshot goes (default: {})
  --device N|-1  GPU N, or -1 for the CPU (default: 0, the CPU when there is no GPU)
  -h, --help     this text",
        default_png().display()
    )
}

struct Args {
    url: String,
    seconds: u64,
    png: PathBuf,
    device: i32,
}

/// Strict: an unknown flag, a missing or bad value or a second URL is an error, so a typo is
/// never taken for the URL or silently ignored. `Ok(None)` is --help.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args { url: DEFAULT_URL.into(), seconds: DEFAULT_SECONDS, png: default_png(), device: 0 };
    let mut url: Option<String> = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--seconds" => {
                let v = value("--seconds")?;
                a.seconds = v.parse().map_err(|_| format!("--seconds takes whole seconds, not '{v}'"))?;
            }
            "--png" => a.png = value("--png")?.into(),
            "--device" => {
                let v = value("--device")?;
                a.device = v.parse().ok().filter(|d| *d >= -1).ok_or_else(|| format!("--device takes a GPU number or -1, not '{v}'"))?;
            }
            f if f.starts_with('-') => return Err(format!("unknown option '{f}'")),
            u => {
                if let Some(first) = &url {
                    return Err(format!("one URL only: got '{first}' and '{u}'"));
                }
                url = Some(u.to_string());
            }
        }
    }
    if let Some(u) = url {
        a.url = u;
    }
    Ok(Some(a))
}

fn main() {
    let Args { url, seconds, png, device } = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", usage());
            return;
        }
        Err(e) => {
            eprintln!("nvcam_view: {e}\n\n{}", usage());
            std::process::exit(2);
        }
    };
    // SAFETY: every pointer passed below is to a live local of the type the call takes, and every
    // frame handle is released once.
    unsafe {
        check("nvcam_log_init", nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_INFO));
        check("nvcam_init", nvcam_init(std::ptr::null()));
        let mut opts: nvcam_camera_options = std::mem::zeroed();
        check("nvcam_camera_options_init", nvcam_camera_options_init(&mut opts));
        opts.device = device;
        opts.flags = NVCAM_OPEN_LOOP;
        let curl = CString::new(url.clone()).expect("URL without NUL");
        let mut cam = 0u64;
        println!("opening {url}");
        check("nvcam_camera_open", nvcam_camera_open(curl.as_ptr(), &opts, &mut cam));

        let start = Instant::now();
        let mut next_line = start + Duration::from_secs(1);
        let mut latest: u64 = 0;
        let mut got = 0u64;
        // The rate shown is what this program received since the last line (or since the first
        // frame): the library's own figure needs a full second of decoding, so the first line
        // would say 0.0 while frames flow.
        let (mut window_start, mut window_got): (Option<Instant>, u64) = (None, 0);
        while start.elapsed() < Duration::from_secs(seconds) {
            let mut f = 0u64;
            match nvcam_camera_get_frame(cam, 1000, &mut f) {
                NVCAM_OK => {
                    got += 1;
                    window_got += 1;
                    window_start.get_or_insert_with(Instant::now);
                    if latest != 0 {
                        nvcam_frame_release(latest);
                    }
                    latest = f;
                }
                NVCAM_E_TIMEOUT => {}
                code => check("nvcam_camera_get_frame", code),
            }
            if Instant::now() >= next_line {
                next_line += Duration::from_secs(1);
                let mut s: nvcam_camera_stats = std::mem::zeroed();
                s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
                check("nvcam_camera_stats", nvcam_camera_stats(cam, &mut s));
                let state = ["connecting", "streaming", "stalled", "reconnecting", "closed", "failed", "ended"]
                    .get(s.state as usize)
                    .unwrap_or(&"?");
                let fps = match window_start {
                    Some(t) => format!("{:.1}", window_got as f64 / t.elapsed().as_secs_f64().max(1e-3)),
                    None => "-".into(),
                };
                if window_start.is_some() {
                    (window_start, window_got) = (Some(Instant::now()), 0);
                }
                let mem = if s.memory == NVCAM_MEMORY_DEVICE { format!("gpu{}", s.device) } else { "host".into() };
                let extra = if s.state == NVCAM_STATE_RECONNECTING {
                    format!(" attempt={} next_retry={}ms", s.reconnect_attempt, s.next_retry_ms)
                } else {
                    String::new()
                };
                println!(
                    "t={:>3}s state={state}{extra} {}x{} fps={fps} decoded={} delivered={} skipped={} dropped={} reconnects={} slots={}/{} held={:.1}MiB mem={mem} got={got}",
                    start.elapsed().as_secs(), s.width, s.height, s.frames_decoded, s.frames_delivered,
                    s.frames_skipped, s.frames_dropped, s.reconnects, s.pool_slots_in_use, s.pool_slots_total,
                    s.bytes_held as f64 / 1048576.0
                );
            }
        }
        if latest != 0 {
            let mut info: nvcam_frame_info = std::mem::zeroed();
            info.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
            check("nvcam_frame_info", nvcam_frame_info(latest, &mut info));
            let mut nv12 = vec![0u8; info.nv12_size as usize];
            check("nvcam_frame_copy_nv12", nvcam_frame_copy_nv12(latest, nv12.as_mut_ptr(), 0, nv12.len() as u64));
            let rgb = nv12_to_rgb(&nv12, info.width as usize, info.height as usize);
            std::fs::write(&png, png_encode(&rgb, info.width, info.height)).expect("write PNG");
            println!("snapshot of frame #{} ({}x{}) written to {}", info.seq, info.width, info.height, png.display());
            nvcam_frame_release(latest);
        } else {
            eprintln!("no frame arrived");
        }
        check("nvcam_camera_close", nvcam_camera_close(cam, 2000));
        check("nvcam_shutdown", nvcam_shutdown(5000));
        if got == 0 {
            std::process::exit(2);
        }
    }
}

/// BT.601 limited range, good enough for a snapshot.
fn nv12_to_rgb(nv12: &[u8], w: usize, h: usize) -> Vec<u8> {
    let row = w.div_ceil(2) * 2;
    let uv = &nv12[row * h..];
    let mut out = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let yy = nv12[y * row + x] as f32 - 16.0;
            let u = uv[(y / 2) * row + (x / 2) * 2] as f32 - 128.0;
            let v = uv[(y / 2) * row + (x / 2) * 2 + 1] as f32 - 128.0;
            let c = |f: f32| f.round().clamp(0.0, 255.0) as u8;
            let o = (y * w + x) * 3;
            out[o] = c(1.164 * yy + 1.596 * v);
            out[o + 1] = c(1.164 * yy - 0.392 * u - 0.813 * v);
            out[o + 2] = c(1.164 * yy + 2.017 * u);
        }
    }
    out
}

/// A minimal PNG writer (stored deflate blocks): no image crate needed for one snapshot.
fn png_encode(rgb: &[u8], w: u32, h: u32) -> Vec<u8> {
    fn crc32(data: &[u8]) -> u32 {
        let mut c = 0xffff_ffffu32;
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    }
    let mut raw = Vec::with_capacity((w as usize * 3 + 1) * h as usize);
    for y in 0..h as usize {
        raw.push(0);
        raw.extend_from_slice(&rgb[y * w as usize * 3..(y + 1) * w as usize * 3]);
    }
    let mut z = vec![0x78, 0x01];
    for (i, block) in raw.chunks(65535).enumerate() {
        let last = (i + 1) * 65535 >= raw.len();
        z.push(last as u8);
        z.extend_from_slice(&(block.len() as u16).to_le_bytes());
        z.extend_from_slice(&(!(block.len() as u16)).to_le_bytes());
        z.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &raw {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}
