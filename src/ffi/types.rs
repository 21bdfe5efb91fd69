//! The C API's types and constants, as the header shows them (the core never sees them).
//!
//! Structs start with `struct_size` (the caller sets it to `sizeof`, so later versions can append
//! fields), are laid out 8-4-2-1 with explicit padding so the natural layout equals LabVIEW's packed
//! one, and their sizes are asserted here and in the C harness.
#![allow(non_camel_case_types)]

use std::ffi::c_char;

/// ABI major version; bumps on any incompatible change of a signature or struct.
pub const NVCAM_ABI_VERSION: i32 = 1;

/// `flags` of `nvcam_camera_options`: return from open at once; the camera connects (and retries)
/// in the background. Without it, open waits for the first connection and fails with its reason.
pub const NVCAM_OPEN_ASYNC: u32 = 1;
/// Restart a file source when it ends.
pub const NVCAM_OPEN_LOOP: u32 = 2;
/// Never skip or drop a frame: the worker waits until the host has taken the previous one and a
/// slot is free. For files and tests; a live camera would fall behind.
pub const NVCAM_OPEN_LOSSLESS: u32 = 4;
/// Read files and the test source as fast as they decode instead of at their frame rate.
pub const NVCAM_OPEN_NO_PACING: u32 = 8;
/// Invalidate the camera's frame handles on every reconnect (by default they stay valid: their
/// pixels live in the camera's pool, not in the decoder).
pub const NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT: u32 = 16;
/// Deliver 10- and 12-bit streams as NV12 (8 bits, rounded by the decoder) instead of
/// `NVCAM_FORMAT_P016`, for hosts that handle 8-bit frames only.
pub const NVCAM_OPEN_8BIT: u32 = 32;
/// Do not verify the server's TLS certificate (`rtsps://`, `https://`, `rtmps://`): the link is
/// still encrypted, but anyone on the network path can impersonate the camera. Logged as a warning
/// at every open. Verification is on by default; prefer `tls_pin_sha256` or `ca_file` in
/// `ffmpeg_options` for a camera with its own certificate (docs/secure-cameras.md).
pub const NVCAM_OPEN_TLS_INSECURE: u32 = 64;
pub(crate) const NVCAM_OPEN_ALL: u32 = 127;

/// `device` of `nvcam_camera_options`: decode on the CPU into host memory.
pub const NVCAM_DEVICE_CPU: i32 = -1;

/// `decoder` of `nvcam_camera_options`: the best available (nvJPEG for MJPEG where it is
/// installed, direct NVDEC, FFmpeg's CUDA hwaccel, then software).
pub const NVCAM_DECODER_AUTO: u32 = 0;
/// Direct NVDEC only (fails where it is not available).
pub const NVCAM_DECODER_NVDEC: u32 = 1;
/// FFmpeg's CUDA hwaccel only.
pub const NVCAM_DECODER_FFMPEG_HW: u32 = 2;
/// FFmpeg's software decoder (frames are uploaded when `device` is a GPU).
pub const NVCAM_DECODER_SOFTWARE: u32 = 3;
/// nvJPEG's hardware back end only (MJPEG cameras; needs nvJPEG from the CUDA toolkit or
/// NVIDIA's nvidia-nvjpeg wheels, and a GPU with JPEG engines). AUTO takes it first for MJPEG.
pub const NVCAM_DECODER_NVJPEG: u32 = 4;

/// `state` of `nvcam_camera_stats`.
pub const NVCAM_STATE_CONNECTING: u32 = 0;
pub const NVCAM_STATE_STREAMING: u32 = 1;
/// Connected, but no packet for half of `stall_timeout_ms`; at `stall_timeout_ms` the camera
/// drops the connection and reconnects (it stays stalled until that attempt starts).
pub const NVCAM_STATE_STALLED: u32 = 2;
/// Waiting `next_retry_ms` before attempt `reconnect_attempt`.
pub const NVCAM_STATE_RECONNECTING: u32 = 3;
pub const NVCAM_STATE_CLOSED: u32 = 4;
/// A permanent failure (bad URL, credentials, option, codec); no retries until
/// `nvcam_camera_reconnect`. `last_error_code` and `nvcam_camera_last_error` say why.
pub const NVCAM_STATE_FAILED: u32 = 5;
/// A file source reached its end (without `NVCAM_OPEN_LOOP`).
pub const NVCAM_STATE_ENDED: u32 = 6;

