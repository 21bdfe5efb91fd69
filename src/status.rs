//! The library's error type: what went wrong ([`ErrorKind`]) and a message naming the cause where
//! it happened.
//!
//! Inside the library errors are kinds, and every decision that depends on an error (retry or
//! give up, recreate a decoder, end a session, mark a stall) matches on the kind. The C status
//! codes a host sees, and the text form that names them, belong to the C surface: `ffi::status`
//! maps each kind to its code in one place, so a new code cannot change what the library does,
//! and a new kind cannot compile until the edge and the decisions below place it.

/// Defines [`ErrorKind`] and its list [`ErrorKind::ALL`] from one list, so no kind can be left
/// out of the list (the mapping test walks it).
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident,)*) => {
        /// What went wrong, named for what happened.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }
        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)*];
        }
    };
}

kinds! {
    /// A required pointer argument was NULL.
    NullPointer,
    /// An argument is out of range or malformed (bad URL, bad option value, bad flag).
    InvalidArgument,
    /// The caller's buffer is too small.
    BufferTooSmall,
    /// A caller struct's `struct_size` is smaller than the struct's first version.
    StructTooSmall,
    /// The library is not initialised (never, or shut down since).
    NotInitialized,
    /// The handle is 0.
    NullHandle,
    /// The handle was never issued by this library instance.
    UnknownHandle,
    /// The handle is a valid handle of another type.
    WrongHandleType,
    /// The handle was released, or belongs to a library session that was shut down.
    StaleHandle,
    /// The camera is closed or closing.
    Closed,
    /// A wait or an I/O deadline ran out.
    TimedOut,
    /// The source could not be opened or read, or the stream ended or must be reopened.
    Io,
    /// The server refused our credentials.
    Auth,
    /// The server's TLS certificate failed verification (unknown issuer, name mismatch, expired,
    /// pin mismatch); the message names the reason.
    TlsVerify,
    /// No decoder, filter or protocol for this on the chosen path, or no video stream.
    Unsupported,
    /// An FFmpeg call failed in a way none of the other kinds names.
    Ffmpeg,
    /// A CUDA driver or NVDEC call failed.
    Cuda,
    /// An FFmpeg option is malformed, unknown, or contradicts the camera's options.
    BadOption,
    /// The camera gave up after a permanent failure and does not retry by itself.
    Failed,
    /// A wait was cancelled by the host.
    Cancelled,
    /// Host or device memory (or a fixed table) is exhausted.
    OutOfMemory,
    /// No usable GPU (none at all, or not the one asked for).
    NoDevice,
    /// A panic was caught.
    Panic,
    /// An invariant of ours failed.
    Internal,
}

impl ErrorKind {
    /// Whether the camera worker gives up on this failure instead of reconnecting: retrying
    /// cannot fix it. No wildcard arm, so a new kind must be placed here.
    pub fn is_permanent(self) -> bool {
        use ErrorKind::*;
        match self {
            // The server said no to these credentials; it will say so again.
            Auth => true,
            // The camera shows a certificate we do not accept; it will show it again, and
            // retrying would only hammer an impostor or a misconfigured camera.
            TlsVerify => true,
            // The camera's configuration (URL, options) is wrong; a reconnect reuses it.
            BadOption | InvalidArgument => true,
            // The codec or source kind has no decoder on this path; a new session finds none
            // either (the decoder choice already fell back where it could).
            Unsupported => true,
            // Transient: the network, the server, a deadline, a driver or engine fault, memory
            // that may free up, our own fault that a fresh session clears.
            Io | TimedOut | Ffmpeg | Cuda | OutOfMemory | NoDevice | Panic | Internal => false,
            // Not failures of a camera's source: they end a session through their own paths (a
            // close stops the worker) or never come from one; a reconnect is the safe answer.
            NullPointer | BufferTooSmall | StructTooSmall | NotInitialized | NullHandle | UnknownHandle
            | WrongHandleType | StaleHandle | Closed | Failed | Cancelled => false,
        }
    }

