//! "Latest of N" (`nvcam_cameras_get_frames`) and batched conversion (`nvcam_frames_convert_batch`)
//! on the CPU path, through the C API as a host calls them. Each test is named for the failure it
//! prevents.

mod common;
use common::*;
use nvcam::*;
use std::time::{Duration, Instant};

fn get_frames(cams: &[u64], timeout_ms: u32) -> (i32, Vec<u64>) {
    let mut out = vec![u64::MAX; cams.len()];
    // SAFETY (test): both arrays hold cams.len() elements.
    let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), cams.len() as u32, timeout_ms, out.as_mut_ptr()) };
    (code, out)
}

fn spec(format: u32, w: u32, h: u32) -> nvcam_convert {
    nvcam_convert {
        struct_size: std::mem::size_of::<nvcam_convert>() as u32,
        format,
        width: w,
        height: h,
        std: [1.0; 3],
        dst_memory: NVCAM_MEMORY_HOST,
        ..Default::default()
    }
}

fn convert_one(f: u64, s: &nvcam_convert) -> Vec<u8> {
    let mut n = 0u64;
    ok(unsafe { nvcam_frame_convert_size(f, s, 0, &mut n) }).unwrap();
    let mut v = vec![0u8; n as usize];
    ok(unsafe { nvcam_frame_convert(f, s, v.as_mut_ptr().cast(), 0, n, 0) }).unwrap();
    v
}

fn batch(frames: &[u64], s: &nvcam_convert, dst: &mut [u8], stride: u64) -> i32 {
    // SAFETY (test): `dst` is writable for its length.
    unsafe { nvcam_frames_convert_batch(frames.as_ptr(), frames.len() as u32, s, dst.as_mut_ptr().cast(), stride, dst.len() as u64, 0) }
}

/// An address nothing listens on: an async camera there never delivers a frame.
fn silent_camera() -> u64 {
    let mut o = options(NVCAM_OPEN_ASYNC);
    o.open_timeout_ms = 200;
    open("rtsp://127.0.0.1:9/none", &o).unwrap()
}

#[test]
fn get_frames_returns_a_new_frame_of_every_camera() {
    init();
    let cams: Vec<u64> = ["testsrc://64x48@30", "testsrc://96x64@30", "testsrc://32x32@25"].iter().map(|u| open(u, &options(0)).unwrap()).collect();
    let mut last_seq = vec![0u64; cams.len()];
    for round in 0..3 {
        let (code, frames) = get_frames(&cams, 3000);
        assert_eq!(code, NVCAM_OK, "round {round}: {}", last_error());
        for (i, &f) in frames.iter().enumerate() {
            let fi = info(f).unwrap();
            assert_eq!(fi.camera, cams[i], "round {round}: frames[{i}] belongs to another camera");
            assert!(fi.seq > last_seq[i], "round {round}: frames[{i}] seq {} not newer than {}", fi.seq, last_seq[i]);
            last_seq[i] = fi.seq;
        }
        for f in frames {
            release(f).unwrap();
        }
    }
    for c in &cams {
        let mut live = 0u32;
        ok(unsafe { nvcam_registry_stats(*c, &mut live, std::ptr::null_mut()) }).unwrap();
        assert_eq!(live, 0, "get_frames leaked a handle (the swap for a newer frame must release the older)");
        close(*c, 2000).unwrap();
    }
}

/// A camera that never delivers must not hold the others' frames back or stretch the wait: the
/// frames that came are handed out, the silent one gets 0, and the call ends at the deadline.
#[test]
fn get_frames_partial_batch_is_timeout_with_the_frames_that_came() {
    init();
    let live = open("testsrc://64x48@30", &options(0)).unwrap();
    let (s1, s2) = (silent_camera(), silent_camera());
    let t = Instant::now();
    let (code, frames) = get_frames(&[s1, live, s2], 400);
    let took = t.elapsed();
    assert_eq!(code, NVCAM_E_TIMEOUT, "{}", last_error());
    assert_eq!((frames[0], frames[2]), (0, 0));
    assert_eq!(info(frames[1]).unwrap().camera, live, "the live camera's frame must be handed out");
    assert!(took >= Duration::from_millis(350) && took < Duration::from_millis(1500), "one deadline for all cameras: took {took:?}");
    release(frames[1]).unwrap();
    // Polling (timeout 0) returns at once.
    let t = Instant::now();
    let (code, frames) = get_frames(&[s1, s2], 0);
    assert_eq!((code, frames), (NVCAM_E_TIMEOUT, vec![0, 0]));
    assert!(t.elapsed() < Duration::from_millis(200));
    for c in [live, s1, s2] {
        close(c, 2000).unwrap();
    }
}

