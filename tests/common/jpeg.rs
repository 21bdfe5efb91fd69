//! JPEG cameras' clips of every layout (libjpeg's own where FFmpeg's encoder cannot write one),
//! their markers, and the NV12 every decoder must make of them.

use super::*;

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
