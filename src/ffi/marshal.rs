//! The only place C structs and `NVCAM_*` values are built from, or read into, the core's Rust
//! types. Everything below `ffi` speaks enums, switches and snapshots. Configuration, options,
//! statistics, frame info and log levels are here; conversion specs in [`spec`], recordings in
//! [`record`].

mod record;
mod spec;

pub(crate) use record::{record_stats, record_status};
pub(crate) use spec::{convert_spec, cpu_reference, DstKind};

use super::constants::*;
use super::types::*;
use crate::camera::{CameraState, Stats};
use crate::config::{Config, DecoderPolicy, IntegrityPolicy, LatencyMode, Transport, OpenFlags, Options, Placement, DEFAULTS, POOL_SLOTS_MAX, POOL_SLOTS_MIN};
use crate::decode::DecoderKind;
use crate::frame::{Frame, FrameIntegrity, Matrix, Range, Siting, TimeSource, Transfer};
use crate::gpu::GpuStats;
use crate::pool::{Depth, MemoryKind};
use crate::status::*;
use log::{Level, LevelFilter};
use std::time::Duration;

/// `nvcam_config_t.flags` bits that mean something (none yet: every bit is reserved).
const CONFIG_FLAGS_KNOWN: u32 = 0;

/// A zero in a C field means the default.
fn or_default(v: u32, default: u32) -> u32 {
    if v == 0 {
        default
    } else {
        v
    }
}

fn ms(v: u32, default: u32) -> Duration {
    Duration::from_millis(or_default(v, default) as u64)
}

pub(crate) fn config_from(c: Option<&nvcam_config>) -> Result<Config> {
    let Some(c) = c else { return Ok(Config::default()) };
    if c.flags & !CONFIG_FLAGS_KNOWN != 0 {
        return Err(Error::arg(format!("nvcam_config_t.flags 0x{:x}: reserved bits must be 0", c.flags)));
    }
    Ok(Config {
        max_hw_decoders_per_device: (c.max_hw_decoders_per_device != 0).then_some(c.max_hw_decoders_per_device),
        gpu_free_min_age: ms(c.gpu_free_min_age_ms, DEFAULTS.gpu_free_min_age_ms),
    })
}

/// `nvcam_camera_options_init`'s values: the defaults, written out.
pub(crate) fn options_defaults() -> nvcam_camera_options {
    let d = &DEFAULTS;
    nvcam_camera_options {
        struct_size: std::mem::size_of::<nvcam_camera_options>() as u32,
        flags: 0,
        pool_slots: d.pool_slots,
        device: d.device,
        decoder: NVCAM_DECODER_AUTO,
        open_timeout_ms: d.open_timeout_ms,
        stall_timeout_ms: d.stall_timeout_ms,
        reconnect_min_ms: d.reconnect_min_ms,
        reconnect_max_ms: d.reconnect_max_ms,
        decode_threads: 0,
        ffmpeg_options: std::ptr::null(),
        reconnect_fast_ms: d.reconnect_fast_ms,
        latency: NVCAM_LATENCY_AUTO,
        transport: NVCAM_TRANSPORT_DEFAULT,
        integrity: NVCAM_INTEGRITY_EXACT,
        max_picture_width: d.max_picture_width,
        max_picture_height: d.max_picture_height,
        reserved: [0; 1],
    }
}

fn open_flags(bits: u32) -> Result<OpenFlags> {
    if bits & !NVCAM_OPEN_ALL != 0 {
        return Err(Error::arg(format!("unknown flag bits 0x{:x}", bits & !NVCAM_OPEN_ALL)));
    }
    let on = |b: u32| bits & b != 0;
    Ok(OpenFlags {
        async_open: on(NVCAM_OPEN_ASYNC),
        loop_file: on(NVCAM_OPEN_LOOP),
        lossless: on(NVCAM_OPEN_LOSSLESS),
        no_pacing: on(NVCAM_OPEN_NO_PACING),
        release_clones_on_reconnect: on(NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT),
        eight_bit: on(NVCAM_OPEN_8BIT),
        tls_insecure: on(NVCAM_OPEN_TLS_INSECURE),
    })
}

fn latency(v: u32) -> Result<LatencyMode> {
    Ok(match v {
        NVCAM_LATENCY_AUTO => LatencyMode::Auto,
        NVCAM_LATENCY_LOW => LatencyMode::Low,
        NVCAM_LATENCY_THROUGHPUT => LatencyMode::Throughput,
        _ => return Err(Error::arg(format!("latency {v} is not an NVCAM_LATENCY_* value"))),
    })
}

