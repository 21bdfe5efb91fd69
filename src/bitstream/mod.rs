//! Reading compressed packets without decoding them: what the camera, every decoder and the
//! recorder need to know of a stream's bytes, answered the same for all of them.
//!
//! - [`nal`]: H.264 and HEVC NAL units and their bits (Annex B or length-prefixed).
//! - [`recovery`]: which packets are recovery points (where exact pictures start again).
//! - [`frame_num`]: H.264's reference chain, a gap in `frame_num` being a lost reference.
//! - [`jpeg_check`]: whether a JPEG packet is whole, from its markers.

pub(crate) mod frame_num;
pub(crate) mod jpeg_check;
pub(crate) mod nal;
pub(crate) mod recovery;
