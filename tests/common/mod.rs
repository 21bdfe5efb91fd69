//! Shared by the integration tests: clips encoded by the real ffmpeg CLI, reference decodes, and
//! thin wrappers over the C API that turn status codes into `Result`s with the library's message.
#![allow(dead_code)]

use nvcam::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The checkout (`CARGO_MANIFEST_DIR`).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn init() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| unsafe {
        assert_eq!(nvcam_log_init(std::ptr::null(), NVCAM_LOG_INFO), NVCAM_OK);
    });
    assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);
}

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time, the library initialized: the tests of a suite share the library's global
/// state (its camera table, log and pools), and one failed test (a poisoned lock) must not fail
/// the rest.
pub fn serial() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    init();
    g
}

/// The calling thread's last error text.
pub fn last_error() -> String {
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    cstr(&buf)
}

/// The camera's last error text (from its worker or a call on it).
pub fn cam_error(cam: u64) -> String {
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_camera_last_error(cam, buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    cstr(&buf)
}

pub fn cstr(buf: &[u8]) -> String {
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())]).into_owned()
}

/// `Err((code, message))` for a failed call.
pub fn ok(code: i32) -> Result<(), (i32, String)> {
    if code == NVCAM_OK {
        Ok(())
    } else {
        Err((code, last_error()))
    }
}

pub fn options(flags: u32) -> nvcam_camera_options {
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { nvcam_camera_options_init(&mut o) }, NVCAM_OK);
    o.flags = flags;
    o.device = NVCAM_DEVICE_CPU;
    o
}

pub fn open(url: &str, o: &nvcam_camera_options) -> Result<u64, (i32, String)> {
    let c = CString::new(url).unwrap();
    let mut cam = 0;
    ok(unsafe { nvcam_camera_open(c.as_ptr(), o, &mut cam) })?;
    Ok(cam)
}

pub fn get_frame(cam: u64, timeout_ms: u32) -> Result<u64, (i32, String)> {
    let mut f = 0;
    ok(unsafe { nvcam_camera_get_frame(cam, timeout_ms, &mut f) })?;
    Ok(f)
}

pub fn info(frame: u64) -> Result<nvcam_frame_info, (i32, String)> {
    let mut i: nvcam_frame_info = unsafe { std::mem::zeroed() };
    i.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
    ok(unsafe { nvcam_frame_info(frame, &mut i) })?;
    Ok(i)
}

/// The frame's NV12 image, packed (`width` bytes a row, chroma rows after luma rows).
pub fn pixels(frame: u64) -> Result<Vec<u8>, (i32, String)> {
    let i = info(frame)?;
    let mut v = vec![0u8; i.nv12_size as usize];
    ok(unsafe { nvcam_frame_copy_nv12(frame, v.as_mut_ptr(), 0, v.len() as u64) })?;
    Ok(v)
}

pub fn stats(cam: u64) -> nvcam_camera_stats {
    let mut s: nvcam_camera_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
    assert_eq!(unsafe { nvcam_camera_stats(cam, &mut s) }, NVCAM_OK, "{}", last_error());
    s
}

pub fn clone(frame: u64) -> Result<u64, (i32, String)> {
    let mut c = 0;
    ok(unsafe { nvcam_frame_clone(frame, &mut c) })?;
    Ok(c)
}

pub fn release(frame: u64) -> Result<(), (i32, String)> {
    ok(nvcam_frame_release(frame))
}

pub fn close(cam: u64, timeout_ms: u32) -> Result<(), (i32, String)> {
    ok(nvcam_camera_close(cam, timeout_ms))
}

/// Polls `f` every 5 ms (a detection time measured with it is late by at most that) until it holds
/// or `limit` passes, with a last look at the end.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// A 64-bit FNV-1a hash, to name frames in assertion messages without a hashing crate.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn fixtures_dir() -> PathBuf {
    let d = match std::env::var_os("BUNDLE_WITH") {
        Some(w) => PathBuf::from(w).join("fixtures"),
        None => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures"),
    };
    std::fs::create_dir_all(&d).ok();
    d
}