#[test]
fn get_frames_refuses_bad_arguments_before_taking_any_frame() {
    init();
    let a = open("testsrc://64x48@30", &options(0)).unwrap();
    let b = open("testsrc://64x48@30", &options(0)).unwrap();
    let dead = open("testsrc://64x48@30", &options(0)).unwrap();
    close(dead, 2000).unwrap();
    let mut out = [7u64; 3];
    for (cams, n, want) in [
        (vec![a, b], 0u32, NVCAM_E_INVALID_ARGUMENT),
        (vec![a, b], NVCAM_BATCH_MAX + 1, NVCAM_E_INVALID_ARGUMENT),
        (vec![a, a], 2, NVCAM_E_INVALID_ARGUMENT),
        (vec![a, dead], 2, NVCAM_E_STALE_HANDLE),
        (vec![a, 0], 2, NVCAM_E_NULL_HANDLE),
        (vec![a, 12345], 2, NVCAM_E_INVALID_HANDLE),
    ] {
        out = [7; 3];
        // SAFETY (test): n is refused before either array is read past its length.
        let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), n, 500, out.as_mut_ptr()) };
        assert_eq!(code, want, "{cams:x?} n={n}: {}", last_error());
        if (1..=2).contains(&n) {
            assert_eq!(&out[..2], &[0, 0], "frames must be zeroed when nothing is taken");
        }
    }
    assert_eq!(out[2], 7, "wrote past n");
    // SAFETY (test): NULL pointers are refused.
    unsafe {
        assert_eq!(nvcam_cameras_get_frames([a].as_ptr(), 1, 0, std::ptr::null_mut()), NVCAM_E_NULL_POINTER);
        let mut one = [5u64];
        assert_eq!(nvcam_cameras_get_frames(std::ptr::null(), 1, 0, one.as_mut_ptr()), NVCAM_E_NULL_POINTER);
        assert_eq!(one[0], 0);
    }
    for c in [a, b] {
        let mut live = 0u32;
        ok(unsafe { nvcam_registry_stats(c, &mut live, std::ptr::null_mut()) }).unwrap();
        assert_eq!(live, 0, "a refused call took a frame");
        close(c, 2000).unwrap();
    }
}

/// A cancel on one camera ends the whole wait (the others are only polled) instead of letting it
/// run to the deadline.
#[test]
fn get_frames_cancel_ends_the_wait() {
    init();
    let s1 = silent_camera();
    let s2 = silent_camera();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        ok(nvcam_camera_cancel_wait(s1)).unwrap();
    });
    let t = Instant::now();
    let (code, frames) = get_frames(&[s1, s2], 10_000);
    h.join().unwrap();
    assert_eq!(code, NVCAM_E_CANCELLED, "{}", last_error());
    assert_eq!(frames, vec![0, 0]);
    assert!(t.elapsed() < Duration::from_secs(3), "took {:?}", t.elapsed());
    close(s1, 2000).unwrap();
    close(s2, 2000).unwrap();
}

