//! The conversion kernels on a GPU: every output format at 1080p, 4K and odd sizes,
//! both matrices and both ranges, chroma sitings, identity, crops at odd offsets,
//! letterbox and crop+resize, NV12 and P016 (10-bit) frames, against the CPU twin
//! (`nvcam::diag::convert_cpu`, the same arithmetic): bit-identical (a conversion is
//! allowed one step per 8-bit channel, 1/255 for floats, but the twin is built to match exactly). Both
//! destinations: device memory on the test's own stream, and host memory through the library's
//! pinned staging. Then the stream hand-off: a slow kernel on the
//! consumer's stream reads a frame released right after its launch, and the slot is not
//! rewritten until it finished. And crops on the device equal that window of the whole frame's
//! device conversion (no seam at a ROI's border).
//!
//! `#[ignore]`d (run on the GPU machine with `--include-ignored`); without a GPU they return
//! early, and fail under REQUIRE_GPU=1.

mod common;
use common::*;
use cudarc::driver::sys;
use nvcam::*;
use std::time::{Duration, Instant};

/// Device 0's primary context (the one the library and PyTorch use), pushed while this lives,
/// with a non-blocking stream of the test's own, and a page-locked host buffer grown on demand.
struct Cuda {
    dev: sys::CUdevice,
    stream: sys::CUstream,
    pinned: std::cell::RefCell<Option<Pinned>>,
}

/// Page-locked host memory (cuMemHostAlloc), freed on drop.
struct Pinned {
    ptr: *mut u8,
    len: usize,
}