/// `memory` of `nvcam_frame_info`: plane pointers are host addresses.
pub const NVCAM_MEMORY_HOST: u32 = 0;
/// Plane pointers are CUDA device addresses (`CUdeviceptr`) on `device`.
pub const NVCAM_MEMORY_DEVICE: u32 = 1;

/// `format` of `nvcam_frame_info`: NV12 (Y plane, then interleaved UV at half height).
pub const NVCAM_FORMAT_NV12: u32 = 0;
/// `format` of `nvcam_convert_t`: 4 bytes per pixel B, G, R, A (= 255); one little-endian
/// `uint32_t` 0xAARRGGBB per pixel, what LabVIEW's picture control and IMAQ RGB images hold.
pub const NVCAM_FORMAT_BGRA8: u32 = 1;
/// 3 bytes per pixel B, G, R (OpenCV's order).
pub const NVCAM_FORMAT_BGR8: u32 = 2;
/// 3 bytes per pixel R, G, B.
pub const NVCAM_FORMAT_RGB8: u32 = 3;
/// 1 byte per pixel: luma, expanded to 0..255.
pub const NVCAM_FORMAT_GRAY8: u32 = 4;
/// Planar R, G, B `float` (NCHW, one plane after the other, `height` rows each):
/// `(v / 255 - mean[c]) / std[c]`.
pub const NVCAM_FORMAT_RGB_F32_PLANAR: u32 = 5;
/// As `NVCAM_FORMAT_RGB_F32_PLANAR` in IEEE half precision (`uint16_t` bits).
pub const NVCAM_FORMAT_RGB_F16_PLANAR: u32 = 6;
/// `format` of `nvcam_frame_info`: P016, NV12's layout with 16-bit little-endian samples, the
/// stream's `bit_depth` bits in the high bits of each (a 10-bit stream is P010: value << 6), as
/// NVDEC writes 10- and 12-bit 4:2:0 streams. Row widths in bytes are twice NV12's.
/// `nvcam_frame_convert` takes it in every output format, at full precision (float outputs keep
/// the bits; 8-bit outputs are rounded from them).
pub const NVCAM_FORMAT_P016: u32 = 7;

/// `flags` of `nvcam_convert_t`: keep the ROI's aspect ratio; scale it to fit the output, centre
/// it and fill the rest with `pad`.
pub const NVCAM_CONVERT_LETTERBOX: u32 = 1;
pub(crate) const NVCAM_CONVERT_ALL: u32 = 1;

/// The most cameras `nvcam_cameras_get_frames` and frames `nvcam_frames_convert_batch` take in
/// one call.
pub const NVCAM_BATCH_MAX: u32 = 256;

/// `nvcam_camera_options_t.latency`: live network sources get `LOW`, files and the test source
/// `THROUGHPUT`.
pub const NVCAM_LATENCY_AUTO: u32 = 0;
/// Each frame as soon as it is decoded: NVDEC display delay 0, no frame threads, no delay beyond
/// what the stream's frame order (B-frames) needs.
pub const NVCAM_LATENCY_LOW: u32 = 1;
/// The decoder may hold pictures back to keep the hardware busy (the fastest decode per GPU).
pub const NVCAM_LATENCY_THROUGHPUT: u32 = 2;