fn transport(v: u32) -> Result<Transport> {
    Ok(match v {
        NVCAM_TRANSPORT_DEFAULT => Transport::Default,
        NVCAM_TRANSPORT_TCP => Transport::Tcp,
        NVCAM_TRANSPORT_UDP => Transport::Udp,
        NVCAM_TRANSPORT_UDP_MULTICAST => Transport::UdpMulticast,
        NVCAM_TRANSPORT_HTTP => Transport::Http,
        NVCAM_TRANSPORT_AUTO => Transport::Auto,
        _ => return Err(Error::arg(format!("transport {v} is not an NVCAM_TRANSPORT_* value"))),
    })
}

fn integrity(v: u32) -> Result<IntegrityPolicy> {
    Ok(match v {
        NVCAM_INTEGRITY_EXACT => IntegrityPolicy::ExactOnly,
        NVCAM_INTEGRITY_MARK => IntegrityPolicy::MarkAll,
        NVCAM_INTEGRITY_HOLD => IntegrityPolicy::HoldLastExact,
        _ => return Err(Error::arg(format!("integrity {v} is not an NVCAM_INTEGRITY_* value"))),
    })
}

fn decoder_policy(v: u32) -> Result<DecoderPolicy> {
    Ok(match v {
        NVCAM_DECODER_AUTO => DecoderPolicy::Auto,
        NVCAM_DECODER_NVDEC => DecoderPolicy::Nvdec,
        NVCAM_DECODER_FFMPEG_HW => DecoderPolicy::FfmpegHw,
        NVCAM_DECODER_SOFTWARE => DecoderPolicy::Software,
        NVCAM_DECODER_NVJPEG => DecoderPolicy::Nvjpeg,
        _ => return Err(Error::arg(format!("decoder {v} is not an NVCAM_DECODER_* value"))),
    })
}

/// A camera's options from the C struct (`None`: NULL, all defaults). `ffmpeg` is the option
/// string, already read from the caller's memory.
pub(crate) fn options_from(c: Option<&nvcam_camera_options>, ffmpeg: Option<&str>) -> Result<Options> {
    let mut o = Options::default();
    if let Some(c) = c {
        let d = &DEFAULTS;
        if c.device < NVCAM_DEVICE_ANY {
            return Err(Error::arg(format!("device {} (use -1 for the CPU, -2 for any GPU, or a GPU ordinal)", c.device)));
        }
        if c.pool_slots != 0 && !(POOL_SLOTS_MIN..=POOL_SLOTS_MAX).contains(&c.pool_slots) {
            return Err(Error::arg(format!(
                "pool_slots {} ({POOL_SLOTS_MIN}..{POOL_SLOTS_MAX}, 0 = {})",
                c.pool_slots, d.pool_slots
            )));
        }
        o.flags = open_flags(c.flags)?;
        o.pool_slots = or_default(c.pool_slots, d.pool_slots) as usize;
        o.placement = match c.device {
            NVCAM_DEVICE_CPU => Placement::Cpu,
            NVCAM_DEVICE_ANY => Placement::AnyGpu,
            d => Placement::Gpu(d),
        };
        o.decoder = decoder_policy(c.decoder)?;
        o.open_timeout = ms(c.open_timeout_ms, d.open_timeout_ms);
        o.stall_timeout = ms(c.stall_timeout_ms, d.stall_timeout_ms);
        o.reconnect_min = ms(c.reconnect_min_ms, d.reconnect_min_ms);
        o.reconnect_max = ms(c.reconnect_max_ms, d.reconnect_max_ms).max(o.reconnect_min);
        o.reconnect_fast = ms(c.reconnect_fast_ms, d.reconnect_fast_ms);
        o.latency = latency(c.latency)?;
        o.transport = transport(c.transport)?;
        o.integrity = integrity(c.integrity)?;
        o.decode_threads = c.decode_threads as usize;
        o.max_picture = (or_default(c.max_picture_width, d.max_picture_width), or_default(c.max_picture_height, d.max_picture_height));
        if c.reserved.iter().any(|&r| r != 0) {
            return Err(Error::arg("nvcam_camera_options_t.reserved must be 0"));
        }
    }
    if let Some(s) = ffmpeg {
        o.ffmpeg = crate::source::parse_options(s)?;
        // nvcam's own keys in the option string: taken out before FFmpeg sees it.
        if let Some(i) = o.ffmpeg.iter().position(|(k, _)| k == "nvcam_publish") {
            let (_, name) = o.ffmpeg.remove(i);
            crate::share::check_name(&name)?;
            o.publish = Some(name);
        }
    }
    Ok(o)
}

