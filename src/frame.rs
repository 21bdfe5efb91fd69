//! A decoded frame: a leased pool slot plus what the host needs to know about it.
//!
//! Frames are immutable and shared (`Arc<Frame>`): every handle the host holds (the one from
//! `get_frame` and each clone) is one table entry holding one `Arc`. The slot returns to its pool
//! when the last of them is released, whichever order that happens in.

use crate::pool::{Geometry, Lease, MemoryKind};
use crate::status::*;

/// Where a frame's capture time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeSource {
    /// When the first packet of the frame was read from the source.
    Receive,
    /// The source's own clock (an RTSP camera's RTCP sender reports).
    Source,
}

/// The Y'CbCr → R'G'B' matrix of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Matrix {
    /// The stream does not say (most RTSP cameras): resolved by [`Color::resolved`].
    #[default]
    Unspecified,
    Bt601,
    Bt709,
    /// BT.2020 non-constant luminance (H.273 code point 9): HDR and wide-gamut cameras.
    Bt2020,
}

/// The quantization range of a stream's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Range {
    /// The stream does not say: limited, as players assume.
    #[default]
    Unspecified,
    /// Y 16..235, Cb/Cr 16..240 ("TV", "MPEG"); scaled by 4 at 10 bits.
    Limited,
    /// 0..255 ("PC", "JPEG").
    Full,
}

/// The transfer function a stream says its samples went through, reduced to what a consumer
/// must act on: standard dynamic range, or one of the two HDR curves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Transfer {
    #[default]
    Unspecified,
    /// BT.709 / BT.601 / sRGB / BT.2020 10- and 12-bit gamma (H.273 1, 4..8, 11..15).
    Sdr,
    /// SMPTE ST 2084 perceptual quantizer (H.273 16): HDR10.
    Pq,
    /// ARIB STD-B67 hybrid log-gamma (H.273 18).
    Hlg,
}

impl Transfer {
    /// From H.273 `transfer_characteristics`.
    pub(crate) fn from_h273(tc: u32) -> Transfer {
        match tc {
            1 | 4..=8 | 11..=15 => Transfer::Sdr,
            16 => Transfer::Pq,
            18 => Transfer::Hlg,
            _ => Transfer::Unspecified,
        }
    }
}

/// Where the chroma samples of a 4:2:0 picture sit relative to the luma grid (H.273
/// `chroma_sample_location_type`, FFmpeg's `AVChromaLocation`). Conversions interpolate chroma at
/// the positions the stream says; getting it wrong shifts colour edges by a quarter chroma sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Siting {
    /// The stream does not say: H.264/HEVC/AV1 (and MPEG-2) then mean [`Siting::Left`].
    #[default]
    Unspecified,
    /// Horizontally with the even luma column, vertically between rows (H.273 type 0, MPEG-2).
    Left,
    /// In the middle of each 2x2 luma block (type 1; JPEG, MPEG-1).
    Center,
    /// With the top-left luma sample (type 2; BT.2020 and UHD broadcast).
    TopLeft,
    /// Between the top two luma samples (type 3).
    Top,
    /// With the bottom-left luma sample (type 4).
    BottomLeft,
    /// Between the bottom two luma samples (type 5).
    Bottom,
}

impl Siting {
    /// From FFmpeg's `AVChromaLocation` (0 unspecified, 1 left, 2 center, 3 top-left, 4 top,
    /// 5 bottom-left, 6 bottom).
    pub(crate) fn from_ffmpeg(loc: u32) -> Siting {
        match loc {
            1 => Siting::Left,
            2 => Siting::Center,
            3 => Siting::TopLeft,
            4 => Siting::Top,
            5 => Siting::BottomLeft,
            6 => Siting::Bottom,
            _ => Siting::Unspecified,
        }
    }

    /// Unspecified resolved as the video standards say (left, H.273 type 0).
    pub(crate) fn resolved(self) -> Siting {
        match self {
            Siting::Unspecified => Siting::Left,
            s => s,
        }
    }

