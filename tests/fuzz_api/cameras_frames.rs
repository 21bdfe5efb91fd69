//! The fuzzer's calls on cameras and frames: opens with random options and URLs, closes, frames
//! taken, kept, copied and converted (alone and in batches), LabVIEW's instance slots.

use super::*;

pub(super) fn text_len(r: &mut Rng) -> (usize, i32) {
    match r.below(10) {
        0 => (0, 0),
        1 => (0, -1 - r.below(1000) as i32),
        2 => (0, i32::MIN),
        3 => (1, 1),
        4..=5 => {
            let n = 1 + r.below(16) as usize;
            (n, n as i32)
        }
        _ => {
            let n = 16 + r.below(600) as usize;
            (n, n as i32)
        }
    }
}

/// A text buffer call: NULL or a guarded buffer of a truthful `len` (or a non-positive `len`).
pub(super) fn text_call(sh: &Shared, r: &mut Rng, name: &'static str, f: impl FnOnce(*mut c_char, i32) -> i32) {
    let (n, len) = text_len(r);
    if r.chance(8) {
        sh.check(name, f(std::ptr::null_mut(), len));
        return;
    }
    let mut g = Guarded::new(n, r.below(8) as usize);
    let code = sh.check(name, f(g.ptr().cast(), len));
    // A call given no room (nvcam_log_pop asking only for the length) writes nothing.
    if code == NVCAM_OK && len > 0 {
        assert!(g.bytes()[g.off..g.off + n].contains(&0), "{name}: OK without a NUL in the buffer");
    }
    sh.guard(name, &g);
}

pub(super) const URLS_CHEAP: &[&str] = &[
    "",
    "bogus://x",
    "rtsp://",
    "rtsp://[::1",
    "rtsp://host:0/x",
    "rtsp://host:99999/x",
    "http://",
    "testsrc://0x0@30",
    "testsrc://64x48@0",
    "testsrc://64x48@999",
    "testsrc://99999x48@30",
    "testsrc://8x8@30",
    "testsrc://abc",
    "pipe:0",
    "fd:3",
    "a\x01b",
    "\x7f",
];

pub(super) const URLS_REAL: &[&str] =
    &["testsrc://64x48@30", "testsrc://64x48", "testsrc://32x32@60", "testsrc://17x19@30", "/nonexistent/nvcam-fuzz.mp4", "file:///nonexistent/nvcam-fuzz.mkv"];

pub(super) const FFOPTS: &[&str] = &[
    "",
    "probesize=banana",
    "nosuchopt=1",
    "novalue",
    "=x",
    ";;;",
    "probesize=32",
    "probesize=",
    "analyzeduration=-5",
    "rtsp_transport=udp",
    "fflags=nobuffer;probesize=32",
];

pub(super) fn random_string(r: &mut Rng) -> Vec<u8> {
    let n = match r.below(10) {
        0 => 10_000,
        _ => r.below(40) as usize,
    };
    (0..n).map(|_| (1 + r.below(255)) as u8).collect()
}

pub(super) fn options_buf(r: &mut Rng, ff: Option<&CString>, real: bool) -> Guarded {
    let size = std::mem::size_of::<nvcam_camera_options>();
    let mut g = Guarded::new(size, 0);
    let p = g.ptr().cast::<nvcam_camera_options>();
    // SAFETY (test): aligned, `size` writable bytes.
    unsafe {
        assert_eq!(nvcam_camera_options_init(p), NVCAM_OK);
        let o = &mut *p;
        o.device = NVCAM_DEVICE_CPU;
        o.open_timeout_ms = 300 + r.below(700) as u32;
        o.ffmpeg_options = ff.map_or(std::ptr::null(), |s| s.as_ptr());
        match r.below(12) {
            0 => o.struct_size = r.below(size as u64) as u32,
            1 => o.flags = r.next() as u32,
            2 => o.flags = (r.below(32) as u32) | NVCAM_OPEN_ASYNC,
            3 => o.pool_slots = r.below(100) as u32,
            4 => o.device = [-7, -2, 0, 3, i32::MIN][r.below(5) as usize],
            5 => o.decoder = r.below(6) as u32,
            6 => o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING,
            7 => o.decoder = NVCAM_DECODER_SOFTWARE,
            _ => {}
        }
        if !real {
            // An async open returns OK at once and leaves a worker retrying in the background:
            // only the rate-limited real opens may start threads.
            o.flags &= !NVCAM_OPEN_ASYNC;
        }
        if o.flags & NVCAM_OPEN_NO_PACING != 0 {
            // Unpaced and not lossless, a test source decodes as fast as the CPU goes.
            o.flags |= NVCAM_OPEN_LOSSLESS;
        }
    }
    g
}

