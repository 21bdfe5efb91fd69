//! The CPU twin's tests: known colours, sizes and layouts, 16-bit samples, and the references
//! written from the standards (H.273's chroma sample locations, a ROI as a window of the whole
//! frame) that the siting and ROI arithmetic is checked against.

use super::super::{colour, Rect, Spec};
use super::*;
use crate::frame::{Matrix, Range, Siting};

mod kernel_same_scale;

fn image(w: u32, h: u32, f: impl Fn(u32, u32) -> (u8, u8, u8)) -> (Vec<u8>, usize, usize) {
    let pitch = (w as usize).div_ceil(2) * 2 + 6;
    let uv_off = pitch * h as usize;
    let mut v = vec![0u8; uv_off + pitch * (h as usize).div_ceil(2)];
    for y in 0..h {
        for x in 0..w {
            let (yy, u, vv) = f(x, y);
            v[y as usize * pitch + x as usize] = yy;
            let i = uv_off + (y / 2) as usize * pitch + (x / 2) as usize * 2;
            v[i] = u;
            v[i + 1] = vv;
        }
    }
    (v, pitch, uv_off)
}

/// An image as (bytes, pitch, UV offset) read at `depth`.
fn view(img: &(Vec<u8>, usize, usize), depth: Depth) -> Image<'_> {
    Image { bytes: &img.0, pitch: img.1, uv_offset: img.2, depth }
}

fn run_at(spec: &Spec, w: u32, h: u32, src: &Image, color: (Matrix, Range)) -> (Plan, Vec<u8>) {
    let p = Plan::new(spec, w, h, &colour(color.0, color.1)).unwrap();
    let l = p.layout(0).unwrap();
    let mut out = vec![0u8; l.total];
    convert(&p, src, &mut out, &l).unwrap();
    (p, out)
}

fn run(spec: &Spec, w: u32, h: u32, img: &(Vec<u8>, usize, usize), color: (Matrix, Range)) -> (Plan, Vec<u8>) {
    run_at(spec, w, h, &view(img, Depth::Eight), color)
}

/// The matrices themselves: limited-range BT.601 and BT.709 reference colours (75% bars and
/// the extremes), from the standards' own equations.
#[test]
fn known_colours_convert_to_their_rgb() {
    // (Y, Cb, Cr) limited BT.709 → RGB
    let cases709 = [((16u8, 128u8, 128u8), [0u8, 0, 0]), ((235, 128, 128), [255, 255, 255]), ((63, 102, 240), [255, 0, 0]), ((173, 42, 26), [0, 255, 0]), ((32, 240, 118), [0, 0, 255])];
    let cases601 = [((82u8, 90u8, 240u8), [255u8, 0, 0]), ((145, 54, 34), [0, 255, 0]), ((41, 240, 110), [0, 0, 255])];
    // BT.2020 non-constant luminance (Kr 0.2627, Kb 0.0593), limited range: the primaries as
    // BT.2020's equations code them (Y = 16 + 219 Y', Cb/Cr = 128 + 224 (B'/R' - Y') / ...).
    let cases2020 = [((74u8, 97u8, 240u8), [255u8, 0, 0]), ((164, 47, 25), [0, 255, 0]), ((29, 240, 119), [0, 0, 255]), ((16, 128, 128), [0, 0, 0])];
    for (m, cases) in [(Matrix::Bt709, &cases709[..]), (Matrix::Bt601, &cases601[..]), (Matrix::Bt2020, &cases2020[..])] {
        for &((y, u, v), want) in cases {
            let img = image(4, 4, |_, _| (y, u, v));
            let (_, out) = run(&Spec::new(PixelFormat::Rgb8), 4, 4, &img, (m, Range::Limited));
            for c in 0..3 {
                assert!((out[c] as i32 - want[c] as i32).abs() <= 2, "{m:?} {:?} -> {:?}, want {want:?}", (y, u, v), &out[..3]);
            }
        }
    }
    // Full range: Y passes through to gray.
    let img = image(4, 4, |x, _| (x as u8 * 60, 128, 128));
    let (_, out) = run(&Spec::new(PixelFormat::Gray8), 4, 4, &img, (Matrix::Bt709, Range::Full));
    assert_eq!(&out[..4], &[0, 60, 120, 180]);
}

