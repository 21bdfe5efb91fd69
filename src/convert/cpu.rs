//! The CPU conversion: the kernel's arithmetic, operation for operation, in `f32` (no fused
//! multiply-adds on either side), so CPU and GPU results are bit-identical. Where the kernel takes
//! an exact shortcut (integer chroma weights at the same scale, bytes made floats by the 2^23
//! trick) this side computes the plain form, which gives the same values. Large images are split
//! into bands of rows over the library's worker pool ([`crate::workers`]).
//!
//! P016 frames (16-bit samples, the stream's bits high) take the same arithmetic: a sample `v`
//! enters it as `v as f32 * (1/256)` (exact: a power of two), in the 8-bit samples' 0..255 units,
//! and the box filter's integer sums of inner samples likewise once made floats (the kernel's
//! `Words`).

use super::{Layout, Mode, Plan, PixelFormat};
use crate::pool::Depth;
use crate::status::*;

/// A frame's image in host memory: Y rows then interleaved UV rows, `pitch` bytes apart, UV at
/// `uv_offset`; samples of `depth`: NV12's bytes, or P016's little-endian 16-bit words (sample
/// `x` of a row at byte `2x`).
pub(crate) struct Image<'a> {
    pub bytes: &'a [u8],
    pub pitch: usize,
    pub uv_offset: usize,
    pub depth: Depth,
}

/// A 16-bit sample's value in 8-bit units is `v / 256`: an exact scaling, so 10-bit limited-range
/// Y 64..940 (<< 6) is 16.0..235.0 and every constant of the 8-bit arithmetic holds.
const WORD_UNIT: f32 = 1.0 / 256.0;

impl Image<'_> {
    /// Sample `i` of the row starting at byte `at`, as stored (a byte or a 16-bit word).
    #[inline]
    fn raw(&self, at: usize, i: usize) -> u32 {
        match self.depth {
            Depth::Eight => self.bytes[at + i] as u32,
            Depth::Sixteen => u16::from_le_bytes([self.bytes[at + 2 * i], self.bytes[at + 2 * i + 1]]) as u32,
        }
    }
    /// A stored sample, or an integer sum of them, in the arithmetic's 0..255 units (the kernel's
    /// `u2f` / `(float)sum`, times `WORD_UNIT` for 16-bit samples).
    #[inline]
    fn units(&self, raw: u32) -> f32 {
        match self.depth {
            Depth::Eight => raw as f32,
            Depth::Sixteen => raw as f32 * WORD_UNIT,
        }
    }
    /// The integer sum of `n` samples `first, first + step, ...` of the row at byte `at` (the box
    /// filter's inner samples: luma `step` 1; U or V of the UV pairs, `step` 2).
    #[inline]
    fn sum(&self, at: usize, first: usize, n: usize, step: usize) -> u32 {
        match self.depth {
            Depth::Eight if step == 1 => self.bytes[at + first..at + first + n].iter().map(|&v| v as u32).sum(),
            Depth::Eight => self.bytes[at + first..].iter().step_by(step).take(n).map(|&v| v as u32).sum(),
            Depth::Sixteen => self.bytes[at + 2 * first..].chunks_exact(2).step_by(step).take(n).map(|w| u16::from_le_bytes([w[0], w[1]]) as u32).sum(),
        }
    }
    /// Where Y row `y` and UV row `y` start.
    #[inline]
    fn y_at(&self, y: i32) -> usize {
        y as usize * self.pitch
    }
    #[inline]
    fn uv_at(&self, y: i32) -> usize {
        self.uv_offset + y as usize * self.pitch
    }
    #[inline]
    fn y(&self, x: i32, y: i32) -> f32 {
        self.units(self.raw(self.y_at(y), x as usize))
    }
    #[inline]
    fn uv(&self, x: i32, y: i32) -> (f32, f32) {
        let at = self.uv_at(y);
        (self.units(self.raw(at, 2 * x as usize)), self.units(self.raw(at, 2 * x as usize + 1)))
    }
}

struct Taps {
    xa: i32,
    xb: i32,
    ya: i32,
    yb: i32,
    fx: f32,
    fy: f32,
}

#[inline]
fn taps(u: f32, v: f32, x0: i32, x1: i32, y0: i32, y1: i32) -> Taps {
    let (fu, fv) = (u.floor(), v.floor());
    let (iu, iv) = (fu as i32, fv as i32);
    Taps { fx: u - fu, fy: v - fv, xa: iu.clamp(x0, x1), xb: (iu + 1).clamp(x0, x1), ya: iv.clamp(y0, y1), yb: (iv + 1).clamp(y0, y1) }
}

#[inline]
fn lerp(a: f32, b: f32, f: f32) -> f32 {
    a + (b - a) * f
}

