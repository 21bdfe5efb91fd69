//! The GPU path.
pub mod nvcuvid;
