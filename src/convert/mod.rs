//! Frame conversion: NV12 or P016 → packed 8-bit RGB/BGR(A)/gray or planar float RGB (NCHW), with
//! crop, resize and letterbox in one pass. [`Plan`] turns a caller's [`Spec`] and a frame's size and
//! colour into the exact numbers both back ends use: the CUDA kernels (`kernels/`, their
//! parameter blocks filled from the plan and launched by [`launch`]) and the CPU twin in
//! [`cpu`], which repeats the kernel's float operations in the same order so the two agree within
//! one step per channel. [`dispatch`] picks between them by where the frame is; [`gpu`] (device
//! memory of a frame's own GPU or another) and [`staging`] (host downloads) are the device's side.

pub(crate) mod cpu;
pub(crate) mod dispatch;
pub(crate) mod gpu;
pub(crate) mod launch;
pub(crate) mod staging;

use crate::frame::{Color, Matrix, Range, Siting};
use crate::status::*;

/// The largest output side accepted (a 16K image; anything bigger is a caller's mistake).
pub(crate) const MAX_SIDE: u32 = 16384;

/// Output pixel formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PixelFormat {
    /// B, G, R, A = 255; one `u32` per pixel on little-endian hosts (LabVIEW's picture/IMAQ RGB).
    Bgra8,
    Bgr8,
    Rgb8,
    /// Luma only, expanded to 0..255 for limited-range streams.
    Gray8,
    /// Three planes R, G, B of `f32`: `(v / 255 - mean) / std`.
    RgbF32,
    /// As `RgbF32` in IEEE half precision.
    RgbF16,
}

impl PixelFormat {
    /// The kernel's `FMT_*` number.
    pub(crate) fn code(self) -> u32 {
        match self {
            PixelFormat::Bgra8 => 1,
            PixelFormat::Bgr8 => 2,
            PixelFormat::Rgb8 => 3,
            PixelFormat::Gray8 => 4,
            PixelFormat::RgbF32 => 5,
            PixelFormat::RgbF16 => 6,
        }
    }
    /// Bytes per pixel in one plane row.
    pub(crate) fn pixel_bytes(self) -> usize {
        match self {
            PixelFormat::Bgra8 => 4,
            PixelFormat::Bgr8 | PixelFormat::Rgb8 => 3,
            PixelFormat::Gray8 => 1,
            PixelFormat::RgbF32 => 4,
            PixelFormat::RgbF16 => 2,
        }
    }
    pub(crate) fn planes(self) -> usize {
        match self {
            PixelFormat::RgbF32 | PixelFormat::RgbF16 => 3,
            _ => 1,
        }
    }
    /// The alignment device stores need (the kernel writes BGRA as one 32-bit word, floats as
    /// their element type).
    pub(crate) fn align(self) -> usize {
        match self {
            PixelFormat::Bgra8 | PixelFormat::RgbF32 => 4,
            PixelFormat::RgbF16 => 2,
            _ => 1,
        }
    }
}

/// A rectangle in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

/// What a caller asked for (the C spec, read and range-checked by `ffi::convert`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spec {
    pub format: PixelFormat,
    /// Output size; 0 = the ROI's.
    pub width: u32,
    pub height: u32,
    /// Crop in frame pixels; `None` = the whole frame.
    pub roi: Option<Rect>,
    /// Keep the ROI's aspect ratio: scale to fit and pad the rest with `pad`.
    pub letterbox: bool,
    /// Letterbox colour R, G, B in 0..255 (float outputs normalize it like a pixel).
    pub pad: [f32; 3],
    /// Overrides of the stream's matrix, range and chroma siting.
    pub matrix: Option<Matrix>,
    pub range: Option<Range>,
    pub siting: Option<Siting>,
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

/// A colour description of the given matrix and range (siting unspecified: left), for tests.
#[cfg(test)]
pub(crate) fn colour(m: Matrix, r: Range) -> Color {
    Color { matrix: m, range: r, ..Color::default() }
}