/// The box footprint `[a, b)` on one axis: pixels `i0..=i1` (clamped to the frame's `[0, hi]`)
/// and the end pixels' weights; the inner ones weigh exactly 1 (the kernel's `Span`).
#[derive(Clone, Copy)]
struct Span {
    i0: i32,
    i1: i32,
    w0: f32,
    w1: f32,
}

/// The smallest first weight of a chroma footprint (the kernel's `MIN_W0`).
const MIN_W0: f32 = 1.0 / 16_777_216.0;

#[inline]
fn overlap(i: i32, a: f32, b: f32) -> f32 {
    ((i + 1) as f32).min(b) - (i as f32).max(a)
}

impl Span {
    /// A luma footprint: it starts at `a >= 0` (the ROI's origin or after), so only `hi` clamps
    /// it (the kernel's `span`).
    fn luma(a: f32, b: f32, hi: i32) -> Span {
        let i0 = (a.floor() as i32).min(hi);
        let i1 = (b.ceil() as i32 - 1).min(hi);
        Span { i0, i1, w0: overlap(i0, a, b), w1: overlap(i1, a, b) }
    }
    /// A chroma footprint (the kernel's `chroma_span`): the siting shifts it by up to a quarter
    /// sample, so it may start before 0 and is clamped at both ends; and `w0` is kept above 0. A
    /// sited footprint narrower than that shift (a box filter that up-scales its other axis more
    /// than 2x) can lie wholly past the edge sample: clamped onto it, it overlaps it by 0 or
    /// less, and its value `v * w0 / w0` would be 0 / 0. Whenever the span has more than one
    /// pixel, `w0` is at least 2^-24 already (the overlap of a float with its pixel), so the floor
    /// changes nothing else; with one pixel, `w0` cancels.
    fn chroma(a: f32, b: f32, hi: i32) -> Span {
        let i0 = (a.floor() as i32).clamp(0, hi);
        let i1 = (b.ceil() as i32 - 1).clamp(0, hi);
        Span { i0, i1, w0: overlap(i0, a, b).max(MIN_W0), w1: overlap(i1, a, b) }
    }
    /// `(w0 + inner count) + w1`.
    fn wsum(&self) -> f32 {
        if self.i1 > self.i0 {
            (self.w0 + (self.i1 - self.i0 - 1) as f32) + self.w1
        } else {
            self.w0
        }
    }
    /// Combines the values `f(i)` of the span's pixels: `(f(i0) * w0 + inner) + f(i1) * w1`,
    /// with `inner` summed by `sum` over `i0 + 1..i1`.
    #[inline]
    fn combine<T: Copy>(&self, f: impl Fn(i32) -> T, inner: impl Fn(i32, i32) -> T, mul: impl Fn(T, f32) -> T, add: impl Fn(T, T) -> T) -> T {
        let v = mul(f(self.i0), self.w0);
        if self.i1 > self.i0 {
            add(add(v, inner(self.i0 + 1, self.i1)), mul(f(self.i1), self.w1))
        } else {
            v
        }
    }
}

/// The chroma footprint of output pixel `d` (into the image) on one axis: `s` ROI pixels per
/// output pixel from ROI origin `o`, chroma sited at `h` half pixels ([`Plan::chroma_pos`]).
/// The kernel's `area_chroma_sized` set-up: `d * (s / 2) + (o / 2 + (1/2 - h / 4))`, then `+ s / 2`.
#[inline]
fn chroma_span(d: f32, s: f32, o: u32, h: i32, hi: i32) -> Span {
    let hs = s * 0.5;
    let c0 = o as f32 * 0.5 + (0.5 - h as f32 * 0.25);
    let a = d * hs + c0;
    Span::chroma(a, a + hs, hi)
}