/// A clip encoded once by the ffmpeg CLI from its lavfi test source (cached between test runs).
/// `codec` is an ffmpeg encoder name (libx264, libx265, mjpeg); `extra` more encoder arguments;
/// the container follows the name's extension.
pub fn clip(name: &str, size: &str, frames: u32, codec: &str, extra: &[&str]) -> PathBuf {
    let path = fixtures_dir().join(name);
    if path.exists() {
        return path;
    }
    if cfg!(windows) {
        // Under Wine the Linux ffmpeg CLI cannot be run (nor has Windows an encoder here):
        // scripts/ci/windows-test.sh makes the clips on Linux first, in the same folder.
        panic!("{} is missing: the Windows tests use the clips the Linux tests make (scripts/ci/windows-test.sh)", path.display());
    }
    let tmp = path.with_file_name(format!("part-{name}"));
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"])
        // rgb24 first: testsrc2 in a 4:2:0 format would round odd sizes down to even.
        .arg(format!("testsrc2=size={size}:rate=30,format=rgb24"))
        .args(["-frames:v", &frames.to_string(), "-pix_fmt", "yuv420p", "-c:v", codec])
        .args(extra)
        .arg(&tmp);
    let out = cmd.output().expect("ffmpeg CLI (apt install ffmpeg)");
    assert!(out.status.success(), "ffmpeg encode failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// FFmpeg's own decode of `clip` as NV12 frames in nvcam's packed layout (the reference the
/// library must match). FFmpeg packs Y rows at `width` bytes; nvcam uses one pitch for both planes
/// (the even chroma row width), so odd widths get one pad byte per Y row here.
pub fn reference_nv12(clip: &Path, width: usize, height: usize) -> Vec<Vec<u8>> {
    let raw = reference_raw(clip);
    let row = width.div_ceil(2) * 2;
    let (y_bytes, uv_bytes) = (width * height, row * height.div_ceil(2));
    let frame = y_bytes + uv_bytes;
    assert_eq!(raw.len() % frame, 0, "raw NV12 output is whole frames");
    raw
        .chunks(frame)
        .map(|f| {
            let mut v = vec![0u8; row * (height + height.div_ceil(2))];
            for r in 0..height {
                v[r * row..r * row + width].copy_from_slice(&f[r * width..(r + 1) * width]);
            }
            v[row * height..].copy_from_slice(&f[y_bytes..]);
            v
        })
        .collect()
}

/// Every frame, decoded and converted by the library, equals FFmpeg's own decode byte for byte.
pub fn assert_matches_ffmpeg(clip: &std::path::Path, w: usize, h: usize, frames: usize) {
    init();
    let reference = reference_nv12(clip, w, h);
    assert_eq!(reference.len(), frames, "reference decode frame count");
    let cam = open(clip.to_str().unwrap(), &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING)).unwrap();
    let mut seen = 0;
    while seen < frames {
        let f = get_frame(cam, 5000).unwrap_or_else(|e| panic!("frame {seen}: {e:?}"));
        let i = info(f).unwrap();
        assert_eq!((i.width as usize, i.height as usize), (w, h));
        assert_eq!(i.seq as usize, seen + 1, "lossless mode must deliver every frame in order");
        let px = pixels(f).unwrap();
        assert!(
            px == reference[seen],
            "frame {seen}: nvcam {:016x} != ffmpeg {:016x}",
            fnv(&px),
            fnv(&reference[seen])
        );
        release(f).unwrap();
        seen += 1;
    }
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_ENDED));
    let s = stats(cam);
    assert_eq!((s.frames_decoded, s.frames_delivered, s.frames_dropped), (frames as u64, frames as u64, 0));
    close(cam, 2000).unwrap();
}

/// The ffmpeg CLI's raw NV12 decode of `clip` with the samples' range kept as decoded (swscale
/// would otherwise squeeze full-range `yuvj` pictures into 16..235), kept beside it as
/// `<clip>.samples.nv12` (remade when the clip is newer), so the Windows tests under Wine, which
/// cannot run the Linux CLI, compare with the same reference the Linux run made.
fn reference_raw(clip: &Path) -> Vec<u8> {
    let cache = PathBuf::from(format!("{}.samples.nv12", clip.display()));
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if mtime(&cache).is_some() && mtime(&cache) >= mtime(clip) {
        return std::fs::read(&cache).expect("read the cached reference decode");
    }
    if cfg!(windows) {
        panic!("{} is missing: the Windows tests use the reference decodes the Linux tests make (scripts/ci/windows-test.sh)", cache.display());
    }
    // The GPU machine has only the bundle's ffmpeg-nvdec (the same FFmpeg 5.1, decoders and swscale).
    let bin = if Command::new("ffmpeg-nvdec").arg("-version").output().is_ok() { "ffmpeg-nvdec" } else { "ffmpeg" };
    let out = Command::new(bin)
        .args(["-hide_banner", "-loglevel", "error", "-i"])
        .arg(clip)
        .args(["-vf", "scale=in_range=full:out_range=full", "-f", "rawvideo", "-pix_fmt", "nv12", "-"])
        .output()
        .expect("ffmpeg CLI");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tmp = cache.with_extension(format!("part-{}", std::process::id()));
    std::fs::write(&tmp, &out.stdout).expect("write the reference decode");
    std::fs::rename(&tmp, &cache).expect("keep the reference decode");
    out.stdout
}

