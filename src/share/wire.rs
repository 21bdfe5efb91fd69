//! The messages between a publisher and the processes attached to it, and their one byte layout.
//!
//! Every message is one datagram of a `SOCK_SEQPACKET` connection (message boundaries are the
//! socket's): a header (magic, version, kind) and a payload of exactly the length its kind has,
//! all little-endian. Anything else (a short or long message, an unknown kind, a value out of
//! range) is a [`Malformed`] error, and the receiver ends that connection. A frame is never in a
//! message: only its pool, slot and what the host reads about it.

use crate::frame::{Color, FrameIntegrity, Matrix, Range, Siting, TimeSource, Transfer};
use crate::pool::{Depth, Geometry, MemoryKind};

pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"NVCS");
pub(crate) const VERSION: u16 = 1;
/// No message is longer (receive buffers are this size; a longer datagram is truncated and refused).
pub(crate) const MAX_LEN: usize = 256;
const HEADER: usize = 8;

/// The largest picture a pool message may describe (NVDEC's limit), and the most slots.
const MAX_SIDE: u32 = 16384;
const MAX_SLOTS: u32 = 4096;

/// A message that is not one of ours, or not well formed: its text says what was wrong, never
/// quoting more than a number.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

fn bad<T>(what: impl Into<String>) -> Result<T, Malformed> {
    Err(Malformed(what.into()))
}

/// A pool the publisher's camera writes, as an attached process maps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolDesc {
    /// The publisher's name for the pool (new for every pool it exports).
    pub id: u64,
    pub memory: MemoryKind,
    /// The CUDA device of a device pool; -1 for host memory.
    pub device: i32,
    pub geom: Geometry,
    pub slots: u32,
    pub slot_bytes: u64,
    /// Bytes of the allocation behind the handle that comes with the message.
    pub alloc_bytes: u64,
}

impl PoolDesc {
    /// Whether the slots fit the allocation and the picture fits a slot: a description that does
    /// not is refused before anything is mapped.
    fn check(&self) -> Result<(), Malformed> {
        let g = &self.geom;
        if g.width == 0 || g.height == 0 || g.width > MAX_SIDE || g.height > MAX_SIDE {
            return bad(format!("pool picture {}x{} out of range", g.width, g.height));
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return bad(format!("pool of {} slots", self.slots));
        }
        if g.pitch < g.row_bytes() || g.pitch > 1 << 20 {
            return bad(format!("pool pitch {} for rows of {} bytes", g.pitch, g.row_bytes()));
        }
        let image = (g.pitch as u64).checked_mul((g.y_rows() + g.uv_rows()) as u64);
        if image.is_none_or(|b| b > self.slot_bytes) {
            return bad("pool slots smaller than their picture");
        }
        if self.slot_bytes.checked_mul(self.slots as u64).is_none_or(|b| b > self.alloc_bytes) {
            return bad("pool slots larger than the allocation");
        }
        if self.alloc_bytes > 1 << 40 {
            return bad("pool allocation over 1 TiB");
        }
        match self.memory {
            MemoryKind::Host if self.device != -1 => bad("host pool on a device"),
            MemoryKind::Device if !(0..=255).contains(&self.device) => bad("device pool on no device"),
            _ => Ok(()),
        }
    }
}

/// One frame as a process attached to the camera learns of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameMsg {
    /// The publisher's name for this process's hold of the frame: sent back to release it.
    pub hold: u64,
    pub pool: u64,
    pub slot: u32,
    pub seq: u64,
    pub pts_us: i64,
    pub wallclock_ns: u64,
    pub capture_ns: u64,
    pub time_source: TimeSource,
    pub color: Color,
    pub bits: u32,
    pub integrity: FrameIntegrity,
    /// Frames this process was not sent so far (its hold quota was full, or it read too slowly).
    pub missed: u64,
}