    /// Where a chroma sample sits, in chroma samples, relative to the centre of the 2x2 luma block
    /// it covers: (x, y), each -0.25, 0 or 0.25 (left: x -0.25; top: y -0.25; bottom: y +0.25).
    /// A chroma coordinate of luma position `u` (pixel centres at k + 0.5) is then
    /// `u / 2 - 0.5 - offset` for point sampling (`u / 2 - offset` for box footprints).
    pub(crate) fn offsets(self) -> (f32, f32) {
        match self.resolved() {
            Siting::Center => (0.0, 0.0),
            Siting::Left | Siting::Unspecified => (-0.25, 0.0),
            Siting::TopLeft => (-0.25, -0.25),
            Siting::Top => (0.0, -0.25),
            Siting::BottomLeft => (-0.25, 0.25),
            Siting::Bottom => (0.0, 0.25),
        }
    }
}

/// A stream's colour description as the decoder reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Color {
    pub matrix: Matrix,
    pub range: Range,
    pub transfer: Transfer,
    pub siting: Siting,
}

impl Color {
    /// From H.273 / ISO 23091-2 code points (`matrix_coefficients`, `video_full_range_flag`), as
    /// the H.264/HEVC VUI and NVDEC's video signal description carry them: 1 is BT.709; 5, 6
    /// (BT.601 625/525) and 4 (FCC, close enough) are BT.601; 9 is BT.2020 non-constant
    /// luminance; anything else (2 = unspecified, identity, ...) is left unspecified and
    /// resolved by size.
    pub(crate) fn from_h273(matrix_coefficients: u32, full_range: Option<bool>) -> Color {
        let matrix = match matrix_coefficients {
            1 => Matrix::Bt709,
            4..=6 => Matrix::Bt601,
            9 => Matrix::Bt2020,
            _ => Matrix::Unspecified,
        };
        let range = match full_range {
            Some(true) => Range::Full,
            Some(false) => Range::Limited,
            None => Range::Unspecified,
        };
        Color { matrix, range, ..Color::default() }
    }

    /// A JPEG picture's colours, whatever else was signalled: JFIF (ITU-T T.871) defines its
    /// Y'CbCr as BT.601 at full range with chroma centred. The one exception FFmpeg knows is a
    /// limited-range JPEG marked by a `CS=ITU601` comment (`full` false). The samples are
    /// delivered as decoded, the way the hardware decoders write them, never rescaled.
    pub(crate) fn jpeg(full: bool) -> Color {
        let range = if full { Range::Full } else { Range::Limited };
        Color { matrix: Matrix::Bt601, range, transfer: Transfer::Sdr, siting: Siting::Center }
    }

    /// The same description with the transfer and siting set.
    pub(crate) fn with(self, transfer: Transfer, siting: Siting) -> Color {
        Color { transfer, siting, ..self }
    }

    /// What an unspecified stream is taken to be, as FFmpeg's players do: BT.601 below 720 lines
    /// (SD), BT.709 from 720 (HD), limited range.
    pub(crate) fn resolved(self, height: u32) -> (Matrix, Range) {
        let m = match self.matrix {
            Matrix::Unspecified if height < 720 => Matrix::Bt601,
            Matrix::Unspecified => Matrix::Bt709,
            m => m,
        };
        let r = match self.range {
            Range::Unspecified => Range::Limited,
            r => r,
        };
        (m, r)
    }
}

pub(crate) struct Frame {
    lease: Lease,
    /// Camera handle that produced it (the registry's owner key).
    pub owner: u64,
    /// Per-camera decode counter, from 1; gaps show skipped or dropped frames.
    pub seq: u64,
    /// Stream timestamp in microseconds (the stream's own clock), or i64::MIN if unknown.
    pub pts_us: i64,
    /// Wall clock when the frame left the decoder, nanoseconds since the Unix epoch.
    pub wallclock_ns: u64,
    /// Wall clock when the frame was captured (see `time_source`), nanoseconds since the epoch.
    pub capture_ns: u64,
    pub time_source: TimeSource,
    /// The stream's colour description (unspecified until a decoder reports one).
    pub color: Color,
    /// The stream's bits per sample (8; 10 or 12 in a P016 slot, or rounded into NV12).
    pub bits: u32,
    /// Whether the picture is exact, and why not.
    pub integrity: FrameIntegrity,
    /// Dropped after the lease: tells whoever lent the slot (another process) that it is free.
    ticket: Option<Box<dyn Send + Sync>>,
}

