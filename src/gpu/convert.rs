//! Conversions of a frame as a [`Spec`] says: device frames by the embedded kernels
//! ([`super::kernels`]) on the caller's stream for device destinations (after a cuStreamWaitEvent
//! on the frame's ready event: no host wait), through [`super::peer`] for device memory of
//! another GPU (still no host wait), or through [`super::download`] for host destinations
//! (returning when the bytes are there). Host frames convert on the CPU ([`crate::convert::cpu`]),
//! the same arithmetic.

use super::context::{ck, Device};
use super::download::to_host;
use super::kernels::kernels;
use crate::convert::cpu::{self, Image};
use crate::convert::params::{BatchParams, KernelCommon, KernelItem, KernelParams, BATCH_PER_LAUNCH};
use crate::convert::{Plan, Spec};
use crate::frame::Frame;
use crate::pool::{Depth, MemoryKind};
use crate::status::*;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;

/// Library shutdown: staging areas, then modules, before the contexts are released.
pub(crate) fn shutdown() {
    super::staging::shutdown();
    super::kernels::shutdown();
}

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
    let need = |have: usize| -> Result<()> {
        if have < l.total {
            return Err(Error::new(
                NVCAM_E_BUFFER_TOO_SMALL,
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
            NVCAM_E_UNSUPPORTED,
            "this frame is in host memory (a CPU camera): convert into host memory, or open the camera on a GPU",
        )),
        (MemoryKind::Device, Dst::Device { ptr, len, device }) => {
            need(len)?;
            let a = plan.format.align();
            if ptr % a as u64 != 0 || l.pitch % a != 0 {
                return Err(Error::arg(format!("{:?} needs dst and dst_pitch aligned to {a} bytes", plan.format)));
            }
            let dev = super::device(device)?;
            // One context push for the whole call: the helpers' own guards find it current.
            let _g = dev.push()?;
            check_device_range(&dev, ptr, l.total)?;
            if device != f.device() {
                // Another GPU: kernel on the frame's GPU, then a copy on the caller's stream.
                return super::peer::to_device(f, &plan, ptr, &l, &dev, stream);
            }
            let k = kernels(&dev)?;
            let p = KernelParams::for_frame(f, &plan, ptr, &l);
            f.storage().wait_on_stream(f.slot(), stream)?;
            // SAFETY: the frame's slot stays valid (we hold the frame, and fence it below before
            // any release); dst was checked to be device memory of this device holding
            // `l.total` bytes; the stream is the caller's of this context (the export's contract).
            unsafe { k.launch(&p, stream as sys::CUstream) }?;
            f.storage().fence_after_stream(f.slot(), stream)
        }
        (MemoryKind::Device, Dst::Host(buf)) => {
            need(buf.len())?;
            to_host(f, &plan, buf, &l)
        }
    }
}

/// Refuses a device destination that is not device memory of `dev`, or whose allocation ends
/// before `need` bytes from `ptr` (the driver knows each allocation's range). One driver call.
fn check_device_range(dev: &Arc<Device>, ptr: u64, need: usize) -> Result<()> {
    use sys::CUpointer_attribute as A;
    let _g = dev.push()?;
    let mut mem_type: u32 = 0;
    let mut ordinal: i32 = -1;
    let mut start: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    let mut attrs = [A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, A::CU_POINTER_ATTRIBUTE_RANGE_SIZE];
    let mut data = [
        &mut mem_type as *mut u32 as *mut c_void,
        &mut ordinal as *mut i32 as *mut c_void,
        &mut start as *mut sys::CUdeviceptr as *mut c_void,
        &mut size as *mut usize as *mut c_void,
    ];
    // SAFETY: four attributes, each with a pointer to a value of the size it writes (a u32, an
    // int, a CUdeviceptr, a size_t). Memory the driver does not know leaves the defaults (type 0).
    let r = unsafe { sys::cuPointerGetAttributes(attrs.len() as u32, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) };
    ck("cuPointerGetAttributes", r).map_err(|_| Error::arg(format!("dst 0x{ptr:x} is not CUDA device memory")))?;
    if mem_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        return Err(Error::arg(format!("dst 0x{ptr:x} is not device memory (memory type {mem_type})")));
    }
    if ordinal != dev.ordinal {
        return Err(Error::arg(format!("dst 0x{ptr:x} is on GPU {ordinal}, not GPU {}", dev.ordinal)));
    }
    let end = start.checked_add(size as u64);
    let want = ptr.checked_add(need as u64);
    if !matches!((end, want), (Some(e), Some(w)) if w <= e) {
        return Err(Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("dst's allocation ends {} bytes after dst; the conversion writes {need}", (start + size as u64).saturating_sub(ptr))));
    }
    Ok(())
}