/// `nvcam_camera_options_t.transport` (RTSP; other sources ignore it): TCP-interleaved, unless
/// `ffmpeg_options` sets `rtsp_transport` (what nvcam did before the option existed). TCP is the
/// default because the network loses nothing on it (a camera, server or restreamer that falls
/// behind can still drop RTP packets inside the connection: those gaps are counted and marked, as
/// `NVCAM_TRANSPORT_TCP` says), at the price of latency when the link is congested. Any other
/// value together with `rtsp_transport` in `ffmpeg_options` fails the open with
/// `NVCAM_E_BAD_OPTION`, naming both.
pub const NVCAM_TRANSPORT_DEFAULT: u32 = 0;
/// RTP over the RTSP connection (TCP-interleaved): passes NAT and firewalls, and the network
/// loses nothing; a camera, server or restreamer that falls behind still drops RTP packets inside
/// the connection, and those gaps are counted and marked as on UDP.
pub const NVCAM_TRANSPORT_TCP: u32 = 1;
/// RTP over UDP (unicast): the lowest latency; packets can be lost (see `NVCAM_INTEGRITY_*`).
/// Behind a firewall that drops the server's UDP no packet arrives: the open times out
/// (`open_timeout_ms`) and the camera retries. Not possible with `rtsps://`
/// (`NVCAM_E_BAD_OPTION`): its RTP rides the TLS connection.
pub const NVCAM_TRANSPORT_UDP: u32 = 2;
/// RTP over UDP multicast (the server chooses the group and port): many receivers, one stream.
/// Not possible with `rtsps://`.
pub const NVCAM_TRANSPORT_UDP_MULTICAST: u32 = 3;
/// RTSP and RTP tunnelled through HTTP on the RTSP port (Apple's GET/POST tunnel, for proxies
/// that pass only HTTP). Not possible with `rtsps://`.
pub const NVCAM_TRANSPORT_HTTP: u32 = 4;
/// UDP first; TCP when no RTP packet arrived over UDP within 2 s of the open starting (a firewall
/// or NAT that drops the server's UDP), or when the UDP setup failed, as common players do. The
/// whole open, both tries, stays within `open_timeout_ms`. The fall-back is logged once at info,
/// and the camera then stays on TCP for its automatic reconnects (the network that dropped UDP
/// is still there: trying UDP again would add 2 s to every reconnect); `nvcam_camera_reconnect`
/// tries UDP again. Wrong credentials are `NVCAM_E_AUTH` at once, without a TCP try. With
/// `rtsps://`, TCP.
pub const NVCAM_TRANSPORT_AUTO: u32 = 5;

/// `nvcam_camera_options_t.integrity`: deliver exact frames only. A frame that is not exact
/// (`NVCAM_FRAME_CORRUPT` or `NVCAM_FRAME_AFTER_LOSS`) is decoded, counted in `frames_corrupt`
/// and never handed out: after a packet loss the host sees a gap until the next recovery point,
/// never a smeared picture.
pub const NVCAM_INTEGRITY_EXACT: u32 = 0;
/// Deliver every frame; `nvcam_frame_info_t.flags` says which are not exact.
pub const NVCAM_INTEGRITY_MARK: u32 = 1;
/// Deliver exact frames; while the stream is not exact, hand out the last exact frame again
/// (the same frame: same `seq`, same pixels) at the stream's rate, for displays and recorders
/// that must not see a gap. It keeps one pool slot.
pub const NVCAM_INTEGRITY_HOLD: u32 = 2;

/// `nvcam_frame_info_t.flags`: this picture's own data was lost or damaged (a gap in its packets,
/// a damaged packet) or the decoder reported errors in it: its pixels are partly concealed.
pub const NVCAM_FRAME_CORRUPT: u32 = 1;
/// A picture this one depends on was lost or damaged: decoded after a loss reached a reference
/// picture (or a loss of unknown place) and before the next recovery point (IDR, recovery-point
/// SEI with its count reached, HEVC IRAP), or before a session's first one. A loss that reached
/// only non-reference pictures marks them alone (`NVCAM_FRAME_CORRUPT`), not those after them.
pub const NVCAM_FRAME_AFTER_LOSS: u32 = 2;
/// A recovery point (IDR or key frame) that arrived whole: decodable without earlier pictures,
/// and exact (never set with `NVCAM_FRAME_CORRUPT` or `NVCAM_FRAME_AFTER_LOSS`).
pub const NVCAM_FRAME_KEYFRAME: u32 = 4;

/// `nvcam_frame_info_t.time_source`: `capture_ns` is when the packet was received.
pub const NVCAM_TIME_RECEIVE: u32 = 0;
/// `capture_ns` is the source's capture clock (RTCP sender reports).
pub const NVCAM_TIME_SOURCE: u32 = 1;