/// The ffmpeg CLI's decode of `clip` in the decoder's own pixel format `pix_fmt` (no conversion:
/// the planes as FFmpeg's decoder wrote them), one `Vec` per frame of `frame_bytes`. Kept beside
/// the clip as `<clip>.<pix_fmt>.raw` for the Windows tests, as `reference_raw` does.
pub fn native_frames(clip: &Path, pix_fmt: &str, frame_bytes: usize) -> Vec<Vec<u8>> {
    let cache = PathBuf::from(format!("{}.{pix_fmt}.raw", clip.display()));
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let raw = if mtime(&cache).is_some() && mtime(&cache) >= mtime(clip) {
        std::fs::read(&cache).expect("read the cached decode")
    } else {
        if cfg!(windows) {
            panic!("{} is missing: the Windows tests use the decodes the Linux tests make", cache.display());
        }
        let bin = if Command::new("ffmpeg-nvdec").arg("-version").output().is_ok() { "ffmpeg-nvdec" } else { "ffmpeg" };
        let out = Command::new(bin)
            .args(["-hide_banner", "-loglevel", "error", "-i"])
            .arg(clip)
            .args(["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"])
            .output()
            .expect("ffmpeg CLI");
        assert!(out.status.success(), "{bin}: {}", String::from_utf8_lossy(&out.stderr));
        let tmp = cache.with_extension(format!("part-{}", std::process::id()));
        if std::fs::write(&tmp, &out.stdout).is_ok() {
            std::fs::rename(&tmp, &cache).ok();
        }
        out.stdout
    };
    assert_eq!(raw.len() % frame_bytes, 0, "{pix_fmt}: whole frames");
    raw.chunks(frame_bytes).map(|c| c.to_vec()).collect()
}

/// JPEG clips of every layout a camera sends, with the decoder's own pixel format and the range
/// their frames must report: 4:2:0, 4:2:2, 4:4:4 and gray at full range (JFIF), and a
/// limited-range 4:2:0 JPEG (FFmpeg marks it with a `CS=ITU601` comment).
pub fn jpeg_clips(w: u32, h: u32, frames: u32) -> Vec<(PathBuf, &'static str, u32)> {
    let size = format!("{w}x{h}");
    [("yuvj420p", NVCAM_RANGE_FULL), ("yuvj422p", NVCAM_RANGE_FULL), ("yuvj444p", NVCAM_RANGE_FULL), ("gray", NVCAM_RANGE_FULL), ("yuv420p", NVCAM_RANGE_LIMITED)]
        .into_iter()
        .map(|(fmt, range)| {
            let name = format!("jpeg-{fmt}-{size}.mkv");
            let c = if fmt == "gray" { gray_jpeg_clip(&name, w, h, frames) } else { clip(&name, &size, frames, "mjpeg", &["-pix_fmt", fmt, "-q:v", "3", "-strict", "-1"]) };
            (c, fmt, range)
        })
        .collect()
}

/// A 10-bit HEVC clip flagged as HDR: BT.2020 primaries and matrix (non-constant luminance) and
/// transfer `trc` (`smpte2084`, PQ, or `arib-std-b67`, HLG), in the stream's VUI.
pub fn hdr_clip(trc: &str, w: u32, h: u32) -> PathBuf {
    let params = format!("log-level=error:colorprim=bt2020:transfer={trc}:colormatrix=bt2020nc");
    clip(
        &format!("hdr-{trc}-{w}x{h}.mkv"),
        &format!("{w}x{h}"),
        2,
        "libx265",
        &["-pix_fmt", "yuv420p10le", "-preset", "ultrafast", "-color_primaries", "bt2020", "-color_trc", trc, "-colorspace", "bt2020nc", "-x265-params", &params],
    )
}

/// The size of one chroma plane of a `jpeg_clips` clip decoded in its own pixel format `fmt`
/// ((0, 0) for gray).
pub fn jpeg_chroma_size(fmt: &str, w: usize, h: usize) -> (usize, usize) {
    match fmt {
        "yuvj444p" => (w, h),
        "yuvj422p" => (w.div_ceil(2), h),
        "gray" => (0, 0),
        _ => (w.div_ceil(2), h.div_ceil(2)),
    }
}

