//! The C API's `#[repr(C)]` types, as the header shows them (the core never sees them); their
//! constants are in [`super::constants`].
//!
//! Structs start with `struct_size` (the caller sets it to `sizeof`, so later versions can append
//! fields), are laid out 8-4-2-1 with explicit padding so the natural layout equals LabVIEW's packed
//! one, and their sizes are asserted here and in the C harness.
#![allow(non_camel_case_types)]

use std::ffi::c_char;

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
    /// GPU ordinal, `NVCAM_DEVICE_CPU`, or `NVCAM_DEVICE_ANY` (the GPU with the most decode
    /// sessions left, chosen at each new connection; the stats' `device` says which). With no
    /// usable GPU the camera decodes on the CPU and says so in its stats and log.
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
    /// `"rtsp_transport=udp;buffer_size=1048576"`), or NULL. A value holding `;`, `&`, `=` or
    /// spaces to keep at its ends goes in double quotes, `""` for a `"` inside
    /// (`passphrase=" a;b "`). An option FFmpeg does not consume fails the open with
    /// `NVCAM_E_BAD_OPTION`, naming its key. RTSP defaults to TCP (UDP where the server
    /// refuses TCP; see `transport`), RTP over UDP to `buffer_size=4194304`. TLS cameras
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
    /// The largest picture the camera takes, width and height; 0 = 8192 each. A stream that
    /// claims a larger one is refused before a decoder or a pool is made for it: the camera
    /// fails with the reason (stats `pictures_refused`). The fields from here on took the place of
    /// `reserved[0]` (the struct's size is unchanged).
    pub max_picture_width: u32,
    pub max_picture_height: u32,
    pub reserved: [u64; 1],
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
    /// Sessions that ended in a panic inside nvcam (a bug a stream reached): each one ended
    /// like a dropped connection and the camera reconnected.
    pub session_panics: u64,
    /// Streams and pictures refused for their size. Over the camera's limit
    /// (`max_picture_width` x `max_picture_height` of its options): no decoder and no pool was
    /// made, and the camera failed with the reason. A size change past 10 within 10 s: the picture
    /// was dropped, and the camera goes on at its current size.
    pub pictures_refused: u64,
    /// Processes attached to this camera now (it is published: `nvcam_camera_publish`).
    pub consumers: u32,
    /// An attached camera (`nvcam://NAME`): its source's state as the publishing process last
    /// reported it (`NVCAM_STATE_*`). Any other camera: `state`.
    pub source_state: u32,
    /// An attached camera: its source's frames decoded and dropped, and its frame rate, in the
    /// publishing process (this camera's own counters say what reached this process: decoded =
    /// frames offered to it, dropped = frames it missed because it held its quota or read too
    /// slowly). Any other camera: its own.
    pub source_frames_decoded: u64,
    pub source_frames_dropped: u64,
    pub source_fps: f64,
    /// Datagrams the kernel dropped at this camera's own RTP/RTCP UDP sockets (their receive
    /// buffer was full: nvcam read too slowly), summed over its sessions. The RTP packets among
    /// them are also in `packets_lost` (a gap in the sequence, whatever dropped it): the network's
    /// share is about `packets_lost - kernel_drops`. 0 over TCP, and on Windows (not measured).
    pub kernel_drops: u64,
    /// Key frames asked of the camera without a reconnect, after a loss (RTCP PLI and FIR, one
    /// request per video stream; RTSP only).
    pub keyframe_requests: u64,
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
/// `nvcam_record_stats` before `no_picture` was appended.
pub(crate) const RECORD_STATS_SIZE_V1: u32 = 64;

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
    /// Hardware (NVDEC) decode sessions nvcam holds now (parked decoders kept for a reconnect
    /// included). The driver's limit counts every process's sessions on the GPU.
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
    /// The decode sessions nvcam held when the GPU's driver refused a new one (its sessions
    /// exhausted: 288 per H200 with driver 580.159.04, whichever process holds them); summed over
    /// the devices where that happened, 0 until it does. While nvcam holds that many on a GPU,
    /// AUTO cameras decode in software + upload there without trying (`docs/gpu.md`). The fields
    /// from here on took the place of `reserved` (the struct's size is unchanged).
    pub session_limit: u32,
    /// How busy the GPU's NVDEC engines were over the driver's last sampling period (about a
    /// second), percent (NVML's `nvmlDeviceGetDecoderUtilization`; the busiest device for -1);
    /// `0xFFFFFFFF` where NVML is not available.
    pub decoder_load: u32,
    /// Hardware decoders not made because the GPU's decode sessions were exhausted (a create the
    /// driver refused, or a camera sent to software at `session_limit`).
    pub sessions_exhausted: u64,
    /// What nvcam's hardware cameras ask of the GPU's NVDEC engines (coded size at frame rate),
    /// percent of the engines' capacity as learned from their measured load (the busiest device
    /// for -1); `0xFFFFFFFF` until learned (the engines under 40 % busy, or no NVML). AUTO cameras
    /// that would take it past `NVCAM_DECODE_LOAD_LIMIT` (95 %) go to another GPU or to software +
    /// upload (`docs/gpu.md`).
    pub decoder_demand: u32,
    /// AUTO cameras not given a hardware decoder because the engines were full by that measure.
    pub load_refusals: u32,
    pub reserved: [u64; 1],
}