fn state(s: CameraState) -> u32 {
    match s {
        CameraState::Connecting => NVCAM_STATE_CONNECTING,
        CameraState::Streaming => NVCAM_STATE_STREAMING,
        CameraState::Stalled => NVCAM_STATE_STALLED,
        CameraState::Reconnecting => NVCAM_STATE_RECONNECTING,
        CameraState::Closed => NVCAM_STATE_CLOSED,
        CameraState::Failed => NVCAM_STATE_FAILED,
        CameraState::Ended => NVCAM_STATE_ENDED,
    }
}

fn memory(m: MemoryKind) -> u32 {
    match m {
        MemoryKind::Host => NVCAM_MEMORY_HOST,
        MemoryKind::Device => NVCAM_MEMORY_DEVICE,
    }
}

/// The `NVCAM_DECODER_*` value a decoder in use reports (the policy that would pick it alone).
fn decoder(d: Option<DecoderKind>) -> u32 {
    match d {
        Some(DecoderKind::Nvdec) => NVCAM_DECODER_NVDEC,
        Some(DecoderKind::FfmpegCuda) => NVCAM_DECODER_FFMPEG_HW,
        Some(DecoderKind::Nvjpeg) => NVCAM_DECODER_NVJPEG,
        Some(DecoderKind::Software | DecoderKind::SoftwareUpload) | None => NVCAM_DECODER_SOFTWARE,
    }
}

pub(crate) fn camera_stats(s: &Stats, struct_size: u32) -> nvcam_camera_stats {
    let (mem, device) = s.memory.map(|(m, d)| (memory(m), d)).unwrap_or((NVCAM_MEMORY_HOST, NVCAM_DEVICE_CPU));
    nvcam_camera_stats {
        struct_size,
        state: state(s.state),
        frames_decoded: s.decoded,
        frames_delivered: s.delivered,
        frames_dropped: s.dropped,
        frames_skipped: s.skipped,
        reconnects: s.reconnects,
        pool_slots_total: s.slots_total,
        pool_slots_in_use: s.slots_in_use,
        bytes_held: s.bytes_held,
        fps: s.fps,
        width: s.width,
        height: s.height,
        reconnect_attempt: s.reconnect_attempt,
        next_retry_ms: s.next_retry_ms,
        stream_changes: s.stream_changes,
        memory: mem,
        device,
        decoder: decoder(s.decoder),
        last_error_code: s.last_error.map_or(super::status::NVCAM_OK, super::status::code),
        _pad0: 0,
        live_handles: s.live_handles,
        decode_latency_p50_us: s.decode_latency_us.0,
        decode_latency_p99_us: s.decode_latency_us.1,
        frames_corrupt: s.frames_corrupt,
        packets_lost: s.packets_lost,
        last_loss_ns: s.last_loss_ns,
        key_interval_ms: s.key_interval_ms,
        reconnect_to_key_ms: s.reconnect_to_key_ms,
        loss_reconnects: s.loss_reconnects,
        session_panics: s.session_panics,
        pictures_refused: s.pictures_refused,
        consumers: s.consumers,
        source_state: state(s.source.map_or(s.state, |o| o.state)),
        source_frames_decoded: s.source.map_or(s.decoded, |o| o.decoded),
        source_frames_dropped: s.source.map_or(s.dropped, |o| o.dropped),
        source_fps: s.source.map_or(s.fps, |o| o.fps),
        kernel_drops: s.kernel_drops,
        keyframe_requests: s.keyframe_requests,
    }
}