/// The NV12 (rows of `ceil(w / 2) * 2` bytes, as [`reference_nv12`]) every decoder must give a
/// JPEG picture that FFmpeg decoded as `native` in its own planar format `fmt` (`yuvj420p`,
/// `yuv420p`, `yuvj422p`, `yuvj440p`, `yuvj444p`, `gray`): luma as decoded; each chroma sample
/// the mean of the decoded chroma samples its 2x2 luma block covers (clipped at odd edges),
/// rounded half up, the box rule of NVDEC's JPEG engine; gray with neutral chroma. Written per
/// sample, apart from the library's row loops.
pub fn jpeg_box_nv12(native: &[u8], fmt: &str, w: usize, h: usize) -> Vec<u8> {
    let (sx, sy) = match fmt {
        "yuvj444p" | "yuv444p" => (1, 1),
        "yuvj422p" | "yuv422p" => (2, 1),
        "yuvj440p" | "yuv440p" => (1, 2),
        "gray" => (0, 0),
        _ => (2, 2),
    };
    let row = w.div_ceil(2) * 2;
    // Luma rows padded with 0 (what a packed copy of an odd width writes), chroma neutral.
    let mut out = vec![0u8; row * h];
    out.resize(row * (h + h.div_ceil(2)), 128);
    for r in 0..h {
        out[r * row..r * row + w].copy_from_slice(&native[r * w..(r + 1) * w]);
    }
    if sx == 0 {
        return out;
    }
    let (cw, ch) = (w.div_ceil(sx), h.div_ceil(sy));
    for p in 0..2 {
        let plane = &native[w * h + p * cw * ch..w * h + (p + 1) * cw * ch];
        for oy in 0..h.div_ceil(2) {
            for ox in 0..w.div_ceil(2) {
                let mut cells = Vec::new();
                for ly in 2 * oy..(2 * oy + 2).min(h) {
                    for lx in 2 * ox..(2 * ox + 2).min(w) {
                        let c = (lx / sx, ly / sy);
                        if !cells.contains(&c) {
                            cells.push(c);
                        }
                    }
                }
                let n = cells.len() as u32;
                let sum: u32 = cells.iter().map(|&(x, y)| plane[y * cw + x] as u32).sum();
                out[row * h + oy * row + 2 * ox + p] = ((sum + n / 2) / n) as u8;
            }
        }
    }
    out
}

/// A 10-bit HEVC (Main10) clip, what HDR and many new IP cameras send.
pub fn ten_bit_clip(w: u32, h: u32, frames: u32) -> PathBuf {
    clip(&format!("hevc10-{w}x{h}-{frames}.mkv"), &format!("{w}x{h}"), frames, "libx265", &["-pix_fmt", "yuv420p10le", "-preset", "ultrafast", "-x265-params", "log-level=error"])
}

/// A 10-bit clip of odd size (161x97: HEVC encoders refuse it), lossless VP9 profile 2
/// (`yuv420p10le`; the GPU machine's FFmpeg has no FFV1 decoder): a P016 frame on a GPU.
pub fn ten_bit_odd_clip() -> PathBuf {
    clip("p016-vp9-161x97.mkv", "161x97", 4, "libvpx-vp9", &["-pix_fmt", "yuv420p10le", "-lossless", "1"])
}