/// One camera open (cheap: refused before any thread; real: a worker starts).
/// A 10-s H.264 clip (made by the ffmpeg CLI on Linux; none under Wine): the real source that
/// recordings can be written from (testsrc's raw pictures go into no container).
pub(super) static H264_CLIP: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

pub(super) fn op_open(sh: &Shared, r: &mut Rng, real: bool) {
    let h264 = H264_CLIP.get().cloned().flatten().filter(|_| real && r.chance(3));
    let url: Vec<u8> = if let Some(u) = h264 {
        u.into_bytes()
    } else if real {
        r.pick(URLS_REAL).as_bytes().to_vec()
    } else {
        match r.below(4) {
            0 => random_string(r),
            1 => vec![b't', 0xff, 0xfe, b'x'],
            _ => r.pick(URLS_CHEAP).as_bytes().to_vec(),
        }
    };
    let url = CString::new(url).unwrap();
    let ff = if r.chance(3) { Some(CString::new(*r.pick(FFOPTS)).unwrap()) } else { None };
    let ff2 = if r.chance(3) { Some(CString::new(random_string(r)).unwrap()) } else { None };
    let opts = if r.chance(5) { None } else { Some(options_buf(r, ff.as_ref(), real)) };
    let opts_p = opts.as_ref().map_or(std::ptr::null(), |g| g.bytes()[g.off..].as_ptr().cast::<nvcam_camera_options>());
    let url_p = if r.chance(30) { std::ptr::null() } else { url.as_ptr() };
    let mut cam = 0u64;
    let cam_p: *mut u64 = if r.chance(30) { std::ptr::null_mut() } else { &mut cam };
    let ex = r.chance(2);
    if real {
        sh.opens.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY (test): every pointer is NULL or valid for the call.
    let code = if ex {
        let ffp = ff2.as_ref().or(ff.as_ref()).map_or(std::ptr::null(), |s| s.as_ptr());
        sh.check("nvcam_camera_open_ex", unsafe { nvcam_camera_open_ex(url_p, ffp, opts_p, cam_p) })
    } else {
        sh.check("nvcam_camera_open", unsafe { nvcam_camera_open(url_p, opts_p, cam_p) })
    };
    if code == NVCAM_OK {
        assert!(!cam_p.is_null() && cam != 0);
        sh.opens_ok.fetch_add(1, Ordering::Relaxed);
        sh.live_cams.fetch_add(1, Ordering::Relaxed);
        let mut p = sh.pool.lock().unwrap();
        p.cams.push(cam);
        p.issued.push((cam, true));
    }
}

pub(super) fn op_close_live(sh: &Shared, r: &mut Rng) {
    let cam = {
        let mut p = sh.pool.lock().unwrap();
        if p.cams.is_empty() {
            return;
        }
        let i = r.below(p.cams.len() as u64) as usize;
        p.cams.swap_remove(i)
    };
    let code = sh.check("nvcam_camera_close", nvcam_camera_close(cam, [0, 50, 2000][r.below(3) as usize]));
    if code == NVCAM_OK || code == NVCAM_E_TIMEOUT {
        sh.live_cams.fetch_sub(1, Ordering::Relaxed);
    }
    sh.pool.lock().unwrap().bury(cam);
}

pub(super) fn op_get_frame(sh: &Shared, r: &mut Rng) {
    let cam = sh.handle(r, true);
    let mut f = 0u64;
    let fp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut f };
    let timeout = match r.below(20) {
        0 => 1 + r.below(3) as u32,
        _ => 0,
    };
    // SAFETY (test): `fp` is NULL or a live u64.
    let code = sh.check("nvcam_camera_get_frame", unsafe { nvcam_camera_get_frame(cam, timeout, fp) });
    if code == NVCAM_OK {
        sh.frames_got.fetch_add(1, Ordering::Relaxed);
        keep_frame(sh, r, f);
    }
}