impl Pinned {
    fn new(len: usize) -> Pinned {
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        unsafe { ck("cuMemHostAlloc", sys::cuMemHostAlloc(&mut p, len, 0)) };
        Pinned { ptr: p.cast(), len }
    }
    fn bytes(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// Downloads so far that took the page-locked path (DMA or kernel) and the pageable one.
/// Fills device memory with guard bytes and waits for it. `cuMemsetD8` runs asynchronously on the
/// legacy default stream, which the non-blocking streams the conversions run on do not wait for:
/// on a GPU shared with another process the fill once landed after the conversion and the test
/// read guard bytes as if the library had written them wrong.
fn fill_now(p: sys::CUdeviceptr, byte: u8, n: usize) {
    unsafe {
        ck("cuMemsetD8", sys::cuMemsetD8_v2(p, byte, n));
        ck("cuStreamSynchronize", sys::cuStreamSynchronize(std::ptr::null_mut()));
    }
}

fn download_paths() -> (u64, u64) {
    let (dma, kernel, pageable) = nvcam::diag::download_paths();
    (dma + kernel, pageable)
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
            Cuda { dev, stream, pinned: std::cell::RefCell::new(None) }
        }
    }
    /// The test's page-locked buffer, at least `n` bytes.
    fn pinned(&self, n: usize) -> std::cell::RefMut<'_, Pinned> {
        let mut p = self.pinned.borrow_mut();
        if p.as_ref().is_none_or(|b| b.len < n) {
            *p = None;
            *p = Some(Pinned::new(n));
        }
        std::cell::RefMut::map(p, |p| p.as_mut().unwrap())
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
        self.pinned.borrow_mut().take();
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

fn gpu_slot_options(flags: u32, slots: u32) -> nvcam_camera_options {
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

/// The stream's siting (0), then left (H.264/HEVC's default), centre (JPEG), top-left (BT.2020)
/// and bottom (the other vertical shift).
const SITINGS: [u32; 5] = [0, NVCAM_SITING_LEFT, NVCAM_SITING_CENTER, NVCAM_SITING_TOPLEFT, NVCAM_SITING_BOTTOM];

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
    let cpu = nvcam::diag::convert_cpu(nv12, fi.format, fi.width, fi.height, s, (fi.color_matrix, fi.color_range, fi.chroma_siting), 0).unwrap();
    assert_eq!(cpu.len(), n, "{what}: reference size");
    // Device destination, on our stream; a guard past the end must stay untouched.
    let dst = cuda.alloc(n + 256);
    fill_now(dst.0, 0xA5, n + 256);
    let mut d = *s;
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    d.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(frame, &d, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{what}: {}", last_error());
    cuda.sync();
    let dev = dst.download(n + 256);
    assert!(dev[n..].iter().all(|&b| b == 0xA5), "{what}: device conversion wrote past its size");
    // Host destination (the LabVIEW way): pageable memory, through the staging.
    let mut host = vec![0x5Au8; n + 16];
    let p0 = download_paths();
    assert_eq!(unsafe { nvcam_frame_convert(frame, s, host.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{what}: {}", last_error());
    assert!(host[n..].iter().all(|&b| b == 0x5A), "{what}: host conversion wrote past its size");
    assert!(dev[..n] == host[..n], "{what}: device and host destinations differ (same kernel)");
    // Page-locked host memory: written directly.
    let mut pin = cuda.pinned(n + 16);
    let pb = pin.bytes();
    pb.fill(0x3C);
    assert_eq!(unsafe { nvcam_frame_convert(frame, s, pb.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{what}: {}", last_error());
    assert!(pb[n..n + 16].iter().all(|&b| b == 0x3C), "{what}: pinned conversion wrote past its size");
    assert!(dev[..n] == pb[..n], "{what}: device and pinned host destinations differ");
    let p1 = download_paths();
    assert_eq!((p1.0 - p0.0, p1.1 - p0.1), (1, 1), "{what}: the pinned destination must go direct, the Vec through staging");
    drop(pin);
    let diff = max_diff(s.format, &dev[..n], &cpu);
    assert!(dev[..n] == cpu[..], "{what}: GPU and CPU twin differ (max |diff| {diff}): they must agree bit for bit");
    (diff, n)
}

fn frame_of(url: &str, decoder: u32) -> (u64, u64, nvcam_frame_info, Vec<u8>) {
    let mut o = gpu_slot_options(NVCAM_OPEN_NO_PACING, 4);
    o.decoder = decoder;
    let cam = open(url, &o).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let fi = info(f).unwrap();
    assert_eq!(fi.memory, NVCAM_MEMORY_DEVICE, "{url}: a GPU camera's frame is in device memory");
    let nv12 = pixels(f).unwrap();
    (cam, f, fi, nv12)
}

/// Every format x both matrices x both ranges at the same scale, and x five sitings letterboxed
/// to 640x640, crop + resize to 333x187, an odd crop at the same scale and a box filter across
/// (up-scaled 2.5x down), of the first frame of `url` (whose frames are `frame_format`).
fn all_formats_and_colours(cuda: &Cuda, url: &str, decoder: u32, frame_format: u32) {
    let (cam, f, fi, nv12) = frame_of(url, decoder);
    let (w, h) = (fi.width, fi.height);
    assert_eq!(fi.format, frame_format, "{url}: the frame's format");
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
        // The stream's siting (0), then the others a stream may signal (every kernel path reads
        // chroma at the sited positions; the CPU twin is written from the same geometry).
        for siting in SITINGS {
            // Letterboxed detector input (box filter for the big frames, bilinear up for small ones).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.width = 640;
            s.height = 640;
            s.flags = NVCAM_CONVERT_LETTERBOX;
            s.pad = [114.0, 114.0, 114.0];
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} letterbox 640"));
            worst[i] = worst[i].max(d);
            checked += n;
            // Crop + an odd-sized bilinear resize.
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.roi_x = w / 5;
            s.roi_y = (h / 7) | 1;
            s.roi_width = (w / 2) | 1;
            s.roi_height = (h / 2).max(1);
            s.width = 333;
            s.height = 187;
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} roi+resize"));
            worst[i] = worst[i].max(d);
            checked += n;
            // A crop at odd offsets, odd-sized, at the same scale (the same-scale kernel's rows
            // and columns of both parities; its border reads the frame around it).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.roi_x = (w / 5) | 1;
            s.roi_y = (h / 7) | 1;
            s.roi_width = ((w / 2) | 1).min(w - s.roi_x);
            s.roi_height = ((h / 2) | 1).min(h - s.roi_y);
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} odd crop"));
            worst[i] = worst[i].max(d);
            checked += n;
            // Box filter across, up-scaled 2.5x down: the sited chroma footprints of the first and
            // last rows lie partly or wholly past the edge samples (the kernels floor w0 there).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.width = (w / 8).max(1);
            s.height = h * 5 / 2;
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} box across, up 2.5x down"));
            worst[i] = worst[i].max(d);
            checked += n;
        }
    }
    println!(
        "{w}x{h}: {checked} bytes compared in {:.1}s; max |GPU - CPU| per format (steps of 1/255): {}",
        t0.elapsed().as_secs_f64(),
        FORMATS.iter().zip(worst).map(|((_, n), d)| format!("{n} {d:.3}")).collect::<Vec<_>>().join(", ")
    );
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Every format x both matrices x both ranges (identity), and x five sitings (letterbox,
/// crop+resize, a crop at odd offsets, a box filter across with the other axis up-scaled) at
/// 1080p, 4K, 1366x768 and 161x97: the kernels equal the CPU twin bit for bit.
#[test]
#[ignore]
fn gpu_conversions_match_the_cpu_reference_at_every_size() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    // NVCAM_CONVERT_SIZES narrows the sizes (the sanitizer runs, which are slow per launch).
    let sizes = std::env::var("NVCAM_CONVERT_SIZES").unwrap_or_else(|_| "1920x1080,3840x2160,1366x768,161x97".into());
    for size in sizes.split(',').filter(|s| *s != "161x97") {
        all_formats_and_colours(&cuda, &format!("testsrc://{size}@30"), NVCAM_DECODER_AUTO, NVCAM_FORMAT_NV12);
    }
    if !sizes.contains("161x97") {
        return;
    }
    // Odd width and height (testsrc in 4:2:0 rounds down to even; H.264 encoders refuse odd
    // sizes): an MJPEG clip, decoded in software and uploaded.
    let odd = clip("conv-mjpeg-161x97.mkv", "161x97", 10, "mjpeg", &["-strict", "-1", "-q:v", "3"]);
    all_formats_and_colours(&cuda, odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_NV12);
}

/// The box filter's tiled path (a block's footprint staged in shared memory) at the
/// scales that take it, in each kernel that has it (`_area4` for large outputs, `_area_tiled`
/// for small ones, `_batch_tiled`): every format, three sitings, letterbox, plain resize and a crop,
/// bit for bit as the CPU twin. A staged rectangle one byte short, a word mask off by one or a
/// row combined out of order fails here (the per-pixel path's scales are the test above's).
#[test]
#[ignore]
fn tiled_box_filter_matches_the_cpu_twin_in_every_kernel() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let sizes = std::env::var("NVCAM_TILED_SIZES").unwrap_or_else(|_| "4096x2160,3840x2160,1366x768".into());
    for size in sizes.split(',') {
        let (cam, f, fi, nv12) = frame_of(&format!("testsrc://{size}@30"), NVCAM_DECODER_AUTO);
        let (w, h) = (fi.width, fi.height);
        let mut checked = 0usize;
        // (what, width, height, letterbox, roi): 6.4x (4096 into 640), 6.5x (area4 at 4K, area
        // below), 8.5x (area), 12x-12.8x (letterbox 320), and 6.5x of a crop at odd offsets.
        let cases: [(&str, u32, u32, bool, Option<Roi>); 5] = [
            ("letterbox 640", 640, 640, true, None),
            ("resize /6.5", w * 2 / 13, h * 2 / 13, false, None),
            ("resize /8.5", w * 2 / 17, h * 2 / 17, false, None),
            ("letterbox 320", 320, 320, true, None),
            ("crop /6.5", (w / 2) * 2 / 13, (h / 2) * 2 / 13, false, Some(((w / 5) | 1, (h / 7) | 1, (w / 2) | 1, h / 2))),
        ];
        // NVCAM_TILED_QUICK (the sanitizer runs): two formats, the stream's siting.
        let quick = std::env::var_os("NVCAM_TILED_QUICK").is_some();
        let sitings: &[u32] = if quick { &[0] } else { &[0, NVCAM_SITING_CENTER, NVCAM_SITING_TOPLEFT] };
        for &(format, name) in FORMATS.iter().filter(|(f, _)| !quick || [NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_RGB_F16_PLANAR].contains(f)) {
            for &siting in sitings {
                for &(what, ow, oh, letterbox, roi) in &cases {
                    let mut s = spec(format);
                    s.chroma_siting = siting;
                    (s.width, s.height) = (ow, oh);
                    if letterbox {
                        s.flags = NVCAM_CONVERT_LETTERBOX;
                        s.pad = [114.0, 114.0, 114.0];
                    }
                    if let Some((x, y, rw, rh)) = roi {
                        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (x, y, rw, rh);
                    }
                    checked += check_one(&cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} {what}")).1;
                }
            }
        }
        // A batch of three items, each as its single conversion.
        let mut s = spec(NVCAM_FORMAT_RGB_F16_PLANAR);
        (s.width, s.height) = (w * 2 / 13, h * 2 / 13);
        let one = on_device(&cuda, f, &s);
        let frames = [f, f, f];
        let mut d = s;
        d.dst_memory = NVCAM_MEMORY_DEVICE;
        d.dst_device = 0;
        let dst = cuda.alloc(3 * one.len());
        let code = unsafe { nvcam_frames_convert_batch(frames.as_ptr(), 3, &d, dst.0 as *mut _, 0, 3 * one.len() as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{}", last_error());
        cuda.sync();
        let got = dst.download(3 * one.len());
        for (i, item) in got.chunks_exact(one.len()).enumerate() {
            assert!(item == &one[..], "{w}x{h}: batch item {i} differs from its single conversion");
        }
        println!("{w}x{h}: tiled box filter, {checked} bytes equal to the CPU twin; batch of 3 equal to single conversions");
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
}

/// P016 frames (10-bit streams) convert on their own kernels bit for bit as the CPU twin does
/// (16-bit samples in 1/256 steps of the 8-bit units): an 8-bit kernel reading the words as bytes,
/// or a 16-bit path that rounds or orders one operation differently, fails here. An NVDEC frame of
/// HEVC Main10 at 1366x768 (letterbox and crop + resize take the box filter there) with a
/// bilinear down-scale and a tile at odd offsets besides, and an odd-sized (161x97) VP9 profile 2 frame
/// decoded in software and uploaded (letterbox and crop + resize up-scale bilinearly); every
/// format, matrix, range and five sitings, as the NV12 test.
#[test]
#[ignore]
fn gpu_p016_conversions_match_the_cpu_twin() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let hevc10 = ten_bit_clip(1366, 768, 12);
    let url = hevc10.to_str().unwrap();
    all_formats_and_colours(&cuda, url, NVCAM_DECODER_AUTO, NVCAM_FORMAT_P016);
    let (cam, f, fi, p016) = frame_of(url, NVCAM_DECODER_AUTO);
    for (format, name) in FORMATS {
        // Bilinear down 1.5x (the letterbox and crop + resize above took the box filter).
        let mut s = spec(format);
        (s.width, s.height) = (911, 512);
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        check_one(&cuda, f, &fi, &p016, &s, &format!("P016 {name} bilinear down 1.5x"));
        let mut s = spec(format);
        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (333, 177, 641, 361);
        check_one(&cuda, f, &fi, &p016, &s, &format!("P016 {name} odd tile"));
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
    let odd = ten_bit_odd_clip();
    all_formats_and_colours(&cuda, odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_P016);
}

/// A real NVDEC frame (H.264 1080p clip): colour info comes from the stream, and the conversion
/// still matches the reference.
#[test]
#[ignore]
fn nvdec_frame_converts_with_its_stream_colours() {
    if !need_gpu!() {
        return;
    }
    let clip = std::env::var("BUNDLE_WITH").map(|b| format!("{b}/fixtures/gpu-h264-1920x1080.mp4")).unwrap_or_default();
    if !std::path::Path::new(&clip).exists() {
        println!("no fixture {clip}; skipped");
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (cam, f, fi, nv12) = frame_of(&clip, NVCAM_DECODER_AUTO);
    println!("{}x{} NVDEC frame: matrix {} range {} siting {}", fi.width, fi.height, fi.color_matrix, fi.color_range, fi.chroma_siting);
    assert_eq!((fi.color_matrix, fi.color_range), (NVCAM_MATRIX_BT709, NVCAM_RANGE_LIMITED), "an unflagged 1080p stream is BT.709 limited");
    for (format, name) in FORMATS {
        let mut s = spec(format);
        s.width = 640;
        s.height = 640;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        check_one(&cuda, f, &fi, &nv12, &s, &format!("nvdec {name}"));
        // A tile at odd offsets, the stream's siting.
        let mut s = spec(format);
        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (333, 177, 641, 361);
        check_one(&cuda, f, &fi, &nv12, &s, &format!("nvdec {name} odd tile"));
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// `s` converted from frame `f` into device memory on the test's stream, packed, downloaded.
fn on_device(cuda: &Cuda, f: u64, s: &nvcam_convert) -> Vec<u8> {
    let mut need = 0u64;
    assert_eq!(unsafe { nvcam_frame_convert_size(f, s, 0, &mut need) }, NVCAM_OK, "{}", last_error());
    let n = need as usize;
    let dst = cuda.alloc(n);
    let mut d = *s;
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    d.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(f, &d, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    cuda.sync();
    dst.download(n)
}

/// Bytes per pixel in one plane, and planes, of a format.
fn pixel_layout(format: u32) -> (usize, usize) {
    match format {
        NVCAM_FORMAT_BGRA8 => (4, 1),
        NVCAM_FORMAT_BGR8 | NVCAM_FORMAT_RGB8 => (3, 1),
        NVCAM_FORMAT_GRAY8 => (1, 1),
        NVCAM_FORMAT_RGB_F32_PLANAR => (4, 3),
        _ => (2, 3),
    }
}

/// The `(x, y, w, h)` window (pixels) of a packed image `iw` pixels wide and `ih` high, planes
/// after each other.
fn window(img: &[u8], format: u32, (iw, ih): (u32, u32), (x, y, w, h): Roi) -> Vec<u8> {
    let (px, planes) = pixel_layout(format);
    let (row, plane) = (iw as usize * px, iw as usize * px * ih as usize);
    let mut v = Vec::with_capacity(w as usize * px * h as usize * planes);
    for p in 0..planes {
        for r in y..y + h {
            let at = p * plane + r as usize * row + x as usize * px;
            v.extend_from_slice(&img[at..at + w as usize * px]);
        }
    }
    v
}

/// A crop rectangle (x, y, w, h) in frame pixels.
type Roi = (u32, u32, u32, u32);

/// Crops on the device equal that window of the whole frame's device conversion, byte for byte,
/// for every format and siting: at the same scale at odd and even offsets (tiles touching the
/// frame's edges too), and resized with the origin on the whole frame's output grid (down 2x
/// bilinear, down 4x box filter, up 2x bilinear at any origin). A ROI's border reads the frame
/// around it: no seam where tiles meet.
#[test]
#[ignore]
fn gpu_roi_equals_the_window_of_the_whole_frame() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    // (source, output pixels per frame pixel as num / den, ROIs in frame pixels)
    let cases: [(&str, (u32, u32), &[Roi]); 5] = [
        ("testsrc://1920x1080@30", (1, 1), &[(333, 177, 641, 361), (2, 2, 64, 64), (1279, 719, 641, 361), (0, 1, 1920, 1079), (1919, 1079, 1, 1), (7, 0, 33, 1080)]),
        ("testsrc://1920x1080@30", (1, 2), &[(2, 2, 640, 360), (1000, 500, 920, 580)]),
        ("testsrc://1920x1080@30", (1, 4), &[(4, 4, 640, 360), (1280, 720, 640, 360)]),
        // 7x down: the box filter staged in shared memory (its tiles read the frame around them).
        ("testsrc://1960x1092@30", (1, 7), &[(7, 7, 700, 350), (1001, 497, 910, 581)]),
        ("testsrc://640x360@30", (2, 1), &[(1, 1, 101, 51), (333, 177, 307, 183)]),
    ];
    let mut compared = 0usize;
    for (url, (num, den), rois) in cases {
        let (cam, f, fi, _) = frame_of(url, NVCAM_DECODER_AUTO);
        let out = |n: u32| n * num / den;
        for siting in SITINGS {
            for (format, name) in FORMATS {
                let mut whole = spec(format);
                whole.chroma_siting = siting;
                (whole.width, whole.height) = (out(fi.width), out(fi.height));
                let all = on_device(&cuda, f, &whole);
                for &(x, y, w, h) in rois {
                    let mut s = whole;
                    (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (x, y, w, h);
                    (s.width, s.height) = (out(w), out(h));
                    let got = on_device(&cuda, f, &s);
                    let want = window(&all, format, (whole.width, whole.height), (out(x), out(y), out(w), out(h)));
                    assert!(got == want, "{url} x{num}/{den} {name} siting {siting} roi {:?}: differs from that window of the whole frame", (x, y, w, h));
                    compared += got.len();
                }
            }
        }
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
    println!("ROIs on the device equal their windows of the whole frame: {compared} bytes compared (same scale, down 2x, 4x and 7x, up 2x; 6 formats, 5 sitings)");
}

/// A consumer kernel on the consumer's stream spins ~1 s, then copies the frame's slot; the
/// frame is released with `nvcam_frame_release_after_stream` right after the launch while the
/// camera keeps decoding through its 2-slot pool. The slot must not be handed out (no new frame
/// at its address) before the kernel finished, and the copied bytes equal the frame's.
#[test]
#[ignore]
fn release_after_stream_defers_reuse() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let cam = open("testsrc://640x360@30", &gpu_slot_options(NVCAM_OPEN_NO_PACING, 2)).unwrap();
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
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let cams: Vec<u64> = ["testsrc://640x360@30", "testsrc://1280x720@30", "testsrc://320x240@30"]
        .iter()
        .map(|u| open(u, &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap_or_else(|e| panic!("{u}: {e:?}")))
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
        fill_now(dst.0, 0xA5, need + 256);
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
        fill_now(big_dst.0, 0xA5, 37 * item + 256);
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

/// A device batch mixing NV12 and P016 frames (an NVDEC HEVC Main10 frame, a 640x360 NV12
/// frame, an odd-sized uploaded 10-bit frame; five items, repeats included): the P016 items run
/// on the 16-bit batch kernel and the NV12 ones on the 8-bit one, two launches in all, and every
/// item lands at its own index, equal to `nvcam_frame_convert` of its frame byte for byte, for
/// every format; the gaps and the guard past the end stay untouched, and the host batch equals
/// the device one. A batch that ran P016 items on the 8-bit kernel, or dropped or misplaced one
/// width's items, fails here.
#[test]
#[ignore]
fn gpu_batch_mixing_nv12_and_p016_frames_equals_single_conversions() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (hevc10, odd) = (ten_bit_clip(1366, 768, 12), ten_bit_odd_clip());
    let sources = [(hevc10.to_str().unwrap(), NVCAM_DECODER_AUTO, NVCAM_FORMAT_P016), ("testsrc://640x360@30", NVCAM_DECODER_AUTO, NVCAM_FORMAT_NV12), (odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_P016)];
    let held: Vec<(u64, u64)> = sources
        .iter()
        .map(|&(url, decoder, want)| {
            let (cam, f, fi, _) = frame_of(url, decoder);
            assert_eq!(fi.format, want, "{url}: the frame's format");
            (cam, f)
        })
        .collect();
    let batch = [held[0].1, held[1].1, held[2].1, held[1].1, held[0].1];
    for (format, name) in FORMATS {
        let mut s = spec(format);
        (s.width, s.height, s.flags, s.pad) = (320, 320, NVCAM_CONVERT_LETTERBOX, [114.0; 3]);
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        let mut h = s;
        (s.dst_memory, s.dst_device) = (NVCAM_MEMORY_DEVICE, 0);
        let singles: Vec<Vec<u8>> = batch.iter().map(|&f| on_device(&cuda, f, &s)).collect();
        let item = singles[0].len();
        let stride = (item + 256).next_multiple_of(256);
        let need = stride * (batch.len() - 1) + item;
        let dst = cuda.alloc(need + 256);
        fill_now(dst.0, 0xA5, need + 256);
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(batch.as_ptr(), batch.len() as u32, &s, dst.0 as *mut _, stride as u64, need as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: mixed batch: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 2, "{name}: a batch of NV12 and P016 frames is one launch per sample width");
        cuda.sync();
        let got = dst.download(need + 256);
        for (i, one) in singles.iter().enumerate() {
            assert!(got[i * stride..i * stride + item] == one[..], "{name}: mixed batch item {i} differs from nvcam_frame_convert of the same frame");
            if i + 1 < singles.len() {
                assert!(got[i * stride + item..(i + 1) * stride].iter().all(|&b| b == 0xA5), "{name}: the gap after item {i} was written");
            }
        }
        assert!(got[need..].iter().all(|&b| b == 0xA5), "{name}: the mixed batch wrote past dst_size");
        h.dst_memory = NVCAM_MEMORY_HOST;
        let mut host = vec![0x5Au8; batch.len() * item + 16];
        let code = unsafe { nvcam_frames_convert_batch(batch.as_ptr(), batch.len() as u32, &h, host.as_mut_ptr().cast(), 0, (batch.len() * item) as u64, 0) };
        assert_eq!(code, NVCAM_OK, "{name}: mixed host batch: {}", last_error());
        assert!(host[batch.len() * item..].iter().all(|&b| b == 0x5A), "{name}: the mixed host batch wrote past dst_size");
        for (i, one) in singles.iter().enumerate() {
            assert!(host[i * item..(i + 1) * item] == one[..], "{name}: mixed host batch item {i} differs from nvcam_frame_convert");
        }
        println!("mixed batch {name}: 3 P016 and 2 NV12 items of {item} bytes in two launches equal single conversions (device and host)");
    }
    for (cam, f) in held {
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
}

/// Host downloads at a pitch (rows apart by more than a row) into pageable memory, page-locked
/// memory at an offset inside its allocation, and registered memory (`cuMemHostRegister` of a
/// plain allocation): every row equals the packed device result, and neither the padding
/// between rows nor anything past the end is written. 1080p, so pageable downloads go in chunks.
#[test]
#[ignore]
fn host_downloads_at_a_pitch_into_pageable_pinned_and_registered_memory_write_only_the_rows() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let _cuda = Cuda::new();
    let (cam, f, _fi, _) = frame_of("testsrc://1920x1080@30", NVCAM_DECODER_AUTO);
    for (format, name) in [(NVCAM_FORMAT_BGRA8, "BGRA8"), (NVCAM_FORMAT_BGR8, "BGR8"), (NVCAM_FORMAT_RGB_F32_PLANAR, "RGB_F32")] {
        let s = spec(format);
        let mut packed_n = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(f, &s, 0, &mut packed_n) }, NVCAM_OK);
        let mut packed = vec![0u8; packed_n as usize];
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, packed.as_mut_ptr().cast(), 0, packed_n, 0) }, NVCAM_OK, "{}", last_error());
        let planes = if format == NVCAM_FORMAT_RGB_F32_PLANAR { 3 } else { 1 };
        let rows = 1080 * planes;
        let row = packed.len() / rows;
        let pitch = row + 68;
        let mut n = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(f, &s, pitch as u64, &mut n) }, NVCAM_OK);
        let n = n as usize;
        assert_eq!(n, (rows - 1) * pitch + row);
        let check = |got: &[u8], what: &str| {
            for r in 0..rows {
                assert!(got[r * pitch..r * pitch + row] == packed[r * row..(r + 1) * row], "{name} {what}: row {r} differs from the packed download");
                if r + 1 < rows {
                    assert!(got[r * pitch + row..(r + 1) * pitch].iter().all(|&b| b == 0xA7), "{name} {what}: the padding after row {r} was written");
                }
            }
            assert!(got[n..].iter().all(|&b| b == 0xA7), "{name} {what}: wrote past the image");
        };
        // Pageable.
        let mut v = vec![0xA7u8; n + 64];
        let p0 = download_paths();
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, v.as_mut_ptr().cast(), pitch as u64, n as u64, 0) }, NVCAM_OK, "{}", last_error());
        check(&v, "pageable");
        // Page-locked, 4 KiB + 64 bytes into the allocation.
        let mut pin = Pinned::new(n + 8192);
        let off = 4096 + 64;
        let pb = &mut pin.bytes()[off..];
        pb.fill(0xA7);
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, pb.as_mut_ptr().cast(), pitch as u64, n as u64, 0) }, NVCAM_OK, "{}", last_error());
        check(&pb[..n + 64], "pinned");
        // Registered: a page-aligned span of an ordinary allocation.
        let mut raw = vec![0xA7u8; n + 64 + 8192];
        let start = raw.as_ptr().align_offset(4096);
        let span = (n + 64).next_multiple_of(4096);
        let reg = &mut raw[start..start + span];
        unsafe { ck("cuMemHostRegister", sys::cuMemHostRegister_v2(reg.as_mut_ptr().cast(), span, 0)) };
        let code = unsafe { nvcam_frame_convert(f, &s, reg.as_mut_ptr().cast(), pitch as u64, n as u64, 0) };
        unsafe { ck("cuMemHostUnregister", sys::cuMemHostUnregister(reg.as_mut_ptr().cast())) };
        assert_eq!(code, NVCAM_OK, "{}", last_error());
        check(&reg[..n + 64], "registered");
        let p1 = download_paths();
        assert_eq!((p1.0 - p0.0, p1.1 - p0.1), (2, 1), "{name}: pinned and registered memory go direct, the Vec through staging");
        println!("pitched download {name}: {rows} rows of {row} bytes at pitch {pitch}: pageable, pinned and registered equal the packed result");
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Four cameras' host downloads at once, from four threads: each gets its own staging area
/// (no camera waits behind another's lock), the bytes equal each camera's first download, and
/// nothing is allocated per call: after a warm-up, allocations happen only with a new staging
/// area (one per concurrent download at most), and sequential downloads allocate nothing. After
/// shutdown no worker thread is left.
#[test]
#[ignore]
fn host_downloads_of_four_cameras_run_side_by_side_and_allocate_nothing_per_call() {
    if !need_gpu!() {
        return;
    }
    let session = Session::quiet();
    let cuda = Cuda::new();
    let s = spec(NVCAM_FORMAT_BGRA8);
    let n = 1920 * 1080 * 4;
    let cams: Vec<u64> = (0..4).map(|_| open("testsrc://1920x1080@30", &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 10_000).unwrap()).collect();
    let g0 = gpu_stats(0);
    let reference: Vec<Vec<u8>> = frames
        .iter()
        .map(|&f| {
            let mut v = vec![0u8; n];
            assert_eq!(unsafe { nvcam_frame_convert(f, &s, v.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{}", last_error());
            v
        })
        .collect();
    let run = |iters: usize, threads: usize| {
        let barrier = std::sync::Barrier::new(threads);
        std::thread::scope(|sc| {
            for t in 0..threads {
                let (f, want, barrier, s) = (frames[t], &reference[t], &barrier, &s);
                sc.spawn(move || {
                    let _cuda = Cuda::new(); // the primary context current here, for cuMemHostAlloc
                    let mut v = vec![0u8; n];
                    let mut pin = Pinned::new(n);
                    barrier.wait();
                    for i in 0..iters {
                        let dst: &mut [u8] = if i % 2 == 0 { &mut v } else { pin.bytes() };
                        dst.fill(0);
                        assert_eq!(unsafe { nvcam_frame_convert(f, s, dst.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{}", last_error());
                        assert!(dst[..] == want[..], "camera {t}, download {i}: bytes differ from its first download");
                    }
                });
            }
        });
    };
    run(6, 4);
    let t0 = Instant::now();
    run(20, 4);
    let dt = t0.elapsed().as_secs_f64();
    let (g1, m1) = (gpu_stats(0), nvcam::diag::staging_areas(0));
    assert!(m1 >= 2, "four cameras downloading at once used {m1} staging area(s): they waited on each other");
    assert!(m1 <= 4, "{m1} staging areas for 4 concurrent downloads");
    // Same-size requests: each staging area allocates its scratch and pinned buffer once.
    let (dev_allocs, pin_allocs) = (g1.device_allocs - g0.device_allocs, g1.pinned_allocs - g0.pinned_allocs);
    assert!(dev_allocs <= m1 as u64 && pin_allocs <= m1 as u64, "allocations per call: device +{dev_allocs}, pinned +{pin_allocs} for {} downloads with {m1} staging areas", 4 + 4 * 26);
    run(10, 1);
    let g2 = gpu_stats(0);
    assert_eq!((g2.device_allocs - g1.device_allocs, g2.pinned_allocs - g1.pinned_allocs), (0, 0), "sequential downloads allocated");
    println!(
        "concurrent downloads: 4 cameras x 20 (pageable and pinned alternating) in {:.0} ms, {:.1} GB/s in all; {m1} staging areas; allocations after warm-up: device +{}, pinned +{}",
        dt * 1e3,
        (4 * 20 * n) as f64 / dt / 1e9,
        g2.device_allocs - g0.device_allocs,
        g2.pinned_allocs - g0.pinned_allocs
    );
    for f in frames {
        release(f).unwrap();
    }
    for c in cams {
        close(c, 5000).unwrap();
    }
    drop(cuda);
    drop(session);
    assert!(wait_until(Duration::from_secs(5), || threads_named("nvcam-work") == 0), "{} worker threads after shutdown", threads_named("nvcam-work"));
}

/// `dst_device` naming a GPU that does not exist: refused with NVCAM_E_NO_DEVICE before anything
/// is written (the destination, real memory on GPU 0, keeps its bytes), and a negative one with
/// NVCAM_E_INVALID_ARGUMENT; the frame then converts normally.
#[test]
#[ignore]
fn dst_on_a_gpu_that_does_not_exist_is_refused_and_nothing_written() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (cam, f, _fi, _) = frame_of("testsrc://320x240@30", NVCAM_DECODER_AUTO);
    let mut s = spec(NVCAM_FORMAT_BGRA8);
    s.dst_memory = NVCAM_MEMORY_DEVICE;
    let n = 320 * 240 * 4;
    let dst = cuda.alloc(n);
    fill_now(dst.0, 0xA5, n);
    let mut count = 0;
    unsafe { ck("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count)) };
    for (device, want) in [(count, NVCAM_E_NO_DEVICE), (99, NVCAM_E_NO_DEVICE), (i32::MAX, NVCAM_E_NO_DEVICE), (-1, NVCAM_E_INVALID_ARGUMENT)] {
        s.dst_device = device;
        let code = unsafe { nvcam_frame_convert(f, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) };
        assert_eq!(code, want, "dst_device {device}: {}", last_error());
        let code = unsafe { nvcam_frames_convert_batch(&f, 1, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) };
        assert!(code != NVCAM_OK, "batch into dst_device {device} was accepted");
    }
    cuda.sync();
    assert!(dst.download(n).iter().all(|&b| b == 0xA5), "a refused conversion wrote");
    s.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(f, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    cuda.sync();
    assert!(!dst.download(n).iter().all(|&b| b == 0xA5), "the conversion after the refusals wrote nothing");
    println!("dst_device {count}, 99, i32::MAX refused (no such GPU), -1 refused (argument); GPU 0 still converts");
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Whether two GPUs are visible; with fewer, a note (the test is not run), or a failure where
/// `REQUIRE_GPUS=2` says the machine has them.
fn two_gpus(test: &str) -> bool {
    let mut n = 0;
    let have = gpu_usable() && unsafe { sys::cuDeviceGetCount(&mut n) } == sys::CUresult::CUDA_SUCCESS && n >= 2;
    if !have {
        if std::env::var("REQUIRE_GPUS").is_ok_and(|v| v == "2") {
            panic!("{test}: REQUIRE_GPUS=2 but {n} GPU(s) are visible");
        }
        println!("{test}: {n} GPU(s) visible, 2 needed; not run (REQUIRE_GPUS=2 makes this a failure)");
    }
    have
}

/// GPU 1's primary context pushed while this lives, with a stream of its own.
struct Cuda1 {
    dev: sys::CUdevice,
    stream: sys::CUstream,
}

impl Cuda1 {
    fn new() -> Cuda1 {
        unsafe {
            let mut dev = 0;
            ck("cuDeviceGet(1)", sys::cuDeviceGet(&mut dev, 1));
            let mut ctx = std::ptr::null_mut();
            ck("cuDevicePrimaryCtxRetain(1)", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
            ck("cuCtxPushCurrent(1)", sys::cuCtxPushCurrent_v2(ctx));
            let mut stream = std::ptr::null_mut();
            ck("cuStreamCreate(1)", sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32));
            Cuda1 { dev, stream }
        }
    }
}

impl Drop for Cuda1 {
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

/// A frame of a camera on GPU 0 converted into device memory of GPU 1, on a stream of GPU 1,
/// equals the same conversion into GPU 0's memory, packed and at a pitch, and on GPU 1's
/// legacy stream (0). Then the ordering: GPU 1's stream is held by a spinning kernel while two
/// frames of two cameras convert into two GPU 1 buffers, each released right after its call;
/// the second conversion must not overwrite the first's scratch before GPU 1 copied it out:
/// both buffers equal their frames' results. A GPU 1 pointer named as GPU 0 memory is refused.
#[test]
#[ignore]
fn conversion_into_another_gpus_memory_equals_the_same_gpu_result() {
    if !need_gpu!()
        || !two_gpus("conversion_into_another_gpus_memory_equals_the_same_gpu_result")
    {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let same_gpu = |f: u64, s: &nvcam_convert, pitch: usize, n: usize| -> Vec<u8> {
        let d = cuda.alloc(n);
        let mut s0 = *s;
        s0.dst_memory = NVCAM_MEMORY_DEVICE;
        s0.dst_device = 0;
        assert_eq!(unsafe { nvcam_frame_convert(f, &s0, d.0 as *mut _, pitch as u64, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
        cuda.sync();
        d.download(n)
    };
    let cams: Vec<u64> = ["testsrc://1280x720@30", "testsrc://640x480@30"].iter().map(|u| open(u, &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 10_000).unwrap()).collect();
    let mut cases = Vec::new();
    for (format, pitch) in [(NVCAM_FORMAT_BGRA8, 0usize), (NVCAM_FORMAT_BGR8, 1280 * 3 + 256), (NVCAM_FORMAT_RGB_F16_PLANAR, 0)] {
        let mut s = spec(format);
        if format == NVCAM_FORMAT_RGB_F16_PLANAR {
            s.width = 640;
            s.height = 640;
            s.flags = NVCAM_CONVERT_LETTERBOX;
            s.pad = [114.0; 3];
        }
        cases.push((s, pitch));
    }
    let want: Vec<Vec<u8>> = cases
        .iter()
        .map(|(s, pitch)| {
            let mut n = 0u64;
            assert_eq!(unsafe { nvcam_frame_convert_size(frames[0], s, *pitch as u64, &mut n) }, NVCAM_OK);
            same_gpu(frames[0], s, *pitch, n as usize)
        })
        .collect();
    // The ordering check's frames, converted on GPU 0 (before GPU 1's context is pushed here).
    let mut so = spec(NVCAM_FORMAT_RGB_F32_PLANAR);
    so.width = 320;
    so.height = 320;
    so.flags = NVCAM_CONVERT_LETTERBOX;
    let no = 3 * 320 * 320 * 4;
    let wants: Vec<Vec<u8>> = frames.iter().map(|&f| same_gpu(f, &so, 0, no)).collect();
    assert!(wants[0] != wants[1], "the two cameras' frames convert alike: the ordering check proves nothing");
    let g1 = Cuda1::new();
    let alloc1 = |n: usize| -> u64 {
        let mut p = 0;
        unsafe {
            ck("cuMemAlloc(1)", sys::cuMemAlloc_v2(&mut p, n + 256));
        }
        fill_now(p, 0xA5, n + 256);
        p
    };
    let download1 = |p: u64, n: usize| -> Vec<u8> {
        let mut v = vec![0u8; n];
        unsafe { ck("cuMemcpyDtoH(1)", sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), p, n)) };
        v
    };
    for ((s, pitch), want) in cases.iter().zip(&want) {
        let n = want.len();
        for stream in [g1.stream as u64, 0] {
            let p = alloc1(n);
            let mut s1 = *s;
            s1.dst_memory = NVCAM_MEMORY_DEVICE;
            s1.dst_device = 1;
            assert_eq!(unsafe { nvcam_frame_convert(frames[0], &s1, p as *mut _, *pitch as u64, n as u64, stream) }, NVCAM_OK, "{}", last_error());
            unsafe { ck("cuStreamSynchronize(1)", sys::cuStreamSynchronize(stream as sys::CUstream)) };
            let got = download1(p, n + 256);
            let rows_ok = if *pitch == 0 {
                got[..n] == want[..]
            } else {
                let row = 1280 * 3;
                (0..720).all(|r| got[r * pitch..r * pitch + row] == want[r * pitch..r * pitch + row])
            };
            assert!(rows_ok, "format {} pitch {pitch} stream {stream:#x}: GPU 1 result differs from GPU 0's", s.format);
            assert!(got[n..].iter().all(|&b| b == 0xA5), "format {}: wrote past the image on GPU 1", s.format);
            if *pitch != 0 {
                let row = 1280 * 3;
                assert!((0..719).all(|r| got[r * pitch + row..(r + 1) * pitch].iter().all(|&b| b == 0xA5)), "the padding between rows was written on GPU 1");
            }
            unsafe { sys::cuMemFree_v2(p) };
        }
    }
    // Ordering: GPU 1's stream held ~0.5 s by a spinning kernel while two conversions queue.
    let (mut s, n) = (so, no);
    let bufs = [alloc1(n), alloc1(n)];
    nvcam::diag::spin_copy(1, 0, 0, 0, 700_000_000, g1.stream as u64).unwrap();
    s.dst_memory = NVCAM_MEMORY_DEVICE;
    s.dst_device = 1;
    for (i, &f) in frames.iter().enumerate() {
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, bufs[i] as *mut _, 0, n as u64, g1.stream as u64) }, NVCAM_OK, "{}", last_error());
        release(f).unwrap();
    }
    assert!(unsafe { sys::cuStreamQuery(g1.stream) } != sys::CUresult::CUDA_SUCCESS, "GPU 1's stream finished before the second conversion was queued: the check proves nothing");
    unsafe { ck("cuStreamSynchronize(1)", sys::cuStreamSynchronize(g1.stream)) };
    for i in 0..2 {
        assert!(download1(bufs[i], n) == wants[i], "conversion {i} into GPU 1 holds the wrong frame (scratch reused before GPU 1 copied it)");
    }
    // A GPU 1 pointer named as GPU 0 memory.
    s.dst_device = 0;
    let f = get_frame(cams[0], 10_000).unwrap();
    assert_eq!(unsafe { nvcam_frame_convert(f, &s, bufs[0] as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_E_INVALID_ARGUMENT, "a GPU 1 pointer was taken for GPU 0 memory");
    release(f).unwrap();
    unsafe {
        sys::cuMemFree_v2(bufs[0]);
        sys::cuMemFree_v2(bufs[1]);
    }
    println!("cross-device: GPU 0 frames into GPU 1 memory equal GPU 0 results (packed, pitched, planar; own stream and stream 0); queued conversions keep their frames");
    drop(g1);
    for c in cams {
        close(c, 5000).unwrap();
    }
}