/// Y, Cb, Cr at output pixel (ox, oy) inside the image rectangle: the kernel's `bilinear` or
/// `area_luma` + `area_chroma` (the same-scale kernel path is bilinear, exactly). Taps clamp to
/// the frame, not to the ROI: a ROI reads the pixels around it, as the whole frame's conversion
/// does. Chroma is interpolated at the stream's siting ([`Plan::chroma_pos`]).
fn sample(p: &Plan, s: &Image, ox: i32, oy: i32) -> (f32, f32, f32) {
    let r = &p.roi;
    let (lx1, ly1) = (p.src_w as i32 - 1, p.src_h as i32 - 1);
    let (cx1, cy1) = (lx1 / 2, ly1 / 2);
    let (hx, hy) = p.chroma_pos();
    let dx = (ox - p.img.x as i32) as f32;
    let dy = (oy - p.img.y as i32) as f32;
    if p.mode != Mode::Area {
        let u = (dx + 0.5) * p.sx + r.x as f32;
        let v = (dy + 0.5) * p.sy + r.y as f32;
        let l = taps(u - 0.5, v - 0.5, 0, lx1, 0, ly1);
        let top = lerp(s.y(l.xa, l.ya), s.y(l.xb, l.ya), l.fx);
        let bot = lerp(s.y(l.xa, l.yb), s.y(l.xb, l.yb), l.fx);
        let yv = lerp(top, bot, l.fy);
        let c = taps(u * 0.5 - hx as f32 * 0.25, v * 0.5 - hy as f32 * 0.25, 0, cx1, 0, cy1);
        let (a, b, d, e) = (s.uv(c.xa, c.ya), s.uv(c.xb, c.ya), s.uv(c.xa, c.yb), s.uv(c.xb, c.yb));
        let (tu, bu) = (lerp(a.0, b.0, c.fx), lerp(d.0, e.0, c.fx));
        let (tv, bv) = (lerp(a.1, b.1, c.fx), lerp(d.1, e.1, c.fx));
        (yv, lerp(tu, bu, c.fy), lerp(tv, bv, c.fy))
    } else {
        // Box filter: rows combined over the vertical span, each row over the horizontal span;
        // inner pixels summed as integers (exact) and made a float once, inner rows summed in row
        // order.
        let ax = dx * p.sx + r.x as f32;
        let bx = ax + p.sx;
        let ay = dy * p.sy + r.y as f32;
        let by = ay + p.sy;
        let (lx, ly) = (Span::luma(ax, bx, lx1), Span::luma(ay, by, ly1));
        let (cx, cy) = (chroma_span(dx, p.sx, r.x, hx, cx1), chroma_span(dy, p.sy, r.y, hy, cy1));
        let luma_row = |y: i32| {
            let at = s.y_at(y);
            lx.combine(|x| s.units(s.raw(at, x as usize)), |a, b| s.units(s.sum(at, a as usize, (b - a) as usize, 1)), |v, w| v * w, |a, b| a + b)
        };
        let luma_inner = |a: i32, b: i32| (a..b).fold(0f32, |acc, y| acc + luma_row(y));
        let yv = ly.combine(luma_row, luma_inner, |v, w| v * w, |a, b| a + b) / (lx.wsum() * ly.wsum());
        type Uv = (f32, f32);
        let mul = |v: Uv, w: f32| (v.0 * w, v.1 * w);
        let add = |a: Uv, b: Uv| (a.0 + b.0, a.1 + b.1);
        let chroma_row = |y: i32| {
            let row = s.uv_at(y);
            let inner = |a: i32, b: i32| {
                let (first, n) = (2 * a as usize, (b - a) as usize);
                (s.units(s.sum(row, first, n, 2)), s.units(s.sum(row, first + 1, n, 2)))
            };
            cx.combine(|x| s.uv(x, y), inner, mul, add)
        };
        let chroma_inner = |a: i32, b: i32| (a..b).fold((0f32, 0f32), |acc, y| add(acc, chroma_row(y)));
        let (su, sv) = cy.combine(chroma_row, chroma_inner, mul, add);
        let cw = cx.wsum() * cy.wsum();
        (yv, su / cw, sv / cw)
    }
}

/// R, G, B (0..255 units, unclamped) of output pixel (ox, oy): the kernel's body (gray: yy).
#[inline]
fn rgb(p: &Plan, s: &Image, ox: i32, oy: i32) -> [f32; 3] {
    let i = &p.img;
    let inside = ox >= i.x as i32 && ox < (i.x + i.w) as i32 && oy >= i.y as i32 && oy < (i.y + i.h) as i32;
    if !inside {
        return p.pad;
    }
    let (yv, u, v) = sample(p, s, ox, oy);
    let c = &p.coeffs;
    let yy = (yv - c.y_off) * c.y_scale;
    if p.format == PixelFormat::Gray8 {
        return [yy, yy, yy];
    }
    let (du, dv) = (u - 128.0, v - 128.0);
    [yy + dv * c.k_r, (yy - du * c.k_gb) - dv * c.k_gr, yy + du * c.k_b]
}

/// `clamp(v, 0, 255)` rounded to nearest, ties to even (the kernel's F2I).
#[inline]
fn to_u8(v: f32) -> u8 {
    v.clamp(0.0, 255.0).round_ties_even() as u8
}

#[inline]
fn norm(p: &Plan, v: f32, c: usize) -> f32 {
    v.clamp(0.0, 255.0) * p.norm.scale[c] + p.norm.offset[c]
}

