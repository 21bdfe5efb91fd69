//! What the GPU's decoder can take: NVDEC's capabilities, cached per (device, codec), and the
//! check that decides whether direct NVDEC is offered a stream at all.

use crate::gpu::nvcuvid::{api, sys as cu};
use crate::ffmpeg::pixfmt::{bit_depth, chroma_8bit, high_depth_420, Chroma};
use crate::pool::Depth;
use crate::gpu::context::Device;
use crate::gpu::driver::{self, DriverError};
use crate::status::{Error, ErrorKind, Result};
use ffmpeg_next as ff;
use parking_lot::Mutex;

/// The NVDEC codec for an FFmpeg codec id, for the codecs this backend takes.
pub(crate) fn cuda_codec(id: ff::codec::Id) -> Option<cu::cudaVideoCodec> {
    use ff::codec::Id;
    Some(match id {
        Id::H264 => cu::cudaVideoCodec_H264,
        Id::HEVC => cu::cudaVideoCodec_HEVC,
        Id::VP9 => cu::cudaVideoCodec_VP9,
        Id::AV1 => cu::cudaVideoCodec_AV1,
        Id::MJPEG => cu::cudaVideoCodec_JPEG,
        _ => return None,
    })
}

type Entry = (i32, cu::cudaVideoCodec, cu::cudaVideoChromaFormat, u32, Option<cu::CUVIDDECODECAPS>);
static CAPS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// What NVDEC writes a picture as (`cudaVideoSurfaceFormat`), the pool's sample width with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Surface {
    Nv12,
    /// 16-bit samples, the stream's bits in the high ones (P010 for 10-bit streams).
    P016,
}

impl Surface {
    pub(crate) fn cuda(self) -> cu::cudaVideoSurfaceFormat {
        match self {
            Surface::Nv12 => cu::cudaVideoSurfaceFormat_NV12,
            Surface::P016 => cu::cudaVideoSurfaceFormat_P016,
        }
    }
    pub(crate) fn depth(self) -> Depth {
        match self {
            Surface::Nv12 => Depth::Eight,
            Surface::P016 => Depth::Sixteen,
        }
    }
}

/// NVDEC's chroma format for an 8-bit layout.
pub(crate) fn cuda_chroma(c: Chroma) -> cu::cudaVideoChromaFormat {
    match c {
        Chroma::Gray => cu::cudaVideoChromaFormat_Monochrome,
        Chroma::C420 => cu::cudaVideoChromaFormat_420,
        Chroma::C422 => cu::cudaVideoChromaFormat_422,
        Chroma::C444 => cu::cudaVideoChromaFormat_444,
    }
}

/// Which layouts direct NVDEC is offered for `codec`: 4:2:0 (8, 10 or 12 bits) for video codecs;
/// every 8-bit layout for JPEG, whose engine writes NV12 from 4:2:2, 4:4:4 and gray pictures
/// where `cuvidGetDecoderCaps` says so (checked per GPU by [`caps`]).
pub(crate) fn takes_layout(codec: cu::cudaVideoCodec, chroma: cu::cudaVideoChromaFormat, bits: u32) -> bool {
    match bits {
        8 => chroma == cu::cudaVideoChromaFormat_420 || codec == cu::cudaVideoCodec_JPEG,
        10 | 12 => chroma == cu::cudaVideoChromaFormat_420 && codec != cu::cudaVideoCodec_JPEG,
        _ => false,
    }
}

/// The surface NVDEC writes a `bits`-bit picture as: NV12 at 8 bits, or when the camera asked for
/// 8-bit output (`eight_bit`; the engine rounds); P016 above 8 bits. None if the engine offers
/// neither for these caps.
pub(crate) fn surface_for(c: &cu::CUVIDDECODECAPS, bits: u32, eight_bit: bool) -> Option<Surface> {
    let s = if bits == 8 || eight_bit { Surface::Nv12 } else { Surface::P016 };
    (c.nOutputFormatMask & (1 << s.cuda()) != 0).then_some(s)
}

/// NVDEC's capabilities for `codec` in `chroma` at `bits` on `dev` (None: not supported, or the
/// query failed). The library must be loadable.
pub(crate) fn caps(dev: &Device, codec: cu::cudaVideoCodec, chroma: cu::cudaVideoChromaFormat, bits: u32) -> Option<cu::CUVIDDECODECAPS> {
    if let Some(e) = CAPS.lock().iter().find(|e| e.0 == dev.ordinal && e.1 == codec && e.2 == chroma && e.3 == bits) {
        return e.4;
    }
    let lib = api::lib().ok()?;
    let mut c = cu::CUVIDDECODECAPS {
        eCodecType: codec,
        eChromaFormat: chroma,
        nBitDepthMinus8: bits.saturating_sub(8),
        ..Default::default()
    };
    let r = match dev.push() {
        // The device's context is current (guard).
        Ok(_g) => lib.get_decoder_caps(&mut c),
        Err(_) => Err(DriverError::new("cuvidGetDecoderCaps", driver::UNKNOWN)),
    };
    let v = (r.is_ok() && c.bIsSupported != 0).then_some(c);
    if let Err(e) = r {
        log::warn!("GPU {}: cuvidGetDecoderCaps(codec {codec}, chroma {chroma}, {bits} bits) failed: {}", dev.ordinal, e.name());
    }
    CAPS.lock().push((dev.ordinal, codec, chroma, bits, v));
    v
}