/// A gray (one-component) JPEG clip: FFmpeg's MJPEG encoder writes only Y'CbCr, so libjpeg
/// through GStreamer's `jpegenc` (Debian's python3-gi binds to /usr/bin/python3) makes it.
fn gray_jpeg_clip(name: &str, w: u32, h: u32, frames: u32) -> PathBuf {
    let path = fixtures_dir().join(name);
    if path.exists() {
        return path;
    }
    if cfg!(windows) {
        panic!("{} is missing: the Windows tests use the clips the Linux tests make", path.display());
    }
    let tmp = path.with_file_name(format!("part-{name}"));
    let pipeline = format!(
        "videotestsrc num-buffers={frames} pattern=smpte ! video/x-raw,format=GRAY8,width={w},height={h},framerate=30/1 ! jpegenc quality=90 ! matroskamux ! filesink location={}",
        tmp.display()
    );
    let script = "import sys, gi\ngi.require_version('Gst', '1.0')\nfrom gi.repository import Gst\nGst.init(None)\n\
        p = Gst.parse_launch(sys.argv[1])\np.set_state(Gst.State.PLAYING)\n\
        m = p.get_bus().timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)\n\
        p.set_state(Gst.State.NULL)\nsys.exit(0 if m and m.type == Gst.MessageType.EOS else 1)\n";
    let out = Command::new("/usr/bin/python3").args(["-c", script, &pipeline]).output().expect("/usr/bin/python3 with python3-gi");
    assert!(out.status.success(), "GStreamer gray JPEG encode failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// A JPEG layout FFmpeg's encoder does not write: restart markers at an interval of its own (a
/// DRI segment and RSTn markers; `-restart 1` each MCU row, `-restart 5B` every 5 MCUs) or a
/// progressive scan (SOF2). One camera clip, with the decoder's pixel format and range as
/// [`jpeg_clips`] gives them, and the name its result lines carry.
pub struct CjpegClip {
    pub path: PathBuf,
    pub fmt: &'static str,
    pub range: u32,
    pub label: &'static str,
    pub width: usize,
    pub height: usize,
    pub frames: usize,
}

/// Baseline JPEG clips with restart markers: every MCU row (4:2:0, 4:2:2) and an odd interval of
/// MCUs that ends mid-row (4:2:2, and 4:2:0 at an odd size).
pub fn restart_jpeg_clips() -> Vec<CjpegClip> {
    [("yuvj420p", "2x2", "1", "rst1", 640, 480), ("yuvj422p", "2x1", "1", "rst1", 640, 480), ("yuvj422p", "2x1", "7B", "rst7b", 640, 480), ("yuvj420p", "2x2", "5B", "rst5b", 161, 97)]
        .into_iter()
        .map(|(fmt, sample, every, label, w, h)| CjpegClip {
            path: cjpeg_clip(&format!("jpeg-{label}-{fmt}-{w}x{h}.mkv"), w, h, 4, &["-sample", sample, "-restart", every], "restart"),
            fmt,
            range: NVCAM_RANGE_FULL,
            label,
            width: w as usize,
            height: h as usize,
            frames: 4,
        })
        .collect()
}

/// A progressive 4:2:0 JPEG clip (SOF2), which no GPU engine here decodes.
pub fn progressive_jpeg_clip() -> CjpegClip {
    let path = cjpeg_clip("jpeg-progressive-yuvj420p-640x480.mkv", 640, 480, 4, &["-sample", "2x2", "-progressive"], "progressive");
    CjpegClip { path, fmt: "yuvj420p", range: NVCAM_RANGE_FULL, label: "progressive", width: 640, height: 480, frames: 4 }
}

/// The markers of a JPEG picture that say its layout: (DRI segments, RSTn markers, SOF2 frames).
/// Entropy-coded 0xFF bytes are stuffed with 0x00, so a marker is every 0xFF before these codes.
pub fn jpeg_markers(jpeg: &[u8]) -> (usize, usize, usize) {
    let at = |c: fn(u8) -> bool| jpeg.windows(2).filter(|p| p[0] == 0xff && c(p[1])).count();
    (at(|b| b == 0xdd), at(|b| (0xd0..=0xd7).contains(&b)), at(|b| b == 0xc2))
}

/// Frames of the lavfi test source as PPM, each encoded by libjpeg-turbo's `cjpeg` with `args`
/// (quality 90), muxed as MJPEG in Matroska without re-encoding. `cjpeg` (Debian's
/// libjpeg-turbo-progs) is on the development machine, not in CI: these clips are made with the
/// GPU fixtures and travel in the bundle. The first picture must show `kind`'s markers
/// (`restart`: a DRI segment and RSTn; `progressive`: SOF2), or the clip tests nothing.
fn cjpeg_clip(name: &str, w: u32, h: u32, frames: u32, args: &[&str], kind: &str) -> PathBuf {
    let path = fixtures_dir().join(name);
    if path.exists() {
        return path;
    }
    if cfg!(windows) {
        panic!("{} is missing: the Windows tests use the clips the Linux tests make", path.display());
    }
    let dir = fixtures_dir().join(format!("part-{name}.d"));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let run = |c: &mut Command, what: &str| {
        let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"])
            .arg(format!("testsrc2=size={w}x{h}:rate=30,format=rgb24"))
            .args(["-frames:v", &frames.to_string()])
            .arg(dir.join("%03d.ppm")),
        "ffmpeg CLI (apt install ffmpeg)",
    );
    for k in 1..=frames {
        let jpg = dir.join(format!("{k:03}.jpg"));
        run(Command::new("cjpeg").args(["-quality", "90"]).args(args).arg("-outfile").arg(&jpg).arg(dir.join(format!("{k:03}.ppm"))), "cjpeg (apt install libjpeg-turbo-progs)");
    }
    let (dri, rst, sof2) = jpeg_markers(&std::fs::read(dir.join("001.jpg")).unwrap());
    match kind {
        "restart" => assert!(dri == 1 && rst > 0 && sof2 == 0, "{name}: DRI {dri}, RSTn {rst}, SOF2 {sof2}"),
        _ => assert!(dri == 0 && sof2 == 1, "{name}: DRI {dri}, SOF2 {sof2}"),
    }
    let tmp = path.with_file_name(format!("part-{name}"));
    run(
        Command::new("ffmpeg").args(["-hide_banner", "-loglevel", "error", "-y", "-framerate", "30", "-i"]).arg(dir.join("%03d.jpg")).args(["-c:v", "copy"]).arg(&tmp),
        "ffmpeg CLI mux",
    );
    std::fs::rename(&tmp, &path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    path
}

/// Whether libcuda loads and shows at least one device.
pub fn gpu_usable() -> bool {
    use cudarc::driver::sys;
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| unsafe {
        if !sys::is_culib_present() || sys::cuInit(0) != sys::CUresult::CUDA_SUCCESS {
            return false;
        }
        let mut n = 0;
        sys::cuDeviceGetCount(&mut n) == sys::CUresult::CUDA_SUCCESS && n > 0
    })
}

/// Whether a GPU test can run (`have` says what it needs is there): false with a note where it
/// is not, so CI (no GPU) passes; a panic under `REQUIRE_GPU=1` (the GPU machine), where a missing
/// GPU is a failure, never a skip.
pub fn need_gpu(test: &str, have: bool, what: &str) -> bool {
    if have {
        return true;
    }
    if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("{test}: REQUIRE_GPU=1 but {what} is missing");
    }
    println!("{test}: no {what} here; not run (REQUIRE_GPU=1 makes this a failure)");
    false
}

/// A CUDA driver call that must succeed.
pub fn ck(what: &str, r: cudarc::driver::sys::CUresult) {
    assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "{what}");
}

