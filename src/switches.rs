//! Every environment variable the library reads, in one table: what each one switches and where
//! it is read. Hosts configure nvcam through `nvcam_init` and the camera options (`config`); these
//! are for measurements, tests, and machines where a library is not where nvcam looks for it.
//! Each is read where it takes effect, at the moment it always was (some once per process, some
//! per decoder), through [`Switch::var`] or [`Switch::var_os`].

use std::env::VarError;
use std::ffi::OsString;

/// One environment switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// `NVCAM_DISABLE_GPU=1` (any value but empty or 0): no GPU path; cameras decode on the CPU
    /// (`gpu::probe`, once).
    DisableGpu,
    /// `NVCAM_KERNELS_FATBIN=path`: load the conversion kernels from this fatbin instead of the
    /// embedded one, to test a kernel build (`gpu::kernels`, once; `test-hooks` builds only).
    #[cfg(feature = "test-hooks")]
    KernelsFatbin,
    /// `NVCAM_NVDEC_CTXLOCK=context|none`: one `CUvideoctxlock` per context (the old lock) or
    /// none, instead of one per decoder, for measurements (`decode::nvdec::session`, once).
    NvdecCtxlock,
    /// `NVCAM_NVDEC_REUSE=0|off|false`: no parking of a session's NVDEC decoder for the
    /// camera's next connection (`decode::nvdec::reuse`, per session).
    NvdecReuse,
    /// `NVCAM_NVDEC_DISPLAY_DELAY=n`: the NVDEC parser's display delay (at most 8) instead of the
    /// latency mode's (`decode::nvdec`, per decoder).
    NvdecDisplayDelay,
    /// `NVCAM_HW_LOOP_FLUSH=1`: FFmpeg's CUDA hwaccel drains and flushes at every loop of a file,
    /// as it once did, for measurements (`decode::hwdec`, per loop).
    HwLoopFlush,
    /// `NVCAM_NVJPEG_LIBRARY=path`: the nvJPEG library to load instead of searching for one
    /// (`gpu::nvjpeg::api`, once).
    NvjpegLibrary,
    /// `NVCAM_DECODE_LOAD_LIMIT=pct`: how much of a GPU's learned NVDEC capacity AUTO cameras
    /// may ask for before the next goes elsewhere (default 95; 0: no check) (`gpu::load`, at each camera's admission).
    DecodeLoadLimit,
    /// `NVCAM_CTX_SCHED=blocking|yield|spin|auto`: the scheduling set on a GPU's primary context
    /// where nvcam is first to activate it, instead of blocking-sync, for measurements (where
    /// the driver's event thread's time goes; `gpu::context`, once per device).
    CtxSched,
    /// `CUDA_PATH`: the CUDA toolkit's folder, one of the places nvJPEG is looked for
    /// (`gpu::nvjpeg::api`, once).
    CudaPath,
}

impl Switch {
    /// Every switch (docs/development.md lists them).
    #[cfg(test)]
    pub(crate) const ALL: &[Switch] = &[
        Switch::DisableGpu,
        #[cfg(feature = "test-hooks")]
        Switch::KernelsFatbin,
        Switch::NvdecCtxlock,
        Switch::NvdecReuse,
        Switch::NvdecDisplayDelay,
        Switch::HwLoopFlush,
        Switch::NvjpegLibrary,
        Switch::DecodeLoadLimit,
        Switch::CtxSched,
        Switch::CudaPath,
    ];

    /// The variable's name.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Switch::DisableGpu => "NVCAM_DISABLE_GPU",
            #[cfg(feature = "test-hooks")]
            Switch::KernelsFatbin => "NVCAM_KERNELS_FATBIN",
            Switch::NvdecCtxlock => "NVCAM_NVDEC_CTXLOCK",
            Switch::NvdecReuse => "NVCAM_NVDEC_REUSE",
            Switch::NvdecDisplayDelay => "NVCAM_NVDEC_DISPLAY_DELAY",
            Switch::HwLoopFlush => "NVCAM_HW_LOOP_FLUSH",
            Switch::NvjpegLibrary => "NVCAM_NVJPEG_LIBRARY",
            Switch::DecodeLoadLimit => "NVCAM_DECODE_LOAD_LIMIT",
            Switch::CtxSched => "NVCAM_CTX_SCHED",
            Switch::CudaPath => "CUDA_PATH",
        }
    }

    /// The variable as `std::env::var` reads it.
    pub(crate) fn var(self) -> Result<String, VarError> {
        std::env::var(self.name())
    }

    /// The variable as `std::env::var_os` reads it.
    pub(crate) fn var_os(self) -> Option<OsString> {
        std::env::var_os(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_has_its_own_name() {
        let mut names: Vec<&str> = Switch::ALL.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Switch::ALL.len());
    }

    #[test]
    fn every_switch_is_in_the_development_guide() {
        let guide = include_str!("../docs/development.md");
        for s in Switch::ALL.iter().copied() {
            assert!(guide.contains(&format!("`{}`", s.name())), "docs/development.md does not list {}", s.name());
        }
    }
}