pub(super) fn keep_frame(sh: &Shared, r: &mut Rng, f: u64) {
    let mut p = sh.pool.lock().unwrap();
    p.issued.push((f, false));
    p.frames.push(f);
    if p.frames.len() > 48 {
        let i = r.below(p.frames.len() as u64) as usize;
        let old = p.frames.swap_remove(i);
        drop(p);
        let code = sh.check("nvcam_frame_release", nvcam_frame_release(old));
        let _ = code;
        sh.pool.lock().unwrap().bury(old);
    }
}

pub(super) fn op_copy(sh: &Shared, r: &mut Rng) {
    let frame = sh.handle(r, false);
    let name = "nvcam_frame_copy_nv12";
    // A pitch whose image size wraps (pitch x height past 2^64) must be refused before writing:
    // the wrapped size would pass the length check and the copy would run off the buffer.
    let huge = [1u64 << 61, 1u64 << 63, u64::MAX, u64::MAX / 3, 1 << 40];
    match r.below(6) {
        0 => {
            // NULL destination, any size.
            let size = *r.pick(&[0u64, 1, 1 << 20, u64::MAX]);
            sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, std::ptr::null_mut(), r.below(200), size) });
        }
        1 => {
            // A size beyond the address space: refused before the buffer is looked at.
            let mut g = Guarded::new(16, r.below(8) as usize);
            let size = *r.pick(&[u64::MAX, 1 << 63, (isize::MAX as u64) + 1]);
            // SAFETY (test): refused before any write (the size cannot describe a real buffer).
            let code = sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), 0, size) });
            assert_ne!(code, NVCAM_OK, "{name}: dst_size {size} accepted");
            sh.guard(name, &g);
        }
        2 => {
            let mut g = Guarded::new(64 + r.below(4096) as usize, r.below(8) as usize);
            let pitch = *r.pick(&huge);
            // SAFETY (test): `dst` is writable for the `dst_size` passed.
            let code = sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), pitch, g.len as u64) });
            assert!(
                code != NVCAM_OK && code != NVCAM_E_PANIC,
                "{name}: dst_pitch {pitch:#x} with a {}-byte buffer returned {code}",
                g.len
            );
            if code == NVCAM_E_INVALID_ARGUMENT {
                sh.pitch_refused.fetch_add(1, Ordering::Relaxed);
            }
            if pitch >= 1 << 61 {
                // Only the handle checks come before the size check.
                assert!(
                    matches!(
                        code,
                        NVCAM_E_INVALID_ARGUMENT
                            | NVCAM_E_NULL_HANDLE
                            | NVCAM_E_INVALID_HANDLE
                            | NVCAM_E_WRONG_HANDLE_TYPE
                            | NVCAM_E_STALE_HANDLE
                    ),
                    "{name}: dst_pitch {pitch:#x} (overflowing) must be NVCAM_E_INVALID_ARGUMENT, got {code}"
                );
            }
            sh.guard(name, &g);
        }
        _ => {
            // Real-sized buffers (a 64x48 frame packs into 4608 bytes), pitch 0, small or odd.
            let len = *r.pick(&[0usize, 1, 100, 4607, 4608, 5000, 20_000, 70_000]);
            let pitch = *r.pick(&[0u64, 0, 1, 31, 63, 64, 65, 100, 333]);
            let mut g = Guarded::new(len, r.below(8) as usize);
            // SAFETY (test): `dst` is writable for `len` bytes.
            if sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), pitch, len as u64) }) == NVCAM_OK {
                sh.copies_ok.fetch_add(1, Ordering::Relaxed);
            }
            sh.guard(name, &g);
        }
    }
}

