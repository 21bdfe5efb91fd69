//! Clips encoded by the real ffmpeg CLI (cached between runs) and the reference decodes a
//! decoder's output must equal.

use super::*;

pub(super) fn fixtures_dir() -> PathBuf {
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
    // Tests that run side by side may ask for the same clip: one encodes it, the other waits
    // (both writing one `part-` file made a clip of two halves).
    static MAKING: Mutex<()> = Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(|e| e.into_inner());
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
        // Every decoded picture once: rawvideo output would otherwise be constant-rate and repeat
        // a picture across a gap in the timestamps (a recording's part that ends without the
        // last B picture its server never sent).
        .args(["-vsync", "passthrough", "-vf", "scale=in_range=full:out_range=full", "-f", "rawvideo", "-pix_fmt", "nv12", "-"])
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


/// A 10-bit HEVC (Main10) clip, what HDR and many new IP cameras send.
pub fn ten_bit_clip(w: u32, h: u32, frames: u32) -> PathBuf {
    clip(&format!("hevc10-{w}x{h}-{frames}.mkv"), &format!("{w}x{h}"), frames, "libx265", &["-pix_fmt", "yuv420p10le", "-preset", "ultrafast", "-x265-params", "log-level=error"])
}

/// A 10-bit clip of odd size (161x97: HEVC encoders refuse it), lossless VP9 profile 2
/// (`yuv420p10le`; the GPU machine's FFmpeg has no FFV1 decoder): a P016 frame on a GPU.
pub fn ten_bit_odd_clip() -> PathBuf {
    clip("p016-vp9-161x97.mkv", "161x97", 4, "libvpx-vp9", &["-pix_fmt", "yuv420p10le", "-lossless", "1"])
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

/// A 96x64 H.264 stream that turns 160x64 inside its session (new parameter sets before a key
/// frame, 3 s and 4 kB in: past a probe of `analyzeduration=1000000;probesize=4096`), as a
/// camera whose parameter sets claim another size mid-stream: two clips of the same encoder, one
/// after the other in one MPEG-TS file.
pub fn size_change_clip() -> PathBuf {
    let args = ["-preset", "ultrafast", "-g", "3"];
    let (small, large) = (clip("hostile-96x64-90.ts", "96x64", 90, "libx264", &args), clip("hostile-160x64-6.ts", "160x64", 6, "libx264", &args));
    let both = small.with_file_name("hostile-96x64-90-then-160x64-6.ts");
    if !both.exists() {
        let mut bytes = std::fs::read(&small).unwrap();
        bytes.extend(std::fs::read(&large).unwrap());
        let part = both.with_extension("part");
        std::fs::write(&part, bytes).unwrap();
        std::fs::rename(&part, &both).unwrap();
    }
    both
}

/// A hash of an NV12 frame's bytes, a word at a time (FNV per byte is slow for many frames).
pub fn nv12_hash(b: &[u8]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// FFmpeg's decode of every frame of `clip` (`w`x`h`, even) as packed NV12, what
/// `nvcam_frame_copy_nv12` writes, handed to `each` one frame at a time. Streamed from the CLI,
/// so a long clip is never in memory.
pub fn each_nv12_frame(clip: &Path, w: usize, h: usize, mut each: impl FnMut(&[u8])) {
    use std::io::Read;
    let mut child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i"])
        .arg(clip)
        .args(["-f", "rawvideo", "-pix_fmt", "nv12", "-"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ffmpeg CLI");
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; w * h * 3 / 2];
    while out.read_exact(&mut buf).is_ok() {
        each(&buf);
    }
    assert!(child.wait().unwrap().success(), "ffmpeg could not decode {}", clip.display());
}

/// [`nv12_hash`] of every frame of `clip` ([`each_nv12_frame`]), each with its frame number (from
/// 0, in display order; a repeated picture keeps its first number).
pub fn nv12_hashes(clip: &Path, w: usize, h: usize) -> std::collections::HashMap<u64, u32> {
    let mut set = std::collections::HashMap::new();
    each_nv12_frame(clip, w, h, |f| {
        let n = set.len() as u32;
        set.entry(nv12_hash(f)).or_insert(n);
    });
    set
}