/// Identity size: bilinear at pixel centres reproduces every luma sample exactly.
#[test]
fn same_size_conversion_is_exact_per_pixel() {
    let img = image(37, 23, |x, y| ((x * 7 + y * 3) as u8, 128, 128));
    let (_, out) = run(&Spec::new(PixelFormat::Gray8), 37, 23, &img, (Matrix::Bt601, Range::Full));
    for y in 0..23 {
        for x in 0..37 {
            assert_eq!(out[y * 37 + x], (x * 7 + y * 3) as u8);
        }
    }
}

/// Letterbox: the pad colour outside the image, the picture inside; BGRA alpha is 255.
#[test]
fn letterbox_pads_outside_the_image() {
    let img = image(64, 32, |_, _| (235, 128, 128));
    let mut s = Spec::new(PixelFormat::Bgra8);
    s.width = 32;
    s.height = 32;
    s.letterbox = true;
    s.pad = [114.0, 114.0, 114.0];
    let (p, out) = run(&s, 64, 32, &img, (Matrix::Bt709, Range::Limited));
    assert_eq!(p.img, Rect { x: 0, y: 8, w: 32, h: 16 });
    assert_eq!(&out[..4], &[114, 114, 114, 255]);
    assert_eq!(&out[(10 * 32 + 5) * 4..(10 * 32 + 5) * 4 + 4], &[255, 255, 255, 255]);
}

/// Area down-scale averages: a 1-pixel checkerboard shrunk 4x is flat mid-gray; planar f32
/// applies mean/std per channel.
#[test]
fn box_filter_averages_and_float_planes_normalize() {
    let img = image(64, 64, |x, y| (if (x + y) % 2 == 0 { 0 } else { 254 }, 128, 128));
    let mut s = Spec::new(PixelFormat::RgbF32);
    s.width = 16;
    s.height = 16;
    s.mean = [0.5, 0.0, 0.0];
    s.std = [0.5, 1.0, 2.0];
    let (p, out) = run(&s, 64, 64, &img, (Matrix::Bt601, Range::Full));
    assert_eq!(p.mode, Mode::Area);
    let f = |i: usize| f32::from_ne_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
    let plane = 16 * 16;
    assert!((f(5) - (127.0 / 255.0 - 0.5) / 0.5).abs() < 1e-5, "{}", f(5));
    assert!((f(plane + 5) - 127.0 / 255.0).abs() < 1e-5);
    assert!((f(2 * plane + 5) - 127.0 / 255.0 / 2.0).abs() < 1e-5);
}

/// A too-small destination is refused before anything is written.
#[test]
fn short_destination_is_refused() {
    let img = image(8, 8, |_, _| (100, 128, 128));
    let p = Plan::new(&Spec::new(PixelFormat::Bgra8), 8, 8, &colour(Matrix::Bt601, Range::Limited)).unwrap();
    let l = p.layout(0).unwrap();
    let mut out = vec![7u8; l.total - 1];
    let e = convert(&p, &view(&img, Depth::Eight), &mut out, &l).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BufferTooSmall);
    assert!(out.iter().all(|&b| b == 7));
}

