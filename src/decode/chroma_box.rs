//! JPEG's 4:2:2, 4:4:0 and 4:4:4 pictures to NV12 by the rule NVDEC's JPEG engine uses: each NV12
//! chroma sample is the rounded mean of the 2 or 4 decoded samples its 2x2 luma block covers (a box
//! average; a block cut by an odd edge averages the samples it has). Every decoder of a JPEG camera
//! writes its chroma by this one rule (the CPU path and software + upload here, nvJPEG's packing
//! kernel on the GPU), so a camera's NV12 does not depend on which decoder made it. The result is
//! centre-sited (JFIF's siting, what JPEG frames report): the box's mean sits in the middle of its
//! block whichever layout it came from.

/// Horizontal and vertical chroma subsampling of a planar 8-bit layout this rule takes
/// (1: one chroma sample per luma sample on that axis, 2: one per two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sub {
    pub x: usize,
    pub y: usize,
}

impl Sub {
    /// The layouts that need the box: 4:2:2 (2, 1), 4:4:0 (1, 2), 4:4:4 (1, 1). 4:2:0 (2, 2) is
    /// only interleaved, and the rule gives that too.
    pub(crate) fn of(fmt: i32) -> Option<Sub> {
        use ffmpeg_next::ffi::AVPixelFormat::*;
        let is = |fs: &[ffmpeg_next::ffi::AVPixelFormat]| fs.iter().any(|&f| f as i32 == fmt);
        if is(&[AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P]) {
            Some(Sub { x: 2, y: 1 })
        } else if is(&[AV_PIX_FMT_YUV440P, AV_PIX_FMT_YUVJ440P]) {
            Some(Sub { x: 1, y: 2 })
        } else if is(&[AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P]) {
            Some(Sub { x: 1, y: 1 })
        } else if is(&[AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P]) {
            Some(Sub { x: 2, y: 2 })
        } else {
            None
        }
    }
}

/// One 8-bit plane: `rows` rows of `width` samples, `stride` bytes apart.
pub(crate) struct Plane<'a> {
    pub data: &'a [u8],
    pub stride: usize,
    pub width: usize,
    pub rows: usize,
}

impl Plane<'_> {
    fn row(&self, r: usize) -> &[u8] {
        &self.data[r * self.stride..r * self.stride + self.width]
    }
}

/// Writes the NV12 chroma plane (`ceil(h / 2)` rows of `ceil(w / 2)` U, V pairs at `pitch`) of a
/// `w` x `h` picture whose chroma planes `u`, `v` are subsampled by `s`, into `uv`.
/// Rounding halves up: (a + b + 1) / 2 and (a + b + c + d + 2) / 4, as NVDEC's engine does.
pub(crate) fn chroma_to_nv12(u: &Plane<'_>, v: &Plane<'_>, s: Sub, w: usize, h: usize, uv: &mut [u8], pitch: usize) {
    let (ow, oh) = (w.div_ceil(2), h.div_ceil(2));
    // Per output sample, the chroma columns it covers (`fx` of them, fewer at an odd right edge).
    let fx = 2 / s.x;
    let fy = 2 / s.y;
    for oy in 0..oh {
        let r0 = oy * fy;
        let r1 = (r0 + fy - 1).min(u.rows - 1);
        let out = &mut uv[oy * pitch..oy * pitch + 2 * ow];
        for (p, plane) in [u, v].into_iter().enumerate() {
            let (a, b) = (plane.row(r0), plane.row(r1));
            match fx {
                1 => {
                    for (x, o) in out.iter_mut().skip(p).step_by(2).enumerate() {
                        *o = ((a[x] as u16 + b[x] as u16 + 1) >> 1) as u8;
                    }
                }
                _ => {
                    let last = plane.width - 1;
                    for (x, o) in out.iter_mut().skip(p).step_by(2).enumerate() {
                        let (c0, c1) = (2 * x, (2 * x + 1).min(last));
                        *o = ((a[c0] as u16 + a[c1] as u16 + b[c0] as u16 + b[c1] as u16 + 2) >> 2) as u8;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule written out per sample, independently of the row loops: the mean of the chroma
    /// samples inside the 2x2 luma block (clipped to the picture), rounded half up.
    fn reference(c: &[Vec<u8>], s: Sub, w: usize, h: usize) -> Vec<u8> {
        let (ow, oh) = (w.div_ceil(2), h.div_ceil(2));
        let mut out = Vec::new();
        for oy in 0..oh {
            for ox in 0..ow {
                let mut cells = Vec::new();
                for ly in 2 * oy..(2 * oy + 2).min(h) {
                    for lx in 2 * ox..(2 * ox + 2).min(w) {
                        let cell = (lx / s.x, ly / s.y);
                        if !cells.contains(&cell) {
                            cells.push(cell);
                        }
                    }
                }
                let n = cells.len() as u32;
                let sum: u32 = cells.iter().map(|&(x, y)| c[y][x] as u32).sum();
                out.push(((sum + n / 2) / n) as u8);
            }
        }
        out
    }

    /// A wrong edge (odd width or height) or a rounding off by one in the row loops would make
    /// one camera's NV12 differ between the CPU and the GPU decoders.
    #[test]
    fn box_average_matches_the_rule_at_every_layout_and_odd_size() {
        let mut seed = 0x1234_5678u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed >> 24) as u8
        };
        for s in [Sub { x: 2, y: 1 }, Sub { x: 1, y: 2 }, Sub { x: 1, y: 1 }, Sub { x: 2, y: 2 }] {
            for (w, h) in [(1usize, 1usize), (2, 2), (5, 3), (16, 9), (161, 97), (320, 240)] {
                let (cw, ch) = (w.div_ceil(s.x), h.div_ceil(s.y));
                let stride = cw + 3;
                let planes: Vec<Vec<Vec<u8>>> = (0..2).map(|_| (0..ch).map(|_| (0..cw).map(|_| next()).collect()).collect()).collect();
                let flat: Vec<Vec<u8>> = planes.iter().map(|p| p.iter().flat_map(|r| r.iter().copied().chain([7, 7, 7])).collect()).collect();
                let pitch = w.div_ceil(2) * 2 + 4;
                let mut uv = vec![0u8; pitch * h.div_ceil(2)];
                let (pu, pv) = (Plane { data: &flat[0], stride, width: cw, rows: ch }, Plane { data: &flat[1], stride, width: cw, rows: ch });
                chroma_to_nv12(&pu, &pv, s, w, h, &mut uv, pitch);
                let (ru, rv) = (reference(&planes[0], s, w, h), reference(&planes[1], s, w, h));
                let ow = w.div_ceil(2);
                for oy in 0..h.div_ceil(2) {
                    for ox in 0..ow {
                        let got = (uv[oy * pitch + 2 * ox], uv[oy * pitch + 2 * ox + 1]);
                        assert_eq!(got, (ru[oy * ow + ox], rv[oy * ow + ox]), "{s:?} {w}x{h} at ({ox}, {oy})");
                    }
                }
            }
        }
    }
}