/// Item i of the batch is byte for byte what `nvcam_frame_convert` writes for frame i, at the
/// stride asked, without touching the gaps or anything past the end.
#[test]
fn batch_items_equal_single_conversions() {
    init();
    let cams: Vec<u64> = ["testsrc://64x48@30", "testsrc://96x64@30", "testsrc://64x48@30"].iter().map(|u| open(u, &options(0)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 3000).unwrap()).collect();
    let with_repeat = [frames[0], frames[1], frames[2], frames[0]];
    for format in [NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_BGR8, NVCAM_FORMAT_RGB8, NVCAM_FORMAT_GRAY8, NVCAM_FORMAT_RGB_F32_PLANAR, NVCAM_FORMAT_RGB_F16_PLANAR] {
        let mut s = spec(format, 40, 30);
        s.flags = NVCAM_CONVERT_LETTERBOX;
        s.pad = [114.0; 3];
        let singles: Vec<Vec<u8>> = with_repeat.iter().map(|&f| convert_one(f, &s)).collect();
        let item = singles[0].len();
        for stride in [0usize, item + 24] {
            let step = if stride == 0 { item } else { stride };
            let need = step * (with_repeat.len() - 1) + item;
            let mut dst = vec![0xa5u8; need + 32];
            let code = batch(&with_repeat, &s, &mut dst[..need], stride as u64);
            assert_eq!(code, NVCAM_OK, "format {format} stride {stride}: {}", last_error());
            for (i, one) in singles.iter().enumerate() {
                assert!(dst[i * step..i * step + item] == one[..], "format {format} stride {stride}: item {i} differs from nvcam_frame_convert");
                if stride != 0 && i + 1 < singles.len() {
                    assert!(dst[i * step + item..(i + 1) * step].iter().all(|&b| b == 0xa5), "format {format}: the gap after item {i} was written");
                }
            }
            assert!(dst[need..].iter().all(|&b| b == 0xa5), "format {format}: wrote past dst_size");
            // One byte short: refused, nothing written.
            let mut short = vec![0xa5u8; need - 1];
            assert_eq!(batch(&with_repeat, &s, &mut short, stride as u64), NVCAM_E_BUFFER_TOO_SMALL);
            assert!(short.iter().all(|&b| b == 0xa5), "a refused batch wrote");
        }
    }
    for f in frames {
        release(f).unwrap();
    }
    for c in cams {
        close(c, 2000).unwrap();
    }
}

/// A batch of NV12 and P016 (10-bit) frames converts each item as `nvcam_frame_convert` does
/// that frame (P016 frames were refused, and must never be read as NV12 bytes).
#[test]
fn batch_of_nv12_and_p016_frames_converts_each_as_alone() {
    init();
    let ten = ten_bit_clip(96, 64, 4);
    let cams: Vec<u64> = [ten.to_str().unwrap(), "testsrc://96x64@30"].iter().map(|u| open(u, &options(0)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 5000).unwrap()).collect();
    assert_eq!((info(frames[0]).unwrap().format, info(frames[1]).unwrap().format), (NVCAM_FORMAT_P016, NVCAM_FORMAT_NV12));
    let mixed = [frames[0], frames[1], frames[0]];
    for format in [NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_GRAY8, NVCAM_FORMAT_RGB_F32_PLANAR] {
        // Same scale, bilinear and box filter.
        for (w, h) in [(96, 64), (64, 40), (24, 16)] {
            let s = spec(format, w, h);
            let singles: Vec<Vec<u8>> = mixed.iter().map(|&f| convert_one(f, &s)).collect();
            assert!(singles[0] != singles[1], "format {format} {w}x{h}: the two frames convert alike: the test proves nothing");
            let item = singles[0].len();
            let mut dst = vec![0xa5u8; 3 * item];
            assert_eq!(batch(&mixed, &s, &mut dst, 0), NVCAM_OK, "format {format} {w}x{h}: {}", last_error());
            for (i, one) in singles.iter().enumerate() {
                assert!(dst[i * item..(i + 1) * item] == one[..], "format {format} {w}x{h}: item {i} differs from nvcam_frame_convert");
            }
        }
    }
    for f in frames {
        release(f).unwrap();
    }
    for c in cams {
        close(c, 2000).unwrap();
    }
}

