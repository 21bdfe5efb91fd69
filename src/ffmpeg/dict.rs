//! An `AVDictionary` of options, owned, that tells which options FFmpeg did not consume.

use crate::status::*;
use ffmpeg_next::ffi;
use std::ffi::{CStr, CString};

/// Options for an FFmpeg call that takes `AVDictionary**`; freed on drop.
pub(crate) struct Dict(*mut ffi::AVDictionary);

impl Dict {
    pub(crate) fn from_pairs(pairs: &[(String, String)]) -> Result<Dict> {
        let mut d = Dict(std::ptr::null_mut());
        for (k, v) in pairs {
            let nul = || Error::new(ErrorKind::BadOption, format!("FFmpeg option '{k}' contains a NUL byte"));
            let (ck, cv) = (CString::new(k.as_str()).map_err(|_| nul())?, CString::new(v.as_str()).map_err(|_| nul())?);
            // SAFETY: `d.0` is null or a dictionary we own; both strings are NUL-terminated and
            // copied by FFmpeg (flags 0).
            let r = unsafe { ffi::av_dict_set(&mut d.0, ck.as_ptr(), cv.as_ptr(), 0) };
            if r < 0 {
                return Err(Error::new(ErrorKind::OutOfMemory, "av_dict_set failed"));
            }
        }
        Ok(d)
    }

    /// For the FFmpeg call that consumes options (it replaces the dictionary with the leftovers).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut *mut ffi::AVDictionary {
        &mut self.0
    }

    /// The keys still in the dictionary (after an FFmpeg call: the options it did not use).
    pub(crate) fn keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut e: *mut ffi::AVDictionaryEntry = std::ptr::null_mut();
        loop {
            // SAFETY: `self.0` is null or our dictionary; `e` is null or its previous entry; ""
            // with IGNORE_SUFFIX matches every key.
            e = unsafe { ffi::av_dict_get(self.0, c"".as_ptr(), e, ffi::AV_DICT_IGNORE_SUFFIX) };
            if e.is_null() {
                return out;
            }
            // SAFETY: a returned entry has a NUL-terminated key owned by the dictionary.
            out.push(unsafe { CStr::from_ptr((*e).key) }.to_string_lossy().into_owned());
        }
    }
}

impl Drop for Dict {
    fn drop(&mut self) {
        // SAFETY: null or a dictionary we own; av_dict_free nulls the pointer.
        unsafe { ffi::av_dict_free(&mut self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_lists_every_option_given() {
        let d = Dict::from_pairs(&[("a".into(), "1".into()), ("b".into(), "2".into())]).unwrap();
        assert_eq!(d.keys(), vec!["a".to_string(), "b".to_string()]);
        assert_eq!(Dict::from_pairs(&[("a\0".into(), "1".into())]).err().unwrap().kind, ErrorKind::BadOption);
    }
}
