//! One recording file: the camera's compressed packets remuxed (never re-encoded) into Matroska or
//! fragmented MP4, written as `NAME.part` and renamed to `NAME` once its trailer is written.
//!
//! Fragmented MP4 (`empty_moov`, a fragment at every key frame, flushed as it is written) and
//! Matroska (a cluster per key frame) are both playable up to their last fragment or cluster when
//! the process dies mid-recording.

use super::packet::Packet;
use super::params::Params;
use crate::status::*;
use ffmpeg_next as ff;
use ff::ffi;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The container, from the file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Container {
    Matroska,
    Mp4,
}

impl Container {
    pub(crate) fn from_path(path: &Path) -> Result<Container> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("mkv") => Ok(Container::Matroska),
            Some("mp4") => Ok(Container::Mp4),
            _ => Err(Error::arg(format!(
                "'{}': the file name must end in .mkv (Matroska) or .mp4 (fragmented MP4)",
                path.display()
            ))),
        }
    }

    fn format(self) -> &'static str {
        match self {
            Container::Matroska => "matroska",
            Container::Mp4 => "mp4",
        }
    }
}

/// The temporary name a file has until it is complete: `NAME.part`, or, where that would pass
/// the filesystem's limit on a name, `NAME` cut short with a hash of the whole name
/// (`fit_name`), so that every name the filesystem takes can be recorded to.
pub(crate) fn part_path(path: &Path) -> PathBuf {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        let mut s = path.as_os_str().to_owned();
        s.push(".part");
        return PathBuf::from(s);
    };
    path.with_file_name(fit_name(name, "", ".part", name_max(path)))
}

/// `stem` + `tail` + `suffix`, with `stem` cut short (at a character) and marked with a hash of
/// the whole `stem` + `tail` where the name would be longer than `max` bytes.
pub(crate) fn fit_name(stem: &str, tail: &str, suffix: &str, max: usize) -> String {
    let whole = format!("{stem}{tail}{suffix}");
    if whole.len() <= max {
        return whole;
    }
    let mut h: u32 = 0x811c_9dc5;
    for b in stem.bytes().chain(tail.bytes()) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    let mark = format!("~{h:08x}");
    let mut keep = max.saturating_sub(mark.len() + tail.len() + suffix.len()).min(stem.len());
    while !stem.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{mark}{tail}{suffix}", &stem[..keep])
}

/// The longest file name (bytes) the filesystem of `path`'s folder takes.
pub(crate) fn name_max(path: &Path) -> usize {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) {
            // SAFETY: a NUL-terminated path that lives across the call; pathconf only reads it.
            let n = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) };
            if n > 0 {
                return n as usize;
            }
        }
    }
    let _ = path;
    255
}

/// An open recording file.
pub(crate) struct Muxer {
    out: ff::format::context::Output,
    path: PathBuf,
    part: PathBuf,
    params: Arc<Params>,
    src_tb: ff::Rational,
    dst_tb: ff::Rational,
    /// Subtracted from every timestamp (source time base) so that the file starts at 0; moved on
    /// when the source's timestamps go back (a looped file), so the file's never do.
    offset: Option<i64>,
    last_dts: i64,
    /// Packets at the file's start without a decode time (`write`).
    waiting: Vec<Arc<Packet>>,
    pub(crate) bytes: u64,
}

/// Packets that wait for a decode time at a file's start before they go by their presentation
/// times.
const WAITING_MAX: usize = 16;

fn io_error(what: &str, path: &Path, e: ff::Error) -> Error {
    let code = match e {
        ff::Error::Other { errno: 12 } => ErrorKind::OutOfMemory,
        _ => ErrorKind::Io,
    };
    Error::new(code, format!("{what} '{}': {e}", path.display()))
}

/// Why a header could not be written: a muxer that refuses the stream (a codec the container
/// cannot hold, such as raw pictures) is the caller's choice of source or container, not the
/// disk (the caller removes the empty `.part` file either way).
fn header_error(part: &Path, params: &Params, e: ff::Error) -> Error {
    match e {
        ff::Error::Other { errno: 22 } | ff::Error::InvalidData => {
            // SAFETY: as in `Params::size`.
            let codec = ff::codec::Id::from(unsafe { (*params.as_ptr()).codec_id });
            let (w, h) = params.size();
            Error::arg(format!("'{}' cannot hold this camera's stream ({} {w}x{h}): {e}", part.display(), codec.name()))
        }
        _ => io_error("cannot write the header of", part, e),
    }
}