/// Colour matrix: not known (`nvcam_frame_info_t`), or "the stream's" (conversion specs).
pub const NVCAM_MATRIX_UNKNOWN: u32 = 0;
pub const NVCAM_MATRIX_BT601: u32 = 1;
pub const NVCAM_MATRIX_BT709: u32 = 2;
/// BT.2020 non-constant luminance (HDR and wide-gamut streams).
pub const NVCAM_MATRIX_BT2020: u32 = 3;

/// Colour range: not known (`nvcam_frame_info_t`), or "the stream's" (conversion specs).
pub const NVCAM_RANGE_UNKNOWN: u32 = 0;
/// Y 16..235, U/V 16..240 (video, "TV" range).
pub const NVCAM_RANGE_LIMITED: u32 = 1;
/// 0..255 (JPEG, "PC" range).
pub const NVCAM_RANGE_FULL: u32 = 2;

/// `nvcam_frame_info_t.color_transfer`: the stream does not say (treat as SDR).
pub const NVCAM_TRANSFER_UNKNOWN: u32 = 0;
/// Standard dynamic range (BT.709, BT.601, sRGB, BT.2020 gamma).
pub const NVCAM_TRANSFER_SDR: u32 = 1;
/// HDR: SMPTE ST 2084 perceptual quantizer (HDR10).
pub const NVCAM_TRANSFER_PQ: u32 = 2;
/// HDR: ARIB STD-B67 hybrid log-gamma.
pub const NVCAM_TRANSFER_HLG: u32 = 3;

/// `nvcam_frame_info_t.chroma_siting`: where chroma samples sit on the luma grid (the numbering
/// of FFmpeg's `AVChromaLocation`). Left (H.273 type 0) is what H.264/HEVC mean when the stream
/// does not say.
pub const NVCAM_SITING_LEFT: u32 = 1;
/// Centred in each 2x2 block (JPEG, MPEG-1).
pub const NVCAM_SITING_CENTER: u32 = 2;
/// With the top-left luma sample (BT.2020 / UHD).
pub const NVCAM_SITING_TOPLEFT: u32 = 3;
pub const NVCAM_SITING_TOP: u32 = 4;
pub const NVCAM_SITING_BOTTOMLEFT: u32 = 5;
pub const NVCAM_SITING_BOTTOM: u32 = 6;

/// Log levels for `nvcam_log_init`, the callback and `nvcam_log_pop`.
pub const NVCAM_LOG_OFF: i32 = 0;
pub const NVCAM_LOG_ERROR: i32 = 1;
pub const NVCAM_LOG_WARN: i32 = 2;
pub const NVCAM_LOG_INFO: i32 = 3;
pub const NVCAM_LOG_DEBUG: i32 = 4;
pub const NVCAM_LOG_TRACE: i32 = 5;

/// Library settings for `nvcam_init`; NULL means defaults. Zero in any field means its default.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_config {
    /// `sizeof(nvcam_config)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub flags: u32,
    /// Most hardware decode sessions nvcam opens per GPU; further cameras decode in software and
    /// upload (0 = no cap).
    pub max_hw_decoders_per_device: u32,
    /// A retired GPU buffer is freed only after its fence events completed and at least this many
    /// milliseconds passed (0 = 100).
    pub gpu_free_min_age_ms: u32,
    pub reserved: [u64; 6],
}

