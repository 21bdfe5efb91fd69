//! The kernel's same-scale shortcut, ported, against the CPU twin's bilinear: bit for bit.

use super::*;

/// The kernel's same-scale arithmetic (`same_chroma`, `mix`, `pair_cols`, `same_finish` in
/// kernels/same_scale.cuh), ported: integer chroma weights in quarters or halves, sums in
/// units of 1 / D, `du * k` as `(S - 128 D) * (k / D)`. Returns R, G, B of luma pixel (x, y).
fn kernel_same_scale(p: &Plan, s: &Image, x: i32, y: i32) -> [f32; 3] {
    let (hx, hy) = p.chroma_pos();
    let (cx1, cy1) = ((p.src_w as i32 - 1) >> 1, (p.src_h as i32 - 1) >> 1);
    let mix = |q: i32, a: u32, b: u32| if q & 1 == 1 { (4 - q) as u32 * a + q as u32 * b } else if q == 0 { 2 * a } else { a + b };
    // Spread [u, 0, v, 0] words, as uv_cols loads them.
    let col = |i: i32, j: i32| {
        let (u, v) = s.uv(i.clamp(0, cx1), j.clamp(0, cy1));
        u as u32 | (v as u32) << 16
    };
    let (nx, ny) = (2 * x + 1 - hx, 2 * y + 1 - hy);
    let vert = |i: i32| mix(ny & 3, col(i, ny >> 2), col(i, (ny >> 2) + 1));
    let sum = mix(nx & 3, vert(nx >> 2), vert((nx >> 2) + 1));
    let lg = 2 + (nx & 3 & 1) + (ny & 3 & 1);
    let inv = f32::from_bits(((127 - lg) as u32) << 23);
    let off = f32::from_bits(0x4B00_0000 | (128u32 << lg));
    let du = f32::from_bits(0x4B00_0000 | (sum & 0xffff)) - off;
    let dv = f32::from_bits(0x4B00_0000 | (sum >> 16)) - off;
    let c = &p.coeffs;
    let yy = (f32::from_bits(0x4B00_0000 | s.y(x, y) as u32) - (8_388_608.0 + c.y_off)) * c.y_scale;
    let (kr, kgb, kgr, kb) = (c.k_r * inv, c.k_gb * inv, c.k_gr * inv, c.k_b * inv);
    [yy + dv * kr, (yy - du * kgb) - dv * kgr, yy + du * kb]
}

/// The kernel's same-scale shortcut is exact: ported, it gives this side's bits for every
/// siting, column and row parity (edges included), so the GPU's fast path and the CPU's
/// bilinear agree bit for bit.
#[test]
fn same_scale_integer_weights_give_the_bilinear_bits() {
    let pic = Picture::random(23, 15, 5, (0, 255), (0, 255));
    let img = pic.nv12();
    let src = view(&img, Depth::Eight);
    for (siting, _, _) in H273_LOCATIONS {
        for (m, r) in [(Matrix::Bt709, Range::Limited), (Matrix::Bt601, Range::Full)] {
            let spec = Spec { siting: Some(siting), ..Spec::new(PixelFormat::RgbF32) };
            let p = Plan::new(&spec, 23, 15, &colour(m, r)).unwrap();
            for y in 0..15 {
                for x in 0..23 {
                    let (want, got) = (rgb(&p, &src, x, y), kernel_same_scale(&p, &src, x, y));
                    assert_eq!(want.map(f32::to_bits), got.map(f32::to_bits), "{siting:?} {m:?} {r:?} ({x}, {y}): {want:?} vs {got:?}");
                }
            }
        }
    }
}
