//! The integration tests' one kit, by topic: [`api`] the C API as tests call it, [`clips`] clips
//! encoded by the real ffmpeg CLI and reference decodes, [`jpeg`] JPEG cameras' clips, [`gpu`]
//! GPU guards and CUDA set-up, [`processes`] threads, memory, built binaries and commands,
//! [`peers`] the processes of a shared camera, [`hostile`] one hostile camera beside 3 healthy
//! ones and the checks that the host survives it. Every
//! name is re-exported here, so a test says `use common::*;` whatever the topic.
#![allow(dead_code)]

use nvcam::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

mod api;
mod clips;
mod cuda;
mod gpu;
#[cfg(target_os = "linux")]
mod hostile;
mod jpeg;
mod peers;
mod processes;

// A test binary uses the topics it needs; the rest of the kit is not an error.
#[allow(unused_imports)]
pub use api::*;
#[allow(unused_imports)]
pub use clips::*;
#[allow(unused_imports)]
pub use cuda::*;
#[allow(unused_imports)]
pub use gpu::*;
#[allow(unused_imports)]
#[cfg(target_os = "linux")]
pub use hostile::*;
#[allow(unused_imports)]
pub use jpeg::*;
#[allow(unused_imports)]
pub use peers::*;
#[allow(unused_imports)]
pub use processes::*;