/// What the camera knows of a picture's bitstream: exact means neither flag is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FrameIntegrity {
    /// The decoder reported errors in it, or one of its packets arrived damaged.
    pub corrupt: bool,
    /// Decoded after a loss and before the next recovery point.
    pub after_loss: bool,
    /// A recovery point.
    pub keyframe: bool,
}

impl FrameIntegrity {
    pub(crate) fn exact(&self) -> bool {
        !self.corrupt && !self.after_loss
    }
}

impl Frame {
    pub(crate) fn new(lease: Lease, owner: u64, seq: u64, pts_us: i64, wallclock_ns: u64, capture: (u64, TimeSource)) -> Frame {
        Frame { lease, owner, seq, pts_us, wallclock_ns, capture_ns: capture.0, time_source: capture.1, color: Color::default(), bits: 8, integrity: FrameIntegrity::default(), ticket: None }
    }
    /// The same frame, with what must be dropped once its slot is back in its pool (after the
    /// lease: fields drop in declaration order).
    pub(crate) fn with_ticket(mut self, ticket: Box<dyn Send + Sync>) -> Frame {
        self.ticket = Some(ticket);
        self
    }
    /// The same frame, with the colour description and bit depth its decoder reported.
    pub(crate) fn with_color(mut self, color: Color, bits: u32) -> Frame {
        self.color = color;
        self.bits = bits;
        self
    }
    /// The same frame, marked with what the camera knows of its bitstream.
    pub(crate) fn with_integrity(mut self, integrity: FrameIntegrity) -> Frame {
        self.integrity = integrity;
        self
    }
    /// The matrix and range conversions use: the stream's, with unspecified ones resolved.
    pub(crate) fn color_resolved(&self) -> (Matrix, Range) {
        self.color.resolved(self.geom().height)
    }
    /// The pool slot's index (events and stream hand-offs are per slot).
    pub(crate) fn slot(&self) -> usize {
        self.lease.index()
    }
    /// A host frame's slot bytes (NV12 or P016 at `geom()`); `None` for device frames.
    pub(crate) fn host_bytes(&self) -> Option<&[u8]> {
        self.lease.host_bytes()
    }
    /// The process-unique id of the pool holding this frame's slot.
    pub(crate) fn pool_id(&self) -> u64 {
        self.lease.pool().id()
    }
    /// Slots of the pool holding this frame.
    pub(crate) fn pool_slots(&self) -> usize {
        self.lease.pool().slots()
    }
    /// The storage holding this frame's slot.
    pub(crate) fn storage(&self) -> &dyn crate::pool::Storage {
        self.lease.pool().storage()
    }
    pub(crate) fn geom(&self) -> &Geometry {
        &self.lease.pool().geom
    }
    pub(crate) fn memory(&self) -> MemoryKind {
        self.lease.pool().storage().kind()
    }
    pub(crate) fn device(&self) -> i32 {
        self.lease.pool().storage().device()
    }
    pub(crate) fn y_addr(&self) -> u64 {
        self.lease.addr()
    }
    pub(crate) fn uv_addr(&self) -> u64 {
        self.lease.addr() + self.geom().uv_offset() as u64
    }
    /// Returns once the copy that wrote this frame has completed (device frames are published
    /// as soon as the copy is enqueued), so the host can read it from any stream or context.
    pub(crate) fn wait_ready(&self) -> Result<()> {
        self.lease.pool().storage().wait_ready(self.lease.index())
    }

    /// Copies the NV12 image into a host buffer, rows `dst_pitch` apart (0 = packed).
    pub(crate) fn copy_nv12(&self, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        let g = *self.geom();
        if dst_pitch != 0 && dst_pitch < g.row_bytes() {
            return Err(Error::arg(format!("dst_pitch {dst_pitch} < row width {}", g.row_bytes())));
        }
        let need = g
            .packed_size(dst_pitch)
            .ok_or_else(|| Error::arg(format!("dst_pitch {dst_pitch}: the image size overflows")))?;
        if dst.len() < need {
            return Err(Error::new(
                ErrorKind::BufferTooSmall,
                format!("destination holds {} bytes, this {}x{} NV12 frame needs {need}", dst.len(), g.width, g.height),
            ));
        }
        self.lease.pool().storage().download(self.lease.index(), &g, dst, dst_pitch)
    }
}