/// Per-camera settings for `nvcam_camera_open`; NULL means defaults. Fill with
/// `nvcam_camera_options_init`, or zero it and set `struct_size`: zero means "default" everywhere.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvcam_camera_options {
    /// `sizeof(nvcam_camera_options)`.
    pub struct_size: u32,
    /// `NVCAM_OPEN_*` bits.
    pub flags: u32,
    /// Frames the camera's pool holds (frames the host holds + 1 in flight); 0 = 4, at least 2.
    pub pool_slots: u32,
    /// GPU ordinal, or `NVCAM_DEVICE_CPU`. With no usable GPU the camera decodes on the CPU and
    /// says so in its stats and log.
    pub device: i32,
    /// `NVCAM_DECODER_*`.
    pub decoder: u32,
    /// Bound on connecting and probing the source; 0 = 5000.
    pub open_timeout_ms: u32,
    /// No packet for this long counts as a stall and reconnects; 0 = 5000.
    pub stall_timeout_ms: u32,
    /// First reconnect delay; doubles each failed attempt (±25 % jitter); 0 = 250.
    pub reconnect_min_ms: u32,
    /// Cap on the reconnect delay; 0 = 10000.
    pub reconnect_max_ms: u32,
    /// Software decoder threads; 0 = FFmpeg's choice.
    pub decode_threads: u32,
    /// FFmpeg demuxer/protocol options, `"key=value;key=value"` (e.g.
    /// `"rtsp_transport=udp;buffer_size=1048576"`), or NULL. An option FFmpeg does not consume
    /// fails the open with `NVCAM_E_BAD_OPTION`. RTSP defaults to `rtsp_transport=tcp`. TLS cameras
    /// (`rtsps://`, `https://`, `rtmps://`) verify the server's certificate; `ca_file=PATH` trusts
    /// that CA instead of the system's store, `tls_pin_sha256=HEX` accepts exactly that certificate
    /// (see `NVCAM_OPEN_TLS_INSECURE`).
    pub ffmpeg_options: *const c_char,
    /// After a connection is lost, reconnect attempts stay short (`reconnect_min_ms`, jittered)
    /// for this long before they back off towards `reconnect_max_ms`; 0 = 3000.
    pub reconnect_fast_ms: u32,
    /// `NVCAM_LATENCY_*`.
    pub latency: u32,
    /// `NVCAM_TRANSPORT_*` (RTSP sources; ignored for others).
    pub transport: u32,
    /// `NVCAM_INTEGRITY_*`: what the camera does with frames that are not exact.
    pub integrity: u32,
    pub reserved: [u64; 2],
}

/// A camera's counters and state (`nvcam_camera_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_camera_stats {
    /// `sizeof(nvcam_camera_stats)`.
    pub struct_size: u32,
    /// `NVCAM_STATE_*`.
    pub state: u32,
    /// Pictures out of the decoder.
    pub frames_decoded: u64,
    /// Frames handed out by `nvcam_camera_get_frame`.
    pub frames_delivered: u64,
    /// Decoded frames dropped because every pool slot was held (the host holds too many).
    pub frames_dropped: u64,
    /// Frames replaced by a newer one before the host asked (the host polls slower than the camera).
    pub frames_skipped: u64,
    /// Reconnects so far: connections lost and manual reconnects (failed attempts in between
    /// are counted by `reconnect_attempt`).
    pub reconnects: u64,
    pub pool_slots_total: u32,
    /// Slots held by frames the host holds, or by the frame waiting to be taken.
    pub pool_slots_in_use: u32,
    /// Bytes of the current pool plus old pools that held frames keep alive.
    pub bytes_held: u64,
    /// Frames per second decoded, over the last second.
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    /// Failed attempts since the last frame.
    pub reconnect_attempt: u32,
    /// Delay before the next attempt, while `NVCAM_STATE_RECONNECTING`.
    pub next_retry_ms: u32,
    /// Resolution or codec changes seen across reconnects.
    pub stream_changes: u32,
    /// `NVCAM_MEMORY_*` of the current pool.
    pub memory: u32,
    /// GPU ordinal of the current pool, -1 for host memory.
    pub device: i32,
    /// `NVCAM_DECODER_*` actually in use (`NVCAM_DECODER_SOFTWARE` after a fall-back).
    pub decoder: u32,
    /// Status code of the camera's last error, 0 if none.
    pub last_error_code: i32,
    pub _pad0: u32,
    /// Frame handles of this camera the host holds now.
    pub live_handles: u64,
    /// Decode latency (packet read → frame published, less any pacing wait) over the last
    /// second, median and 99th percentile, microseconds; 0 without frames in that second.
    pub decode_latency_p50_us: u32,
    pub decode_latency_p99_us: u32,
    /// Pictures decoded that were not exact (`NVCAM_FRAME_CORRUPT` or `NVCAM_FRAME_AFTER_LOSS`),
    /// delivered or not.
    pub frames_corrupt: u64,
    /// Packets lost before the decoder: RTP sequence gaps and packets the demuxer flagged corrupt.
    pub packets_lost: u64,
    /// When the last loss was seen, nanoseconds since 1970-01-01 UTC; 0 if never.
    pub last_loss_ns: u64,
    /// The interval between recovery points (IDRs, recovery-point SEIs) the camera measured,
    /// milliseconds; 0 until two have come. The fields from here on were appended: a host whose struct
    /// ends before them (`struct_size` 152) gets the fields it has.
    pub key_interval_ms: u32,
    /// How long a connection takes from its start to its first key frame (an estimate kept
    /// across reconnects), milliseconds; 0 until known. After a loss the camera reconnects at
    /// once when the next recovery point is more than this plus one second away, and never when
    /// it is nearer.
    pub reconnect_to_key_ms: u32,
    /// Reconnects made by that rule (also counted in `reconnects`).
    pub loss_reconnects: u64,
}

