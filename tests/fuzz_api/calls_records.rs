//! The fuzzer's other calls: struct-sized getters with any size, the cheap library-wide calls,
//! recordings started, polled and released, and shutdown/init in the middle of it all.

use super::*;

pub(super) fn sized_call<T>(sh: &Shared, r: &mut Rng, name: &'static str, f: impl FnOnce(*mut T) -> i32) {
    sized_call_from::<T>(sh, r, name, std::mem::size_of::<T>(), f)
}

/// As [`sized_call`] for a struct that also takes its older, shorter versions (`min` bytes and
/// up): an OK needs at least `min`, and the buffer is only `struct_size` long when that is
/// shorter, so a write past what the caller declared trips the guard.
pub(super) fn sized_call_from<T>(sh: &Shared, r: &mut Rng, name: &'static str, min: usize, f: impl FnOnce(*mut T) -> i32) {
    let size = std::mem::size_of::<T>();
    if r.chance(10) {
        sh.check(name, f(std::ptr::null_mut()));
        return;
    }
    let ss = match r.below(8) {
        0 => 0,
        1 => r.below(size as u64) as u32,
        2 => u32::MAX,
        3 if min < size => (min + r.below((size - min) as u64) as usize) as u32,
        _ => size as u32,
    };
    // A declared size between `min` and the full size gets exactly that many bytes.
    let len = if (min..size).contains(&(ss as usize)) { ss as usize } else { size };
    let mut g = Guarded::with_struct_size(len.max(4), ss);
    let code = sh.check(name, f(g.ptr().cast()));
    if code == NVCAM_OK {
        assert!(ss as usize >= min, "{name}: OK with struct_size {ss} < {min}");
    }
    sh.guard(name, &g);
}

