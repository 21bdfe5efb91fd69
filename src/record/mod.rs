//! Recording a camera's stream to files, without re-encoding: event clips that reach back before
//! their trigger (pre-roll from a packet cache) and on after it (post), written off the camera's
//! thread.
//!
//! - [`cache`]: the last `pre` of packets from a key frame on, bounded in time and bytes.
//! - [`muxer`]: one file (Matroska or fragmented MP4), `NAME.part` until complete;
//!   [`noreplace`]: its final rename, which never replaces a file.
//! - [`recorder`]: the camera's recorder, and a recording as its handle holds it.
//! - [`writer`]: a recording's writer thread; [`shared`] what it shares with the camera and
//!   the host (state, status, messages).
//! - [`cut`]: where a recording's packets end: after whole mini-GOPs, at a presentation time.
//! - [`inband`]: a key frame that changes the stream's size inside a session (new parameters).
//!
//! The camera's thread calls [`Recorder::session_start`], [`Recorder::packet`] and
//! [`Recorder::picture`]; while the camera has no cache and no recording, both take no lock:
//! `picture` returns after one atomic load, `packet` notes the newest packet's timestamps in
//! atomics (a recording started later takes its trigger from them, and the recorder's clock
//! catches up then). A packet goes to the cache and to each running recording's bounded queue;
//! a recording whose queue is full (a slow or full disk) ends with `ErrorKind::Io`, the camera never
//! waits for it.

mod cache;
mod clock;
mod cut;
pub(crate) mod inband;
mod packet;
pub(crate) mod params;
pub(crate) mod shared;
mod paths;
mod noreplace;
mod tally;
pub(crate) mod segments;
pub(crate) mod writer;
pub(crate) mod muxer;
mod handles;
mod bounds;
mod recorder;

pub(crate) use handles::{get, register, release, release_all};

pub(crate) use recorder::{Recorder, RecorderStats, Recording, Reported};

/// A slow disk for the tests (`test-hooks`): a delay per written packet, a shorter queue.
#[cfg(feature = "test-hooks")]
pub mod hooks;