impl Spec {
    #[cfg(test)]
    pub(crate) fn new(format: PixelFormat) -> Spec {
        Spec {
            format,
            width: 0,
            height: 0,
            roi: None,
            letterbox: false,
            pad: [0.0; 3],
            matrix: None,
            range: None,
            siting: None,
            mean: [0.0; 3],
            std: [1.0; 3],
        }
    }
}

/// Y'CbCr → R'G'B' in 0..255 units: `yy = (Y - y_off) * y_scale`, `du = U - 128`,
/// `dv = V - 128`, `R = yy + dv*k_r`, `G = (yy - du*k_gb) - dv*k_gr`, `B = yy + du*k_b` (the
/// chroma scale folded into the matrix). `y_off` is an integer (0 or 16): the kernel relies on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Coeffs {
    pub y_off: f32,
    pub y_scale: f32,
    pub k_r: f32,
    pub k_gb: f32,
    pub k_gr: f32,
    pub k_b: f32,
}

impl Coeffs {
    pub(crate) fn new(m: Matrix, r: Range) -> Coeffs {
        let (kr, kb) = match m {
            Matrix::Bt709 => (0.2126f64, 0.0722f64),
            Matrix::Bt2020 => (0.2627, 0.0593),
            Matrix::Bt601 | Matrix::Unspecified => (0.299, 0.114),
        };
        let kg = 1.0 - kr - kb;
        let (y_off, y_scale, c_scale) = match r {
            Range::Full => (0.0, 1.0, 1.0),
            Range::Limited | Range::Unspecified => (16.0, 255.0 / 219.0, 255.0 / 224.0),
        };
        Coeffs {
            y_off: y_off as f32,
            y_scale: y_scale as f32,
            k_r: (c_scale * 2.0 * (1.0 - kr)) as f32,
            k_gb: (c_scale * 2.0 * kb * (1.0 - kb) / kg) as f32,
            k_gr: (c_scale * 2.0 * kr * (1.0 - kr) / kg) as f32,
            k_b: (c_scale * 2.0 * (1.0 - kb)) as f32,
        }
    }
}

/// Float outputs: `clamp(v, 0, 255) * scale + offset` per channel, i.e. `(v / 255 - mean) / std`
/// with the constants folded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Norm {
    pub scale: [f32; 3],
    pub offset: [f32; 3],
}

impl Norm {
    fn new(mean: &[f32; 3], std: &[f32; 3]) -> Norm {
        Norm {
            scale: std::array::from_fn(|c| (1.0 / (255.0 * std[c] as f64)) as f32),
            offset: std::array::from_fn(|c| (-(mean[c] as f64) / std[c] as f64) as f32),
        }
    }
}

/// How the output samples the ROI (the kernel's `MODE_*`; one kernel per mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No resize: each output pixel is one luma sample (bilinear at the same scale, exactly).
    Same = 0,
    /// Bilinear: up-scales and down-scales up to 2x.
    Bilinear = 1,
    /// Box filter: a down-scale beyond 2x on either axis.
    Area = 2,
}

/// Everything a conversion of one frame needs, checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Plan {
    pub format: PixelFormat,
    pub src_w: u32,
    pub src_h: u32,
    pub roi: Rect,
    pub out_w: u32,
    pub out_h: u32,
    /// Where the scaled ROI lands in the output; the rest is `pad`.
    pub img: Rect,
    pub sx: f32,
    pub sy: f32,
    pub mode: Mode,
    pub coeffs: Coeffs,
    /// Where the chroma samples sit (resolved: never `Unspecified`).
    pub siting: Siting,
    pub pad: [f32; 3],
    pub norm: Norm,
}

/// The caller's buffer as a conversion writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bytes between rows.
    pub pitch: usize,
    /// Bytes between planes (planar formats).
    pub plane: usize,
    /// Bytes written from the start of the buffer to the last byte (what `dst_size` must hold).
    pub total: usize,
}

fn finite3(v: &[f32; 3], what: &str) -> Result<()> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(Error::arg(format!("{what} must be finite")))
    }
}