pub(super) fn op_cheap(sh: &Shared, r: &mut Rng) {
    match r.below(27) {
        0..=2 => op_get_frame(sh, r),
        3 => {
            let f = sh.handle(r, false);
            let mut c = 0u64;
            let cp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut c };
            // SAFETY (test): NULL or a live u64.
            if sh.check("nvcam_frame_clone", unsafe { nvcam_frame_clone(f, cp) }) == NVCAM_OK {
                keep_frame(sh, r, c);
            }
        }
        4..=5 => {
            let f = sh.handle(r, false);
            if sh.check("nvcam_frame_release", nvcam_frame_release(f)) == NVCAM_OK {
                let mut p = sh.pool.lock().unwrap();
                p.frames.retain(|&x| x != f);
                p.bury(f);
            }
        }
        6..=7 => {
            let f = sh.handle(r, false);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            // 120: the size before `flags` was appended, still taken (and filled to its end only).
            sized_call_from::<nvcam_frame_info>(sh, r, "nvcam_frame_info", 120, |p| unsafe { nvcam_frame_info(f, p) });
        }
        8 => op_copy(sh, r),
        9 => {
            match r.below(4) {
                0 | 1 => op_copy(sh, r),
                2 => op_convert(sh, r),
                _ => op_batch(sh, r),
            }
        }
        10..=11 => {
            let c = sh.handle(r, true);
            // SAFETY (test): as above.
            // 152: the size before the reconnect rule's figures were appended, still taken.
            sized_call_from::<nvcam_camera_stats>(sh, r, "nvcam_camera_stats", 152, |p| unsafe { nvcam_camera_stats(c, p) });
        }
        12 => {
            let c = sh.handle(r, true);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_camera_last_error", |b, l| unsafe { nvcam_camera_last_error(c, b, l) });
        }
        13 => {
            // Reconnects restart a live camera's connection: mostly on handles that are not live.
            let c = if r.chance(20) { sh.handle(r, true) } else { sh.pool.lock().unwrap().dead.first().copied().unwrap_or(7) };
            sh.check("nvcam_camera_reconnect", nvcam_camera_reconnect(c));
        }
        14 => {
            let c = sh.handle(r, true);
            let c = if r.chance(10) { 0 } else { c };
            let (mut a, mut b) = (0u32, 0u64);
            let ap: *mut u32 = if r.chance(3) { std::ptr::null_mut() } else { &mut a };
            let bp: *mut u64 = if r.chance(3) { std::ptr::null_mut() } else { &mut b };
            // SAFETY (test): NULL or live locals.
            sh.check("nvcam_registry_stats", unsafe { nvcam_registry_stats(c, ap, bp) });
        }
        15 => {
            // Force-release on live cameras invalidates their frames: mostly on other handles.
            let c = if r.chance(10) { sh.handle(r, true) } else { sh.handle(r, false) };
            let mut n = 0u32;
            let np: *mut u32 = if r.chance(3) { std::ptr::null_mut() } else { &mut n };
            // SAFETY (test): NULL or a live local.
            sh.check("nvcam_registry_force_release_owner", unsafe { nvcam_registry_force_release_owner(c, np) });
        }
        16 => {
            let any = r.next() as i32;
            let code = *r.pick(&[0, -8001, -8040, -8041, -8999, 1, i32::MIN, i32::MAX, any]);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_status_text", |b, l| unsafe { nvcam_status_text(code, b, l) });
        }
        17 => {
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_last_error", |b, l| unsafe { nvcam_last_error(b, l) });
        }
        18 => {
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_version_string", |b, l| unsafe { nvcam_version_string(b, l) });
            sh.calls.fetch_add(1, Ordering::Relaxed);
            assert_eq!(nvcam_abi_version(), NVCAM_ABI_VERSION);
        }
        19 => {
            let (mut lvl, mut n) = (0i32, 0i32);
            let lp: *mut i32 = if r.chance(10) { std::ptr::null_mut() } else { &mut lvl };
            let np: *mut i32 = if r.chance(10) { std::ptr::null_mut() } else { &mut n };
            // SAFETY (test): NULL or live locals; the buffer as in text_call.
            text_call(sh, r, "nvcam_log_pop", |b, l| unsafe { nvcam_log_pop(lp, b, l, np) });
        }
        20 => {
            let any = r.next() as i32;
            let device = *r.pick(&[-1, -1, 0, 1, -2, i32::MIN, i32::MAX, any]);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            sized_call::<nvcam_gpu_stats>(sh, r, "nvcam_gpu_stats", |p| unsafe { nvcam_gpu_stats(device, p) });
        }
        21 => {
            sh.check("nvcam_gpu_drain", nvcam_gpu_drain(*r.pick(&[0, 1, 100, u32::MAX])));
        }
        22 => {
            if r.chance(2) {
                // Not a sized struct: it writes the whole struct and sets struct_size itself.
                let size = std::mem::size_of::<nvcam_camera_options>();
                let mut g = Guarded::with_struct_size(size, r.next() as u32);
                let p = if r.chance(10) { std::ptr::null_mut() } else { g.ptr().cast::<nvcam_camera_options>() };
                // SAFETY (test): NULL or a guarded, aligned buffer of the struct's size.
                let code = sh.check("nvcam_camera_options_init", unsafe { nvcam_camera_options_init(p) });
                if code == NVCAM_OK {
                    // SAFETY (test): filled by the call.
                    assert_eq!(unsafe { (*p).struct_size } as usize, size);
                }
                sh.guard("nvcam_camera_options_init", &g);
            } else {
                // A handle call on a camera-shaped value that is not live: close fails cheaply.
                let c = if r.chance(4) { sh.handle(r, false) } else { r.next() };
                sh.check("nvcam_camera_close", nvcam_camera_close(c, 0));
            }
        }
        24 => {
            let c = sh.handle(r, true);
            sh.check("nvcam_camera_cancel_wait", nvcam_camera_cancel_wait(c));
        }
        25 => op_lv(sh, r),
        26 => op_record(sh, r),
        _ => match r.below(4) {
            2 => {
                // Publishing: names of this process (valid, taken twice, bad), quotas at the edges,
                // on live and other handles; or the publication's end.
                let c = sh.handle(r, true);
                if r.chance(2) {
                    let name = match r.below(4) {
                        0 => format!("fz-{}-{}", std::process::id(), r.below(3)),
                        1 => "../x".to_string(),
                        2 => "n".repeat(65),
                        _ => String::from_utf8_lossy(&random_string(r)).replace('\0', ""),
                    };
                    let n = CString::new(name).unwrap();
                    let p = if r.chance(10) { std::ptr::null() } else { n.as_ptr() };
                    let quota = *r.pick(&[0u32, 1, 3, 64, 65, u32::MAX]);
                    // SAFETY (test): NULL or a NUL-terminated string.
                    sh.check("nvcam_camera_publish", unsafe { nvcam_camera_publish(c, p, quota, *r.pick(&[0u32, 1, 8, 99])) });
                } else {
                    sh.check("nvcam_camera_unpublish", nvcam_camera_unpublish(c, *r.pick(&[0u32, 100])));
                }
            }
            0 => {
                // Levels up to WARN (more verbose ones would only slow the run), plus invalid ones.
                let level = *r.pick(&[NVCAM_LOG_OFF, NVCAM_LOG_ERROR, NVCAM_LOG_WARN, -1, 6, 99, i32::MIN]);
                let path = *r.pick(&["", "/nonexistent-dir/nvcam.log"]);
                let c = CString::new(path).unwrap();
                let p = if r.chance(2) { std::ptr::null() } else { c.as_ptr() };
                // SAFETY (test): NULL or a NUL-terminated string.
                sh.check("nvcam_log_init", unsafe { nvcam_log_init(p, level) });
            }
            1 => {
                let level = *r.pick(&[NVCAM_LOG_OFF, NVCAM_LOG_ERROR, NVCAM_LOG_WARN, -3, 42]);
                let cb: nvcam_log_fn = if r.chance(2) { Some(log_cb) } else { None };
                // SAFETY (test): the callback is valid for the whole process and thread-safe.
                sh.check("nvcam_log_set_callback", unsafe { nvcam_log_set_callback(cb, 0x1234 as *mut c_void, level) });
            }
            _ => op_open(sh, r, false),
        },
    }
}