/// A test picture: luma `w x h` and chroma samples `ceil(w / 2) x ceil(h / 2)`, each set
/// on its own (not per luma pixel), so neighbouring chroma samples can differ sharply.
struct Picture {
    w: usize,
    h: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Picture {
    /// Luma and chroma drawn from `luma` and `chroma` (inclusive bounds) by a fixed xorshift.
    fn random(w: usize, h: usize, seed: u32, luma: (u8, u8), chroma: (u8, u8)) -> Picture {
        let mut x = seed | 1;
        let mut next = |(lo, hi): (u8, u8)| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            lo + (x % (hi as u32 - lo as u32 + 1)) as u8
        };
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let y = (0..w * h).map(|_| next(luma)).collect();
        let u = (0..cw * ch).map(|_| next(chroma)).collect();
        let v = (0..cw * ch).map(|_| next(chroma)).collect();
        Picture { w, h, y, u, v }
    }
    fn cw(&self) -> usize {
        self.w.div_ceil(2)
    }
    fn ch(&self) -> usize {
        self.h.div_ceil(2)
    }
    /// As NV12 (rows padded past the width, like a decoder's pitch), for `run`.
    fn nv12(&self) -> (Vec<u8>, usize, usize) {
        let pitch = self.cw() * 2 + 6;
        let uv_off = pitch * self.h;
        let mut b = vec![0u8; uv_off + pitch * self.ch()];
        for y in 0..self.h {
            b[y * pitch..y * pitch + self.w].copy_from_slice(&self.y[y * self.w..(y + 1) * self.w]);
        }
        for j in 0..self.ch() {
            for i in 0..self.cw() {
                b[uv_off + j * pitch + 2 * i] = self.u[j * self.cw() + i];
                b[uv_off + j * pitch + 2 * i + 1] = self.v[j * self.cw() + i];
            }
        }
        (b, pitch, uv_off)
    }
    /// As P016, each sample `(v << 8) | low` (`low`: luma's, chroma's), rows padded past the
    /// width by an odd number of words (like no decoder's pitch) with bytes no sample has.
    fn p016(&self, (y_low, c_low): (u16, u16)) -> (Vec<u8>, usize, usize) {
        let pitch = self.cw() * 4 + 10;
        let uv_off = pitch * self.h;
        let mut b = vec![0xA5u8; uv_off + pitch * self.ch()];
        let mut put = |at: usize, v: u8, low: u16| b[at..at + 2].copy_from_slice(&(((v as u16) << 8) | low).to_le_bytes());
        for y in 0..self.h {
            for x in 0..self.w {
                put(y * pitch + 2 * x, self.y[y * self.w + x], y_low);
            }
        }
        for j in 0..self.ch() {
            for i in 0..self.cw() {
                put(uv_off + j * pitch + 4 * i, self.u[j * self.cw() + i], c_low);
                put(uv_off + j * pitch + 4 * i + 2, self.v[j * self.cw() + i], c_low);
            }
        }
        (b, pitch, uv_off)
    }
}

/// The 16-bit arithmetic is the 8-bit one in the same units: a P016 image whose samples are
/// an NV12 image's << 8 converts to the same bytes, for every format, sampling mode (same
/// scale, bilinear up and down, box filter with its integer sums, letterbox) and siting, with
/// ROIs at odd offsets. A 16-bit reading off by a factor, a byte order or a sample's place
/// (byte 2x of the row) shows here.
#[test]
fn sixteen_bit_samples_convert_as_their_8_bit_values() {
    let pic = Picture::random(37, 23, 9, (0, 255), (0, 255));
    let (nv12, p016) = (pic.nv12(), pic.p016((0, 0)));
    let r = |x, y, w, h| Some(Rect { x, y, w, h });
    // (output size, ROI, letterbox, mode)
    let cases = [
        ((0, 0), None, false, Mode::Same),
        ((0, 0), r(3, 5, 21, 13), false, Mode::Same),
        ((50, 31), None, false, Mode::Bilinear),
        ((25, 16), r(1, 3, 33, 19), false, Mode::Bilinear),
        ((9, 5), None, false, Mode::Area),
        ((12, 12), r(5, 1, 31, 21), true, Mode::Area),
        ((40, 40), None, true, Mode::Bilinear),
    ];
    for ((ow, oh), roi, letterbox, mode) in cases {
        for siting in [Siting::Left, Siting::Center, Siting::TopLeft, Siting::Bottom] {
            for format in [PixelFormat::Bgra8, PixelFormat::Bgr8, PixelFormat::Rgb8, PixelFormat::Gray8, PixelFormat::RgbF32, PixelFormat::RgbF16] {
                let spec = Spec { width: ow, height: oh, roi, letterbox, pad: [114.0, 20.0, 200.0], siting: Some(siting), mean: [0.4, 0.5, 0.6], std: [0.2, 0.3, 0.25], ..Spec::new(format) };
                let (p, want) = run(&spec, 37, 23, &nv12, (Matrix::Bt709, Range::Limited));
                assert_eq!(p.mode, mode, "{ow}x{oh} {roi:?}");
                let (_, got) = run_at(&spec, 37, 23, &view(&p016, Depth::Sixteen), (Matrix::Bt709, Range::Limited));
                assert!(got == want, "{format:?} {siting:?} {ow}x{oh} {roi:?} letterbox {letterbox}: P016 (v << 8) differs from NV12 (v)");
            }
        }
    }
}