/// The bytes `convert_frame` needs for `f` with `spec` at `dst_pitch`.
pub(crate) fn required_size(f: &Frame, spec: &Spec, dst_pitch: usize) -> Result<usize> {
    let g = f.geom();
    Ok(Plan::new(spec, g.width, g.height, &f.color)?.layout(dst_pitch)?.total)
}

/// `frames` converted into one tensor: item `i` at byte offset `i * stride` (0 = the size of one
/// item), each item packed as `convert_frame` writes it at pitch 0: planar formats give NCHW,
/// 8-bit formats NHWC. Every frame must convert to the same output size, and for a device
/// destination be a device frame of that GPU: all of that is checked before anything is written.
/// Device destinations: one kernel launch per [`BATCH_PER_LAUNCH`] frames of one sample width on
/// `stream` (NV12 and P016 frames have kernels of their own, so a batch mixing them launches each
/// width's frames apart), after every frame's ready event (the parameters go by value, so nothing
/// is allocated or copied first), no host wait. Host destinations: the bytes are there on return.
/// Returns the item size.
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
                    NVCAM_E_UNSUPPORTED,
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
    let small = |have: usize| Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("destination holds {have} bytes, {} items {stride} bytes apart need {need}", frames.len()));
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
            let a = spec.format.align();
            if ptr % a as u64 != 0 || stride % a != 0 {
                return Err(Error::arg(format!("{:?} needs dst and dst_item_stride aligned to {a} bytes", spec.format)));
            }
            let dev = super::device(device)?;
            // One context push for the whole call (the helpers' guards find it current).
            let _g = dev.push()?;
            check_device_range(&dev, ptr, need)?;
            let k = kernels(&dev)?;
            let l = plans[0].layout(0)?;
            let mut b = BatchParams::new(KernelCommon::new(&plans[0], l.pitch, l.plane));
            // A launch holds frames of one sample width; each item keeps its place in dst.
            // Frames of one sample width fill a launch, up to BATCH_PER_LAUNCH, each at its own
            // place in dst; nothing is allocated (`held` is the launch's frame indices).
            let mut held = [0usize; BATCH_PER_LAUNCH];
            let launch = |b: &BatchParams, held: &[usize]| -> Result<()> {
                // SAFETY: every frame's slot stays valid (we hold the frames, and fence them below
                // before any release); each item's dst lies inside [ptr, ptr + need), checked to
                // be device memory of this device; the stream is the caller's of this context.
                unsafe { k.launch_batch(b, held.len(), stream as sys::CUstream) }?;
                held.iter().try_for_each(|&i| frames[i].storage().fence_after_stream(frames[i].slot(), stream))
            };
            for depth in [Depth::Eight, Depth::Sixteen] {
                let mut n = 0;
                for (i, f) in frames.iter().enumerate().filter(|(_, f)| f.geom().depth == depth) {
                    let g = f.geom();
                    b.items[n] = KernelItem::new(&plans[i], g.depth, f.y_addr(), f.uv_addr(), g.pitch, ptr + (i * stride) as u64);
                    f.storage().wait_on_stream(f.slot(), stream)?;
                    held[n] = i;
                    n += 1;
                    if n == BATCH_PER_LAUNCH {
                        launch(&b, &held[..n])?;
                        n = 0;
                    }
                }
                if n > 0 {
                    launch(&b, &held[..n])?;
                }
            }
        }
    }
    Ok(total)
}