/// The source camera as its publisher sees it, sent every second and on each change of state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatusMsg {
    /// The publisher's camera state (`CameraState` as the C API numbers it).
    pub state: u32,
    pub decoded: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub reconnects: u64,
    pub packets_lost: u64,
    pub frames_corrupt: u64,
    pub fps_milli: u64,
    pub consumers: u32,
    /// Frames this process was not sent so far (as in [`FrameMsg::missed`]): it learns of them
    /// even while its quota keeps every frame from it.
    pub missed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Msg {
    /// Attached → publisher, first: the protocol version it speaks.
    Hello { version: u16 },
    /// Publisher → attached, the answer: how many frames it may hold at once, and how often each
    /// side must hear from the other.
    Welcome { quota: u32, heartbeat_ms: u32 },
    /// Publisher → attached, with the pool's handle: map it.
    Pool(PoolDesc),
    Frame(FrameMsg),
    Status(StatusMsg),
    /// Attached → publisher: done with the frame of this hold (its own work on it completed).
    Release { hold: u64 },
    /// Either way: still here.
    Ping,
    /// Publisher → attached: the publication ends (the camera closes or is unpublished).
    Bye,
}

impl Msg {
    /// The message's name, for log lines.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::Welcome { .. } => "welcome",
            Msg::Pool(_) => "pool",
            Msg::Frame(_) => "frame",
            Msg::Status(_) => "status",
            Msg::Release { .. } => "release",
            Msg::Ping => "ping",
            Msg::Bye => "bye",
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Msg::Hello { .. } => 1,
            Msg::Welcome { .. } => 2,
            Msg::Pool(_) => 3,
            Msg::Frame(_) => 4,
            Msg::Status(_) => 5,
            Msg::Release { .. } => 6,
            Msg::Ping => 7,
            Msg::Bye => 8,
        }
    }

    /// The message's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(MAX_LEN));
        w.u32(MAGIC);
        w.u16(VERSION);
        w.u16(self.kind());
        match self {
            Msg::Hello { version } => {
                w.u16(*version);
                w.u16(0);
            }
            Msg::Welcome { quota, heartbeat_ms } => {
                w.u32(*quota);
                w.u32(*heartbeat_ms);
            }
            Msg::Pool(p) => {
                w.u64(p.id);
                w.u8(match p.memory {
                    MemoryKind::Host => 0,
                    MemoryKind::Device => 1,
                });
                w.u8(match p.geom.depth {
                    Depth::Eight => 8,
                    Depth::Sixteen => 16,
                });
                w.u16(0);
                w.i32(p.device);
                w.u32(p.geom.width);
                w.u32(p.geom.height);
                w.u64(p.geom.pitch as u64);
                w.u32(p.slots);
                w.u32(0);
                w.u64(p.slot_bytes);
                w.u64(p.alloc_bytes);
            }
            Msg::Frame(f) => {
                w.u64(f.hold);
                w.u64(f.pool);
                w.u32(f.slot);
                w.u32(f.bits);
                w.u64(f.seq);
                w.i64(f.pts_us);
                w.u64(f.wallclock_ns);
                w.u64(f.capture_ns);
                let i = f.integrity;
                let flags = i.corrupt as u8 | (i.after_loss as u8) << 1 | (i.keyframe as u8) << 2 | ((f.time_source == TimeSource::Source) as u8) << 3;
                w.u8(flags);
                w.u8(matrix_code(f.color.matrix));
                w.u8(range_code(f.color.range));
                w.u8(transfer_code(f.color.transfer));
                w.u8(siting_code(f.color.siting));
                w.u8(0);
                w.u16(0);
                w.u64(f.missed);
            }
            Msg::Status(s) => {
                w.u32(s.state);
                w.u32(s.consumers);
                for v in [s.decoded, s.delivered, s.dropped, s.reconnects, s.packets_lost, s.frames_corrupt, s.fps_milli, s.missed] {
                    w.u64(v);
                }
            }
            Msg::Release { hold } => w.u64(*hold),
            Msg::Ping | Msg::Bye => {}
        }
        debug_assert!(w.0.len() <= MAX_LEN);
        w.0
    }

    /// Parses one datagram; anything but exactly one well-formed message is refused.
    pub(crate) fn decode(b: &[u8]) -> Result<Msg, Malformed> {
        if b.len() < HEADER {
            return bad(format!("a message of {} bytes", b.len()));
        }
        if b.len() > MAX_LEN {
            return bad(format!("a message of {} bytes (the most is {MAX_LEN})", b.len()));
        }
        let mut r = R { b, at: 0 };
        if r.u32()? != MAGIC {
            return bad("not an nvcam sharing message");
        }
        let version = r.u16()?;
        if version != VERSION {
            return bad(format!("protocol version {version} (this nvcam speaks {VERSION})"));
        }
        let kind = r.u16()?;
        let m = match kind {
            1 => {
                let version = r.u16()?;
                r.u16()?;
                Msg::Hello { version }
            }
            2 => Msg::Welcome { quota: r.u32()?, heartbeat_ms: r.u32()? },
            3 => {
                let id = r.u64()?;
                let memory = match r.u8()? {
                    0 => MemoryKind::Host,
                    1 => MemoryKind::Device,
                    k => return bad(format!("pool memory kind {k}")),
                };
                let depth = match r.u8()? {
                    8 => Depth::Eight,
                    16 => Depth::Sixteen,
                    d => return bad(format!("pool sample depth {d}")),
                };
                r.u16()?;
                let device = r.i32()?;
                let (width, height) = (r.u32()?, r.u32()?);
                let pitch = usize::try_from(r.u64()?).map_err(|_| Malformed("pool pitch".into()))?;
                let slots = r.u32()?;
                r.u32()?;
                let (slot_bytes, alloc_bytes) = (r.u64()?, r.u64()?);
                let p = PoolDesc { id, memory, device, geom: Geometry { width, height, pitch, depth }, slots, slot_bytes, alloc_bytes };
                p.check()?;
                Msg::Pool(p)
            }
            4 => {
                let (hold, pool, slot, bits) = (r.u64()?, r.u64()?, r.u32()?, r.u32()?);
                let (seq, pts_us, wallclock_ns, capture_ns) = (r.u64()?, r.i64()?, r.u64()?, r.u64()?);
                let flags = r.u8()?;
                if flags & !0x0f != 0 {
                    return bad(format!("frame flags 0x{flags:02x}"));
                }
                let color = Color { matrix: matrix_of(r.u8()?)?, range: range_of(r.u8()?)?, transfer: transfer_of(r.u8()?)?, siting: siting_of(r.u8()?)? };
                r.u8()?;
                r.u16()?;
                let missed = r.u64()?;
                if !matches!(bits, 8 | 10 | 12 | 16) {
                    return bad(format!("frame of {bits} bits"));
                }
                let integrity = FrameIntegrity { corrupt: flags & 1 != 0, after_loss: flags & 2 != 0, keyframe: flags & 4 != 0 };
                let time_source = if flags & 8 != 0 { TimeSource::Source } else { TimeSource::Receive };
                Msg::Frame(FrameMsg { hold, pool, slot, seq, pts_us, wallclock_ns, capture_ns, time_source, color, bits, integrity, missed })
            }
            5 => {
                let (state, consumers) = (r.u32()?, r.u32()?);
                let mut v = [0u64; 8];
                for x in &mut v {
                    *x = r.u64()?;
                }
                let [decoded, delivered, dropped, reconnects, packets_lost, frames_corrupt, fps_milli, missed] = v;
                Msg::Status(StatusMsg { state, decoded, delivered, dropped, reconnects, packets_lost, frames_corrupt, fps_milli, consumers, missed })
            }
            6 => Msg::Release { hold: r.u64()? },
            7 => Msg::Ping,
            8 => Msg::Bye,
            k => return bad(format!("message kind {k}")),
        };
        if r.at != b.len() {
            return bad(format!("{} bytes after a message of kind {kind}", b.len() - r.at));
        }
        Ok(m)
    }
}