/// The `.part` files in `dir`.
pub(super) fn part_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "part")).collect()
}

/// Paths a recording is asked to write: real files in the test's folder (two containers), a bad
/// extension, a missing folder, a folder, empty, long, not UTF-8.
pub(super) fn rec_path(r: &mut Rng) -> Vec<u8> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz_api-rec");
    let real = |name: &str| dir.join(name).to_str().unwrap().as_bytes().to_vec();
    match r.below(10) {
        0..=2 => real(&format!("r{}.mkv", r.below(4))),
        3..=4 => real(&format!("r{}.mp4", r.below(4))),
        5 => real("r.avi"),
        6 => b"/nonexistent-dir/nvcam-fuzz.mkv".to_vec(),
        7 => dir.to_str().unwrap().as_bytes().to_vec(),
        // Not UTF-8 (read in the ANSI code page): in the test's folder, never the working one.
        8 => [dir.to_str().unwrap().as_bytes(), b"/x\xff\xfe.mkv"].concat(),
        _ => random_string(r),
    }
}

/// The recording exports with live, released, foreign and made-up handles, NULL pointers, bad
/// sizes and paths; a recording handle also goes where camera and frame handles are expected
/// (see `Shared::handle`), and camera and frame handles where a recording's is.
pub(super) fn op_record(sh: &Shared, r: &mut Rng) {
    let ms = |r: &mut Rng| *r.pick(&[0u32, 1, 100, 1000, 5000, u32::MAX]);
    match r.below(12) {
        0 => {
            let c = sh.handle(r, true);
            let bytes = *r.pick(&[0u64, 1, 4096, 1 << 20, u64::MAX]);
            sh.check("nvcam_camera_record_cache", nvcam_camera_record_cache(c, ms(r), bytes));
        }
        1 | 2 => {
            let mut c = sh.handle(r, true);
            // A real recording (a thread, a file) on a live camera now and then; mostly the
            // handle checks.
            if !r.chance(50) && sh.pool.lock().unwrap().cams.contains(&c) {
                c = sh.rec_handle(r);
            }
            // Few recordings at once: each has a writer thread and a file.
            let full = sh.pool.lock().unwrap().recs.len() >= 6;
            let path = CString::new(rec_path(r)).unwrap();
            let pp = if r.chance(20) { std::ptr::null() } else { path.as_ptr() };
            let mut rec = 0u64;
            let rp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut rec };
            let segments = r.chance(4);
            if full {
                return op_record_release(sh, r);
            }
            // SAFETY (test): NULL or NUL-terminated strings and a live u64.
            let code = if segments {
                let ext = CString::new(*r.pick(&["mkv", "mp4", "", "avi", "MKV"])).unwrap();
                let ep = if r.chance(20) { std::ptr::null() } else { ext.as_ptr() };
                let keep = *r.pick(&[0u64, 1, 1 << 20, u64::MAX]);
                sh.check("nvcam_camera_record_segments", unsafe {
                    nvcam_camera_record_segments(c, pp, ep, ms(r), r.below(4) as u32, keep, rp)
                })
            } else {
                sh.check("nvcam_camera_record_start", unsafe { nvcam_camera_record_start(c, pp, ms(r), ms(r), rp) })
            };
            if code == NVCAM_OK {
                assert!(!rp.is_null() && rec != 0);
                sh.recs_ok.fetch_add(1, Ordering::Relaxed);
                let mut p = sh.pool.lock().unwrap();
                p.recs.push(rec);
                p.recs_issued.push(rec);
            }
        }
        3 => {
            let c = sh.handle(r, true);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            sized_call_from::<nvcam_record_stats>(sh, r, "nvcam_camera_record_stats", 64, |p| unsafe { nvcam_camera_record_stats(c, p) });
        }
        4 => {
            let h = sh.rec_handle(r);
            sh.check("nvcam_record_extend", nvcam_record_extend(h, ms(r)));
        }
        5 => {
            let h = sh.rec_handle(r);
            sh.check("nvcam_record_stop", nvcam_record_stop(h));
        }
        6 | 7 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): as above.
            sized_call::<nvcam_record_status>(sh, r, "nvcam_record_status", |p| unsafe { nvcam_record_status(h, p) });
        }
        8 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_record_file", |b, l| unsafe { nvcam_record_file(h, b, l) });
        }
        9 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_record_error", |b, l| unsafe { nvcam_record_error(h, b, l) });
        }
        _ => op_record_release(sh, r),
    }
}

