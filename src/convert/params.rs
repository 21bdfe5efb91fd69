//! The kernel's parameter block, laid out exactly as `struct nvcam_convert_params` in
//! `kernels/nvcam_convert.cu` (the same sizes and offsets are asserted on both sides).

use super::{Layout, Plan};
use crate::frame::Frame;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelParams {
    pub y: u64,
    pub uv: u64,
    pub dst: u64,
    pub src_pitch: u64,
    pub dst_pitch: u64,
    pub dst_plane: u64,
    pub format: u32,
    pub area: u32,
    pub src_w: i32,
    pub src_h: i32,
    pub roi_x: i32,
    pub roi_y: i32,
    pub roi_w: i32,
    pub roi_h: i32,
    pub out_w: i32,
    pub out_h: i32,
    pub img_x: i32,
    pub img_y: i32,
    pub img_w: i32,
    pub img_h: i32,
    pub sx: f32,
    pub sy: f32,
    pub y_off: f32,
    pub y_scale: f32,
    pub c_scale: f32,
    pub r_cr: f32,
    pub g_cb: f32,
    pub g_cr: f32,
    pub b_cb: f32,
    pub pad: [f32; 3],
    pub mean: [f32; 3],
    pub inv_std: [f32; 3],
    pub reserved: u32,
}

const _: () = assert!(std::mem::size_of::<KernelParams>() == 184);
const _: () = assert!(std::mem::offset_of!(KernelParams, format) == 48);
const _: () = assert!(std::mem::offset_of!(KernelParams, src_w) == 56);
const _: () = assert!(std::mem::offset_of!(KernelParams, sx) == 104);
const _: () = assert!(std::mem::offset_of!(KernelParams, y_off) == 112);
const _: () = assert!(std::mem::offset_of!(KernelParams, pad) == 140);
const _: () = assert!(std::mem::offset_of!(KernelParams, inv_std) == 164);

impl KernelParams {
    /// The block for converting frame `f` (a device frame) into `dst`, laid out as `l`.
    pub(crate) fn for_frame(f: &Frame, p: &Plan, dst: u64, l: &Layout) -> KernelParams {
        KernelParams::new(p, f.y_addr(), f.uv_addr(), f.geom().pitch, dst, l.pitch, l.plane)
    }

    /// The block for converting the NV12 image at `y`/`uv` (rows `src_pitch` apart) into `dst`.
    pub(crate) fn new(p: &Plan, y: u64, uv: u64, src_pitch: usize, dst: u64, dst_pitch: usize, dst_plane: usize) -> KernelParams {
        let c = &p.coeffs;
        KernelParams {
            y,
            uv,
            dst,
            src_pitch: src_pitch as u64,
            dst_pitch: dst_pitch as u64,
            dst_plane: dst_plane as u64,
            format: p.format.code(),
            area: p.area as u32,
            src_w: p.src_w as i32,
            src_h: p.src_h as i32,
            roi_x: p.roi.x as i32,
            roi_y: p.roi.y as i32,
            roi_w: p.roi.w as i32,
            roi_h: p.roi.h as i32,
            out_w: p.out_w as i32,
            out_h: p.out_h as i32,
            img_x: p.img.x as i32,
            img_y: p.img.y as i32,
            img_w: p.img.w as i32,
            img_h: p.img.h as i32,
            sx: p.sx,
            sy: p.sy,
            y_off: c.y_off,
            y_scale: c.y_scale,
            c_scale: c.c_scale,
            r_cr: c.r_cr,
            g_cb: c.g_cb,
            g_cr: c.g_cr,
            b_cb: c.b_cb,
            pad: p.pad,
            mean: p.mean,
            inv_std: p.inv_std,
            reserved: 0,
        }
    }
}