fn matrix_code(m: Matrix) -> u8 {
    match m {
        Matrix::Unspecified => 0,
        Matrix::Bt601 => 1,
        Matrix::Bt709 => 2,
        Matrix::Bt2020 => 3,
    }
}
fn matrix_of(c: u8) -> Result<Matrix, Malformed> {
    Ok(match c {
        0 => Matrix::Unspecified,
        1 => Matrix::Bt601,
        2 => Matrix::Bt709,
        3 => Matrix::Bt2020,
        _ => return bad(format!("matrix {c}")),
    })
}
fn range_code(r: Range) -> u8 {
    match r {
        Range::Unspecified => 0,
        Range::Limited => 1,
        Range::Full => 2,
    }
}
fn range_of(c: u8) -> Result<Range, Malformed> {
    Ok(match c {
        0 => Range::Unspecified,
        1 => Range::Limited,
        2 => Range::Full,
        _ => return bad(format!("range {c}")),
    })
}
fn transfer_code(t: Transfer) -> u8 {
    match t {
        Transfer::Unspecified => 0,
        Transfer::Sdr => 1,
        Transfer::Pq => 2,
        Transfer::Hlg => 3,
    }
}
fn transfer_of(c: u8) -> Result<Transfer, Malformed> {
    Ok(match c {
        0 => Transfer::Unspecified,
        1 => Transfer::Sdr,
        2 => Transfer::Pq,
        3 => Transfer::Hlg,
        _ => return bad(format!("transfer {c}")),
    })
}
const SITINGS: [Siting; 7] = [Siting::Unspecified, Siting::Left, Siting::Center, Siting::TopLeft, Siting::Top, Siting::BottomLeft, Siting::Bottom];
fn siting_code(s: Siting) -> u8 {
    SITINGS.iter().position(|&x| x == s).unwrap_or(0) as u8
}
fn siting_of(c: u8) -> Result<Siting, Malformed> {
    SITINGS.get(c as usize).copied().ok_or_else(|| Malformed(format!("chroma siting {c}")))
}

