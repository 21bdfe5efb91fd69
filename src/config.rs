//! What a host can configure, as Rust types, and the one table of defaults.
//!
//! The C structs (`nvcam_config_t`, `nvcam_camera_options_t`) are converted to these in
//! `ffi::marshal`; a zero in a C field means "the default", and the default is read from
//! [`DEFAULTS`] there and here, so `nvcam_camera_options_init`, a zeroed struct, a NULL pointer and
//! `Options::default()` can never disagree (a test checks all four).

use std::time::Duration;

/// Every default, once. Times in milliseconds, as the C structs carry them.
pub(crate) struct Defaults {
    pub pool_slots: u32,
    /// GPU ordinal; without a usable GPU the camera decodes on the CPU and says so.
    pub device: i32,
    pub open_timeout_ms: u32,
    pub stall_timeout_ms: u32,
    pub reconnect_min_ms: u32,
    pub reconnect_max_ms: u32,
    /// After a loss, attempts stay at `reconnect_min_ms` this long before backing off: most outages
    /// (a camera or switch rebooting, a server restarting) are short, and a doubling delay would
    /// land its retry long after the source came back.
    pub reconnect_fast_ms: u32,
    /// A retired GPU buffer is freed only after its events completed and this much time passed.
    pub gpu_free_min_age_ms: u32,
    /// How often camera workers look at the deferred-free queue (they never wait on it).
    pub gpu_maintain_every_ms: u32,
    /// A paced picture (file, test source) this late re-anchors the pacing clock, so a camera
    /// that was held up goes on at its own rate instead of playing fast to catch up.
    pub pace_reanchor_late_ms: u32,
    /// `NVCAM_TRANSPORT_AUTO`: with no packet over UDP this long after the open began, the camera
    /// opens again over TCP (a firewall that drops the server's UDP).
    pub udp_fallback_ms: u32,
    /// After a loss, a stream that sends no recovery point this long (a long-GOP camera, intra
    /// refresh without recovery-point SEI) is reconnected: a new RTSP session starts with a key
    /// frame on the cameras we know, where waiting could last minutes.
    pub loss_recovery_reconnect_ms: u32,
    /// The largest picture a camera may claim, width and height each: a stream over it is
    /// refused before a decoder or a pool is made for it (a hostile or broken camera could
    /// otherwise make nvcam allocate gigabytes). 8192 is the largest size NVDEC decodes.
    pub max_picture_width: u32,
    pub max_picture_height: u32,
    /// A stream may change its picture size (each change a new pool of `pool_slots` pictures)
    /// at most this often within `pool_churn_window_ms`; pictures that would need another new
    /// pool are dropped (counted) until the window has room, so parameter sets that claim a new
    /// size every picture cannot make nvcam allocate every picture.
    pub pool_churn_max: u32,
    pub pool_churn_window_ms: u32,
    /// Sessions in a row that reach the source but give no exact picture, all within
    /// `fruitless_window_ms`, after which the camera ends FAILED: a source of garbage (bytes that
    /// do not decode) would otherwise be reconnected for ever, a new session each time.
    pub fruitless_sessions: u32,
    pub fruitless_window_ms: u32,
    /// Receive buffer of each RTP/RTCP socket over UDP (FFmpeg's `buffer_size`; the camera's own
    /// `buffer_size` in its FFmpeg options wins). FFmpeg's own is 64 KB: a few tens of ms of a
    /// 1080p stream, which a decode held up for a moment overflows in the kernel. Linux grants at
    /// most `net.core.rmem_max`.
    pub udp_receive_buffer_bytes: u32,
    /// RTP over RTSP (UDP and inside the TCP connection alike): how long a packet that arrived
    /// after a later one is waited for before its gap counts as a loss (FFmpeg's `max_delay`,
    /// its reorder window; the camera's own `max_delay` wins). A restreamer that forwards RTP
    /// it took over UDP passes the network's reordering on inside TCP.
    pub rtp_reorder_window_ms: u32,
    /// Reconnects made to get a key frame after a loss (a new session starts with one) are this
    /// far apart at least; each that follows the last within twice the current spacing doubles
    /// it, up to `loss_reconnect_max_spacing_ms`. Cameras and NVRs limit their sessions and log
    /// or block a client that opens one every few seconds; between them the camera waits for its
    /// next recovery point (dark time up to a GOP).
    pub loss_reconnect_min_spacing_ms: u32,
    pub loss_reconnect_max_spacing_ms: u32,
    /// After a loss, an RTSP camera is first asked for a key frame without a reconnect (RTCP PLI,
    /// RFC 4585, and FIR, RFC 5104, on the session's RTCP port or channel), again every
    /// `loss_keyframe_request_repeat_ms` while no recovery point came; the reconnect rule above
    /// takes over only when none came within `loss_keyframe_request_wait_ms` of the first
    /// request (a camera that ignores them; one that ignored them 3 losses in a row is
    /// reconnected without the wait, and still asked).
    pub loss_keyframe_request_wait_ms: u32,
    pub loss_keyframe_request_repeat_ms: u32,
    /// A session that ends before its stream does (a reconnect the host asks for, a read error:
    /// a stall, a server gone) drains its decoder for at most this long, so that the pictures it
    /// still holds reach the host and the recordings. A decoder not drained by then is dropped
    /// with what it holds. Its own budget, before the input's close (TEARDOWN has its own).
    pub session_drain_ms: u32,
    /// A published camera: frames one attached process may hold at once. Past it the process
    /// misses frames (counted); the publisher's own host and the others keep their rate. Each
    /// published pool has this many slots per process besides the camera's own.
    pub share_hold_quota: u32,
    /// Processes attached to one published camera at once; more are refused (logged).
    pub share_max_consumers: u32,
    /// Publisher and attached process each send something at least this often ...
    pub share_heartbeat_ms: u32,
    /// ... and a side not heard from for this long is gone: its connection ends, and what it
    /// held is released (a stopped or hung process).
    pub share_silence_ms: u32,
    /// An attached camera whose publisher is gone tries to attach again this often (a local
    /// connection: no camera is asked for anything).
    pub share_reattach_ms: u32,
}

