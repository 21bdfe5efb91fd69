//! The conversion kernels on a GPU (issue 12): every output format at 1080p, 4K and odd sizes,
//! both matrices and both ranges, identity, letterbox and crop+resize, against the CPU twin
//! (`nvcam::diag::convert_nv12_cpu`, the same arithmetic): bit-identical (the issue allows one
//! step per 8-bit channel, 1/255 for floats; the twin is built to match exactly). Both
//! destinations: device memory on the test's own stream, and host memory through the library's
//! pinned staging. Then the stream hand-off: a slow kernel on the
//! consumer's stream reads a frame released right after its launch, and the slot is not
//! rewritten until it finished.
//!
//! `#[ignore]`d (run on the GPU machine with `--include-ignored`); without a GPU they return
//! early, and fail under REQUIRE_GPU=1.

mod common;
use common::*;
use cudarc::driver::sys;
use nvcam::*;
use parking_lot::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn ck(what: &str, r: sys::CUresult) {
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "{what}");
}

struct Session {
    _serial: MutexGuard<'static, ()>,
}

impl Session {
    fn new() -> Session {
        let g = SERIAL.lock();
        unsafe {
            nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_WARN);
            assert_eq!(nvcam_init(std::ptr::null()), NVCAM_OK, "{}", last_error());
        }
        Session { _serial: g }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let r = nvcam_shutdown(20_000);
        if !std::thread::panicking() {
            assert_eq!(r, NVCAM_OK, "shutdown: {}", last_error());
        }
    }
}

/// Device 0's primary context (the one the library and PyTorch use), pushed while this lives,
/// with a non-blocking stream of the test's own.
struct Cuda {
    dev: sys::CUdevice,
    stream: sys::CUstream,
}

impl Cuda {
    fn new() -> Cuda {
        unsafe {
            ck("cuInit", sys::cuInit(0));
            let mut dev = 0;
            ck("cuDeviceGet", sys::cuDeviceGet(&mut dev, 0));
            let mut ctx = std::ptr::null_mut();
            ck("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
            ck("cuCtxPushCurrent", sys::cuCtxPushCurrent_v2(ctx));
            let mut stream = std::ptr::null_mut();
            ck("cuStreamCreate", sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32));
            Cuda { dev, stream }
        }
    }
    fn alloc(&self, n: usize) -> DevMem {
        let mut p = 0;
        unsafe { ck("cuMemAlloc", sys::cuMemAlloc_v2(&mut p, n)) };
        DevMem(p)
    }
    fn sync(&self) {
        unsafe { ck("cuStreamSynchronize", sys::cuStreamSynchronize(self.stream)) };
    }
    fn done(&self) -> bool {
        unsafe { sys::cuStreamQuery(self.stream) == sys::CUresult::CUDA_SUCCESS }
    }
    fn stream(&self) -> u64 {
        self.stream as u64
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        unsafe {
            sys::cuStreamSynchronize(self.stream);
            sys::cuStreamDestroy_v2(self.stream);
            let mut c = std::ptr::null_mut();
            sys::cuCtxPopCurrent_v2(&mut c);
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

struct DevMem(u64);

impl DevMem {
    fn download(&self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        unsafe { ck("cuMemcpyDtoH", sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), self.0, n)) };
        v
    }
}

impl Drop for DevMem {
    fn drop(&mut self) {
        unsafe { sys::cuMemFree_v2(self.0) };
    }
}

fn gpu_options(flags: u32, slots: u32) -> nvcam_camera_options {
    let mut o = options(flags);
    o.device = 0;
    o.pool_slots = slots;
    o
}

const FORMATS: [(u32, &str); 6] = [
    (NVCAM_FORMAT_BGRA8, "BGRA8"),
    (NVCAM_FORMAT_BGR8, "BGR8"),
    (NVCAM_FORMAT_RGB8, "RGB8"),
    (NVCAM_FORMAT_GRAY8, "GRAY8"),
    (NVCAM_FORMAT_RGB_F32_PLANAR, "RGB_F32"),
    (NVCAM_FORMAT_RGB_F16_PLANAR, "RGB_F16"),
];

fn spec(format: u32) -> nvcam_convert {
    nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, format, ..Default::default() }
}