pub fn gpu_stats(device: i32) -> nvcam_gpu_stats {
    let mut s = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
    assert_eq!(unsafe { nvcam_gpu_stats(device, &mut s) }, NVCAM_OK, "{}", last_error());
    s
}

/// Camera options on GPU 0 with the given decoder.
pub fn gpu_options(flags: u32, decoder: u32) -> nvcam_camera_options {
    let mut o = options(flags);
    o.device = 0;
    o.decoder = decoder;
    o
}

/// x265 settings of the GPU clips: fast, a key frame every 24, quiet.
pub fn x265() -> Vec<&'static str> {
    vec!["-preset", "ultrafast", "-g", "24", "-x265-params", "log-level=error"]
}

/// Every frame of `clip` as NV12 (`w`x`h`), decoded by the ffmpeg CLI (`ffmpeg-nvdec` where the
/// GPU machine has it): what a decoder's output must equal byte for byte.
pub fn reference_frames(clip: &Path, w: usize, h: usize) -> Vec<Vec<u8>> {
    let bin = if Command::new("ffmpeg-nvdec").arg("-version").output().is_ok() { "ffmpeg-nvdec" } else { "ffmpeg" };
    let out = Command::new(bin)
        .args(["-hide_banner", "-loglevel", "error", "-i"])
        .arg(clip)
        .args(["-f", "rawvideo", "-pix_fmt", "nv12", "-"])
        .output()
        .expect("ffmpeg");
    assert!(out.status.success(), "{bin}: {}", String::from_utf8_lossy(&out.stderr));
    let n = w * h + w * h.div_ceil(2);
    assert_eq!(out.stdout.len() % n, 0, "{}: whole frames", clip.display());
    out.stdout.chunks(n).map(|c| c.to_vec()).collect()
}

/// The first byte where `a` and `b` differ (or where the shorter ends).
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or(if a.len() != b.len() { Some(a.len().min(b.len())) } else { None })
}

/// Threads of this process whose name starts with `prefix` (camera workers are `nvcam-cam-*`).
#[cfg(not(windows))]
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm")).map(|c| c.starts_with(prefix)).unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