pub(crate) const DEFAULTS: Defaults = Defaults {
    pool_slots: 4,
    device: 0,
    open_timeout_ms: 5000,
    stall_timeout_ms: 5000,
    reconnect_min_ms: 250,
    reconnect_max_ms: 10_000,
    reconnect_fast_ms: 3000,
    gpu_free_min_age_ms: 100,
    gpu_maintain_every_ms: 20,
    pace_reanchor_late_ms: 50,
    udp_fallback_ms: 2000,
    loss_recovery_reconnect_ms: 10_000,
    max_picture_width: 8192,
    max_picture_height: 8192,
    pool_churn_max: 10,
    pool_churn_window_ms: 10_000,
    fruitless_sessions: 5,
    fruitless_window_ms: 60_000,
    udp_receive_buffer_bytes: 4 << 20,
    rtp_reorder_window_ms: 100,
    loss_reconnect_min_spacing_ms: 10_000,
    loss_reconnect_max_spacing_ms: 30_000,
    loss_keyframe_request_wait_ms: 2000,
    loss_keyframe_request_repeat_ms: 500,
    session_drain_ms: 1000,
    share_hold_quota: 3,
    share_max_consumers: 8,
    share_heartbeat_ms: 1000,
    share_silence_ms: 5000,
    share_reattach_ms: 200,
};

/// Bounds on `pool_slots`: one slot in flight plus at least one the host may hold.
pub(crate) const POOL_SLOTS_MIN: u32 = 2;
pub(crate) const POOL_SLOTS_MAX: u32 = 64;

/// Which decoder a camera asks for. `Auto` takes the best that works here and says which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum DecoderPolicy {
    /// Direct NVDEC, then FFmpeg's CUDA hwaccel, then software (+ upload on a GPU).
    #[default]
    Auto,
    /// Direct NVDEC or an error.
    Nvdec,
    /// FFmpeg's CUDA hwaccel or an error.
    FfmpegHw,
    /// FFmpeg's software decoder (uploaded when the camera is on a GPU).
    Software,
    /// nvJPEG's hardware back end (MJPEG only) or an error.
    Nvjpeg,
}

impl DecoderPolicy {
    /// Whether the host insisted on a hardware decoder (no quiet fall-back to the CPU).
    pub(crate) fn requires_hardware(self) -> bool {
        matches!(self, DecoderPolicy::Nvdec | DecoderPolicy::FfmpegHw | DecoderPolicy::Nvjpeg)
    }
}

/// What a camera trades: the newest frame as early as possible, or the most frames per GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LatencyMode {
    /// `Low` for live network sources, `Throughput` for files and the test source.
    #[default]
    Auto,
    Low,
    Throughput,
}

impl LatencyMode {
    /// Whether a camera runs at low latency: `Auto` means yes for live network sources.
    pub(crate) fn is_low(self, network: bool) -> bool {
        match self {
            LatencyMode::Auto => network,
            LatencyMode::Low => true,
            LatencyMode::Throughput => false,
        }
    }
}

/// How RTP reaches the camera over RTSP (`NVCAM_TRANSPORT_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Transport {
    /// TCP-interleaved unless the FFmpeg options name `rtsp_transport`.
    #[default]
    Default,
    Tcp,
    Udp,
    UdpMulticast,
    /// RTSP over an HTTP tunnel.
    Http,
    /// UDP, then TCP when no packet came over UDP within `DEFAULTS.udp_fallback_ms`.
    Auto,
}

