//! Every decoder, and the choice among them: the decoder seam (what a camera's session needs from
//! any decoder), FFmpeg's software decoder ([`software`]), direct NVDEC ([`nvdec`]), nvJPEG
//! ([`nvjpeg`]), FFmpeg's CUDA hwaccel ([`hwdec`]), software plus upload ([`upload`]), and
//! [`select`], which of them a camera gets and the fall-back order between them.
//!
//! A decoder turns packets into pictures and writes each picture as NV12 into a pool slot it is
//! given. The camera knows nothing else about it, so the GPU backends (direct NVDEC, nvJPEG, FFmpeg's
//! CUDA hwaccel, software + upload) plug in here with their own memory and the same lifetime
//! rules. What a call met besides success or failure (an error the decoder recovered from, a
//! picture lost to it) comes back in its [`Outcome`], not through a side channel.

pub(crate) mod chroma_box;
pub(crate) mod hwdec;
pub(crate) mod nvdec;
pub(crate) mod nvjpeg;
pub(crate) mod select;
pub(crate) mod software;
pub(crate) mod upload;

use crate::frame::{Color, Siting, Transfer};
use crate::pool::Depth;
use crate::pool::Lease;
use crate::status::*;
use ffmpeg_next as ff;

/// Which decoder is running, for stats and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecoderKind {
    /// FFmpeg's software decoder into host memory.
    Software,
    /// FFmpeg's software decoder, uploaded into device memory.
    SoftwareUpload,
    /// FFmpeg's CUDA hwaccel (NVDEC through FFmpeg).
    FfmpegCuda,
    /// NVIDIA's parser and decoder, driven directly.
    Nvdec,
    /// nvJPEG's hardware back end (MJPEG).
    Nvjpeg,
}

impl DecoderKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DecoderKind::Software => "ffmpeg-sw",
            DecoderKind::SoftwareUpload => "ffmpeg-sw+upload",
            DecoderKind::FfmpegCuda => "ffmpeg-cuda",
            DecoderKind::Nvdec => "nvdec",
            DecoderKind::Nvjpeg => "nvjpeg",
        }
    }

}

/// A picture the decoder holds until `write_into` or the next `receive`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Picture {
    pub width: u32,
    pub height: u32,
    /// Microseconds on the stream's clock, i64::MIN if the stream has none.
    pub pts_us: i64,
    /// The stream's colour matrix and range, as the decoder saw them.
    pub color: Color,
    /// The sample width it is written at (NV12 or P016), and the stream's bits per sample.
    pub depth: Depth,
    pub bits: u32,
    /// The decoder reported errors in this picture (FFmpeg's `decode_error_flags` or
    /// `AV_FRAME_FLAG_CORRUPT`); NVDEC reports its own when the picture is written.
    pub damaged: bool,
}

/// What a successful call met on the way, for the camera to report.
#[must_use]
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing to report.
    Clean,
    /// Done, with something the host should hear of (a picture decoded with errors, a decoder
    /// recreated after an engine error): the camera's last error, and streaming goes on.
    Reported(Error),
    /// The decoder recovered from an error, and the picture (or packet) it was working on is
    /// lost: the camera reports it and counts a dropped frame.
    Dropped(Error),
    /// Done, but the packet was damaged (the decoder refused or concealed it) or the picture was
    /// decoded with errors: the stream is not exact until the next recovery point. The error,
    /// if any, is for the camera's last error (rate-limited by the decoder).
    Corrupt(Option<Error>),
}