/// Releases a live recording (and sometimes again: stale the second time), or any handle.
pub(super) fn op_record_release(sh: &Shared, r: &mut Rng) {
    let live = {
        let mut p = sh.pool.lock().unwrap();
        if !p.recs.is_empty() && r.chance(2) {
            let i = r.below(p.recs.len() as u64) as usize;
            Some(p.recs.swap_remove(i))
        } else {
            None
        }
    };
    let h = live.unwrap_or_else(|| sh.rec_handle(r));
    let code = sh.check("nvcam_record_release", nvcam_record_release(h));
    if live.is_some() {
        // A shutdown between the pick and the call released it already.
        assert!(code == NVCAM_OK || code == NVCAM_E_STALE_HANDLE, "release of a live recording: {code} {}", last_error());
        if r.chance(4) {
            let again = sh.check("nvcam_record_release", nvcam_record_release(h));
            assert_eq!(again, NVCAM_E_STALE_HANDLE, "a second release of recording {h:#x}");
            sh.double_releases.fetch_add(1, Ordering::Relaxed);
        }
        sh.pool.lock().unwrap().bury(h);
    } else if code == NVCAM_OK {
        let mut p = sh.pool.lock().unwrap();
        p.recs.retain(|&x| x != h);
        p.bury(h);
    }
}

pub(super) fn op_lifecycle(sh: &Shared, r: &mut Rng) {
    let t = *r.pick(&[0u32, 100, 5000, 5000, 10000]);
    let code = sh.check("nvcam_shutdown", nvcam_shutdown(t));
    if code == NVCAM_OK || code == NVCAM_E_TIMEOUT {
        // Every camera handle is stale now; keep them as dead handles.
        let mut p = sh.pool.lock().unwrap();
        let mut cams = std::mem::take(&mut p.cams);
        cams.append(&mut p.frames);
        for h in cams {
            p.bury(h);
        }
        sh.live_cams.store(0, Ordering::Relaxed);
    }
    sh.cycles.fetch_add(1, Ordering::Relaxed);
    let size = std::mem::size_of::<nvcam_config>();
    let mut g = Guarded::new(size, 0);
    let p = g.ptr().cast::<nvcam_config>();
    // SAFETY (test): aligned and writable for the struct.
    unsafe {
        p.write(nvcam_config { struct_size: size as u32, ..Default::default() });
        match r.below(6) {
            0 => (*p).struct_size = r.below(size as u64) as u32,
            1 => (*p).flags = r.next() as u32 | 1,
            2 => (*p).max_hw_decoders_per_device = r.below(4) as u32,
            _ => {}
        }
    }
    let cp = if r.chance(3) { std::ptr::null() } else { p.cast_const() };
    // SAFETY (test): NULL or an aligned, readable config.
    let code = sh.check("nvcam_init", unsafe { nvcam_init(cp) });
    sh.guard("nvcam_init", &g);
    if code != NVCAM_OK {
        // SAFETY (test): NULL = defaults.
        sh.check("nvcam_init", unsafe { nvcam_init(std::ptr::null()) });
    }
}