/// A conversion spec: mostly valid and small (the fuzzer's frames are 64x48), sometimes hostile.
pub(super) fn convert_spec(r: &mut Rng) -> nvcam_convert {
    let mut c = nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, ..Default::default() };
    c.format = *r.pick(&[NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_BGR8, NVCAM_FORMAT_RGB8, NVCAM_FORMAT_GRAY8, NVCAM_FORMAT_RGB_F32_PLANAR, NVCAM_FORMAT_RGB_F16_PLANAR, NVCAM_FORMAT_NV12, 7, u32::MAX]);
    let side = [0u32, 0, 1, 7, 32, 64, 97, 16384, 16385, u32::MAX];
    let n = if r.chance(8) { 10 } else { 7 };
    c.width = *r.pick(&side[..n]);
    let n = if r.chance(8) { 10 } else { 7 };
    c.height = *r.pick(&side[..n]);
    if r.chance(3) {
        c.roi_x = *r.pick(&[0u32, 1, 33, 63, 64, u32::MAX]);
        c.roi_y = *r.pick(&[0u32, 1, 20, 47, 48, u32::MAX]);
        c.roi_width = *r.pick(&[0u32, 1, 31, 64, 65, u32::MAX]);
        c.roi_height = *r.pick(&[0u32, 1, 27, 48, 49, u32::MAX]);
    }
    c.flags = *r.pick(&[0u32, 0, NVCAM_CONVERT_LETTERBOX, 2, u32::MAX]);
    c.matrix = *r.pick(&[0u32, 0, 1, 2, 3]);
    c.range = *r.pick(&[0u32, 0, 1, 2, 3]);
    c.dst_memory = *r.pick(&[NVCAM_MEMORY_HOST, NVCAM_MEMORY_HOST, NVCAM_MEMORY_HOST, NVCAM_MEMORY_DEVICE, 2]);
    c.dst_device = *r.pick(&[0, 0, -1, 1, i32::MIN]);
    let any = f32::from_bits(r.next() as u32);
    c.pad = [*r.pick(&[0.0f32, 114.0, 255.0, -1.0, f32::NAN, any]); 3];
    c.mean = [*r.pick(&[0.0f32, 0.485, f32::INFINITY, any]), 0.456, 0.406];
    c.std = [*r.pick(&[0.0f32, 0.229, 1.0, -0.0, any]), 0.224, 0.225];
    c.chroma_siting = *r.pick(&[0u32, 0, 0, 1, 2, 3, 6, 7, u32::MAX]);
    if r.chance(10) {
        c.reserved[r.below(5) as usize] = 1;
    }
    if r.chance(10) {
        c.struct_size = *r.pick(&[0u32, 4, 111, u32::MAX]);
    }
    c
}

