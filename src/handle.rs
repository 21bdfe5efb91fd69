//! Generational 64-bit handles: the only thing a foreign caller ever holds.
//!
//! A handle is `0 | tag:7 | salt:8 | generation:24 | index:24` (bit 63 clear so LabVIEW I64 and
//! every language see a positive number; 0 is never issued). Lookups check all four fields under a
//! short lock and hand out a clone of the `Arc` inside, so a concurrent release can never free what
//! a call is using, and a stale, double-released, wrong-type or made-up handle is an error code, not
//! a pointer dereference. A slot whose generation would wrap is retired, never reused, so there is
//! no ABA window at all.

use crate::status::*;
use parking_lot::Mutex;

/// What a handle names. The numbers are part of the handle bits, not of the C API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Camera = 1,
    Frame = 2,
    /// A LabVIEW node instance (the value its Instance Data Pointer slot holds).
    Instance = 3,
    /// A recording of a camera's stream (`nvcam_camera_record_start`).
    Recording = 4,
}

impl Kind {
    fn from_tag(tag: u8) -> Option<Kind> {
        match tag {
            1 => Some(Kind::Camera),
            2 => Some(Kind::Frame),
            3 => Some(Kind::Instance),
            4 => Some(Kind::Recording),
            _ => None,
        }
    }
}

const INDEX_BITS: u32 = 24;
const GEN_BITS: u32 = 24;
const SALT_SHIFT: u32 = INDEX_BITS + GEN_BITS;
const TAG_SHIFT: u32 = SALT_SHIFT + 8;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
/// Generations run 1..=GEN_MAX; a slot that would pass GEN_MAX is retired.
const GEN_MAX: u32 = GEN_MASK as u32;

/// A per-load salt: handles from another process, or from a copy of the library loaded twice,
/// fail the salt check instead of aliasing our slots.
fn load_salt() -> u8 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    let s = (h.finish() & 0xff) as u8;
    if s == 0 {
        0x5a
    } else {
        s
    }
}

static SALT: once_cell::sync::Lazy<u8> = once_cell::sync::Lazy::new(load_salt);

/// The decoded fields of a handle, before any table lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    pub kind: Kind,
    pub generation: u32,
    pub index: u32,
}

pub(crate) fn encode(kind: Kind, generation: u32, index: u32) -> u64 {
    ((kind as u64) << TAG_SHIFT)
        | ((*SALT as u64) << SALT_SHIFT)
        | (((generation as u64) & GEN_MASK) << INDEX_BITS)
        | (index as u64 & INDEX_MASK)
}

