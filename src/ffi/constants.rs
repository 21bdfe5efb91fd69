//! The C API's constants, as the header shows them (the core never sees them): flags, codes and
//! limits of the structs in [`super::types`] and of the calls.

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
/// `device` of `nvcam_camera_options`: any GPU. Each new connection goes to the GPU whose NVDEC
/// engines have the most room for its stream (its demand against the capacity learned from their
/// measured load), then the most hardware decode sessions left (nvcam's own count against the
/// GPU's session limit where it was met), and a reconnect to the same stream stays there, so a streaming camera never moves; a
/// reconnect whose stream changed (codec or size) is placed afresh. `nvcam_frame_info_t.device`
/// says which GPU a frame is on. Without a usable GPU the camera decodes on the CPU.
pub const NVCAM_DEVICE_ANY: i32 = -2;

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

/// `nvcam_camera_options_t.transport` (RTSP; other sources ignore it): TCP-interleaved, or UDP
/// where the server refuses TCP (461 or 400 to its SETUP; logged once, kept for the camera's
/// reconnects), unless `ffmpeg_options` sets `rtsp_transport`. TCP is the
/// default because the network loses nothing on it (a camera, server or restreamer that falls
/// behind can still drop RTP packets inside the connection: those gaps are counted and marked, as
/// `NVCAM_TRANSPORT_TCP` says), at the price of latency when the link is congested. Any other
/// value together with `rtsp_transport` in `ffmpeg_options` fails the open with
/// `NVCAM_E_BAD_OPTION`, naming both.
pub const NVCAM_TRANSPORT_DEFAULT: u32 = 0;
/// RTP over the RTSP connection (TCP-interleaved): passes NAT and firewalls, and the network
/// loses nothing; a camera, server or restreamer that falls behind still drops RTP packets inside
/// the connection, and those gaps are counted and marked as on UDP. A server that refuses it
/// (461 or 400 to SETUP) fails the open with `NVCAM_E_UNSUPPORTED`, permanent.
pub const NVCAM_TRANSPORT_TCP: u32 = 1;
/// RTP over UDP (unicast): the lowest latency; packets can be lost (see `NVCAM_INTEGRITY_*`).
/// Behind a firewall that drops the server's UDP no packet arrives: the open times out
/// (`open_timeout_ms`) and the camera retries. A server that refuses UDP (461 or 400 to SETUP)
/// fails the open with `NVCAM_E_UNSUPPORTED`, permanent. Not possible with `rtsps://`
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

/// A recording's state (`nvcam_record_status_t.state`).
/// The recording takes packets (its pre-roll, then the stream until trigger + post).
pub const NVCAM_RECORD_RUNNING: u32 = 1;
/// It takes no more packets; its file is being finished.
pub const NVCAM_RECORD_FINISHING: u32 = 2;
/// Complete: the file holds [trigger − pre, trigger + post] (see `first_pts_us`) under its name.
pub const NVCAM_RECORD_DONE: u32 = 3;
/// Ended early (`nvcam_record_stop`, `nvcam_record_release`, the camera's close, shutdown): a
/// complete file, shorter than asked.
pub const NVCAM_RECORD_STOPPED: u32 = 4;
/// Ended by an error (`error`, `nvcam_record_error`): a disk that was full or too slow, an I/O
/// error, a file complete under its `.part` name because its name was taken or its rename denied
/// (`NVCAM_E_IO`; the error names every such part). What was written is in the file (its `.part`
/// name if it could not be finished).
pub const NVCAM_RECORD_FAILED: u32 = 5;