/// The bits below the top 8 count: a flat P016 picture of Y = 100.5 (100 << 8 | 0x80, full
/// range, neutral chroma) gives float outputs of 100.5 / 255 in every sampling mode, not the
/// 100 or 101 an 8-bit reading would.
#[test]
fn sixteen_bit_samples_keep_their_low_bits() {
    let img = Picture::random(40, 24, 3, (100, 100), (128, 128)).p016((0x80, 0));
    for (w, h, mode) in [(40, 24, Mode::Same), (30, 18, Mode::Bilinear), (8, 6, Mode::Area)] {
        let spec = Spec { width: w, height: h, ..Spec::new(PixelFormat::RgbF32) };
        let (p, out) = run_at(&spec, 40, 24, &view(&img, Depth::Sixteen), (Matrix::Bt601, Range::Full));
        assert_eq!(p.mode, mode);
        for (i, c) in out.chunks_exact(4).enumerate() {
            let v = f32::from_ne_bytes(c.try_into().unwrap()) * 255.0;
            assert!((v - 100.5).abs() < 1e-3, "{mode:?}: value {i} is {v}, not 100.5");
        }
    }
}

/// Where ITU-T H.273 puts the chroma sample of each 2x2 luma block for
/// `chroma_sample_loc_type` 0..5 (FFmpeg's `AVChromaLocation` 1..6, in this order): (x, y) in
/// luma sample spacings from the block's top-left luma sample (H.273 figure 2, H.264 figure
/// E-1). Written from the standard, not from [`Plan::chroma_pos`].
const H273_LOCATIONS: [(Siting, f64, f64); 6] = [
    (Siting::Left, 0.0, 0.5),
    (Siting::Center, 0.5, 0.5),
    (Siting::TopLeft, 0.0, 0.0),
    (Siting::Top, 0.5, 0.0),
    (Siting::BottomLeft, 0.0, 1.0),
    (Siting::Bottom, 0.5, 1.0),
];

/// Samples `s(0..n)` one apart, linearly interpolated at index position `t` (ends extended).
fn interp(n: usize, t: f64, s: impl Fn(usize) -> f64) -> f64 {
    let i = t.floor();
    let at = |k: f64| s(k.clamp(0.0, (n - 1) as f64) as usize);
    at(i) * (1.0 - (t - i)) + at(i + 1.0) * (t - i)
}

/// The weights of samples `0..n`, sample k covering `[start + k len, start + (k + 1) len)`,
/// in the mean over `[a, b)`: their overlaps with it (what lies outside every sample does
/// not count); a range that no sample covers takes the nearest sample.
fn box_weights(n: usize, start: f64, len: f64, a: f64, b: f64) -> Vec<f64> {
    let w: Vec<f64> = (0..n)
        .map(|k| {
            let (lo, hi) = (start + k as f64 * len, start + (k + 1) as f64 * len);
            (b.min(hi) - a.max(lo)).max(0.0)
        })
        .collect();
    if w.iter().sum::<f64>() > 0.0 {
        return w;
    }
    let nearest = if b <= start { 0 } else { n - 1 };
    (0..n).map(|k| if k == nearest { 1.0 } else { 0.0 }).collect()
}

/// The mean of `s(i, j)` under separable weights.
fn weighted(wx: &[f64], wy: &[f64], s: impl Fn(usize, usize) -> f64) -> f64 {
    let sum: f64 = wy.iter().enumerate().map(|(j, &b)| b * wx.iter().enumerate().map(|(i, &a)| a * s(i, j)).sum::<f64>()).sum();
    sum / (wx.iter().sum::<f64>() * wy.iter().sum::<f64>())
}