/// `nvcam_frame_convert` and friends with live, dead and made-up frames, hostile specs, sizes
/// and pitches; host destinations are guarded buffers (stream 0: the fuzzer's frames are CPU
/// frames, and a made-up stream handle is outside the contract).
pub(super) fn op_convert(sh: &Shared, r: &mut Rng) {
    let frame = sh.handle(r, false);
    let spec = convert_spec(r);
    let sp: *const nvcam_convert = if r.chance(15) { std::ptr::null() } else { &spec };
    match r.below(5) {
        0 => {
            let mut n = 0u64;
            let np: *mut u64 = if r.chance(10) { std::ptr::null_mut() } else { &mut n };
            let pitch = *r.pick(&[0u64, 0, 1, 256, 1 << 61, u64::MAX]);
            // SAFETY (test): NULL or a live spec and u64.
            sh.check("nvcam_frame_convert_size", unsafe { nvcam_frame_convert_size(frame, sp, pitch, np) });
        }
        1 => {
            sh.check("nvcam_frame_wait_stream", unsafe { nvcam_frame_wait_stream(frame, 0) });
        }
        2 => {
            // SAFETY (test): stream 0 is valid wherever a device frame could be.
            if sh.check("nvcam_frame_release_after_stream", unsafe { nvcam_frame_release_after_stream(frame, 0) }) == NVCAM_OK {
                let mut p = sh.pool.lock().unwrap();
                p.frames.retain(|&x| x != frame);
                p.bury(frame);
            }
        }
        _ => {
            let name = "nvcam_frame_convert";
            let len = *r.pick(&[0usize, 1, 100, 3071, 3072, 9216, 12_288, 36_864, 70_000]);
            let pitch = *r.pick(&[0u64, 0, 0, 1, 64, 191, 192, 256, 1 << 61, u64::MAX]);
            let mut g = Guarded::new(len, r.below(8) as usize);
            let (dst, size) = match r.below(10) {
                0 => (std::ptr::null_mut(), len as u64),
                1 => (g.ptr(), *r.pick(&[u64::MAX, 1 << 63])),
                _ => (g.ptr(), len as u64),
            };
            let device = spec.dst_memory == NVCAM_MEMORY_DEVICE;
            // SAFETY (test): host dst is writable for the size passed (or the size is refused
            // before any write); a "device" dst is refused for the fuzzer's host frames.
            let code = sh.check(name, unsafe { nvcam_frame_convert(frame, sp, dst.cast(), pitch, size, 0) });
            if code == NVCAM_OK {
                assert!(!device, "{name}: a host frame converted into 'device' memory");
                sh.copies_ok.fetch_add(1, Ordering::Relaxed);
            }
            sh.guard(name, &g);
        }
    }
}

/// `nvcam_cameras_get_frames` and `nvcam_frames_convert_batch` with live, dead, repeated and
/// made-up handles, n of 0, in range and past `NVCAM_BATCH_MAX`, NULL arrays; every frame handed
/// out (also with a non-OK status) is kept and released later; arrays and destinations guarded.
pub(super) fn op_batch(sh: &Shared, r: &mut Rng) {
    let n = *r.pick(&[0u32, 1, 1, 2, 3, 4, NVCAM_BATCH_MAX + 1]);
    let len = (n as usize).min(4);
    let want_cam = r.chance(2);
    let mut handles: Vec<u64> = (0..len).map(|_| sh.handle(r, want_cam)).collect();
    if len >= 2 && r.chance(4) {
        handles[1] = handles[0];
    }
    // Arrays are read/written for `n` elements only when n is in range (then n == len).
    let mut hin = Guarded::new(len * 8, r.below(8) as usize);
    // SAFETY (test): the guarded buffer holds len * 8 bytes (any alignment: the API reads unaligned).
    unsafe { std::ptr::copy_nonoverlapping(handles.as_ptr().cast::<u8>(), hin.ptr(), len * 8) };
    let inp: *const u64 = if r.chance(15) { std::ptr::null() } else { hin.ptr().cast() };
    if want_cam {
        let name = "nvcam_cameras_get_frames";
        let mut out = Guarded::new(len * 8, r.below(8) as usize);
        let outp: *mut u64 = if r.chance(15) { std::ptr::null_mut() } else { out.ptr().cast() };
        let timeout = if r.chance(20) { 1 + r.below(3) as u32 } else { 0 };
        // SAFETY (test): both arrays hold `len` elements, and n > len only when n is out of range
        // (refused before either is touched).
        let code = sh.check(name, unsafe { nvcam_cameras_get_frames(inp, n, timeout, outp) });
        sh.guard(name, &hin);
        sh.guard(name, &out);
        if !outp.is_null() && (1..=NVCAM_BATCH_MAX).contains(&n) {
            for i in 0..len {
                // SAFETY (test): written by the call (zeroed at least), within the buffer.
                let f = unsafe { outp.add(i).read_unaligned() };
                if f != 0 {
                    sh.frames_got.fetch_add(1, Ordering::Relaxed);
                    keep_frame(sh, r, f);
                }
            }
        }
        let _ = code;
    } else {
        let name = "nvcam_frames_convert_batch";
        let spec = convert_spec(r);
        let sp: *const nvcam_convert = if r.chance(15) { std::ptr::null() } else { &spec };
        let size = *r.pick(&[0usize, 1, 100, 3072, 9216, 36_864, 70_000]);
        let stride = *r.pick(&[0u64, 0, 0, 1, 3072, 9216, 1 << 61, u64::MAX]);
        let mut g = Guarded::new(size, r.below(8) as usize);
        let (dst, dsize) = match r.below(10) {
            0 => (std::ptr::null_mut(), size as u64),
            1 => (g.ptr(), *r.pick(&[u64::MAX, 1 << 63])),
            _ => (g.ptr(), size as u64),
        };
        // SAFETY (test): host dst is writable for the size passed (or refused before any write);
        // a "device" dst is refused for the fuzzer's host frames.
        let code = sh.check(name, unsafe { nvcam_frames_convert_batch(inp, n, sp, dst.cast(), stride, dsize, 0) });
        if code == NVCAM_OK {
            assert_ne!(spec.dst_memory, NVCAM_MEMORY_DEVICE, "{name}: host frames converted into 'device' memory");
            sh.copies_ok.fetch_add(1, Ordering::Relaxed);
        }
        sh.guard(name, &hin);
        sh.guard(name, &g);
    }
}