/// Checks the bits that need no table: zero, bit 63, salt, tag.
pub(crate) fn decode(h: u64, want: Kind) -> Result<Parts> {
    if h == 0 {
        return Err(Error::new(ErrorKind::NullHandle, "handle is 0"));
    }
    let tag = ((h >> TAG_SHIFT) & 0x7f) as u8;
    let salt = ((h >> SALT_SHIFT) & 0xff) as u8;
    let generation = ((h >> INDEX_BITS) & GEN_MASK) as u32;
    let index = (h & INDEX_MASK) as u32;
    let kind = match Kind::from_tag(tag) {
        Some(k) if h >> 63 == 0 && salt == *SALT && generation != 0 => k,
        _ => {
            return Err(Error::new(ErrorKind::UnknownHandle, format!("0x{h:016x} is not an nvcam handle")))
        }
    };
    if kind != want {
        return Err(Error::new(
            ErrorKind::WrongHandleType,
            format!("0x{h:016x} is a {kind:?} handle, expected a {want:?} handle"),
        ));
    }
    Ok(Parts { kind, generation, index })
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

struct Inner<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

/// A table of live objects of one kind, addressed by generational handles.
pub(crate) struct Table<T> {
    kind: Kind,
    inner: Mutex<Inner<T>>,
}

impl<T: Clone> Table<T> {
    pub(crate) const fn new(kind: Kind) -> Self {
        Table { kind, inner: Mutex::new(Inner { slots: Vec::new(), free: Vec::new(), live: 0 }) }
    }

    /// Stores `value` and returns its new handle.
    pub(crate) fn insert(&self, value: T) -> Result<u64> {
        let mut g = self.inner.lock();
        let index = match g.free.pop() {
            Some(i) => i,
            None => {
                let i = g.slots.len();
                if i as u64 > INDEX_MASK {
                    return Err(Error::new(ErrorKind::OutOfMemory, "handle table full"));
                }
                g.slots.push(Slot { generation: 1, value: None });
                i as u32
            }
        };
        let slot = &mut g.slots[index as usize];
        slot.value = Some(value);
        let generation = slot.generation;
        g.live += 1;
        Ok(encode(self.kind, generation, index))
    }

    fn check<'a>(&self, g: &'a mut Inner<T>, h: u64) -> Result<&'a mut Slot<T>> {
        let p = decode(h, self.kind)?;
        match g.slots.get_mut(p.index as usize) {
            Some(s) if s.generation == p.generation && s.value.is_some() => Ok(s),
            Some(_) => Err(Error::new(
                ErrorKind::StaleHandle,
                format!("{:?} handle 0x{h:016x} was released (or its library session ended)", self.kind),
            )),
            None => Err(Error::new(ErrorKind::UnknownHandle, format!("0x{h:016x} was never issued"))),
        }
    }

    /// A clone of the object behind `h`; the lock is held only for the lookup.
    pub(crate) fn get(&self, h: u64) -> Result<T> {
        let mut g = self.inner.lock();
        Ok(self.check(&mut g, h)?.value.clone().expect("checked"))
    }

    /// Removes `h` (its generation moves on, so the same value is now stale) and returns the object.
    pub(crate) fn remove(&self, h: u64) -> Result<T> {
        let mut g = self.inner.lock();
        let p = decode(h, self.kind)?;
        self.check(&mut g, h)?;
        Ok(Self::vacate(&mut g, p.index).expect("checked"))
    }

    fn vacate(g: &mut Inner<T>, index: u32) -> Option<T> {
        let slot = &mut g.slots[index as usize];
        let v = slot.value.take()?;
        g.live -= 1;
        if slot.generation < GEN_MAX {
            slot.generation += 1;
            g.free.push(index);
        } // else: retired for good, never reused
        Some(v)
    }

    /// Removes every entry for which `pred` holds and returns them; their handles turn stale.
    /// The values are returned (not dropped) so the caller drops them outside the table lock.
    pub(crate) fn remove_where(&self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut g = self.inner.lock();
        let hits: Vec<u32> = g
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.as_ref().is_some_and(&mut pred))
            .map(|(i, _)| i as u32)
            .collect();
        hits.into_iter().filter_map(|i| Self::vacate(&mut g, i)).collect()
    }

    /// A snapshot of the live values with their handles.
    pub(crate) fn entries(&self) -> Vec<(u64, T)> {
        let g = self.inner.lock();
        g.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.clone().map(|v| (encode(self.kind, s.generation, i as u32), v)))
            .collect()
    }

    pub(crate) fn live(&self) -> usize {
        self.inner.lock().live
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_made_up_handles_are_rejected() {
        let t: Table<u32> = Table::new(Kind::Frame);
        assert_eq!(t.get(0).unwrap_err().kind, ErrorKind::NullHandle);
        assert_eq!(t.get(0xdead_beef).unwrap_err().kind, ErrorKind::UnknownHandle);
        assert_eq!(t.get(u64::MAX).unwrap_err().kind, ErrorKind::UnknownHandle);
        // Right shape, never issued.
        assert_eq!(t.get(encode(Kind::Frame, 1, 77)).unwrap_err().kind, ErrorKind::UnknownHandle);
    }

    #[test]
    fn double_release_is_stale_not_ub() {
        let t: Table<u32> = Table::new(Kind::Frame);
        let h = t.insert(7).unwrap();
        assert_eq!(t.get(h).unwrap(), 7);
        assert_eq!(t.remove(h).unwrap(), 7);
        assert_eq!(t.remove(h).unwrap_err().kind, ErrorKind::StaleHandle);
        // The slot is reused with a new generation; the old handle stays stale.
        let h2 = t.insert(8).unwrap();
        assert_ne!(h, h2);
        assert_eq!(t.get(h).unwrap_err().kind, ErrorKind::StaleHandle);
        assert_eq!(t.get(h2).unwrap(), 8);
    }

    #[test]
    fn wrong_type_is_reported_as_such() {
        let cams: Table<u32> = Table::new(Kind::Camera);
        let frames: Table<u32> = Table::new(Kind::Frame);
        let c = cams.insert(1).unwrap();
        assert_eq!(frames.get(c).unwrap_err().kind, ErrorKind::WrongHandleType);
    }

    #[test]
    fn handles_are_positive_and_never_zero() {
        let t: Table<u32> = Table::new(Kind::Camera);
        for i in 0..1000 {
            let h = t.insert(i).unwrap();
            assert!(h != 0 && (h as i64) > 0);
        }
    }

    #[test]
    fn exhausted_generation_retires_the_slot() {
        let t: Table<u32> = Table::new(Kind::Frame);
        let h = t.insert(1).unwrap();
        t.inner.lock().slots[0].generation = GEN_MAX;
        let hmax = encode(Kind::Frame, GEN_MAX, 0);
        let _ = h;
        assert_eq!(t.remove(hmax).unwrap(), 1);
        let h2 = t.insert(2).unwrap();
        assert_eq!(decode(h2, Kind::Frame).unwrap().index, 1, "retired slot 0 must not be reused");
    }

    #[test]
    fn remove_where_makes_every_match_stale() {
        let t: Table<u32> = Table::new(Kind::Frame);
        let hs: Vec<u64> = (0..10).map(|i| t.insert(i).unwrap()).collect();
        let gone = t.remove_where(|v| v % 2 == 0);
        assert_eq!(gone.len(), 5);
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(t.get(*h).is_ok(), i % 2 == 1);
        }
        assert_eq!(t.live(), 5);
    }
}