pub(crate) fn frame_info(f: &Frame, struct_size: u32) -> nvcam_frame_info {
    let g = *f.geom();
    let (matrix, range) = f.color_resolved();
    nvcam_frame_info {
        struct_size,
        width: g.width,
        height: g.height,
        format: match g.depth {
            Depth::Eight => NVCAM_FORMAT_NV12,
            Depth::Sixteen => NVCAM_FORMAT_P016,
        },
        memory: memory(f.memory()),
        device: f.device(),
        pitch: g.pitch as u64,
        y_ptr: f.y_addr(),
        uv_ptr: f.uv_addr(),
        nv12_size: g.packed_size(0).unwrap_or(0) as u64,
        seq: f.seq,
        pts_us: f.pts_us,
        wallclock_ns: f.wallclock_ns,
        camera: f.owner,
        capture_ns: f.capture_ns,
        time_source: match f.time_source {
            TimeSource::Receive => NVCAM_TIME_RECEIVE,
            TimeSource::Source => NVCAM_TIME_SOURCE,
        },
        color_matrix: matrix_code(matrix),
        color_range: range_code(range),
        color_transfer: transfer_code(f.color.transfer),
        chroma_siting: siting_code(f.color.siting),
        bit_depth: f.bits,
        flags: frame_flags(f.integrity),
        _pad1: 0,
    }
}

fn frame_flags(i: FrameIntegrity) -> u32 {
    let bit = |on: bool, b: u32| if on { b } else { 0 };
    bit(i.corrupt, NVCAM_FRAME_CORRUPT) | bit(i.after_loss, NVCAM_FRAME_AFTER_LOSS) | bit(i.keyframe, NVCAM_FRAME_KEYFRAME)
}

fn transfer_code(t: Transfer) -> u32 {
    match t {
        Transfer::Unspecified => NVCAM_TRANSFER_UNKNOWN,
        Transfer::Sdr => NVCAM_TRANSFER_SDR,
        Transfer::Pq => NVCAM_TRANSFER_PQ,
        Transfer::Hlg => NVCAM_TRANSFER_HLG,
    }
}

/// The siting conversions use (unspecified resolved to left).
fn siting_code(s: Siting) -> u32 {
    match s.resolved() {
        Siting::Left | Siting::Unspecified => NVCAM_SITING_LEFT,
        Siting::Center => NVCAM_SITING_CENTER,
        Siting::TopLeft => NVCAM_SITING_TOPLEFT,
        Siting::Top => NVCAM_SITING_TOP,
        Siting::BottomLeft => NVCAM_SITING_BOTTOMLEFT,
        Siting::Bottom => NVCAM_SITING_BOTTOM,
    }
}

fn matrix_code(m: Matrix) -> u32 {
    match m {
        Matrix::Unspecified => NVCAM_MATRIX_UNKNOWN,
        Matrix::Bt601 => NVCAM_MATRIX_BT601,
        Matrix::Bt709 => NVCAM_MATRIX_BT709,
        Matrix::Bt2020 => NVCAM_MATRIX_BT2020,
    }
}

fn range_code(r: Range) -> u32 {
    match r {
        Range::Unspecified => NVCAM_RANGE_UNKNOWN,
        Range::Limited => NVCAM_RANGE_LIMITED,
        Range::Full => NVCAM_RANGE_FULL,
    }
}

pub(crate) fn gpu_stats(s: &GpuStats, struct_size: u32) -> nvcam_gpu_stats {
    nvcam_gpu_stats {
        struct_size,
        device: s.device,
        device_count: s.device_count,
        contexts: s.contexts,
        hw_decoders: s.hw_decoders,
        upload_decoders: s.upload_decoders,
        device_allocs: s.device_allocs,
        device_frees: s.device_frees,
        pinned_allocs: s.pinned_allocs,
        pinned_frees: s.pinned_frees,
        syncs: s.syncs,
        ready_waits: s.ready_waits,
        hw_fallbacks: s.hw_fallbacks,
        frames_copied: s.frames_copied,
        bytes_in_pools: s.bytes_in_pools,
        bytes_deferred: s.bytes_deferred,
        deferred_buffers: s.deferred_buffers,
        mem_free: s.mem_free,
        mem_total: s.mem_total,
        session_limit: s.session_limit,
        decoder_load: s.decoder_load.unwrap_or(u32::MAX),
        sessions_exhausted: s.sessions_exhausted,
        decoder_demand: s.decoder_demand.unwrap_or(u32::MAX),
        load_refusals: s.load_refusals.min(u32::MAX as u64) as u32,
        reserved: [0; 1],
    }
}

