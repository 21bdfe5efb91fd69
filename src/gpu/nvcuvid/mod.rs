//! NVIDIA's video decoder library (libnvcuvid, `nvcuvid.dll`; the driver ships it): its
//! declarations ([`sys`]) and the one thin `Result` layer that calls them ([`api`]), beside the CUDA
//! driver's own (`super::driver`). The NVDEC decoder built on them is `crate::decode::nvdec`.

pub(crate) mod api;
pub(crate) mod sys;
