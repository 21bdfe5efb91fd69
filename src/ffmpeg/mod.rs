//! Small owners of FFmpeg objects that the rest of the crate uses through safe methods: an option
//! dictionary that reports what FFmpeg left unused, the check of option values against FFmpeg's
//! option tables, the Annex B bitstream filter, pixel format names, the URL schemes this build can
//! open, FFmpeg's log routed into ours, its certificate and SRT passphrase refusals and RTSP
//! replies over its limits (the lost RTP packets nvcam's patched FFmpeg reports are read in
//! `crate::rtp_loss`), and the check that the FFmpeg nvcam runs on is its own build.

pub(crate) mod annexb;
pub(crate) mod dict;
pub(crate) mod log;
pub(crate) mod optcheck;
pub(crate) mod own;
pub(crate) mod pixfmt;
pub(crate) mod protocols;
pub(crate) mod rtsp_limits;
pub(crate) mod srt;
pub(crate) mod tls;