/// What a frame is and where its pixels are (`nvcam_frame_info`). Pointers stay valid while the
/// frame handle (or any clone of it) is held.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_frame_info {
    /// `sizeof(nvcam_frame_info)`.
    pub struct_size: u32,
    pub width: u32,
    pub height: u32,
    /// `NVCAM_FORMAT_NV12`, or `NVCAM_FORMAT_P016` for a 10- or 12-bit stream (unless the camera
    /// was opened with `NVCAM_OPEN_8BIT`).
    pub format: u32,
    /// `NVCAM_MEMORY_*`.
    pub memory: u32,
    /// CUDA device ordinal of the pointers, -1 for host memory.
    pub device: i32,
    /// Bytes between rows, the same for both planes.
    pub pitch: u64,
    /// Y plane (host address or CUdeviceptr).
    pub y_ptr: u64,
    /// Interleaved UV plane, `(height + 1) / 2` rows.
    pub uv_ptr: u64,
    /// Bytes `nvcam_frame_copy_nv12` needs with `dst_pitch` 0 (tightly packed).
    pub nv12_size: u64,
    /// Per-camera decode counter from 1; gaps are skipped or dropped frames.
    pub seq: u64,
    /// Stream timestamp in microseconds; INT64_MIN if the stream has none.
    pub pts_us: i64,
    /// Wall clock when the frame was decoded, nanoseconds since 1970-01-01 UTC.
    pub wallclock_ns: u64,
    /// The camera handle that produced the frame.
    pub camera: u64,
    /// When the frame was captured, nanoseconds since 1970-01-01 UTC: the source's clock where it
    /// sends one, else the time its first packet was received (`time_source` says which).
    pub capture_ns: u64,
    /// `NVCAM_TIME_*`.
    pub time_source: u32,
    /// The stream's colour matrix, `NVCAM_MATRIX_*`.
    pub color_matrix: u32,
    /// The stream's colour range, `NVCAM_RANGE_*`.
    pub color_range: u32,
    /// The stream's transfer function, `NVCAM_TRANSFER_*` (PQ or HLG: HDR).
    pub color_transfer: u32,
    /// Where the chroma samples sit, `NVCAM_SITING_*` (conversions interpolate at that place).
    pub chroma_siting: u32,
    /// Significant bits per sample in the planes: 8 (NV12), 10 or 12 (P016).
    pub bit_depth: u32,
    /// `NVCAM_FRAME_*` bits. Neither `NVCAM_FRAME_CORRUPT` nor `NVCAM_FRAME_AFTER_LOSS`: the
    /// frame is exact (decoded from a complete bitstream with every reference intact). A caller
    /// whose struct ends before this field (`struct_size` 120, ABI 1.0) gets the fields it has.
    pub flags: u32,
    pub _pad1: u32,
}

/// `struct_size` of `nvcam_frame_info` before `flags` was added: still accepted, and filled up to
/// its end.
pub(crate) const FRAME_INFO_SIZE_V1: u32 = 120;
/// `nvcam_camera_stats` before `key_interval_ms` was appended.
pub(crate) const CAMERA_STATS_SIZE_V1: u32 = 152;