/// The log callback: called from any thread, never with nvcam's locks held; `message` is UTF-8
/// and valid only during the call.
pub type nvcam_log_fn = Option<unsafe extern "C" fn(level: i32, message: *const c_char, user: *mut std::ffi::c_void)>;

/// A recording's state and what its files hold (`nvcam_record_status`).
///
/// Frame ↔ file: the files hold the camera's pictures `first_seq..=last_seq` (the `seq` of
/// `nvcam_frame_info_t`), in order; a picture's time in the file is its `pts_us` − `first_pts_us`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_record_status {
    /// `sizeof(nvcam_record_status_t)`.
    pub struct_size: u32,
    /// `NVCAM_RECORD_*`.
    pub state: u32,
    /// `NVCAM_E_*` of a failed recording, else 0 (text: `nvcam_record_error`).
    pub error: i32,
    /// Files made: 1, more when a reconnect or a change of the stream split the recording
    /// (`NAME-part2.EXT`, ...; `nvcam_record_file` names the last).
    pub parts: u32,
    /// Places inside the recording where packets were lost on the way (see `lost_packets`).
    pub loss_spans: u32,
    pub reserved0: u32,
    /// Pictures (packets) written.
    pub frames: u64,
    /// Bytes of compressed video written.
    pub bytes: u64,
    /// The camera's frame numbers of the first and last picture in the files (0: none known).
    pub first_seq: u64,
    pub last_seq: u64,
    /// Timestamps (µs, as frames carry them) of the first picture of the first file and the
    /// last picture of the last file.
    pub first_pts_us: i64,
    pub last_pts_us: i64,
    /// The stream time of the trigger (the newest packet when the recording started): a full
    /// pre-roll has `first_pts_us` ≤ `trigger_pts_us` − pre.
    pub trigger_pts_us: i64,
    /// The files' spans summed: each part's last − first picture timestamp (`last_pts_us` −
    /// `first_pts_us` for one part; a reconnect may start its part's timestamps afresh).
    pub duration_us: i64,
    /// Packets lost on the way from the camera inside the recording.
    pub lost_packets: u64,
    /// Timestamp of the first picture after a loss (0: no loss).
    pub first_loss_pts_us: i64,
    /// Packets taken for the recording that are in no file: the writer fell behind, or a write
    /// error (a full disk) lost them; the recording failed. After a write error the counts
    /// above say what the files hold for certain (`frames`, `bytes` up to the last cluster or
    /// fragment written out).
    pub dropped: u64,
    pub reserved: [u64; 2],
}

/// A camera's pre-roll cache and recordings (`nvcam_camera_record_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_record_stats {
    /// `sizeof(nvcam_record_stats_t)`.
    pub struct_size: u32,
    /// Recordings taking packets now.
    pub running: u32,
    /// Bytes, packets and stream time the cache holds.
    pub cache_bytes: u64,
    pub cache_packets: u64,
    pub cache_span_us: i64,
    /// Groups of pictures the cache dropped for its byte bound before its time bound.
    pub cache_trimmed: u64,
    /// Recordings started, failed (ended by an error), and packets dropped (a writer that fell
    /// behind).
    pub recordings: u64,
    pub failed: u64,
    pub dropped: u64,
    /// Recordings that ended before the camera sent a key frame: they hold no picture and left
    /// no file (state FAILED, error NVCAM_E_TIMEOUT), not counted in `failed`.
    pub no_picture: u64,
}

// Every struct's size and field offsets, as include/nvcam.h and the Python module have them
// (written by `cargo xtask gen`).
include!("layout.rs");