impl Muxer {
    /// Creates `path`.part and writes the container's header (so a bad path, a missing folder or
    /// a denied permission fails here, on the caller's thread).
    /// The `.part` file is created exclusively: a name another writer has (another process, a
    /// file a failed recording left) is refused, never shared or replaced.
    pub(crate) fn create(path: &Path, params: &Arc<Params>) -> Result<Muxer> {
        let container = Container::from_path(path)?;
        let part = part_path(path);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&part) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::arg(format!("'{}' exists: another writer has it (or a failed recording left it)", part.display())));
            }
            Err(e) => return Err(Error::new(ErrorKind::Io, format!("cannot create '{}': {e}", part.display()))),
        }
        // Ours from here: every failure below removes it.
        Self::open_created(path, part.clone(), container, params).inspect_err(|_| {
            let _ = std::fs::remove_file(&part);
        })
    }

    /// Opens the `.part` file just created (FFmpeg's file protocol opens the name again, the
    /// file is ours) and writes the header.
    fn open_created(path: &Path, part: PathBuf, container: Container, params: &Arc<Params>) -> Result<Muxer> {
        let mut out = ff::format::output_as(&part, container.format()).map_err(|e| io_error("cannot create", &part, e))?;
        // SAFETY: `out` owns a valid output context; the new stream (checked) belongs to it; its
        // codecpar is allocated by avformat_new_stream and receives a copy of ours.
        unsafe {
            let ctx = out.as_mut_ptr();
            let st = ffi::avformat_new_stream(ctx, std::ptr::null());
            if st.is_null() {
                return Err(Error::new(ErrorKind::OutOfMemory, "avformat_new_stream"));
            }
            let r = ffi::avcodec_parameters_copy((*st).codecpar, params.as_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
            }
            // The source container's tag means nothing in another container.
            (*(*st).codecpar).codec_tag = 0;
            (*st).time_base = params.time_base;
        }
        let mut opts = ff::Dictionary::new();
        // Written as it goes: what is on disk is playable up to the last key frame.
        opts.set("flush_packets", "1");
        if container == Container::Mp4 {
            opts.set("movflags", "frag_keyframe+empty_moov+default_base_moof");
        }
        out.write_header_with(opts).map_err(|e| header_error(&part, params, e))?;
        let dst_tb = out.stream(0).map(|s| s.time_base()).ok_or_else(|| Error::internal("recording has no stream"))?;
        let src_tb = params.time_base.into();
        Ok(Muxer { out, path: path.to_path_buf(), part, params: params.clone(), src_tb, dst_tb, offset: None, last_dts: i64::MIN, waiting: Vec::new(), bytes: 0 })
    }

    pub(crate) fn params(&self) -> &Arc<Params> {
        &self.params
    }

    /// Starts the file again with other parameters: nothing was written to it yet, and its
    /// first packet brought new ones (the cache's oldest packets were of the stream's earlier
    /// size).
    pub(crate) fn restart(&mut self, params: &Arc<Params>) -> Result<()> {
        // SAFETY: the output's I/O context is closed and nulled before the file is created
        // again, so the old context never writes into the new file; its Drop (below, on the
        // assignment) then frees the context without I/O (avio_close of null does nothing).
        unsafe { ffi::avio_closep(&mut (*self.out.as_mut_ptr()).pb) };
        // Created again, exclusively like the first time: the empty file goes first.
        let _ = std::fs::remove_file(&self.part);
        *self = Muxer::create(&self.path.clone(), params)?;
        Ok(())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes the file has been handed so far (the muxer holds a cluster or fragment in memory
    /// until the next one starts).
    fn on_disk(&self) -> i64 {
        // SAFETY: the output context and its I/O context are valid while `self.out` lives.
        unsafe { (*(*self.out.as_ptr()).pb).pos }
    }

    /// Writes one packet; an error is the file's end (disk full, I/O error). Returns whether the
    /// file grew meanwhile: then every packet written before this one is in it (the muxer wrote
    /// out the cluster or fragment that held them).
    pub(crate) fn write(&mut self, p: &Arc<Packet>) -> Result<bool> {
        if self.last_dts == i64::MIN && p.dts.is_none() && p.pts.is_some() && self.waiting.len() < WAITING_MAX {
            // The first packets of an RTSP session come without decode times: they wait for
            // the first that has one, which says theirs (one frame apart before it). Their
            // presentation times would put a P picture decoded before its B pictures after
            // them, and every later timestamp would move to keep the order.
            self.waiting.push(p.clone());
            self.bytes += p.data.len() as u64;
            return Ok(false);
        }
        let grew = self.flush_waiting(p.dts)?;
        let r = self.place(p, p.dts)?;
        self.bytes += p.data.len() as u64;
        Ok(grew || r)
    }

    /// Writes the packets waiting for a decode time, one frame apart before `next_dts` (or by
    /// their presentation times if none came).
    fn flush_waiting(&mut self, next_dts: Option<i64>) -> Result<bool> {
        let waiting = std::mem::take(&mut self.waiting);
        let n = waiting.len() as i64;
        let mut grew = false;
        for (k, w) in waiting.iter().enumerate() {
            let step = if w.duration > 0 { w.duration } else { 1 };
            grew |= self.place(w, next_dts.map(|d| d - (n - k as i64) * step))?;
        }
        Ok(grew)
    }

    fn place(&mut self, p: &Packet, dts: Option<i64>) -> Result<bool> {
        let step = if p.duration > 0 { p.duration } else { 1 };
        // Without a decode time a packet follows the one before it.
        let follows = self.offset.filter(|_| self.last_dts != i64::MIN).map(|o| o + self.last_dts + step);
        let Some(dts) = dts.or(follows).or(p.pts) else {
            return Ok(false); // nothing to place it by before the first timestamp
        };
        let before = self.on_disk();
        let pts = p.pts.unwrap_or(dts);
        // The first picture (a key frame, first in presentation order too) is at 0; pictures
        // decoded before it is shown (B-frames) get negative decode times, which the muxers keep
        // (an edit list in MP4).
        let offset = *self.offset.get_or_insert(pts);
        let mut d = dts - offset;
        if self.last_dts != i64::MIN && d <= self.last_dts {
            // Timestamps went back (a looped file) or stood still: go on one step after the last.
            let shift = self.last_dts + step - d;
            self.offset = Some(offset - shift);
            d += shift;
        }
        let off = self.offset.unwrap_or(offset);
        let mut pkt = ff::Packet::copy(&p.data);
        pkt.set_stream(0);
        pkt.set_dts(Some(d));
        pkt.set_pts(Some((pts - off).max(d)));
        pkt.set_duration(p.duration.max(0));
        if p.key {
            pkt.set_flags(ff::packet::Flags::KEY);
        }
        pkt.rescale_ts(self.src_tb, self.dst_tb);
        self.last_dts = d;
        let r = pkt.write(&mut self.out);
        // SAFETY: the output context and its I/O context are valid while `self.out` lives.
        let io = unsafe { (*(*self.out.as_ptr()).pb).error };
        match (r, io) {
            (Err(e), _) => Err(io_error("cannot write", &self.part, e)),
            (Ok(_), e) if e < 0 => Err(io_error("cannot write", &self.part, ff::Error::from(e))),
            _ => Ok(self.on_disk() > before),
        }
    }

    /// Writes the trailer and closes the file: complete, still under its `.part` name.
    pub(crate) fn finish(mut self) -> Result<Closed> {
        self.flush_waiting(None)?;
        self.out.write_trailer().map_err(|e| io_error("cannot finish", &self.part, e))?;
        // SAFETY: as in `write`.
        let io = unsafe { (*(*self.out.as_ptr()).pb).error };
        if io < 0 {
            return Err(io_error("cannot finish", &self.part, ff::Error::from(io)));
        }
        let Muxer { out, path, part, .. } = self;
        drop(out); // closes the file before the rename (Windows renames no open file)
        Ok(Closed { path, part })
    }
}

/// A complete file under its `.part` name.
pub(crate) struct Closed {
    pub(crate) path: PathBuf,
    pub(crate) part: PathBuf,
}

impl Closed {
    /// Gives the file its name, never replacing one: a file made at that name meanwhile (by
    /// another program) stays, and so does this one, under its `.part` name (the error says
    /// where).
    pub(crate) fn name(self) -> std::result::Result<PathBuf, (PathBuf, Error)> {
        match super::noreplace::rename(&self.part, &self.path) {
            Ok(()) => Ok(self.path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = format!("'{}' was made by another program while the recording ran: the recording never replaces a file, it is complete in '{}'", self.path.display(), self.part.display());
                Err((self.part, Error::new(ErrorKind::Io, text)))
            }
            Err(e) => {
                let text = format!("cannot rename '{}' to '{}': {e}; the recording is complete in '{}'", self.part.display(), self.path.display(), self.part.display());
                Err((self.part, Error::new(ErrorKind::Io, text)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names of 251–254 bytes were refused: their `.part` name passed the filesystem's limit.
    /// The temporary and part names are cut to fit, and stay apart from one another.
    #[test]
    fn names_up_to_the_filesystems_limit_fit_their_part_names() {
        assert_eq!(fit_name("clip.mkv", "", ".part", 255), "clip.mkv.part");
        let long = format!("{}.mkv", "é".repeat(124)); // 252 bytes
        let part = fit_name(&long, "", ".part", 255);
        assert!(part.len() <= 255 && part.ends_with(".part") && part.contains('~'), "{part}");
        let (a, b) = (fit_name(&"x".repeat(250), "-part2", ".mkv", 255), fit_name(&"x".repeat(250), "-part3", ".mkv", 255));
        assert!(a.len() <= 255 && a.ends_with("-part2.mkv") && a != b, "{a} {b}");
        assert_ne!(fit_name(&format!("{}a", "x".repeat(260)), "", ".part", 255), fit_name(&format!("{}b", "x".repeat(260)), "", ".part", 255));
    }
}
