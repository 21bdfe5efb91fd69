//! GPU tests: whether a GPU is there (and the guard that skips or fails a test without one), CUDA
//! driver calls that must succeed, and camera options on GPU 0.

use super::*;

/// Whether libcuda loads and shows at least one device.
pub fn gpu_usable() -> bool {
    use cudarc::driver::sys;
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| unsafe {
        if !sys::is_culib_present() || sys::cuInit(0) != sys::CUresult::CUDA_SUCCESS {
            return false;
        }
        let mut n = 0;
        sys::cuDeviceGetCount(&mut n) == sys::CUresult::CUDA_SUCCESS && n > 0
    })
}

/// The name of the function the macro is called in (a test's name), without its module path.
#[macro_export]
macro_rules! test_name {
    () => {{
        fn f() {}
        let name = std::any::type_name_of_val(&f);
        let name = name.strip_suffix("::f").unwrap_or(name);
        name.rsplit("::").next().unwrap_or(name)
    }};
}

/// [`need_gpu`] for the test it is called in, which it names itself: `need_gpu!()` needs a usable
/// GPU, `need_gpu!(have, what)` whatever `have` says is there.
#[macro_export]
macro_rules! need_gpu {
    () => {
        $crate::need_gpu!($crate::common::gpu_usable(), "usable GPU (libcuda and a device)")
    };
    ($have:expr, $what:expr) => {
        $crate::common::need_gpu($crate::test_name!(), $have, $what)
    };
}

/// Whether a GPU test can run (`have` says what it needs is there): false with a note where it
/// is not, so CI (no GPU) passes; a panic under `REQUIRE_GPU=1` (the GPU machine), where a missing
/// GPU is a failure, never a skip. Tests call it through [`need_gpu!`], which names them.
pub fn need_gpu(test: &str, have: bool, what: &str) -> bool {
    if have {
        return true;
    }
    if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("{test}: REQUIRE_GPU=1 but {what} is missing");
    }
    println!("{test}: no {what} here; not run (REQUIRE_GPU=1 makes this a failure)");
    false
}

/// Whether a test that needs two GPUs can run: false with a note on a machine with fewer; a
/// panic under `REQUIRE_GPUS=2` (the two-GPU machine), where fewer is a failure, never a skip.
pub fn need_two_gpus(test: &str) -> bool {
    let n = gpu_stats(-1).device_count;
    if n >= 2 {
        return true;
    }
    if std::env::var("REQUIRE_GPUS").is_ok_and(|v| v.trim() == "2") {
        panic!("{test}: REQUIRE_GPUS=2 but {n} GPU(s) are visible");
    }
    println!("{test}: {n} GPU here; needs 2 (the nvidia-h200-x2 machine; REQUIRE_GPUS=2 makes this a failure)");
    false
}

pub fn gpu_stats(device: i32) -> nvcam_gpu_stats {
    let mut s = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
    assert_eq!(unsafe { nvcam_gpu_stats(device, &mut s) }, NVCAM_OK, "{}", last_error());
    s
}

/// Camera options on GPU 0 with the given decoder.
pub fn gpu_options(flags: u32, decoder: u32) -> nvcam_camera_options {
    let mut o = options(flags);
    o.device = 0;
    o.decoder = decoder;
    o
}

/// Serializes a GPU test binary's tests: they share the library's global state.
pub static GPU_SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// One library session of a GPU test: the binary's tests one at a time ([`GPU_SERIAL`]), the
/// library initialized with `cfg` and logging to stderr at `level`, NVDEC's test hooks cleared;
/// shut down on drop, its status checked unless the test is failing already.
pub struct Session {
    _serial: parking_lot::MutexGuard<'static, ()>,
}

// `new` is one of three named starting points, not a default.
#[allow(clippy::new_without_default)]
impl Session {
    /// Default settings, logging at INFO.
    pub fn new() -> Session {
        Session::with(nvcam_config { struct_size: std::mem::size_of::<nvcam_config>() as u32, ..Default::default() }, NVCAM_LOG_INFO)
    }

    /// Default settings, logging warnings and errors only.
    pub fn quiet() -> Session {
        Session::with(nvcam_config { struct_size: std::mem::size_of::<nvcam_config>() as u32, ..Default::default() }, NVCAM_LOG_WARN)
    }

    pub fn with(cfg: nvcam_config, level: i32) -> Session {
        let g = GPU_SERIAL.lock();
        #[cfg(feature = "test-hooks")]
        nvcam::diag::hooks::clear();
        unsafe {
            nvcam_log_init(c"-".as_ptr(), level);
            assert_eq!(nvcam_init(&cfg), NVCAM_OK, "{}", last_error());
        }
        Session { _serial: g }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        #[cfg(feature = "test-hooks")]
        nvcam::diag::hooks::clear();
        let r = nvcam_shutdown(20_000);
        if !std::thread::panicking() {
            assert_eq!(r, NVCAM_OK, "shutdown: {}", last_error());
        }
    }
}