/// Windows (and Wine): the process's threads from a Toolhelp snapshot, named by
/// GetThreadDescription (Rust's std names its threads with SetThreadDescription).
#[cfg(windows)]
pub fn threads_named(prefix: &str) -> usize {
    use std::ffi::c_void;
    #[repr(C)]
    struct ThreadEntry32 {
        size: u32,
        usage: u32,
        thread_id: u32,
        owner_process_id: u32,
        base_pri: i32,
        delta_pri: i32,
        flags: u32,
    }
    #[link(name = "kernel32")]
    extern "system" {
        fn CreateToolhelp32Snapshot(flags: u32, pid: u32) -> *mut c_void;
        fn Thread32First(snap: *mut c_void, e: *mut ThreadEntry32) -> i32;
        fn Thread32Next(snap: *mut c_void, e: *mut ThreadEntry32) -> i32;
        fn OpenThread(access: u32, inherit: i32, tid: u32) -> *mut c_void;
        fn GetThreadDescription(thread: *mut c_void, desc: *mut *mut u16) -> i32;
        fn LocalFree(mem: *mut c_void) -> *mut c_void;
        fn CloseHandle(h: *mut c_void) -> i32;
        fn GetCurrentProcessId() -> u32;
    }
    const TH32CS_SNAPTHREAD: u32 = 0x4;
    const THREAD_QUERY_LIMITED_INFORMATION: u32 = 0x0800;
    let mut n = 0;
    // SAFETY: Win32 calls with the documented argument types; the entry's size field is set before
    // Thread32First, every handle opened here is closed, and the description GetThreadDescription
    // allocates is a NUL-terminated UTF-16 string read up to its NUL and freed with LocalFree.
    unsafe {
        let snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snap as isize == -1 {
            return 0;
        }
        let me = GetCurrentProcessId();
        let mut e: ThreadEntry32 = std::mem::zeroed();
        e.size = std::mem::size_of::<ThreadEntry32>() as u32;
        let mut more = Thread32First(snap, &mut e) != 0;
        while more {
            if e.owner_process_id == me {
                let h = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, 0, e.thread_id);
                if !h.is_null() {
                    let mut desc: *mut u16 = std::ptr::null_mut();
                    if GetThreadDescription(h, &mut desc) >= 0 && !desc.is_null() {
                        let len = (0..).take_while(|&i| *desc.add(i) != 0).count();
                        let name = String::from_utf16_lossy(std::slice::from_raw_parts(desc, len));
                        n += name.starts_with(prefix) as usize;
                        LocalFree(desc as *mut c_void);
                    }
                    CloseHandle(h);
                }
            }
            more = Thread32Next(snap, &mut e) != 0;
        }
        CloseHandle(snap);
    }
    n
}

/// The documented statuses per function, read from the header's `Returns:` lines.
pub fn documented() -> BTreeMap<String, BTreeSet<i32>> {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/nvcam.h")).unwrap();
    let code_of: BTreeMap<&str, i32> = nvcam::ffi::status::ALL.iter().map(|(c, n, _)| (*n, *c)).collect();
    let mut map = BTreeMap::new();
    let mut pending: Option<BTreeSet<i32>> = None;
    for line in header.lines() {
        if let Some(i) = line.find("Returns:") {
            let set: BTreeSet<i32> = line[i + 8..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|t| *t == "NVCAM_OK" || t.starts_with("NVCAM_E_"))
                .map(|t| *code_of.get(t).unwrap_or_else(|| panic!("header names unknown status {t}")))
                .collect();
            pending = Some(set);
            continue;
        }
        let decl = line.trim_start();
        if !decl.starts_with("int32_t nvcam_") {
            continue;
        }
        let name = decl["int32_t ".len()..].split('(').next().unwrap().to_string();
        let set = pending.take().unwrap_or_else(|| panic!("{name} has no `Returns:` line in the header"));
        if name != "nvcam_abi_version" {
            assert!(set.contains(&NVCAM_OK) && set.contains(&NVCAM_E_PANIC), "{name}: Returns: must list NVCAM_OK and NVCAM_E_PANIC");
        }
        map.insert(name, set);
    }
    assert!(map.len() >= 25, "found only {} functions with Returns: lines", map.len());
    map
}

/// Resident memory of this process (the working set on Windows).
#[cfg(not(windows))]
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

