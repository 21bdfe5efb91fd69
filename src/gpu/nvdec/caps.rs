//! What the GPU's decoder can take: NVDEC's capabilities, cached per (device, codec), and the
//! check that decides whether direct NVDEC is offered a stream at all.

use super::sys::{self as cu};
use crate::ffmpeg::pixfmt::{chroma_8bit, Chroma};
use crate::gpu::context::{CuCode, Device};
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

type Entry = (i32, cu::cudaVideoCodec, cu::cudaVideoChromaFormat, Option<cu::CUVIDDECODECAPS>);
static CAPS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// NVDEC's chroma format for an 8-bit layout.
pub(crate) fn cuda_chroma(c: Chroma) -> cu::cudaVideoChromaFormat {
    match c {
        Chroma::Gray => cu::cudaVideoChromaFormat_Monochrome,
        Chroma::C420 => cu::cudaVideoChromaFormat_420,
        Chroma::C422 => cu::cudaVideoChromaFormat_422,
        Chroma::C444 => cu::cudaVideoChromaFormat_444,
    }
}

/// Which 8-bit chroma layouts direct NVDEC is offered for `codec`: 4:2:0 for video codecs; every
/// layout for JPEG, whose engine writes NV12 from 4:2:2, 4:4:4 and gray pictures where
/// `cuvidGetDecoderCaps` says so (checked per GPU by [`caps`]).
pub(crate) fn takes_layout(codec: cu::cudaVideoCodec, chroma: cu::cudaVideoChromaFormat) -> bool {
    chroma == cu::cudaVideoChromaFormat_420 || codec == cu::cudaVideoCodec_JPEG
}

/// NVDEC's capabilities for 8-bit `codec` in `chroma` on `dev`, where the engine can write them
/// as NV12 (None: not supported, or the query failed). The library must be loadable.
pub(crate) fn caps(dev: &Device, codec: cu::cudaVideoCodec, chroma: cu::cudaVideoChromaFormat) -> Option<cu::CUVIDDECODECAPS> {
    if let Some(e) = CAPS.lock().iter().find(|e| e.0 == dev.ordinal && e.1 == codec && e.2 == chroma) {
        return e.3;
    }
    let lib = cu::lib().ok()?;
    let mut c = cu::CUVIDDECODECAPS {
        eCodecType: codec,
        eChromaFormat: chroma,
        nBitDepthMinus8: 0,
        ..Default::default()
    };
    let r = match dev.push() {
        // SAFETY: the device's context is current (guard); fills the caps struct we own.
        Ok(_g) => CuCode(unsafe { (lib.cuvidGetDecoderCaps)(&mut c) }),
        Err(_) => CuCode(999),
    };
    let v = (r == CuCode::SUCCESS && c.bIsSupported != 0 && c.nOutputFormatMask & 1 != 0).then_some(c);
    if r != CuCode::SUCCESS {
        log::warn!("GPU {}: cuvidGetDecoderCaps(codec {codec}, chroma {chroma}) failed: {}", dev.ordinal, r.name());
    }
    CAPS.lock().push((dev.ordinal, codec, chroma, v));
    v
}

/// Whether the coded size fits the engine's limits for `caps`.
pub(crate) fn size_fits(c: &cu::CUVIDDECODECAPS, w: u32, h: u32) -> bool {
    w <= c.nMaxWidth && h <= c.nMaxHeight && w >= c.nMinWidth as u32 && h >= c.nMinHeight as u32
}

/// Whether the direct NVDEC backend can take this stream on `dev`: libnvcuvid loads, the codec
/// is one it handles, its pixel format (when FFmpeg knows it) is 8-bit 4:2:0 (any 8-bit layout
/// for JPEG), and the GPU's decoder supports the codec in that layout at this size, writing
/// NV12. The reason otherwise.
pub(crate) fn supports(dev: &Device, params: &ff::codec::Parameters) -> std::result::Result<cu::cudaVideoCodec, String> {
    if let Err(e) = cu::lib() {
        return Err(format!("libnvcuvid unavailable: {e}"));
    }
    let id = params.id();
    let codec = cuda_codec(id).ok_or_else(|| format!("direct NVDEC does not take {id:?}"))?;
    // SAFETY: `params` owns a valid AVCodecParameters.
    let p = unsafe { &*params.as_ptr() };
    let (fmt, w, h) = (p.format, p.width, p.height);
    let name = crate::ffmpeg::pixfmt::name(fmt);
    // Not known before the first picture: 4:2:0 is what such streams nearly always are, and the
    // sequence callback refuses anything else.
    let layout = if fmt == ff::ffi::AVPixelFormat::AV_PIX_FMT_NONE as i32 { Some(Chroma::C420) } else { chroma_8bit(fmt) };
    let chroma = match layout.map(cuda_chroma) {
        Some(c) if takes_layout(codec, c) => c,
        _ if codec == cu::cudaVideoCodec_JPEG => return Err(format!("pixel format {name} is not an 8-bit JPEG layout")),
        _ => return Err(format!("pixel format {name} is not 8-bit 4:2:0")),
    };
    let c = caps(dev, codec, chroma).ok_or_else(|| format!("GPU {} has no NVDEC support for {id:?} in {name} with NV12 output", dev.ordinal))?;
    if w > 0 && h > 0 && !size_fits(&c, w as u32, h as u32) {
        return Err(format!("{w}x{h} is outside NVDEC's {}x{}..{}x{} for {id:?}", c.nMinWidth, c.nMinHeight, c.nMaxWidth, c.nMaxHeight));
    }
    Ok(codec)
}