/// What `nvcam_frame_convert` makes of a frame. Zero in any field means its default, so a zeroed
/// struct with `struct_size` and `format` set converts the whole frame at its own size, with the
/// stream's colours, into host memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_convert {
    /// `sizeof(nvcam_convert_t)`.
    pub struct_size: u32,
    /// `NVCAM_FORMAT_*` other than NV12.
    pub format: u32,
    /// Output size in pixels; 0 = the ROI's.
    pub width: u32,
    pub height: u32,
    /// Crop rectangle in frame pixels; `roi_width` or `roi_height` 0 = the whole frame.
    pub roi_x: u32,
    pub roi_y: u32,
    pub roi_width: u32,
    pub roi_height: u32,
    /// `NVCAM_CONVERT_*` bits.
    pub flags: u32,
    /// `NVCAM_MATRIX_*`; `NVCAM_MATRIX_UNKNOWN` (0) = the stream's (as `nvcam_frame_info_t`
    /// reports it).
    pub matrix: u32,
    /// `NVCAM_RANGE_*`; 0 = the stream's.
    pub range: u32,
    /// `NVCAM_MEMORY_*`: where `dst` is.
    pub dst_memory: u32,
    /// CUDA device ordinal of `dst` for `NVCAM_MEMORY_DEVICE`.
    pub dst_device: i32,
    /// Letterbox fill R, G, B in 0..255 (float formats normalize it like a pixel).
    pub pad: [f32; 3],
    /// Float formats: per-channel R, G, B mean (0..1 units) ...
    pub mean: [f32; 3],
    /// ... and standard deviation; 0 = 1.
    pub std: [f32; 3],
    /// `NVCAM_SITING_*`: where the frame's chroma samples sit, for a stream that says it wrong;
    /// 0 = the stream's (as `nvcam_frame_info_t.chroma_siting` reports it).
    pub chroma_siting: u32,
    /// Must be 0.
    pub reserved: [u32; 5],
}

/// Process-wide GPU counters (`nvcam_gpu_stats`), for one device or summed over all (`device`
/// -1). Counts are since the process started; gauges (`bytes_*`, `*_decoders`, `contexts`) are now.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_gpu_stats {
    /// `sizeof(nvcam_gpu_stats_t)`.
    pub struct_size: u32,
    /// The device asked for (-1 = all).
    pub device: i32,
    /// CUDA devices visible (0 without a driver or GPU: every camera decodes on the CPU).
    pub device_count: u32,
    /// Device contexts nvcam holds now (retained on first use, released by `nvcam_shutdown`).
    pub contexts: u32,
    /// Hardware (NVDEC) decode sessions open now.
    pub hw_decoders: u32,
    /// Cameras decoding in software and uploading to a GPU pool now.
    pub upload_decoders: u32,
    /// Device allocations made (one per pool: slots are allocated once per resolution).
    pub device_allocs: u64,
    /// Device buffers freed (by the deferred queue).
    pub device_frees: u64,
    /// Pinned host staging buffers allocated (downloads, uploads).
    pub pinned_allocs: u64,
    pub pinned_frees: u64,
    /// Blocking waits nvcam performed (an event or one stream; never the whole device): teardown,
    /// host downloads, staging reuse. Zero per frame in steady state.
    pub syncs: u64,
    /// Frames whose copy had not finished when the host took them (get_frame then waited on
    /// that frame's event alone).
    pub ready_waits: u64,
    /// Cameras that asked for hardware decoding (AUTO) and got software + upload (cap reached,
    /// NVDEC could not open a session or would not take the stream).
    pub hw_fallbacks: u64,
    /// Frames copied into GPU pools.
    pub frames_copied: u64,
    /// Device bytes in live pools (all cameras).
    pub bytes_in_pools: u64,
    /// Bytes (device and pinned) retired and waiting in the deferred-free queue.
    pub bytes_deferred: u64,
    /// Buffers waiting in the deferred-free queue.
    pub deferred_buffers: u64,
    /// Free and total device memory (cuMemGetInfo) of the device(s) nvcam holds a context on.
    pub mem_free: u64,
    pub mem_total: u64,
    pub reserved: [u64; 4],
}

/// The log callback: called from any thread, never with nvcam's locks held; `message` is UTF-8
/// and valid only during the call.
pub type nvcam_log_fn = Option<unsafe extern "C" fn(level: i32, message: *const c_char, user: *mut std::ffi::c_void)>;

// Every struct's size and field offsets, as include/nvcam.h and the Python module have them
// (written by `cargo xtask gen`); the recording structs live beside their calls.
#[allow(unused_imports)]
use super::record::{nvcam_record_stats, nvcam_record_status};
include!("layout.rs");