/// Max |a - b| per channel, in 8-bit steps (floats: in units of 1/255).
fn max_diff(format: u32, a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len());
    match format {
        NVCAM_FORMAT_RGB_F32_PLANAR => a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .map(|(x, y)| (f32::from_ne_bytes(x.try_into().unwrap()) - f32::from_ne_bytes(y.try_into().unwrap())).abs() * 255.0)
            .fold(0.0, f32::max),
        NVCAM_FORMAT_RGB_F16_PLANAR => a
            .chunks_exact(2)
            .zip(b.chunks_exact(2))
            .map(|(x, y)| {
                let (x, y) = (u16::from_ne_bytes([x[0], x[1]]), u16::from_ne_bytes([y[0], y[1]]));
                (nvcam::diag::f16_to_f32(x) - nvcam::diag::f16_to_f32(y)).abs() * 255.0
            })
            .fold(0.0, f32::max),
        _ => a.iter().zip(b).map(|(&x, &y)| (x as i32 - y as i32).unsigned_abs() as f32).fold(0.0, f32::max),
    }
}

/// One spec on one device frame: device destination on our stream, host destination through the
/// library's staging, and the CPU reference; returns the max difference and the bytes compared.
fn check_one(cuda: &Cuda, frame: u64, fi: &nvcam_frame_info, nv12: &[u8], s: &nvcam_convert, what: &str) -> (f32, usize) {
    let mut need = 0u64;
    assert_eq!(unsafe { nvcam_frame_convert_size(frame, s, 0, &mut need) }, NVCAM_OK, "{what}: {}", last_error());
    let n = need as usize;
    let cpu = nvcam::diag::convert_nv12_cpu(nv12, fi.width, fi.height, s, (fi.color_matrix, fi.color_range), 0).unwrap();
    assert_eq!(cpu.len(), n, "{what}: reference size");
    // Device destination, on our stream; a guard past the end must stay untouched.
    let dst = cuda.alloc(n + 256);
    unsafe { ck("cuMemsetD8", sys::cuMemsetD8_v2(dst.0, 0xA5, n + 256)) };
    let mut d = *s;
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    d.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(frame, &d, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{what}: {}", last_error());
    cuda.sync();
    let dev = dst.download(n + 256);
    assert!(dev[n..].iter().all(|&b| b == 0xA5), "{what}: device conversion wrote past its size");
    // Host destination (the LabVIEW way).
    let mut host = vec![0x5Au8; n + 16];
    assert_eq!(unsafe { nvcam_frame_convert(frame, s, host.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{what}: {}", last_error());
    assert!(host[n..].iter().all(|&b| b == 0x5A), "{what}: host conversion wrote past its size");
    assert!(dev[..n] == host[..n], "{what}: device and host destinations differ (same kernel)");
    let diff = max_diff(s.format, &dev[..n], &cpu);
    assert!(dev[..n] == cpu[..], "{what}: GPU and CPU twin differ (max |diff| {diff}): they must agree bit for bit");
    (diff, n)
}

fn frame_of(url: &str, decoder: u32) -> (u64, u64, nvcam_frame_info, Vec<u8>) {
    let mut o = gpu_options(NVCAM_OPEN_NO_PACING, 4);
    o.decoder = decoder;
    let cam = open(url, &o).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let fi = info(f).unwrap();
    assert_eq!(fi.memory, NVCAM_MEMORY_DEVICE, "{url}: a GPU camera's frame is in device memory");
    let nv12 = pixels(f).unwrap();
    (cam, f, fi, nv12)
}

fn all_formats_and_colours(cuda: &Cuda, url: &str, decoder: u32) {
    let (cam, f, fi, nv12) = frame_of(url, decoder);
    let (w, h) = (fi.width, fi.height);
    if url.contains("161x97") {
        assert_eq!((w, h), (161, 97), "the odd-size clip decodes at its odd size");
    }
    let mut worst = [0f32; 6];
    let mut checked = 0usize;
    let t0 = Instant::now();
    for (i, &(format, name)) in FORMATS.iter().enumerate() {
        for matrix in [NVCAM_MATRIX_BT601, NVCAM_MATRIX_BT709] {
            for range in [NVCAM_RANGE_LIMITED, NVCAM_RANGE_FULL] {
                let mut s = spec(format);
                s.matrix = matrix;
                s.range = range;
                s.mean = [0.485, 0.456, 0.406];
                s.std = [0.229, 0.224, 0.225];
                let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} matrix {matrix} range {range}"));
                worst[i] = worst[i].max(d);
                checked += n;
            }
        }
        // Letterboxed detector input (box filter for the big frames, bilinear up for small ones).
        let mut s = spec(format);
        s.width = 640;
        s.height = 640;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        s.pad = [114.0, 114.0, 114.0];
        let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} letterbox 640"));
        worst[i] = worst[i].max(d);
        checked += n;
        // Crop + an odd-sized bilinear resize.
        let mut s = spec(format);
        s.roi_x = w / 5;
        s.roi_y = (h / 7) | 1;
        s.roi_width = (w / 2) | 1;
        s.roi_height = (h / 2).max(1);
        s.width = 333;
        s.height = 187;
        let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} roi+resize"));
        worst[i] = worst[i].max(d);
        checked += n;
    }
    println!(
        "{w}x{h}: {checked} bytes compared in {:.1}s; max |GPU - CPU| per format (steps of 1/255): {}",
        t0.elapsed().as_secs_f64(),
        FORMATS.iter().zip(worst).map(|((_, n), d)| format!("{n} {d:.3}")).collect::<Vec<_>>().join(", ")
    );
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Every format x both matrices x both ranges x (identity, letterbox, crop+resize) at 1080p, 4K,
/// 1366x768 and 161x97: the kernels equal the CPU twin bit for bit.
#[test]
#[ignore]
fn gpu_conversions_match_the_cpu_reference_at_every_size() {
    if !need_gpu("gpu_conversions_match_the_cpu_reference_at_every_size", gpu_usable(), "usable GPU (libcuda and a device)") {
        return;
    }
    let _s = Session::new();
    let cuda = Cuda::new();
    // NVCAM_CONVERT_SIZES narrows the sizes (the sanitizer runs, which are slow per launch).
    let sizes = std::env::var("NVCAM_CONVERT_SIZES").unwrap_or_else(|_| "1920x1080,3840x2160,1366x768,161x97".into());
    for size in sizes.split(',').filter(|s| *s != "161x97") {
        all_formats_and_colours(&cuda, &format!("testsrc://{size}@30"), NVCAM_DECODER_AUTO);
    }
    if !sizes.contains("161x97") {
        return;
    }
    // Odd width and height (testsrc in 4:2:0 rounds down to even; H.264 encoders refuse odd
    // sizes): an MJPEG clip, decoded in software and uploaded.
    let odd = clip("conv-mjpeg-161x97.mkv", "161x97", 10, "mjpeg", &["-strict", "-1", "-q:v", "3"]);
    all_formats_and_colours(&cuda, odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE);
}

/// A real NVDEC frame (H.264 1080p clip): colour info comes from the stream, and the conversion
/// still matches the reference.
#[test]
#[ignore]
fn nvdec_frame_converts_with_its_stream_colours() {
    if !need_gpu("nvdec_frame_converts_with_its_stream_colours", gpu_usable(), "usable GPU (libcuda and a device)") {
        return;
    }
    let clip = std::env::var("BUNDLE_WITH").map(|b| format!("{b}/fixtures/gpu-h264-1920x1080.mp4")).unwrap_or_default();
    if !std::path::Path::new(&clip).exists() {
        println!("no fixture {clip}; skipped");
        return;
    }
    let _s = Session::new();
    let cuda = Cuda::new();
    let (cam, f, fi, nv12) = frame_of(&clip, NVCAM_DECODER_AUTO);
    println!("{}x{} NVDEC frame: matrix {} range {}", fi.width, fi.height, fi.color_matrix, fi.color_range);
    assert_eq!((fi.color_matrix, fi.color_range), (NVCAM_MATRIX_BT709, NVCAM_RANGE_LIMITED), "an unflagged 1080p stream is BT.709 limited");
    for (format, name) in FORMATS {
        let mut s = spec(format);
        s.width = 640;
        s.height = 640;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        check_one(&cuda, f, &fi, &nv12, &s, &format!("nvdec {name}"));
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// A consumer kernel on the consumer's stream spins ~1 s, then copies the frame's slot; the
/// frame is released with `nvcam_frame_release_after_stream` right after the launch while the
/// camera keeps decoding through its 2-slot pool. The slot must not be handed out (no new frame
/// at its address) before the kernel finished, and the copied bytes equal the frame's.
#[test]
#[ignore]
fn release_after_stream_defers_reuse() {
    if !need_gpu("release_after_stream_defers_reuse", gpu_usable(), "usable GPU (libcuda and a device)") {
        return;
    }
    let _s = Session::new();
    let cuda = Cuda::new();
    let cam = open("testsrc://640x360@30", &gpu_options(NVCAM_OPEN_NO_PACING, 2)).unwrap();
    let f = get_frame(cam, 10_000).unwrap();
    let fi = info(f).unwrap();
    assert_eq!(fi.memory, NVCAM_MEMORY_DEVICE);
    let want = pixels(f).unwrap();
    let slot_bytes = (fi.pitch * (fi.height as u64 + (fi.height as u64).div_ceil(2))) as usize;
    let copy = cuda.alloc(slot_bytes);
    assert_eq!(unsafe { nvcam_frame_wait_stream(f, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    nvcam::diag::spin_copy(0, fi.y_ptr, copy.0, slot_bytes as u64, 1_500_000_000, cuda.stream()).unwrap();
    assert_eq!(unsafe { nvcam_frame_release_after_stream(f, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    assert!(!cuda.done(), "the spin kernel ended before the release: the test proves nothing");
    // Drain frames while the kernel spins: none may sit in the released slot.
    let (mut during, mut reused_after) = (0u32, false);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let Ok(g) = get_frame(cam, 2000) else { continue };
        let gi = info(g).unwrap();
        let spinning = !cuda.done();
        if gi.y_ptr == fi.y_ptr {
            assert!(!spinning, "the released slot was rewritten while the consumer's kernel still read it (frame {})", gi.seq);
            reused_after = true;
        } else if spinning {
            during += 1;
        }
        release(g).unwrap();
        if reused_after {
            break;
        }
    }
    cuda.sync();
    assert!(during >= 3, "only {during} frames arrived while the kernel ran: the pool was never under pressure");
    assert!(reused_after, "the slot never came back after the kernel finished");
    // The kernel's copy (taken at its end) holds the frame's pixels.
    let got = copy.download(slot_bytes);
    let row = (fi.width as usize).div_ceil(2) * 2;
    let rows = fi.height as usize + (fi.height as usize).div_ceil(2);
    for r in 0..rows {
        let n = if r < fi.height as usize { fi.width as usize } else { row };
        assert!(got[r * fi.pitch as usize..r * fi.pitch as usize + n] == want[r * row..r * row + n], "row {r} of the released frame changed under the consumer's kernel");
    }
    println!("release_after_stream: {during} frames delivered from the other slot while the consumer's kernel ran; the slot returned after it");
    close(cam, 5000).unwrap();
}

/// `nvcam_frames_convert_batch` on device frames: three GPU cameras of different sizes, taken
/// with `nvcam_cameras_get_frames` (device frames), converted in one call into one device tensor
/// at a stride with gaps, on the test's stream, as ONE kernel launch (the three sizes sample the
/// 320x320 letterbox in all three modes: 640x360 bilinear, 1280x720 box filter, 320x240 same
/// scale); the frames are released right after the call (the batch fences each slot). Every item
/// equals `nvcam_frame_convert` of that frame byte for byte, the gaps and the guard past the end
/// stay untouched, a 37-item batch takes two launches with the same bytes, and the host batch
/// equals the device batch.
#[test]
#[ignore]
fn gpu_batch_equals_single_conversions() {
    if !need_gpu("gpu_batch_equals_single_conversions", gpu_usable(), "usable GPU (libcuda and a device)") {
        return;
    }
    let _s = Session::new();
    let cuda = Cuda::new();
    let cams: Vec<u64> = ["testsrc://640x360@30", "testsrc://1280x720@30", "testsrc://320x240@30"]
        .iter()
        .map(|u| open(u, &gpu_options(NVCAM_OPEN_NO_PACING, 4)).unwrap_or_else(|e| panic!("{u}: {e:?}")))
        .collect();
    for (format, name) in FORMATS {
        let mut frames = vec![0u64; cams.len()];
        let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), cams.len() as u32, 10_000, frames.as_mut_ptr()) };
        assert_eq!(code, NVCAM_OK, "{name}: get_frames: {}", last_error());
        for (i, &f) in frames.iter().enumerate() {
            let fi = info(f).unwrap();
            assert_eq!((fi.memory, fi.camera), (NVCAM_MEMORY_DEVICE, cams[i]), "{name}: frames[{i}]");
        }
        let batch_frames = [frames[0], frames[1], frames[2], frames[1]];
        let mut s = spec(format);
        s.width = 320;
        s.height = 320;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        s.pad = [114.0; 3];
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        s.dst_memory = NVCAM_MEMORY_DEVICE;
        s.dst_device = 0;
        let mut item = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(frames[0], &s, 0, &mut item) }, NVCAM_OK);
        let item = item as usize;
        // Single conversions, one device buffer each.
        let singles: Vec<Vec<u8>> = batch_frames
            .iter()
            .map(|&f| {
                let d = cuda.alloc(item);
                assert_eq!(unsafe { nvcam_frame_convert(f, &s, d.0 as *mut _, 0, item as u64, cuda.stream()) }, NVCAM_OK, "{name}: {}", last_error());
                cuda.sync();
                d.download(item)
            })
            .collect();
        let stride = (item + 256).next_multiple_of(256);
        let need = stride * (batch_frames.len() - 1) + item;
        let dst = cuda.alloc(need + 256);
        unsafe { ck("cuMemsetD8", sys::cuMemsetD8_v2(dst.0, 0xA5, need + 256)) };
        // A stride that breaks the format's alignment is refused (floats need 4 bytes, f16 2).
        if format == NVCAM_FORMAT_RGB_F32_PLANAR || format == NVCAM_FORMAT_RGB_F16_PLANAR || format == NVCAM_FORMAT_BGRA8 {
            let code = unsafe { nvcam_frames_convert_batch(batch_frames.as_ptr(), 4, &s, dst.0 as *mut _, (item + 1) as u64, need as u64 + 16, cuda.stream()) };
            assert_eq!(code, NVCAM_E_INVALID_ARGUMENT, "{name}: a misaligned stride was accepted");
        }
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(batch_frames.as_ptr(), 4, &s, dst.0 as *mut _, stride as u64, need as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: batch: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 1, "{name}: a device batch of 4 frames is one kernel launch");
        // Beyond 32 items per launch: 37 items (the three frames repeated), packed, two launches.
        let big: Vec<u64> = (0..37).map(|i| frames[i % 3]).collect();
        let big_dst = cuda.alloc(37 * item + 256);
        unsafe { ck("cuMemsetD8", sys::cuMemsetD8_v2(big_dst.0, 0xA5, 37 * item + 256)) };
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(big.as_ptr(), 37, &s, big_dst.0 as *mut _, 0, 37 * item as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: batch of 37: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 2, "{name}: 37 frames take two launches (32 + 5)");
        // Released right away: the batch fenced every slot on our stream.
        for f in &frames {
            release(*f).unwrap();
        }
        cuda.sync();
        let got = dst.download(need + 256);
        for (i, one) in singles.iter().enumerate() {
            assert!(got[i * stride..i * stride + item] == one[..], "{name}: batch item {i} differs from nvcam_frame_convert of the same frame");
            if i + 1 < singles.len() {
                assert!(got[i * stride + item..(i + 1) * stride].iter().all(|&b| b == 0xA5), "{name}: the gap after item {i} was written");
            }
        }
        assert!(got[need..].iter().all(|&b| b == 0xA5), "{name}: the device batch wrote past dst_size");
        let got = big_dst.download(37 * item + 256);
        for i in 0..37 {
            assert!(got[i * item..(i + 1) * item] == singles[i % 3][..], "{name}: item {i} of the 37-item batch differs from nvcam_frame_convert");
        }
        assert!(got[37 * item..].iter().all(|&b| b == 0xA5), "{name}: the 37-item batch wrote past dst_size");
        // The same batch into host memory (frames taken again: the old ones are released).
        let mut again = vec![0u64; cams.len()];
        let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), cams.len() as u32, 10_000, again.as_mut_ptr()) };
        assert_eq!(code, NVCAM_OK, "{name}: get_frames: {}", last_error());
        let mut h = s;
        h.dst_memory = NVCAM_MEMORY_HOST;
        let mut host = vec![0x5Au8; 3 * item + 16];
        let code = unsafe { nvcam_frames_convert_batch(again.as_ptr(), 3, &h, host.as_mut_ptr().cast(), 0, 3 * item as u64, 0) };
        assert_eq!(code, NVCAM_OK, "{name}: host batch: {}", last_error());
        assert!(host[3 * item..].iter().all(|&b| b == 0x5A), "{name}: the host batch wrote past dst_size");
        for (i, &f) in again.iter().enumerate() {
            let mut one = vec![0u8; item];
            assert_eq!(unsafe { nvcam_frame_convert(f, &h, one.as_mut_ptr().cast(), 0, item as u64, 0) }, NVCAM_OK);
            assert!(host[i * item..(i + 1) * item] == one[..], "{name}: host batch item {i} differs from nvcam_frame_convert");
            release(f).unwrap();
        }
        println!("batch {name}: 4 items of {item} bytes at stride {stride} (one launch) and 37 packed items (two launches) equal single conversions (device and host)");
    }
    for c in cams {
        close(c, 5000).unwrap();
    }
}
