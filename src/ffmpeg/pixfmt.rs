//! Pixel formats for people: FFmpeg's names instead of enum numbers, and which ones every
//! decoder choice can turn into NV12 on the GPU.

use ffmpeg_next::ffi;

/// FFmpeg's name of pixel format `fmt` (`yuv420p10le`), or `#N` for a value it does not know.
pub(crate) fn name(fmt: i32) -> String {
    if fmt == ffi::AVPixelFormat::AV_PIX_FMT_NONE as i32 {
        return "unknown".into();
    }
    if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&fmt) {
        return format!("#{fmt}");
    }
    // SAFETY: `fmt` is within the enum's range (checked), so the transmute yields a valid value;
    // av_get_pix_fmt_name returns a static string or null.
    let p = unsafe { ffi::av_get_pix_fmt_name(std::mem::transmute::<i32, ffi::AVPixelFormat>(fmt)) };
    if p.is_null() {
        return format!("#{fmt}");
    }
    // SAFETY: a NUL-terminated static string from FFmpeg's descriptor table.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Whether the hardware decoders (direct NVDEC, FFmpeg's CUDA hwaccel) take a stream of pixel
/// format `fmt` as it was probed: 8-bit 4:2:0, or not known before the first picture.
pub(crate) fn hw_ok(fmt: i32) -> bool {
    use ffi::AVPixelFormat::*;
    [AV_PIX_FMT_NONE as i32, AV_PIX_FMT_YUV420P as i32, AV_PIX_FMT_YUVJ420P as i32, AV_PIX_FMT_NV12 as i32].contains(&fmt)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pixel_formats_have_names() {
        use ffmpeg_next::ffi::AVPixelFormat::*;
        assert_eq!(super::name(AV_PIX_FMT_YUV420P10LE as i32), "yuv420p10le");
        assert_eq!(super::name(AV_PIX_FMT_NV12 as i32), "nv12");
        assert_eq!(super::name(-1), "unknown");
        assert_eq!(super::name(100_000), "#100000");
        assert!(super::hw_ok(AV_PIX_FMT_YUVJ420P as i32) && !super::hw_ok(AV_PIX_FMT_YUV422P as i32));
    }
}