/// LabVIEW's callbacks and get_frame_lv, with NULL slots and slots holding 0, live, stale,
/// made-up and wrong-kind values.
pub(super) fn op_lv(sh: &Shared, r: &mut Rng) {
    let value = {
        let p = sh.pool.lock().unwrap();
        match r.below(10) {
            0..=3 if !p.lv_live.is_empty() => *r.pick(&p.lv_live),
            4 if !p.lv_dead.is_empty() => *r.pick(&p.lv_dead),
            5 if !p.cams.is_empty() => *r.pick(&p.cams) as usize,
            6 => r.next() as usize,
            7 => *r.pick(&[1usize, 0x10, usize::MAX, 0xdead_beef]),
            _ => 0,
        }
    };
    let mut slot = value;
    let sp: *mut *mut c_void = if r.chance(10) { std::ptr::null_mut() } else { (&mut slot as *mut usize).cast() };
    // SAFETY (test): `sp` is NULL or a live pointer-sized slot; the value in it is only a number.
    let (name, code) = unsafe {
        match r.below(4) {
            0 => ("nvcam_lv_reserve", nvcam_lv_reserve(sp)),
            1 => ("nvcam_lv_unreserve", nvcam_lv_unreserve(sp)),
            2 => ("nvcam_lv_abort", nvcam_lv_abort(sp)),
            _ => {
                let cam = sh.handle(r, true);
                let mut f = 0u64;
                let fp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut f };
                let code = nvcam_camera_get_frame_lv(cam, if r.chance(20) { 1 + r.below(3) as u32 } else { 0 }, fp, sp);
                if code == NVCAM_OK {
                    sh.frames_got.fetch_add(1, Ordering::Relaxed);
                    keep_frame(sh, r, f);
                }
                ("nvcam_camera_get_frame_lv", code)
            }
        }
    };
    sh.check(name, code);
    if code != NVCAM_OK || sp.is_null() {
        return;
    }
    let mut p = sh.pool.lock().unwrap();
    if slot == 0 && value != 0 {
        // Unreserved: the old value is stale from now on.
        p.lv_live.retain(|&v| v != value);
        p.lv_dead.push(value);
    } else if slot != 0 && !p.lv_live.contains(&slot) {
        p.lv_live.push(slot);
    }
    if p.lv_dead.len() > 64 {
        p.lv_dead.remove(0);
    }
    if p.lv_live.len() > 16 {
        // Release one, as LabVIEW's Unreserve would.
        let mut v = p.lv_live.swap_remove(0);
        drop(p);
        let old = v;
        // SAFETY (test): a live local slot.
        sh.check("nvcam_lv_unreserve", unsafe { nvcam_lv_unreserve((&mut v as *mut usize).cast()) });
        sh.pool.lock().unwrap().lv_dead.push(old);
    }
}
