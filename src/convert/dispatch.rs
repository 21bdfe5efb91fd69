//! The conversions the C API asks for, sent to the back end that owns the frame's memory: the
//! CPU twin ([`crate::convert::cpu`]) for frames of CPU cameras, the device routes of
//! [`super::gpu`] and [`super::staging`] (host downloads) for frames in device memory.
//!
//! The choice sits here, above both back ends (`super::cpu` and the device routes) and not in the
//! device routes, so that a CPU frame's conversion never enters `gpu` (a machine without a GPU runs exactly the CPU code), and `gpu`
//! holds only device work. Everything that needs no device (the plan and its layouts, the destination's size, a
//! batch's item size, stride and memory kinds) is checked here, before either back end runs, so
//! both refuse a bad call with the same words.

use crate::convert::cpu::{self, Image};
use crate::convert::{Plan, Spec};
use crate::frame::Frame;
use super::gpu;
use crate::pool::MemoryKind;
use crate::status::*;
use std::sync::Arc;

/// Where a conversion writes.
pub(crate) enum Dst<'a> {
    /// Host memory the caller owns (any: pageable or pinned).
    Host(&'a mut [u8]),
    /// Device memory: `len` bytes at `ptr` on GPU `device`.
    Device { ptr: u64, len: usize, device: i32 },
}

/// Converts `f` as `spec` says into `dst` (rows `dst_pitch` apart, 0 = packed). Device
/// destinations are written by work enqueued on `stream` (a stream of the destination device's
/// primary context; 0 = its legacy default stream), which first waits for the frame (for another
/// GPU: for the kernel on the frame's GPU); the frame's slot is then fenced by that work, so
/// releasing the handle at once is safe. Host destinations hold the bytes when this returns.
pub(crate) fn convert_frame(f: &Frame, spec: &Spec, dst: Dst, dst_pitch: usize, stream: u64) -> Result<()> {
    let g = *f.geom();
    let plan = Plan::new(spec, g.width, g.height, &f.color)?;
    let l = plan.layout(dst_pitch)?;
    // The same image packed: the staging scratch that a host download or a copy to another GPU
    // converts into first. Worked out here, once, with `l` (it cannot fail where `l` did not).
    let packed = plan.layout(0)?;
    let need = |have: usize| -> Result<()> {
        if have < l.total {
            return Err(Error::new(
                ErrorKind::BufferTooSmall,
                format!("destination holds {have} bytes, a {}x{} {:?} image at pitch {} needs {}", plan.out_w, plan.out_h, plan.format, l.pitch, l.total),
            ));
        }
        Ok(())
    };
    match (f.memory(), dst) {
        (MemoryKind::Host, Dst::Host(buf)) => {
            need(buf.len())?;
            let bytes = f.host_bytes().ok_or_else(|| Error::internal("host frame without host bytes"))?;
            cpu::convert(&plan, &Image { bytes, pitch: g.pitch, uv_offset: g.uv_offset(), depth: g.depth }, buf, &l)
        }
        (MemoryKind::Host, Dst::Device { .. }) => Err(Error::new(
            ErrorKind::Unsupported,
            "this frame is in host memory (a CPU camera): convert into host memory, or open the camera on a GPU",
        )),
        (MemoryKind::Device, Dst::Device { ptr, len, device }) => {
            need(len)?;
            gpu::to_device(f, &plan, &l, &packed, ptr, device, stream)
        }
        (MemoryKind::Device, Dst::Host(buf)) => {
            need(buf.len())?;
            super::staging::to_host(f, &plan, buf, &l, &packed)
        }
    }
}

/// The bytes `convert_frame` needs for `f` with `spec` at `dst_pitch`.
pub(crate) fn required_size(f: &Frame, spec: &Spec, dst_pitch: usize) -> Result<usize> {
    let g = f.geom();
    Ok(Plan::new(spec, g.width, g.height, &f.color)?.layout(dst_pitch)?.total)
}

/// `frames` converted into one tensor: item `i` at byte offset `i * stride` (0 = the size of one
/// item), each item packed as `convert_frame` writes it at pitch 0: planar formats give NCHW,
/// 8-bit formats NHWC. Every frame must convert to the same output size, and for a device
/// destination be a device frame of that GPU: all of that is checked before anything is written,
/// so a refused batch leaves the tensor as it was. Device destinations:
/// [`gpu::batch_to_device`] (launches on `stream`, no host wait). Host destinations:
/// each item as `convert_frame` converts it; the bytes are there on return. Returns the item
/// size.
pub(crate) fn convert_batch(frames: &[Arc<Frame>], spec: &Spec, dst: Dst, stride: usize, stream: u64) -> Result<usize> {
    let mut item: Option<((u32, u32), usize)> = None;
    let mut plans = Vec::with_capacity(frames.len());
    for (i, f) in frames.iter().enumerate() {
        let g = f.geom();
        let at = |e: Error| Error { msg: format!("frames[{i}]: {}", e.msg), ..e };
        let plan = Plan::new(spec, g.width, g.height, &f.color).map_err(at)?;
        let total = plan.layout(0).map_err(at)?.total;
        plans.push(plan);
        let dims = (plan.out_w, plan.out_h);
        match item {
            None => item = Some((dims, total)),
            Some((d, _)) if d != dims => {
                return Err(Error::arg(format!(
                    "frames[{i}] converts to {}x{}, frames[0] to {}x{}: set the spec's width and height so every item has one size",
                    dims.0, dims.1, d.0, d.1
                )))
            }
            Some(_) => {}
        }
        if let Dst::Device { device, .. } = &dst {
            if f.memory() != MemoryKind::Device || f.device() != *device {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("frames[{i}] is not a device frame of GPU {device}: a device batch takes frames of its own GPU only"),
                ));
            }
        }
    }
    let Some((_, total)) = item else { return Err(Error::arg("an empty batch")) };
    let stride = if stride == 0 { total } else { stride };
    if stride < total {
        return Err(Error::arg(format!("dst_item_stride {stride} is less than one item's {total} bytes")));
    }
    let need = stride
        .checked_mul(frames.len() - 1)
        .and_then(|x| x.checked_add(total))
        .ok_or_else(|| Error::arg(format!("dst_item_stride {stride} x {} items overflows", frames.len())))?;
    let small = |have: usize| Error::new(ErrorKind::BufferTooSmall, format!("destination holds {have} bytes, {} items {stride} bytes apart need {need}", frames.len()));
    match dst {
        Dst::Host(buf) => {
            if buf.len() < need {
                return Err(small(buf.len()));
            }
            for (i, f) in frames.iter().enumerate() {
                let at = i * stride;
                convert_frame(f, spec, Dst::Host(&mut buf[at..at + total]), 0, stream)
                    .map_err(|e| Error { msg: format!("frames[{i}]: {}", e.msg), ..e })?;
            }
        }
        Dst::Device { ptr, len, device } => {
            if len < need {
                return Err(small(len));
            }
            gpu::batch_to_device(frames, &plans, ptr, stride, need, device, stream)?;
        }
    }
    Ok(total)
}
