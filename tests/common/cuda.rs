//! CUDA driver set-up shared by the GPU tests and the GPU examples (which include this file by
//! its path): driver calls that must succeed, a device's primary context pushed on the calling
//! thread, a context of the caller's own, a non-blocking stream. It names nothing of the kit
//! around it, so an example can take it alone.

use cudarc::driver::sys;

/// A CUDA driver call that must succeed.
pub fn ck(what: &str, r: sys::CUresult) {
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "{what}");
}

/// Device `ordinal`'s primary context (the library's, as PyTorch's would be), retained and pushed
/// on the calling thread; its device.
pub fn push_primary(ordinal: i32) -> sys::CUdevice {
    unsafe {
        ck("cuInit", sys::cuInit(0));
        let mut dev = 0;
        ck("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal));
        let mut ctx = std::ptr::null_mut();
        ck("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
        ck("cuCtxPushCurrent", sys::cuCtxPushCurrent_v2(ctx));
        dev
    }
}

/// A context of the caller's own on device `ordinal` (a host's, not the library's), current on
/// the calling thread; its device and the context, which the caller destroys.
pub fn own_context(ordinal: i32) -> (sys::CUdevice, sys::CUcontext) {
    unsafe {
        ck("cuInit", sys::cuInit(0));
        let mut dev = 0;
        ck("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal));
        let mut params = sys::CUctxCreateParams {
            execAffinityParams: std::ptr::null_mut(),
            numExecAffinityParams: 0,
            cigParams: std::ptr::null_mut(),
        };
        let mut c = std::ptr::null_mut();
        ck("cuCtxCreate", sys::cuCtxCreate_v4(&mut c, &mut params, 0, dev));
        (dev, c)
    }
}

/// A non-blocking stream of the current context.
pub fn nonblocking_stream() -> sys::CUstream {
    let mut s = std::ptr::null_mut();
    unsafe { ck("cuStreamCreate", sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)) };
    s
}