/// BT.601 full range Y'CbCr -> R'G'B' from the standard's definitions: Cr = (R - Y) /
/// (2 (1 - Kr)) + 128, Cb likewise, Y = Kr R + Kg G + Kb B.
fn bt601_full(y: f64, cb: f64, cr: f64) -> [f64; 3] {
    let (kr, kb) = (0.299, 0.114);
    let r = y + 2.0 * (1.0 - kr) * (cr - 128.0);
    let b = y + 2.0 * (1.0 - kb) * (cb - 128.0);
    [r, (y - kr * r - kb * b) / (1.0 - kr - kb), b]
}

impl Picture {
    /// Y, Cb, Cr of the picture read as H.273 places its samples, at output pixel (dx, dy) of
    /// a conversion of the whole picture to `ow x oh`: bilinear at the pixel's centre, or the
    /// mean over its footprint (`area`). Luma sample k sits at k + 1/2 and covers [k, k + 1);
    /// chroma sample i sits at 2i + 1/2 + px and covers the two luma spacings around it.
    fn reference(&self, (px, py): (f64, f64), (ow, oh): (usize, usize), area: bool, dx: usize, dy: usize) -> (f64, f64, f64) {
        let (sx, sy) = (self.w as f64 / ow as f64, self.h as f64 / oh as f64);
        let (cw, ch) = (self.cw(), self.ch());
        let luma = |i: usize, j: usize| self.y[j * self.w + i] as f64;
        let cb = |i: usize, j: usize| self.u[j * cw + i] as f64;
        let cr = |i: usize, j: usize| self.v[j * cw + i] as f64;
        if area {
            let (ax, bx, ay, by) = (dx as f64 * sx, (dx + 1) as f64 * sx, dy as f64 * sy, (dy + 1) as f64 * sy);
            let (lx, ly) = (box_weights(self.w, 0.0, 1.0, ax, bx), box_weights(self.h, 0.0, 1.0, ay, by));
            let (cx, cy) = (box_weights(cw, px - 0.5, 2.0, ax, bx), box_weights(ch, py - 0.5, 2.0, ay, by));
            (weighted(&lx, &ly, luma), weighted(&cx, &cy, cb), weighted(&cx, &cy, cr))
        } else {
            let (x, y) = ((dx as f64 + 0.5) * sx, (dy as f64 + 0.5) * sy);
            let at = |n: usize, m: usize, tx: f64, ty: f64, s: &dyn Fn(usize, usize) -> f64| interp(m, ty, |j| interp(n, tx, |i| s(i, j)));
            let (tx, ty) = ((x - 0.5 - px) / 2.0, (y - 0.5 - py) / 2.0);
            (at(self.w, self.h, x - 0.5, y - 0.5, &luma), at(cw, ch, tx, ty, &cb), at(cw, ch, tx, ty, &cr))
        }
    }
}

/// The largest |RGB8 output - the H.273 reference| over the image, in 8-bit levels.
fn reference_error(pic: &Picture, out: &[u8], at: (f64, f64), size: (usize, usize), area: bool) -> f64 {
    let mut worst = 0f64;
    for dy in 0..size.1 {
        for dx in 0..size.0 {
            let (y, cb, cr) = pic.reference(at, size, area, dx, dy);
            let want = bt601_full(y, cb, cr);
            for c in 0..3 {
                worst = worst.max((out[(dy * size.0 + dx) * 3 + c] as f64 - want[c].clamp(0.0, 255.0)).abs());
            }
        }
    }
    worst
}