pub(crate) trait Decoder: Send {
    fn kind(&self) -> DecoderKind;
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome>;
    /// Starts draining: end of stream. A corrupt packet the decoder still held fails here as it
    /// would mid-stream, as [`Outcome::Corrupt`] (the pictures still come out).
    fn send_eof(&mut self) -> Result<Outcome>;
    /// The next decoded picture, if one is ready.
    fn receive(&mut self) -> Result<Option<Picture>>;
    /// Writes the picture last received, as NV12, into `lease`'s slot (which has its size).
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome>;
    /// Makes the decoder ready for a rewound stream after end of file (keeping its sessions and
    /// buffers). False if it cannot, and the caller makes a new one.
    fn reset(&mut self) -> bool {
        false
    }
    /// Called before a recovery point goes in after a loss or a damaged picture: a decoder whose
    /// state can carry damage across a key frame resets it here. FFmpeg 5.1's H.264 software
    /// decoder does carry it: after a picture whose slice was cut short, the next IDR comes out
    /// with a block of its top-left corner wrong, error concealment on or off (seen on loopback
    /// with 1 % RTP loss, reproduced with the CLI on a file with bytes cut from one picture).
    /// The hardware decoders start each IDR afresh and need nothing.
    fn before_recovery_point(&mut self) {}
    /// Whether [`Decoder::before_recovery_point`] starts the decoder afresh, so the camera drains
    /// it first (end of stream, every picture out) and loses no picture.
    fn restarts_at_recovery_point(&self) -> bool {
        false
    }
    /// Whether a looped file goes on into this decoder as one stream at its end: no drain, no
    /// [`Decoder::reset`]; the rewound file's first key frame follows the last picture as a key
    /// frame follows in any live stream, and the pictures still in the decoder's reorder buffer
    /// come out, in order, with the next ones. For decoders whose reset is expensive (FFmpeg's
    /// CUDA hwaccel makes a new NVDEC session after every flush).
    fn continues_across_rewind(&self) -> bool {
        false
    }
}

/// How a camera wants its stream decoded, from its options, whichever decoder does it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecodeOpts {
    /// FFmpeg decoder threads (software decode).
    pub threads: usize,
    /// The camera's resolved latency mode is low (see `LatencyMode::is_low`).
    pub low_latency: bool,
    /// Deliver NV12 from 10- and 12-bit streams too (`NVCAM_OPEN_8BIT`), not P016.
    pub eight_bit: bool,
    /// The camera's picture size limit as a pixel count (its width × height, each with a margin
    /// for the decoders' padding): the decoders refuse a larger picture before they allocate for
    /// it (parameter sets that change the size mid-stream reach a decoder before the camera's
    /// own check).
    pub max_pixels: u64,
    /// The camera's limit itself, width and height: a decoder that sees the displayed size before
    /// it allocates (direct NVDEC's sequence callback) refuses by it exactly.
    pub max_picture: (u32, u32),
}

/// What `avcodec_receive_frame` returned, for a [`Decoder::receive`]: the picture in `frame`
/// (`Some`), none ready yet or the end (`None`, also for a corrupt picture FFmpeg skipped), or a
/// real failure of `call`.
pub(crate) fn received(
    r: std::result::Result<(), ff::Error>,
    frame: &ff::frame::Video,
    time_base: ff::Rational,
    call: &str,
    jpeg: bool,
) -> Result<Option<Picture>> {
    match r {
        Ok(()) => {
            let bits = depth_of(frame);
            // SAFETY: the decoder's frame, holding a picture.
            let damaged = unsafe {
                let f = &*frame.as_ptr();
                f.decode_error_flags != 0 || i64::from(f.flags) & i64::from(ff::ffi::AV_FRAME_FLAG_CORRUPT) != 0
            };
            Ok(Some(Picture {
                damaged,
                width: frame.width(),
                height: frame.height(),
                pts_us: pts_us(frame.timestamp(), time_base),
                color: if jpeg { Color::jpeg(frame.color_range() != ff::util::color::Range::MPEG) } else { color_of(frame) },
                depth: if bits > 8 { Depth::Sixteen } else { Depth::Eight },
                bits,
            }))
        }
        Err(ff::Error::Eof) | Err(ff::Error::InvalidData) => Ok(None),
        Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => Ok(None),
        Err(e) => Err(Error::ffmpeg(call, e)),
    }
}