/// Whether the coded size fits the engine's limits for `caps`.
pub(crate) fn size_fits(c: &cu::CUVIDDECODECAPS, w: u32, h: u32) -> bool {
    w <= c.nMaxWidth && h <= c.nMaxHeight && w >= c.nMinWidth as u32 && h >= c.nMinHeight as u32
}

/// Whether the direct NVDEC backend can take this stream on `dev`: libnvcuvid loads, the codec
/// is one it handles, its pixel format (when FFmpeg knows it) is 4:2:0 at 8, 10 or 12 bits (any
/// 8-bit layout for JPEG), and the GPU's decoder supports the codec in that layout at this size,
/// writing the surface the camera wants (NV12, or P016 above 8 bits unless `eight_bit`), and a
/// JPEG stream is not progressive (as far as FFmpeg's probe saw). The reason otherwise.
pub(crate) fn supports(dev: &Device, params: &ff::codec::Parameters, eight_bit: bool) -> Result<cu::cudaVideoCodec> {
    let no = |why: String| Error::new(ErrorKind::Unsupported, why);
    if let Err(e) = api::lib() {
        return Err(no(format!("libnvcuvid unavailable: {}", e.msg)));
    }
    let id = params.id();
    let codec = cuda_codec(id).ok_or_else(|| no(format!("direct NVDEC does not take {id:?}")))?;
    // SAFETY: `params` owns a valid AVCodecParameters.
    let p = unsafe { &*params.as_ptr() };
    let (fmt, w, h) = (p.format, p.width, p.height);
    let name = crate::ffmpeg::pixfmt::name(fmt);
    if codec == cu::cudaVideoCodec_JPEG && p.profile == ff::ffi::FF_PROFILE_MJPEG_HUFFMAN_PROGRESSIVE_DCT {
        // NVDEC's JPEG engine decodes sequential JPEG only; software takes progressive.
        return Err(no("a progressive JPEG: NVDEC's JPEG engine decodes sequential JPEG only".into()));
    }
    // Not known before the first picture: 4:2:0 is what such streams nearly always are, and the
    // sequence callback refuses anything else.
    let layout = if fmt == ff::ffi::AVPixelFormat::AV_PIX_FMT_NONE as i32 {
        Some((cu::cudaVideoChromaFormat_420, 8))
    } else if let Some(c) = chroma_8bit(fmt) {
        Some((cuda_chroma(c), 8))
    } else {
        high_depth_420(fmt).then(|| (cu::cudaVideoChromaFormat_420, bit_depth(fmt)))
    };
    let (chroma, bits) = match layout {
        Some((c, b)) if takes_layout(codec, c, b) => (c, b),
        _ if codec == cu::cudaVideoCodec_JPEG => return Err(no(format!("pixel format {name} is not an 8-bit JPEG layout"))),
        _ => return Err(no(format!("pixel format {name} is not 4:2:0 at 8, 10 or 12 bits"))),
    };
    let c = caps(dev, codec, chroma, bits).ok_or_else(|| no(format!("GPU {} has no NVDEC support for {id:?} in {name}", dev.ordinal)))?;
    surface_for(&c, bits, eight_bit).ok_or_else(|| no(format!("GPU {}: NVDEC writes no {} surface for {id:?} in {name}", dev.ordinal, if bits == 8 || eight_bit { "NV12" } else { "P016" })))?;
    if w > 0 && h > 0 && !size_fits(&c, w as u32, h as u32) {
        return Err(no(format!("{w}x{h} is outside NVDEC's {}x{}..{}x{} for {id:?}", c.nMinWidth, c.nMinHeight, c.nMaxWidth, c.nMaxHeight)));
    }
    if codec == cu::cudaVideoCodec_JPEG && (chroma == cu::cudaVideoChromaFormat_422 || chroma == cu::cudaVideoChromaFormat_444) && (w % 2 == 1 || h % 2 == 1) {
        // Seen on an H200 (161x97): the chroma the engine writes for the odd edge is not the
        // picture's (up to 255 levels off); 4:2:0 and gray at the same size are exact.
        return Err(no(format!("{w}x{h} {name}: NVDEC's JPEG engine writes no valid chroma at the odd edge of a 4:2:2 or 4:4:4 picture")));
    }
    Ok(codec)
}