/// Every siting, at the same scale, resized bilinearly (up and down) and box-filtered (one
/// case with its other axis up-scaled, whose sited chroma footprints lie past the edge):
/// each output pixel within one level of the picture read as H.273 places the chroma
/// samples. And every other siting's reading misses by far: the test tells them apart.
#[test]
fn chroma_is_interpolated_at_the_h273_sited_positions() {
    // (frame, output, box filter): no clipping (luma 96..160, chroma 128 +- 48).
    // The box filter at footprints of 4 x 4, 4.8 x 4.6, 8 x 0.2, and of 7.4 x 7.1 and 8 x 8, the
    // large ones the GPU's tiled path takes (over 36 samples per pixel), to the same bits.
    let cases = [
        ((34, 22), (34, 22), false),
        ((33, 21), (33, 21), false),
        ((34, 22), (68, 44), false),
        ((33, 21), (25, 16), false),
        ((48, 32), (12, 8), true),
        ((48, 32), (10, 7), true),
        ((64, 8), (8, 40), true),
        ((96, 64), (13, 9), true),
        ((96, 64), (12, 8), true),
    ];
    for ((w, h), size, area) in cases {
        let pic = Picture::random(w, h, (w * 131 + h) as u32, (96, 160), (80, 176));
        for (siting, px, py) in H273_LOCATIONS {
            let spec = Spec { siting: Some(siting), width: size.0 as u32, height: size.1 as u32, ..Spec::new(PixelFormat::Rgb8) };
            let (p, out) = run(&spec, w as u32, h as u32, &pic.nv12(), (Matrix::Bt601, Range::Full));
            assert_eq!(p.mode == Mode::Area, area, "{w}x{h} -> {size:?}");
            let err = reference_error(&pic, &out, (px, py), size, area);
            assert!(err <= 1.0, "{siting:?} {w}x{h} -> {size:?}: {err} levels from the H.273 reference");
            if size == (w, h) {
                for (other, ox, oy) in H273_LOCATIONS.into_iter().filter(|l| l.0 != siting) {
                    let miss = reference_error(&pic, &out, (ox, oy), size, area);
                    assert!(miss >= 10.0, "{siting:?} {w}x{h}: within {miss} levels of {other:?}'s reading too: the test cannot tell them apart");
                }
            }
        }
    }
}

/// A sharp vertical chroma edge (Cb 60 | 190 between chroma columns 3 and 4, luma 8): left-sited
/// samples sit on luma columns 6 and 8, so column 7 is halfway (125); centred ones at 7.0 and
/// 9.0, so columns 7 and 8 are a quarter and three quarters of the way (92.5, 157.5). The blue
/// channel (Y + 1.772 (Cb - 128), BT.601 full range) shows which one a conversion did.
#[test]
fn left_sited_chroma_matches_h273_geometry_at_a_sharp_edge() {
    let img = image(16, 4, |x, _| (128, if x < 8 { 60 } else { 190 }, 128));
    let want = [(Siting::Left, [60.0, 125.0, 190.0, 190.0]), (Siting::Center, [60.0, 92.5, 157.5, 190.0]), (Siting::Unspecified, [60.0, 125.0, 190.0, 190.0])];
    for (siting, cb) in want {
        let spec = Spec { siting: Some(siting), ..Spec::new(PixelFormat::RgbF32) };
        let (_, out) = run(&spec, 16, 4, &img, (Matrix::Bt601, Range::Full));
        let blue = |x: usize| 255.0 * f32::from_ne_bytes(out[4 * (2 * 64 + 16 + x)..4 * (2 * 64 + 16 + x) + 4].try_into().unwrap());
        for (k, &c) in cb.iter().enumerate() {
            let b = 128.0 + 1.772 * (c - 128.0);
            assert!((blue(6 + k) - b as f32).abs() < 0.01, "{siting:?}: column {} blue {} (Cb {c} gives {b})", 6 + k, blue(6 + k));
        }
    }
}

/// `rows` rows of `row_bytes` bytes from `(x, y)` (in bytes, rows) of every plane of an image
/// laid out as `l`.
fn window(img: &[u8], l: &Layout, planes: usize, (x, y): (usize, usize), (row_bytes, rows): (usize, usize)) -> Vec<u8> {
    let mut v = Vec::new();
    for p in 0..planes {
        for r in y..y + rows {
            let at = p * l.plane + r * l.pitch + x;
            v.extend_from_slice(&img[at..at + row_bytes]);
        }
    }
    v
}