struct W(Vec<u8>);
impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v)
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes())
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes())
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes())
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes())
    }
}

struct R<'a> {
    b: &'a [u8],
    at: usize,
}
impl R<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let end = self.at + N;
        let Some(s) = self.b.get(self.at..end) else {
            return bad(format!("a message cut short at byte {}", self.b.len()));
        };
        self.at = end;
        Ok(s.try_into().expect("N bytes"))
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(i64::from_le_bytes(self.take()?))
    }
}

/// One well-formed message of every kind (the tests' and the fuzzers' seeds).
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn samples() -> Vec<Msg> {
        let geom = Geometry::new(1920, 1080, Depth::Eight);
        let slot_bytes = (geom.pitch * (geom.y_rows() + geom.uv_rows())) as u64;
        vec![
            Msg::Hello { version: VERSION },
            Msg::Welcome { quota: 3, heartbeat_ms: 1000 },
            Msg::Pool(PoolDesc { id: 7, memory: MemoryKind::Host, device: -1, geom, slots: 8, slot_bytes, alloc_bytes: slot_bytes * 8 }),
            Msg::Frame(FrameMsg {
                hold: 1 << 50,
                pool: 7,
                slot: 3,
                seq: 99,
                pts_us: -5,
                wallclock_ns: 1,
                capture_ns: 2,
                time_source: TimeSource::Source,
                color: Color { matrix: Matrix::Bt709, range: Range::Full, transfer: Transfer::Pq, siting: Siting::Bottom },
                bits: 10,
                integrity: FrameIntegrity { corrupt: true, after_loss: false, keyframe: true },
                missed: 4,
            }),
            Msg::Status(StatusMsg { state: 1, decoded: 5, consumers: 2, ..Default::default() }),
            Msg::Release { hold: 12 },
            Msg::Ping,
            Msg::Bye,
        ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written() {
        for m in samples() {
            assert_eq!(Msg::decode(&m.encode()), Ok(m));
        }
    }

    /// A peer's message one byte short or long, of another version, or describing a pool larger
    /// than its allocation, must end the connection, not be read past its end or mapped.
    #[test]
    fn malformed_messages_are_refused() {
        for m in samples() {
            let b = m.encode();
            assert!(Msg::decode(&b[..b.len() - 1]).is_err(), "{m:?} cut short");
            let mut long = b.clone();
            long.push(0);
            assert!(Msg::decode(&long).is_err(), "{m:?} with a byte more");
            let mut v = b.clone();
            v[4] = 9;
            assert!(Msg::decode(&v).is_err(), "another version");
        }
        let Msg::Pool(mut p) = samples()[2] else { unreachable!() };
        p.alloc_bytes -= 1;
        assert!(Msg::decode(&Msg::Pool(p).encode()).is_err(), "slots past the allocation");
        p.alloc_bytes = u64::MAX;
        p.slot_bytes = u64::MAX / 2;
        assert!(Msg::decode(&Msg::Pool(p).encode()).is_err(), "sizes that overflow");
    }
}
