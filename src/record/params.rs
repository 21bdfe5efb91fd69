//! A camera session's stream parameters as the recorder keeps them: codec parameters and time
//! base, and the stream's shape (size, profile, level, sample layout).

use crate::status::*;
use ffmpeg_next as ff;
use ff::ffi;
use std::sync::Arc;

/// The codec parameters and time base of one session of a camera: a recording that meets
/// packets of another session (a reconnect) starts a new part.
pub(crate) struct Params {
    ptr: *mut ffi::AVCodecParameters,
    pub time_base: ffi::AVRational,
}

// SAFETY: the parameters are copied once in `Params::new` and only read afterwards (by
// `avcodec_parameters_copy` into a muxer's stream), from any thread.
unsafe impl Send for Params {}
// SAFETY: as above: never written after construction.
unsafe impl Sync for Params {}

impl Params {
    pub(crate) fn new(stream: &ff::format::stream::Stream) -> Result<Arc<Params>> {
        // SAFETY: a fresh allocation (checked), then a copy from the stream's own parameters,
        // which live as long as its input (borrowed here).
        unsafe {
            let ptr = ffi::avcodec_parameters_alloc();
            if ptr.is_null() {
                return Err(Error::new(ErrorKind::OutOfMemory, "avcodec_parameters_alloc"));
            }
            let p = Params { ptr, time_base: stream.time_base().into() };
            let r = ffi::avcodec_parameters_copy(ptr, stream.parameters().as_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
            }
            Ok(Arc::new(p))
        }
    }

    /// Parameters copied from `params` (the fuzzers' streams, which have no demuxer).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn of(params: &ff::codec::Parameters, time_base: ffi::AVRational) -> Result<Arc<Params>> {
        // SAFETY: as in `new`: a fresh allocation (checked, freed by Drop on every path), then a
        // copy from parameters that `params` owns.
        unsafe {
            let ptr = ffi::avcodec_parameters_alloc();
            if ptr.is_null() {
                return Err(Error::new(ErrorKind::OutOfMemory, "avcodec_parameters_alloc"));
            }
            let p = Params { ptr, time_base };
            let r = ffi::avcodec_parameters_copy(ptr, params.as_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
            }
            Ok(Arc::new(p))
        }
    }

    #[cfg(test)]
    pub(crate) fn empty() -> Arc<Params> {
        // SAFETY: a fresh allocation, checked.
        let ptr = unsafe { ffi::avcodec_parameters_alloc() };
        assert!(!ptr.is_null());
        Arc::new(Params { ptr, time_base: ffi::AVRational { num: 1, den: 1_000_000 } })
    }

    pub(crate) fn as_ptr(&self) -> *const ffi::AVCodecParameters {
        self.ptr
    }

    /// Width and height of the stream as the demuxer saw them.
    pub(crate) fn size(&self) -> (i32, i32) {
        // SAFETY: `ptr` is valid for the life of `self` (owned, never null).
        unsafe { ((*self.ptr).width, (*self.ptr).height) }
    }

    /// What of the parameters a file's header holds and a change of which needs a new file.
    pub(crate) fn shape(&self) -> Shape {
        // SAFETY: as in `size`.
        let p = unsafe { &*self.ptr };
        Shape { width: p.width, height: p.height, profile: p.profile, level: p.level, format: p.format }
    }

    /// The extradata (avcC, hvcC, Annex B parameter sets; empty if none).
    pub(crate) fn extradata(&self) -> &[u8] {
        // SAFETY: as in `size`; FFmpeg keeps `extradata_size` bytes at `extradata`.
        unsafe {
            let p = &*self.ptr;
            if p.extradata.is_null() || p.extradata_size <= 0 {
                return &[];
            }
            std::slice::from_raw_parts(p.extradata, p.extradata_size as usize)
        }
    }

    /// `cur`'s parameters with another shape and, if given, other extradata: a stream that
    /// changed inside its session.
    pub(crate) fn changed(cur: &Params, shape: Shape, extradata: Option<&[u8]>) -> Result<Arc<Params>> {
        // SAFETY: a fresh allocation (checked) owned by `p` from here on (freed by its Drop on
        // every path), a copy of `cur`'s valid parameters into it, then its own fields written;
        // the new extradata is a padded av_malloc buffer the parameters own (freed with them).
        unsafe {
            let ptr = ffi::avcodec_parameters_alloc();
            if ptr.is_null() {
                return Err(Error::new(ErrorKind::OutOfMemory, "avcodec_parameters_alloc"));
            }
            let p = Params { ptr, time_base: cur.time_base };
            let r = ffi::avcodec_parameters_copy(ptr, cur.ptr);
            if r < 0 {
                return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
            }
            let q = &mut *ptr;
            (q.width, q.height) = (shape.width, shape.height);
            if shape.profile >= 0 {
                q.profile = shape.profile;
            }
            if shape.level > 0 {
                q.level = shape.level;
            }
            if shape.format >= 0 {
                q.format = shape.format;
            }
            if let Some(x) = extradata {
                let pad = ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
                let buf = ffi::av_mallocz(x.len() + pad) as *mut u8;
                if buf.is_null() {
                    return Err(Error::new(ErrorKind::OutOfMemory, "av_mallocz"));
                }
                std::ptr::copy_nonoverlapping(x.as_ptr(), buf, x.len());
                ffi::av_freep(&mut q.extradata as *mut *mut u8 as *mut std::ffi::c_void);
                q.extradata = buf;
                q.extradata_size = x.len() as i32;
            }
            Ok(Arc::new(p))
        }
    }
}

/// A stream's size, profile, level and sample layout (an `AVPixelFormat`; -1 unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub width: i32,
    pub height: i32,
    pub profile: i32,
    pub level: i32,
    pub format: i32,
}

impl Shape {
    /// Whether pictures of `other` may go on in a file of `self`: the same size, the same profile
    /// (H.264's constraint flags aside) and the same chroma layout and depth (full or limited
    /// range aside). Unknown values (an SDP without a size) match anything.
    pub(crate) fn same_file_as(&self, other: &Shape) -> bool {
        let known = |a: i32, b: i32| a <= 0 || b <= 0;
        let size = known(self.width, other.width) || (self.width, self.height) == (other.width, other.height);
        let profile = known(self.profile, other.profile) || (self.profile & 0xff) == (other.profile & 0xff);
        let layout = |f: i32| {
            if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&f) {
                return None;
            }
            // SAFETY: `f` is within the enum's range (checked), so the transmute yields a valid
            // value; av_pix_fmt_desc_get returns a static descriptor or null.
            let d = unsafe { ffi::av_pix_fmt_desc_get(std::mem::transmute::<i32, ffi::AVPixelFormat>(f)).as_ref() };
            d.map(|d| (d.nb_components, d.log2_chroma_w, d.log2_chroma_h, d.comp[0].depth))
        };
        let format = layout(self.format).is_none() || layout(other.format).is_none() || layout(self.format) == layout(other.format);
        size && profile && format
    }
}

impl Drop for Params {
    fn drop(&mut self) {
        // SAFETY: allocated by avcodec_parameters_alloc in `new` and freed only here.
        unsafe { ffi::avcodec_parameters_free(&mut self.ptr) };
    }
}