/// Low latency for an FFmpeg decoder about to open: `AV_CODEC_FLAG_LOW_DELAY` (output each
/// picture at once, never grow a reorder buffer) where the stream has no reordering (its probed
/// `video_delay` is 0: no B-frames); a stream with B-frames keeps the reorder delay its order
/// needs, since forcing low delay there would output pictures out of order.
///
/// # Safety
/// `ctx` is an unopened codec context made from `params`.
pub(crate) unsafe fn set_low_delay(ctx: *mut ff::ffi::AVCodecContext, params: &ff::codec::Parameters) {
    // SAFETY: the caller's contract; `params` wraps valid codec parameters.
    unsafe {
        if (*params.as_ptr()).video_delay == 0 {
            (*ctx).flags |= ff::ffi::AV_CODEC_FLAG_LOW_DELAY as i32;
        }
    }
}

/// An FFmpeg frame's colour description (`colorspace` and `color_trc` hold H.273 code points;
/// the `yuvj` formats mean full range even where `color_range` is unset).
fn color_of(frame: &ff::frame::Video) -> Color {
    use ff::util::color::Range;
    use ff::util::format::Pixel;
    // SAFETY: the decoder's frame, holding a picture.
    if crate::ffmpeg::pixfmt::becomes_bt601_limited(unsafe { (*frame.as_ptr()).format }) {
        // An RGB or gray picture: what swscale makes of it (`SoftwareDecoder::convert_into`).
        return Color::from_h273(5, Some(false));
    }
    let matrix = ff::ffi::AVColorSpace::from(frame.color_space()) as u32;
    let full = match frame.color_range() {
        Range::JPEG => Some(true),
        Range::MPEG => Some(false),
        _ if matches!(frame.format(), Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P) => Some(true),
        _ => None,
    };
    let trc = ff::ffi::AVColorTransferCharacteristic::from(frame.color_transfer_characteristic()) as u32;
    let loc = ff::ffi::AVChromaLocation::from(frame.chroma_location()) as u32;
    Color::from_h273(matrix, full).with(Transfer::from_h273(trc), Siting::from_ffmpeg(loc))
}

/// Bits per sample of an FFmpeg frame: its pixel format's, or for a CUDA frame its surfaces'
/// (NVDEC writes P010 for 10-bit and P016 for 12-bit streams).
fn depth_of(frame: &ff::frame::Video) -> u32 {
    // SAFETY: the decoder's frame, holding a picture; a hardware frame carries its frames context.
    let (fmt, sw) = unsafe {
        let f = &*frame.as_ptr();
        let sw = if f.hw_frames_ctx.is_null() { -1 } else { (*((*f.hw_frames_ctx).data as *const ff::ffi::AVHWFramesContext)).sw_format as i32 };
        (f.format, sw)
    };
    use ff::ffi::AVPixelFormat::*;
    if fmt != AV_PIX_FMT_CUDA as i32 {
        crate::ffmpeg::pixfmt::bit_depth(fmt).max(8)
    } else if sw == AV_PIX_FMT_P010LE as i32 {
        10
    } else if sw == AV_PIX_FMT_P016LE as i32 {
        12
    } else {
        8
    }
}

/// A stream's colours as FFmpeg's probe saw them (its codec parameters): what a decoder that
/// reports less (NVDEC's parser) falls back on.
pub(crate) fn probed_color(params: &ff::codec::Parameters) -> Color {
    // SAFETY: `params` owns a valid AVCodecParameters.
    let p = unsafe { &*params.as_ptr() };
    let full = match p.color_range {
        ff::ffi::AVColorRange::AVCOL_RANGE_JPEG => Some(true),
        ff::ffi::AVColorRange::AVCOL_RANGE_MPEG => Some(false),
        _ => None,
    };
    Color::from_h273(p.color_space as u32, full).with(Transfer::from_h273(p.color_trc as u32), Siting::from_ffmpeg(p.chroma_location as u32))
}

/// Stream timestamp → microseconds.
pub(crate) fn pts_us(pts: Option<i64>, tb: ff::Rational) -> i64 {
    match pts {
        Some(p) if tb.denominator() != 0 => {
            (p as i128 * tb.numerator() as i128 * 1_000_000 / tb.denominator() as i128) as i64
        }
        _ => i64::MIN,
    }
}

