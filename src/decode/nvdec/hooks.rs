//! Fault and timing hooks for the direct-NVDEC tests, compiled only with the `test-hooks` feature
//! (the release library has none, and nothing consults them per frame there). A hook applies to
//! decoders whose coded width matches, so one test can shape its own camera while other tests in
//! the same process run untouched.

/// What a test asks of the decoders of one coded width.
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(not(feature = "test-hooks"), allow(dead_code, unreachable_pub))]
pub struct Knobs {
    /// Applies to decoders of streams with this coded width.
    pub coded_width: u32,
    /// Output surfaces instead of the default (1: every map reuses the surface just unmapped).
    pub output_surfaces: u32,
    /// A host function sleeping this long is put on the camera's stream before each map, so
    /// the GPU runs far behind the CPU (ordering test).
    pub stream_delay_us: u32,
    /// The decode call with this number (from 1) fails as if the engine had (recovery test).
    pub fail_decode_at: u32,
}

#[cfg(feature = "test-hooks")]
mod imp {
    use super::Knobs;
    use parking_lot::Mutex;

    static KNOBS: Mutex<Vec<Knobs>> = Mutex::new(Vec::new());

    pub fn set(k: Knobs) {
        let mut v = KNOBS.lock();
        v.retain(|o| o.coded_width != k.coded_width);
        v.push(k);
    }

    pub fn clear() {
        KNOBS.lock().clear();
    }

    pub(crate) fn for_width(w: u32) -> Option<Knobs> {
        KNOBS.lock().iter().find(|k| k.coded_width == w).copied()
    }
}

#[cfg(not(feature = "test-hooks"))]
mod imp {
    use super::Knobs;

    #[inline(always)]
    pub(crate) fn for_width(_w: u32) -> Option<Knobs> {
        None
    }
}

#[cfg(feature = "test-hooks")]
pub use imp::{clear, set};
pub(crate) use imp::for_width;