#[test]
fn batch_refuses_mixed_sizes_bad_handles_and_device_memory_for_cpu_frames() {
    init();
    let a = open("testsrc://64x48@30", &options(0)).unwrap();
    let b = open("testsrc://96x64@30", &options(0)).unwrap();
    let (fa, fb) = (get_frame(a, 3000).unwrap(), get_frame(b, 3000).unwrap());
    let mut dst = vec![0xa5u8; 1 << 16];
    // Source size (width/height 0) differs between the frames: one tensor cannot hold both.
    assert_eq!(batch(&[fa, fb], &spec(NVCAM_FORMAT_BGR8, 0, 0), &mut dst, 0), NVCAM_E_INVALID_ARGUMENT);
    let gone = clone(fa).unwrap();
    release(gone).unwrap();
    assert_eq!(batch(&[fa, gone], &spec(NVCAM_FORMAT_BGR8, 32, 32), &mut dst, 0), NVCAM_E_STALE_HANDLE);
    assert_eq!(batch(&[fa, 0], &spec(NVCAM_FORMAT_BGR8, 32, 32), &mut dst, 0), NVCAM_E_NULL_HANDLE);
    // A stride smaller than an item would overlap them.
    assert_eq!(batch(&[fa, fb], &spec(NVCAM_FORMAT_BGR8, 32, 32), &mut dst, 100), NVCAM_E_INVALID_ARGUMENT);
    // A stride whose product overflows.
    assert_eq!(batch(&[fa, fb], &spec(NVCAM_FORMAT_BGR8, 32, 32), &mut dst, u64::MAX), NVCAM_E_INVALID_ARGUMENT);
    assert_eq!(batch(&[fa, fb], &spec(NVCAM_FORMAT_BGR8, 32, 32), &mut dst, 1 << 40), NVCAM_E_BUFFER_TOO_SMALL);
    assert!(dst.iter().all(|&x| x == 0xa5), "a refused batch wrote");
    let mut d = spec(NVCAM_FORMAT_RGB_F16_PLANAR, 32, 32);
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    let fake_device = 0x1000usize as *mut std::ffi::c_void;
    // SAFETY (test): refused before dst is used (CPU frames cannot go to device memory).
    let code = unsafe { nvcam_frames_convert_batch([fa, fb].as_ptr(), 2, &d, fake_device, 0, 1 << 20, 0) };
    assert_eq!(code, NVCAM_E_UNSUPPORTED, "{}", last_error());
    // SAFETY (test): NULL and out-of-range n are refused.
    unsafe {
        assert_eq!(nvcam_frames_convert_batch(std::ptr::null(), 2, &d, dst.as_mut_ptr().cast(), 0, 10, 0), NVCAM_E_NULL_POINTER);
        assert_eq!(nvcam_frames_convert_batch([fa].as_ptr(), 0, &d, dst.as_mut_ptr().cast(), 0, 10, 0), NVCAM_E_INVALID_ARGUMENT);
        assert_eq!(nvcam_frames_convert_batch([fa].as_ptr(), 1, std::ptr::null(), dst.as_mut_ptr().cast(), 0, 10, 0), NVCAM_E_NULL_POINTER);
    }
    release(fa).unwrap();
    release(fb).unwrap();
    close(a, 2000).unwrap();
    close(b, 2000).unwrap();
}

/// A lossless camera hands out every frame in order: a batch grab must not swap its frame for a
/// newer one (which would drop the older frame unseen).
#[test]
fn get_frames_keeps_every_frame_of_a_lossless_camera() {
    init();
    let lossless = open("testsrc://64x48@60", &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING)).unwrap();
    let paced = open("testsrc://64x48@30", &options(0)).unwrap();
    for round in 0..5u64 {
        let want = round + 1;
        // The lossless camera first: the wait for the paced one gives it time to decode more.
        let (code, frames) = get_frames(&[lossless, paced], 3000);
        assert_eq!(code, NVCAM_OK, "round {round}: {}", last_error());
        let seq = info(frames[0]).unwrap().seq;
        assert_eq!(seq, want, "round {round}: the lossless camera's frame {want} was skipped");
        for f in frames {
            release(f).unwrap();
        }
    }
    close(lossless, 2000).unwrap();
    close(paced, 2000).unwrap();
}
