//! RTP loss detection: which packets the network or a sender lost, and which pictures that leaves
//! inexact.
//!
//! - [`gaps`]: the gaps in RTP sequence numbers that nvcam's patched FFmpeg reports, read on the
//!   camera's thread (any transport: UDP, multicast, TCP-interleaved, HTTP tunnel, TLS).
//! - [`sockets`]: the session's UDP sockets (for the datagrams the kernel dropped at them) and
//!   the key-frame requests (RTCP PLI/FIR) the demuxer sent, reported the same way.
//! - [`integrity`]: the pictures a gap hit ([`integrity::hits_of`]) and whether each picture that
//!   comes out of the decoder is exact, suspect or damaged, the same for every decoder.
//!
//! The camera's session feeds them (`camera/loss_watch.rs`: the loss counters and the reconnect
//! rule); the bitstream readers (`crate::bitstream`) supply recovery points, H.264's `frame_num`
//! gaps and whole-JPEG checks.

pub(crate) mod gaps;
pub(crate) mod integrity;
pub(crate) mod sockets;