/// `NVCAM_LOG_*` → a level filter.
pub(crate) fn log_filter(n: i32) -> Result<LevelFilter> {
    Ok(match n {
        NVCAM_LOG_OFF => LevelFilter::Off,
        NVCAM_LOG_ERROR => LevelFilter::Error,
        NVCAM_LOG_WARN => LevelFilter::Warn,
        NVCAM_LOG_INFO => LevelFilter::Info,
        NVCAM_LOG_DEBUG => LevelFilter::Debug,
        NVCAM_LOG_TRACE => LevelFilter::Trace,
        _ => return Err(Error::arg(format!("log level {n} ({NVCAM_LOG_OFF}..{NVCAM_LOG_TRACE})"))),
    })
}

/// A message's level → `NVCAM_LOG_*`.
pub(crate) fn log_level(l: Level) -> i32 {
    match l {
        Level::Error => NVCAM_LOG_ERROR,
        Level::Warn => NVCAM_LOG_WARN,
        Level::Info => NVCAM_LOG_INFO,
        Level::Debug => NVCAM_LOG_DEBUG,
        Level::Trace => NVCAM_LOG_TRACE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nvcam_camera_options_init`, a zeroed struct, NULL and `Options::default()` are one thing.
    #[test]
    fn c_and_rust_defaults_agree() {
        let init = options_defaults();
        let zeroed = nvcam_camera_options {
            struct_size: std::mem::size_of::<nvcam_camera_options>() as u32,
            flags: 0,
            pool_slots: 0,
            device: 0,
            decoder: 0,
            open_timeout_ms: 0,
            stall_timeout_ms: 0,
            reconnect_min_ms: 0,
            reconnect_max_ms: 0,
            decode_threads: 0,
            ffmpeg_options: std::ptr::null(),
            reconnect_fast_ms: 0,
            latency: 0,
            transport: 0,
            integrity: 0,
            max_picture_width: 0,
            max_picture_height: 0,
            reserved: [0; 1],
        };
        let d = Options::default();
        assert_eq!(options_from(Some(&init), None).unwrap(), d);
        assert_eq!(options_from(Some(&zeroed), None).unwrap(), d);
        assert_eq!(options_from(None, None).unwrap(), d);
        let zc = nvcam_config { struct_size: 64, ..Default::default() };
        assert_eq!(config_from(Some(&zc)).unwrap(), Config::default());
        assert_eq!(config_from(None).unwrap(), Config::default());
    }

    /// A reserved field may mean something later: a value in it now is a host bug, not a default.
    #[test]
    fn reserved_option_fields_and_unknown_latency_are_refused() {
        let mut o = options_defaults();
        o.reserved[0] = 1;
        assert_eq!(options_from(Some(&o), None).unwrap_err().kind, ErrorKind::InvalidArgument);
        let mut o = options_defaults();
        o.transport = NVCAM_TRANSPORT_AUTO + 1;
        assert_eq!(options_from(Some(&o), None).unwrap_err().kind, ErrorKind::InvalidArgument);
        for (t, i) in [(6, 0), (0, 3)] {
            let mut o = options_defaults();
            (o.transport, o.integrity) = (t, i);
            assert_eq!(options_from(Some(&o), None).unwrap_err().kind, ErrorKind::InvalidArgument, "transport {t} integrity {i}");
        }
        let mut o = options_defaults();
        o.integrity = NVCAM_INTEGRITY_HOLD;
        assert_eq!(options_from(Some(&o), None).unwrap().integrity, IntegrityPolicy::HoldLastExact);
        let mut o = options_defaults();
        o.latency = 3;
        assert_eq!(options_from(Some(&o), None).unwrap_err().kind, ErrorKind::InvalidArgument);
        o.latency = NVCAM_LATENCY_LOW;
        assert_eq!(options_from(Some(&o), None).unwrap().latency, LatencyMode::Low);
    }

    #[test]
    fn reserved_config_flags_are_refused() {
        let c = nvcam_config { struct_size: 64, flags: 0xdead_beef, ..Default::default() };
        assert_eq!(config_from(Some(&c)).unwrap_err().kind, ErrorKind::InvalidArgument);
    }

    #[test]
    fn every_open_flag_bit_maps_to_one_switch() {
        for bit in 0..5 {
            let f = open_flags(1 << bit).unwrap();
            let on = [f.async_open, f.loop_file, f.lossless, f.no_pacing, f.release_clones_on_reconnect];
            assert_eq!(on.iter().filter(|&&b| b).count(), 1, "bit {bit}");
        }
        assert!(open_flags(NVCAM_OPEN_ALL + 1).is_err());
    }
}
