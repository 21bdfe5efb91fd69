//! Entries to nvcam's own parsers of camera and host bytes for the fuzzers (`tests/fuzz_parsers.rs`),
//! compiled only with the `test-hooks` feature. Each entry drives a parser the way the camera,
//! the loss watch or the recorder drives it, so a fuzzer reaches the same code with the same
//! state between calls, and nothing here decides anything of its own.

use crate::bitstream::frame_num::FrameNumCheck;
use crate::bitstream::jpeg_check;
use crate::bitstream::recovery::{KeyPoint, KeyScan};
use crate::record::inband::Watch;
use crate::record::params::Params;
use crate::rtp_loss::gaps;
use crate::rtp_loss::integrity::{hits_of, Integrity};
use ff::ffi;
use ffmpeg_next as ff;
use std::sync::Arc;
use std::time::Instant;

/// The codecs whose bytes nvcam reads itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    H264,
    Hevc,
    Jpeg,
    /// Any other: the readers fall back to the demuxer's flags.
    Other,
}

/// Codec parameters as a demuxer gives them: the codec, the picture size and the extradata
/// (avcC, hvcC or Annex B parameter sets).
fn parameters(codec: Codec, extradata: &[u8], (width, height): (i32, i32)) -> ff::codec::Parameters {
    let mut p = ff::codec::Parameters::new();
    let id = match codec {
        Codec::H264 => ffi::AVCodecID::AV_CODEC_ID_H264,
        Codec::Hevc => ffi::AVCodecID::AV_CODEC_ID_HEVC,
        Codec::Jpeg => ffi::AVCodecID::AV_CODEC_ID_MJPEG,
        Codec::Other => ffi::AVCodecID::AV_CODEC_ID_VP8,
    };
    // SAFETY: `p` owns a fresh AVCodecParameters; the extradata is a padded av_mallocz copy it
    // owns from here on (avcodec_parameters_free frees it), left out when the allocation fails.
    unsafe {
        let q = &mut *p.as_mut_ptr();
        q.codec_type = ffi::AVMediaType::AVMEDIA_TYPE_VIDEO;
        q.codec_id = id;
        (q.width, q.height) = (width, height);
        if !extradata.is_empty() && extradata.len() < i32::MAX as usize / 2 {
            let pad = ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
            let x = ffi::av_mallocz(extradata.len() + pad) as *mut u8;
            if !x.is_null() {
                std::ptr::copy_nonoverlapping(extradata.as_ptr(), x, extradata.len());
                q.extradata = x;
                q.extradata_size = extradata.len() as i32;
            }
        }
    }
    p
}

/// One gap report as nvcam's patched RTP demuxer hands it over (`NvcamRtpGap`'s fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct GapReport {
    pub stream_index: i32,
    pub pts_before: i64,
    pub pts_after: i64,
    pub ts_before: u32,
    pub ts_after: u32,
    pub lost: u32,
    pub seq_before: u16,
    pub seq_after: u16,
    pub marker_before: u8,
    pub payload_after_len: u8,
    pub payload_after: [u8; 6],
}

/// What the readers made of one packet, for a fuzzer's own checks.
#[derive(Clone, Copy, Debug, Default)]
pub struct PacketReport {
    /// A recovery point: `Some(0)` for a full one, `Some(n + 1)` for a recovery-point SEI of
    /// count `n`, `None` for none.
    pub recovery: Option<u64>,
    pub reference: bool,
    pub starts_whole: bool,
    pub frame_num_gap: bool,
    pub jpeg_damage: Option<&'static str>,
    /// The recorder saw new parameters (size, profile, layout) at this key frame: their size.
    pub new_size: Option<(i32, i32)>,
}

/// One stream's parsers, fed as a camera session feeds them: packets on their way into the
/// decoder, the RTP gaps the demuxer reports, pictures on their way out.
pub struct Stream {
    keys: KeyScan,
    frame_nums: Option<FrameNumCheck>,
    integrity: Integrity,
    watch: Watch,
    params: Arc<Params>,
    jpeg: bool,
    time_base: ff::Rational,
    taken: Vec<gaps::RtpGap>,
}

impl Stream {
    /// A stream of `codec` whose demuxer gave `extradata` and a picture `size`, time base
    /// `1/tb_den`.
    pub fn new(codec: Codec, extradata: &[u8], size: (i32, i32), tb_den: i32) -> Stream {
        let p = parameters(codec, extradata, size);
        let time_base = ff::Rational::new(1, tb_den);
        let params = Params::of(&p, time_base.into()).expect("avcodec_parameters_alloc");
        gaps::start();
        Stream {
            keys: KeyScan::new(&p),
            frame_nums: FrameNumCheck::for_stream(&p),
            integrity: Integrity::at_session_start(),
            watch: Watch::new(&p),
            params,
            jpeg: codec == Codec::Jpeg,
            time_base,
            taken: Vec::new(),
        }
    }

