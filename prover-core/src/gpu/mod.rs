//! The GPU backend's entry point: detection before anything touches cudarc (which panics
//! when a CUDA library is missing), so a machine without a GPU gets a reason, not a crash.

use crate::groth16::backend::Backend;

/// Shared libraries the GPU backend needs, in the order they are checked.
const DRIVER: &str = "libcuda.so.1";

/// Whether a shared library can be loaded, without keeping it.
pub fn library_present(name: &str) -> Result<(), String> {
    let c = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: dlopen with a valid NUL-terminated name; RTLD_LAZY | RTLD_LOCAL loads nothing
    // into the global namespace, and the handle is closed at once.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            return Err(format!(
                "{name} not found (no NVIDIA driver on this machine)"
            ));
        }
        libc::dlclose(h);
    }
    Ok(())
}

/// A usable GPU backend and a description of the device, or why there is none.
pub fn detect() -> Result<(Box<dyn Backend>, String), String> {
    library_present(DRIVER)?;
    Err("this build has no GPU kernels yet".into())
}