/// The ROI's conversion against the same window of the whole frame's at `scale` (output
/// pixels per frame pixel), byte for byte, for every format and siting.
fn assert_roi_is_the_window(pic: &Picture, scale: f64, rois: &[Rect]) {
    let img = pic.nv12();
    let (w, h) = (pic.w as u32, pic.h as u32);
    let out = |n: u32| (n as f64 * scale) as u32;
    for (siting, _, _) in H273_LOCATIONS {
        for format in [PixelFormat::Bgra8, PixelFormat::Bgr8, PixelFormat::Rgb8, PixelFormat::Gray8, PixelFormat::RgbF32, PixelFormat::RgbF16] {
            let base = Spec { siting: Some(siting), mean: [0.4, 0.5, 0.6], std: [0.2, 0.3, 0.25], ..Spec::new(format) };
            let whole = Spec { width: out(w), height: out(h), ..base };
            let (pw, all) = run(&whole, w, h, &img, (Matrix::Bt709, Range::Limited));
            let lw = pw.layout(0).unwrap();
            for &roi in rois {
                let spec = Spec { roi: Some(roi), width: out(roi.w), height: out(roi.h), ..base };
                let (p, got) = run(&spec, w, h, &img, (Matrix::Bt709, Range::Limited));
                assert_eq!(p.mode, pw.mode, "{roi:?} at {scale}: the ROI and the frame sample alike");
                let px = format.pixel_bytes();
                let want = window(&all, &lw, format.planes(), (out(roi.x) as usize * px, out(roi.y) as usize), (p.row_bytes(), p.out_h as usize));
                let l = p.layout(0).unwrap();
                assert!(window(&got, &l, format.planes(), (0, 0), (p.row_bytes(), p.out_h as usize)) == want, "{siting:?} {format:?} {roi:?} at {scale}: the ROI differs from that window of the whole frame");
            }
        }
    }
}

/// A crop at the same scale equals that window of the whole frame's conversion: its border
/// pixels read the chroma (and, resized, the luma) around the ROI, as the whole frame's do,
/// not samples clamped at the ROI's edge. Odd and even offsets and sizes, ROIs touching the
/// frame's edges, an odd-sized frame.
#[test]
fn roi_has_no_seam_at_its_border() {
    let pic = Picture::random(61, 37, 7, (0, 255), (0, 255));
    let r = |x, y, w, h| Rect { x, y, w, h };
    assert_roi_is_the_window(&pic, 1.0, &[r(1, 1, 20, 13), r(2, 2, 21, 14), r(7, 4, 30, 17), r(40, 20, 21, 17), r(0, 3, 9, 34), r(59, 35, 2, 2), r(3, 0, 1, 1)]);
}

/// A resized ROI whose origin falls on the whole frame's output grid uses that grid: it equals
/// the matching window of the whole frame resized alike (down 2x bilinear, down 4x box
/// filter, up 2x bilinear at any origin).
#[test]
fn resized_roi_uses_the_whole_frame_sampling_grid() {
    let pic = Picture::random(96, 64, 11, (0, 255), (0, 255));
    let r = |x, y, w, h| Rect { x, y, w, h };
    assert_roi_is_the_window(&pic, 0.5, &[r(2, 2, 30, 20), r(10, 6, 40, 32), r(64, 40, 32, 24)]);
    assert_roi_is_the_window(&pic, 0.25, &[r(4, 4, 32, 20), r(20, 12, 40, 28), r(64, 40, 32, 24)]);
    assert_roi_is_the_window(&pic, 2.0, &[r(1, 1, 15, 9), r(7, 4, 20, 11), r(90, 60, 6, 4)]);
}

#[test]
fn f16_rounding_matches_ieee() {
    for (f, h) in [(0.0f32, 0u16), (1.0, 0x3c00), (-2.0, 0xc000), (65504.0, 0x7bff), (65520.0, 0x7c00), (5.960_464_5e-8, 1), (0.333_333_34, 0x3555), (1.000_488_3, 0x3c00), (1.000_488_4, 0x3c01)] {
        assert_eq!(f16_bits(f), h, "{f}");
    }
    for h in 0..0x7c00u16 {
        assert_eq!(f16_bits(f16_to_f32(h)), h, "round trip of 0x{h:04x}");
    }
}