    /// Whether a direct-NVDEC decoder recovers from this failure by recreating its parser and
    /// decoder (bounded by the decoder's own recovery budget). No wildcard arm, so a new kind
    /// must be placed here.
    pub fn decoder_recovers(self) -> bool {
        use ErrorKind::*;
        match self {
            // An engine or driver fault, or a broken invariant of ours inside the decoder: a new
            // decoder starts from a clean state.
            Cuda | Internal | Panic => true,
            // Decode surfaces that could not be allocated: the old decoder is dropped before a
            // new one is made, so the new one may fit.
            OutOfMemory => true,
            // The stream itself was refused (codec, size), the camera is closing, or the failure
            // is not the decoder's: a new decoder would fail the same way or is not wanted.
            NullPointer | InvalidArgument | BufferTooSmall | StructTooSmall | NotInitialized | NullHandle
            | UnknownHandle | WrongHandleType | StaleHandle | Closed | TimedOut | Io | Auth | TlsVerify | Unsupported
            | Ffmpeg | BadOption | Failed | Cancelled | NoDevice => false,
        }
    }

    /// An outcome of a wait that the host asked for, not a fault (logged quietly).
    pub fn is_wait_outcome(self) -> bool {
        matches!(self, ErrorKind::TimedOut | ErrorKind::Cancelled)
    }
}

/// How the text of a picture refused for its size begins.
const PICTURE_REFUSED: &str = "picture refused: ";

/// An error: its kind and a message that names the cause where it happened. Its text form
/// (`Display`) names the C status code and so lives at the C edge (`ffi::status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub msg: String,
    /// An outcome the host asked for, not a fault (a file that ended): the call still fails with
    /// `kind`, but it is logged at INFO and is not the camera's last error.
    pub expected: bool,
}

impl Error {
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error { kind, msg: msg.into(), expected: false }
    }
    /// The normal end of a file (or another outcome that is not a fault), with `kind`.
    pub fn expected(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error { kind, msg: msg.into(), expected: true }
    }
    pub fn null(what: &str) -> Self {
        Error::new(ErrorKind::NullPointer, format!("{what} is NULL"))
    }
    pub fn arg(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, msg)
    }
    pub fn timeout(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::TimedOut, msg)
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, msg)
    }
    /// A picture (or a stream) over the camera's size limit: [`ErrorKind::Unsupported`], so the
    /// camera fails with the reason instead of asking the camera for the same again.
    pub fn picture_refused(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unsupported, format!("{PICTURE_REFUSED}{}", msg.into()))
    }
    /// Whether this is [`Error::picture_refused`]'s error (the camera counts those).
    pub fn is_picture_refused(&self) -> bool {
        self.kind == ErrorKind::Unsupported && self.msg.starts_with(PICTURE_REFUSED)
    }
    /// Maps an FFmpeg error from `call` to a kind: I/O-ish errors are `Io`, a missing decoder
    /// `Unsupported`, anything else `Ffmpeg`; the text keeps FFmpeg's words.
    pub fn ffmpeg(call: &str, e: ffmpeg_next::Error) -> Self {
        use ffmpeg_next::Error as F;
        let kind = match e {
            F::DecoderNotFound | F::DemuxerNotFound | F::ProtocolNotFound | F::StreamNotFound => ErrorKind::Unsupported,
            F::HttpUnauthorized | F::HttpForbidden => ErrorKind::Auth,
            F::Other { errno } if errno == libc_enomem() => ErrorKind::OutOfMemory,
            F::Other { .. } | F::Eof | F::Exit | F::HttpNotFound | F::HttpServerError => ErrorKind::Io,
            _ => ErrorKind::Ffmpeg,
        };
        Error::new(kind, format!("{call}: {e}"))
    }
}

fn libc_enomem() -> i32 {
    12
}

impl std::error::Error for Error {}

pub(crate) type Result<T> = std::result::Result<T, Error>;