    /// The demuxer reports a gap (through FFmpeg's control-message callback, as the patched RTP
    /// demuxer calls it); it waits until the next packet, as on a camera's thread.
    pub fn gap(&mut self, g: GapReport) {
        gaps::deliver(&gaps::NvcamRtpGap {
            size: std::mem::size_of::<gaps::NvcamRtpGap>() as u32,
            stream_index: g.stream_index,
            pts_before: g.pts_before,
            pts_after: g.pts_after,
            ts_before: g.ts_before,
            ts_after: g.ts_after,
            lost: g.lost,
            seq_before: g.seq_before,
            seq_after: g.seq_after,
            marker_before: g.marker_before,
            payload_after_len: g.payload_after_len,
            payload_after: g.payload_after,
        });
    }

    /// A packet goes into the decoder (`key`: the demuxer's key flag, `pts` in the time base).
    pub fn packet(&mut self, data: &[u8], key: bool, pts: Option<i64>) -> PacketReport {
        let now = Instant::now();
        let p_us = crate::decode::pts_us(pts, self.time_base);
        let kp = self.keys.classify(data, key);
        let _ = gaps::take(&mut self.taken);
        let tracks_refs = self.frame_nums.as_ref().is_some_and(|c| c.tracking());
        for g in std::mem::take(&mut self.taken) {
            let _ = self.keys.rtp_continues_key(g.payload_after());
            match hits_of(&g, &self.keys, self.time_base, tracks_refs) {
                Some(hits) => {
                    let before = crate::decode::pts_us(g.pts_before, self.time_base);
                    hits.into_iter().flatten().for_each(|h| self.integrity.gap(h, before, now))
                }
                None => self.integrity.lost(now),
            }
        }
        let pic = self.keys.picture(data);
        let _ = self.keys.hevc_type(data);
        let _ = self.keys.rtp_starts_unit(data);
        self.integrity.packet(kp, pic, p_us, now);
        let _ = self.integrity.is_recovery_point(p_us);
        let frame_num_gap = self.frame_nums.as_mut().is_some_and(|c| c.gap_before(data));
        let jpeg_damage = if self.jpeg { jpeg_check::damage(data) } else { None };
        if frame_num_gap || jpeg_damage.is_some() {
            self.integrity.lost(now);
        }
        let mut new_size = None;
        if key || kp != KeyPoint::None {
            let _ = self.watch.needs_sets(&self.params);
            if let Some(next) = self.watch.check(data, None, &self.params) {
                new_size = Some(next.size());
                self.params = next;
            }
        }
        let recovery = match kp {
            KeyPoint::None => None,
            KeyPoint::Full => Some(0),
            KeyPoint::After(n) => Some(n as u64 + 1),
        };
        PacketReport { recovery, reference: pic.reference, starts_whole: pic.starts_whole, frame_num_gap, jpeg_damage, new_size }
    }

    /// A picture comes out of the decoder: (corrupt, after loss, key frame) as its frame is marked.
    pub fn picture(&mut self, pts: Option<i64>, damaged: bool) -> (bool, bool, bool) {
        let now = Instant::now();
        let f = self.integrity.picture(crate::decode::pts_us(pts, self.time_base), damaged, now);
        let _ = self.integrity.suspect_for(now);
        (f.corrupt, f.after_loss, f.keyframe)
    }
}

/// Whether a JPEG packet is whole, from its markers (`None`) or why not.
pub fn jpeg_damage(data: &[u8]) -> Option<&'static str> {
    jpeg_check::damage(data)
}

/// A camera URL as `nvcam_camera_open` reads it: what FFmpeg would be handed and its protocol
/// whitelist, or the error's text.
pub fn url(s: &str) -> Result<(String, &'static str), String> {
    let src = crate::source::parse(s).map_err(|e| e.msg)?;
    let _ = (src.is_live(), src.is_rtsp());
    Ok((src.ffmpeg_target().0, src.protocol_whitelist()))
}

/// An FFmpeg option string as the camera options carry it, then its values checked against
/// FFmpeg's option tables (as every open does): the pairs, or the error's text.
pub fn options(s: &str) -> Result<Vec<(String, String)>, String> {
    let pairs = crate::source::parse_options(s).map_err(|e| e.msg)?;
    crate::ffmpeg::optcheck::check_values(&pairs).map_err(|e| e.msg)?;
    Ok(pairs)
}

/// A datagram of the camera-sharing protocol as a peer sent it: parsed, and written again when it
/// parses (`None` when it is refused).
pub fn share_message(b: &[u8]) -> Option<Vec<u8>> {
    crate::share::wire::Msg::decode(b).ok().map(|m| m.encode())
}

/// One well-formed datagram of every kind of the sharing protocol, to mutate.
pub fn share_samples() -> Vec<Vec<u8>> {
    crate::share::wire::samples().iter().map(|m| m.encode()).collect()
}

/// Where the socket of the camera this process's user publishes as `name` is (Linux).
#[cfg(target_os = "linux")]
pub fn share_socket(name: &str) -> Result<std::path::PathBuf, String> {
    crate::share::endpoint::socket_path(name).map_err(|e| e.msg)
}

/// The pipe of the camera this process's user publishes as `name` (Windows).
#[cfg(windows)]
pub fn share_pipe(name: &str) -> Result<String, String> {
    crate::share::endpoint::pipe_name(name).map_err(|e| e.msg)
}