impl Plan {
    /// `color` is the frame's colour description as its decoder reported it (unspecified parts
    /// are resolved here, by the frame's height); the spec may override matrix, range and siting.
    pub(crate) fn new(spec: &Spec, src_w: u32, src_h: u32, color: &Color) -> Result<Plan> {
        if src_w == 0 || src_h == 0 {
            return Err(Error::arg("the frame is empty"));
        }
        let roi = spec.roi.unwrap_or(Rect { x: 0, y: 0, w: src_w, h: src_h });
        let fits = |o: u32, l: u32, n: u32| l > 0 && o.checked_add(l).is_some_and(|e| e <= n);
        if !fits(roi.x, roi.w, src_w) || !fits(roi.y, roi.h, src_h) {
            return Err(Error::arg(format!(
                "roi {}x{} at ({}, {}) is empty or outside the {src_w}x{src_h} frame",
                roi.w, roi.h, roi.x, roi.y
            )));
        }
        let out_w = if spec.width == 0 { roi.w } else { spec.width };
        let out_h = if spec.height == 0 { roi.h } else { spec.height };
        if out_w > MAX_SIDE || out_h > MAX_SIDE {
            return Err(Error::arg(format!("output {out_w}x{out_h} exceeds {MAX_SIDE} on a side")));
        }
        finite3(&spec.pad, "pad")?;
        finite3(&spec.mean, "mean")?;
        finite3(&spec.std, "std")?;
        if spec.std.contains(&0.0) {
            return Err(Error::arg("std must not be 0"));
        }
        let img = if spec.letterbox {
            // Fit the ROI inside the output, keeping its aspect; centre it.
            let s = (out_w as f64 / roi.w as f64).min(out_h as f64 / roi.h as f64);
            let w = ((roi.w as f64 * s).round() as u32).clamp(1, out_w);
            let h = ((roi.h as f64 * s).round() as u32).clamp(1, out_h);
            Rect { x: (out_w - w) / 2, y: (out_h - h) / 2, w, h }
        } else {
            Rect { x: 0, y: 0, w: out_w, h: out_h }
        };
        let sx = roi.w as f32 / img.w as f32;
        let sy = roi.h as f32 / img.h as f32;
        let (m, r) = color.resolved(src_h);
        let m = spec.matrix.unwrap_or(m);
        let r = spec.range.unwrap_or(r);
        Ok(Plan {
            format: spec.format,
            src_w,
            src_h,
            roi,
            out_w,
            out_h,
            img,
            sx,
            sy,
            mode: if sx > 2.0 || sy > 2.0 {
                Mode::Area
            } else if sx == 1.0 && sy == 1.0 {
                Mode::Same
            } else {
                Mode::Bilinear
            },
            coeffs: Coeffs::new(m, r),
            siting: spec.siting.unwrap_or(color.siting).resolved(),
            pad: spec.pad,
            norm: Norm::new(&spec.mean, &spec.std),
        })
    }

    /// Where a chroma sample sits inside the 2x2 luma block it belongs to, on each axis, in half
    /// luma pixels from the block's top-left corner: 1 (with the first column / row), 2 (between
    /// the two: centred) or 3 (with the second row). Both back ends interpolate from this: the
    /// chroma coordinate of luma position `u` (pixel centres at k + 0.5) is `u / 2 - h / 4` in
    /// samples whose centres are at integers (bilinear), `u / 2 + 1 / 2 - h / 4` in samples
    /// covering `[i, i + 1)` (box filter); at the same scale, `(2X + 1 - h) / 4` for luma column X.
    pub(crate) fn chroma_pos(&self) -> (i32, i32) {
        let (ox, oy) = self.siting.offsets();
        // offsets() is in chroma samples (2 luma pixels) from the block's centre (2 half pixels).
        ((2.0 + 4.0 * ox) as i32, (2.0 + 4.0 * oy) as i32)
    }

    /// Bytes of one output row, packed.
    pub(crate) fn row_bytes(&self) -> usize {
        self.out_w as usize * self.format.pixel_bytes()
    }