#[cfg(windows)]
pub fn rss_bytes() -> u64 {
    #[repr(C)]
    #[derive(Default)]
    struct Counters {
        cb: u32,
        page_fault_count: u32,
        peak_working_set: usize,
        working_set: usize,
        quota_peak_paged_pool: usize,
        quota_paged_pool: usize,
        quota_peak_non_paged_pool: usize,
        quota_non_paged_pool: usize,
        pagefile: usize,
        peak_pagefile: usize,
    }
    extern "system" {
        fn GetCurrentProcess() -> *mut std::ffi::c_void;
        fn K32GetProcessMemoryInfo(process: *mut std::ffi::c_void, counters: *mut Counters, cb: u32) -> i32;
    }
    let mut c = Counters { cb: std::mem::size_of::<Counters>() as u32, ..Default::default() };
    // SAFETY: the pseudo-handle of this process and a struct of the size we declare.
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, c.cb) };
    assert!(ok != 0, "K32GetProcessMemoryInfo failed");
    c.working_set as u64
}

/// SplitMix64: small, fast, and the same sequence everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    pub fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// The churned cameras of the isolation tests: each takes a frame (waiting at most `wait_ms`),
/// then reconnects, `pause` apart, until `stop`; `count` counts the reconnects.
pub fn reconnect_in_a_loop(
    cams: &[u64],
    wait_ms: u32,
    pause: Duration,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    count: &std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Vec<std::thread::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    cams.iter()
        .map(|&c| {
            let (stop, count) = (stop.clone(), count.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Back with a frame, then dropped again at once.
                    if let Ok(f) = get_frame(c, wait_ms) {
                        release(f).unwrap();
                    }
                    ok(nvcam_camera_reconnect(c)).unwrap();
                    count.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(pause);
                }
            })
        })
        .collect()
}

/// A steady camera's consumer: the gaps between its frames (ms) and its failed `get_frame(1000)`
/// calls, until `stop`.
pub fn gaps_until(cam: u64, stop: &std::sync::atomic::AtomicBool) -> (Vec<f64>, u32) {
    let (mut gaps, mut last, mut failures) = (Vec::new(), None::<std::time::Instant>, 0);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match get_frame(cam, 1000) {
            Ok(f) => {
                let now = std::time::Instant::now();
                if let Some(l) = last {
                    gaps.push(now.duration_since(l).as_secs_f64() * 1e3);
                }
                last = Some(now);
                release(f).unwrap();
            }
            Err(_) => failures += 1,
        }
    }
    (gaps, failures)
}

/// The `q` quantile (nearest rank) of `v`, which it sorts.
pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

/// `<target>/<profile>/deps`: where this test binary and the cdylib cargo built for it live.
pub fn deps_dir() -> PathBuf {
    std::env::current_exe().expect("current_exe").parent().expect("deps dir").to_path_buf()
}

/// The cdylib this `cargo test` built (`libnvcam.so`, `nvcam.dll`), next to the test binaries.
pub fn cdylib() -> PathBuf {
    let name = format!("{}nvcam{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let p = deps_dir().join(name);
    assert!(p.is_file(), "{} not found: cargo builds the cdylib next to the test binaries", p.display());
    p
}

/// A finished command's status and output, for an assertion message.
pub fn show(o: &Output) -> String {
    format!("exit: {}\n--- stdout\n{}\n--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Runs `cmd` for at most `limit`, stdout and stderr interleaved into `log`; returns whether it
/// exited 0, and everything it printed with a last line saying how it ended.
pub fn run_logged(mut cmd: Command, log: &Path, limit: Duration) -> (bool, String) {
    let f = std::fs::File::create(log).expect("create log");
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(f.try_clone().expect("dup log"))
        .stderr(f)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = std::fs::read_to_string(log).unwrap_or_default();
    let ok = match status {
        Some(s) => {
            text.push_str(&format!("[exited: {s}, after {:.1} s]\n", t0.elapsed().as_secs_f64()));
            s.success()
        }
        None => {
            text.push_str(&format!("[KILLED: still running after {} s]\n", limit.as_secs()));
            false
        }
    };
    (ok, text)
}

// The log, as a host's callback receives it.

static LOG: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_log(level: i32, msg: *const std::ffi::c_char, _user: *mut std::ffi::c_void) {
    let m = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    LOG.lock().unwrap_or_else(|e| e.into_inner()).push((level, m));
}

/// Collects every message nvcam logs (FFmpeg's included, at its own default level) while alive,
/// every camera's of the test binary (the callback is global).
pub struct LogCapture;

impl LogCapture {
    pub fn start() -> LogCapture {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
        assert_eq!(unsafe { nvcam_log_set_callback(Some(on_log), std::ptr::null_mut(), NVCAM_LOG_TRACE) }, NVCAM_OK);
        LogCapture
    }
    pub fn lines(&self) -> Vec<(i32, String)> {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        unsafe { nvcam_log_set_callback(None, std::ptr::null_mut(), NVCAM_LOG_OFF) };
    }
}