/// What a camera does with a frame that is not exact (`NVCAM_INTEGRITY_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum IntegrityPolicy {
    /// Hand out exact frames only: after a loss the host sees a gap, never a smeared picture.
    #[default]
    ExactOnly,
    /// Hand out everything, flagged.
    MarkAll,
    /// Hand out exact frames; while the stream is not exact, the last exact frame again.
    HoldLastExact,
}

/// Where a camera's frames live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Decode on the CPU into host memory.
    Cpu,
    /// Decode on (or upload to) this CUDA device; frames are device memory.
    Gpu(i32),
    /// Each new connection (and each reconnect to a changed stream) on the GPU whose engines have
    /// the most room for it, then the most decode sessions left (`crate::gpu::placement`); frames
    /// are that device's memory.
    AnyGpu,
}

/// How a camera opens and runs (`NVCAM_OPEN_*` bits, as named switches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenFlags {
    /// Return from open at once; connect and retry in the background.
    pub async_open: bool,
    /// Restart a file when it ends.
    pub loop_file: bool,
    /// Never skip or drop a frame: wait for the host (files and tests).
    pub lossless: bool,
    /// Read files and the test source as fast as they decode.
    pub no_pacing: bool,
    /// Invalidate the camera's frame handles on every reconnect.
    pub release_clones_on_reconnect: bool,
    /// Deliver NV12 (8-bit) from 10- and 12-bit streams instead of P016.
    pub eight_bit: bool,
    /// Do not verify the TLS server's certificate (warned at every open).
    pub tls_insecure: bool,
}

/// A camera's validated options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    pub flags: OpenFlags,
    pub pool_slots: usize,
    pub placement: Placement,
    pub decoder: DecoderPolicy,
    pub open_timeout: Duration,
    pub stall_timeout: Duration,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub reconnect_fast: Duration,
    pub latency: LatencyMode,
    pub transport: Transport,
    pub integrity: IntegrityPolicy,
    /// Software decoder threads; 0 = FFmpeg's choice.
    pub decode_threads: usize,
    /// FFmpeg demuxer/protocol options, in the order given.
    pub ffmpeg: Vec<(String, String)>,
    /// The largest picture the camera takes, (width, height).
    pub max_picture: (u32, u32),
    /// Publish the camera under this name once it is open (`nvcam_publish=NAME` in the option
    /// string; see `nvcam_camera_publish`).
    pub publish: Option<String>,
}

fn ms(v: u32) -> Duration {
    Duration::from_millis(v as u64)
}

impl Default for Options {
    fn default() -> Self {
        let d = &DEFAULTS;
        Options {
            flags: OpenFlags::default(),
            pool_slots: d.pool_slots as usize,
            placement: Placement::Gpu(d.device),
            decoder: DecoderPolicy::Auto,
            open_timeout: ms(d.open_timeout_ms),
            stall_timeout: ms(d.stall_timeout_ms),
            reconnect_min: ms(d.reconnect_min_ms),
            reconnect_max: ms(d.reconnect_max_ms),
            reconnect_fast: ms(d.reconnect_fast_ms),
            latency: LatencyMode::Auto,
            transport: Transport::Default,
            integrity: IntegrityPolicy::ExactOnly,
            decode_threads: 0,
            ffmpeg: Vec::new(),
            max_picture: (d.max_picture_width, d.max_picture_height),
            publish: None,
        }
    }
}

impl Options {
    /// Refuses a picture (or a stream that claims one) larger than the camera's limit, with the
    /// reason; the caller counts it.
    pub(crate) fn check_picture_size(&self, width: u32, height: u32) -> crate::status::Result<()> {
        let (w, h) = self.max_picture;
        if width <= w && height <= h {
            return Ok(());
        }
        Err(crate::status::Error::picture_refused(format!(
            "the stream's picture {width}x{height} is larger than this camera's limit {w}x{h} (max_picture_width/height of its options)"
        )))
    }

    /// Whether an FFmpeg option was given (so a default for it is not added).
    pub(crate) fn has_ffmpeg_option(&self, key: &str) -> bool {
        self.ffmpeg.iter().any(|(k, _)| k == key)
    }
}

/// Library-wide settings from `nvcam_init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// Most hardware decode sessions per GPU (None = no cap); further cameras decode in software.
    pub max_hw_decoders_per_device: Option<u32>,
    pub gpu_free_min_age: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config { max_hw_decoders_per_device: None, gpu_free_min_age: ms(DEFAULTS.gpu_free_min_age_ms) }
    }
}