/// Converts rows `y0..y0 + rows` into `planes` (each starting at row `y0` of its plane).
fn band(p: &Plan, s: &Image, pitch: usize, y0: usize, rows: usize, planes: &mut [&mut [u8]]) {
    for r in 0..rows {
        let oy = (y0 + r) as i32;
        let at = r * pitch;
        for ox in 0..p.out_w as usize {
            let [cr, cg, cb] = rgb(p, s, ox as i32, oy);
            match p.format {
                PixelFormat::Bgra8 => planes[0][at + 4 * ox..at + 4 * ox + 4].copy_from_slice(&[to_u8(cb), to_u8(cg), to_u8(cr), 255]),
                PixelFormat::Bgr8 => planes[0][at + 3 * ox..at + 3 * ox + 3].copy_from_slice(&[to_u8(cb), to_u8(cg), to_u8(cr)]),
                PixelFormat::Rgb8 => planes[0][at + 3 * ox..at + 3 * ox + 3].copy_from_slice(&[to_u8(cr), to_u8(cg), to_u8(cb)]),
                PixelFormat::Gray8 => planes[0][at + ox] = to_u8(cr),
                PixelFormat::RgbF32 => {
                    for (c, v) in [cr, cg, cb].into_iter().enumerate() {
                        planes[c][at + 4 * ox..at + 4 * ox + 4].copy_from_slice(&norm(p, v, c).to_ne_bytes());
                    }
                }
                PixelFormat::RgbF16 => {
                    for (c, v) in [cr, cg, cb].into_iter().enumerate() {
                        planes[c][at + 2 * ox..at + 2 * ox + 2].copy_from_slice(&f16_bits(norm(p, v, c)).to_ne_bytes());
                    }
                }
            }
        }
    }
}

/// Converts `src` into `dst` laid out as `l` (`dst` holds at least `l.total` bytes).
pub(crate) fn convert(p: &Plan, src: &Image, dst: &mut [u8], l: &Layout) -> Result<()> {
    if dst.len() < l.total {
        return Err(Error::new(ErrorKind::BufferTooSmall, format!("destination holds {} bytes, the conversion needs {}", dst.len(), l.total)));
    }
    let need_src = src.uv_offset + src.pitch * (p.src_h as usize).div_ceil(2);
    if src.bytes.len() < need_src || src.pitch < p.src_w.div_ceil(2) as usize * 2 * src.depth.bytes() {
        return Err(Error::internal("source image smaller than its geometry"));
    }
    let out_h = p.out_h as usize;
    // Bands of rows over a few threads once the image is worth it (a camera at 1080p: ~8).
    let threads = if p.out_w as usize * out_h >= 256 * 256 {
        crate::workers::parallelism()
    } else {
        1
    };
    let band_rows = out_h.div_ceil(threads).max(1);
    let dst = &mut dst[..l.total];
    // Split into planes, then each plane into bands of rows.
    let mut planes: Vec<&mut [u8]> = Vec::with_capacity(3);
    let mut rest = dst;
    for i in 0..p.format.planes() {
        let take = if i + 1 == p.format.planes() { rest.len() } else { l.plane };
        let (a, b) = rest.split_at_mut(take);
        planes.push(a);
        rest = b;
    }
    let mut bands: Vec<Vec<&mut [u8]>> = (0..out_h.div_ceil(band_rows)).map(|_| Vec::with_capacity(3)).collect();
    for plane in planes {
        for (b, chunk) in plane.chunks_mut(band_rows * l.pitch).enumerate() {
            bands[b].push(chunk);
        }
    }
    if bands.len() == 1 {
        band(p, src, l.pitch, 0, out_h, &mut bands[0]);
        return Ok(());
    }
    // On the library's worker pool (and this thread): no thread is started per call.
    let bands: Vec<parking_lot::Mutex<Vec<&mut [u8]>>> = bands.into_iter().map(parking_lot::Mutex::new).collect();
    crate::workers::for_each(bands.len(), &|b| {
        let y0 = b * band_rows;
        let rows = band_rows.min(out_h - y0);
        band(p, src, l.pitch, y0, rows, &mut bands[b].lock());
    })
}

/// f32 → IEEE binary16 bits, round to nearest even (what PTX's `cvt.rn.f16.f32` does).
fn f16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal: shift the full mantissa (with its implicit 1) into place, rounding.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1; // may carry into the exponent, up to infinity: correct
    }
    sign | h as u16
}

/// IEEE binary16 bits → f32 (for tests and readers of fp16 output).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f32;
    match e {
        0 => sign * m * 2f32.powi(-24),
        0x1f => {
            if m == 0.0 {
                sign * f32::INFINITY
            } else {
                f32::NAN
            }
        }
        _ => sign * (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

#[cfg(test)]
mod tests;