    /// The layout at `dst_pitch` (0 = packed); planes follow each other, `out_h` rows apart.
    pub(crate) fn layout(&self, dst_pitch: usize) -> Result<Layout> {
        let row = self.row_bytes();
        let pitch = if dst_pitch == 0 { row } else { dst_pitch };
        if pitch < row {
            return Err(Error::arg(format!("dst_pitch {dst_pitch} < row width {row}")));
        }
        let too_big = || Error::arg(format!("dst_pitch {dst_pitch}: the image size overflows"));
        let plane = pitch.checked_mul(self.out_h as usize).ok_or_else(too_big)?;
        let planes = self.format.planes();
        // The last row of the last plane needs only `row` bytes.
        let total = plane
            .checked_mul(planes)
            .and_then(|t| t.checked_sub(pitch))
            .and_then(|t| t.checked_add(row))
            .ok_or_else(too_big)?;
        Ok(Layout { pitch, plane, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letterbox_keeps_aspect_and_centres() {
        let mut s = Spec::new(PixelFormat::RgbF16);
        s.width = 640;
        s.height = 640;
        s.letterbox = true;
        let p = Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(p.img, Rect { x: 0, y: 140, w: 640, h: 360 });
        assert_eq!(p.mode, Mode::Area, "3x down-scale uses the box filter");
        let l = p.layout(0).unwrap();
        assert_eq!((l.pitch, l.plane, l.total), (1280, 1280 * 640, 1280 * 640 * 3));
    }

    #[test]
    fn roi_outside_the_frame_or_overflowing_is_refused() {
        let mut s = Spec::new(PixelFormat::Bgra8);
        s.roi = Some(Rect { x: 100, y: 0, w: 1821, h: 10 });
        assert!(Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).is_err());
        s.roi = Some(Rect { x: u32::MAX, y: 0, w: 2, h: 10 });
        assert!(Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).is_err());
        s.roi = Some(Rect { x: 0, y: 0, w: 0, h: 10 });
        assert!(Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).is_err());
        let s = Spec { std: [1.0, 0.0, 1.0], ..Spec::new(PixelFormat::RgbF32) };
        assert!(Plan::new(&s, 64, 64, &colour(Matrix::Bt709, Range::Limited)).is_err());
        let p = Plan::new(&Spec::new(PixelFormat::Bgr8), 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert!(p.layout(usize::MAX / 2).is_err(), "a pitch that wraps is refused");
        assert!(p.layout(100).is_err(), "a pitch below the row is refused");
    }

    #[test]
    fn unspecified_colour_resolves_by_height() {
        use crate::frame::Color;
        assert_eq!(Color::default().resolved(480), (Matrix::Bt601, Range::Limited));
        assert_eq!(Color::default().resolved(720), (Matrix::Bt709, Range::Limited));
        assert_eq!(Color::from_h273(6, Some(true)).resolved(2160), (Matrix::Bt601, Range::Full));
    }

    /// Each siting's chroma position in half pixels from its 2x2 block's top-left corner (H.273
    /// figure 2: left is on the first column, halfway down; top-left on the first sample; ...),
    /// unspecified as left (what H.264/HEVC mean), and the spec's override over the stream's.
    #[test]
    fn siting_resolves_to_its_chroma_position() {
        let cases = [
            (Siting::Unspecified, (1, 2)),
            (Siting::Left, (1, 2)),
            (Siting::Center, (2, 2)),
            (Siting::TopLeft, (1, 1)),
            (Siting::Top, (2, 1)),
            (Siting::BottomLeft, (1, 3)),
            (Siting::Bottom, (2, 3)),
        ];
        for (siting, pos) in cases {
            let c = Color { siting, ..colour(Matrix::Bt709, Range::Limited) };
            let p = Plan::new(&Spec::new(PixelFormat::Rgb8), 64, 64, &c).unwrap();
            assert_eq!((p.siting, p.chroma_pos()), (siting.resolved(), pos), "{siting:?}");
            let s = Spec { siting: Some(Siting::Center), ..Spec::new(PixelFormat::Rgb8) };
            assert_eq!(Plan::new(&s, 64, 64, &c).unwrap().chroma_pos(), (2, 2), "the spec overrides {siting:?}");
        }
    }
}
