//! The thread's allocator slot index (see `alloc.rs`), read on every allocation and free.
//!
//! In an executable a Rust `thread_local!` is one `%fs`-relative load. In a shared object
//! (`libproofscope_preload.so`, `libproofscope_probe.so`) Rust only has the general-dynamic TLS
//! model: every access is a call to `__tls_get_addr`, which was a fifth of the preload
//! library's added cost per small malloc+free pair (perf; `cargo bench -p proofscope-preload
//! --bench hooks`, figures in docs/BENCHMARKS.md). On x86-64 Linux the word is therefore
//! declared in assembly and reached with the initial-exec sequence (a GOT load and the
//! thread pointer), which the linker turns back into the one-load local-exec form in an
//! executable. Elsewhere, and under Miri or loom, it is an ordinary `thread_local!`.

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(proofscope_loom)
))]
mod imp {
    // One 8-byte word of thread-local storage, zero in every thread. `.hidden`: each shared
    // object carrying the probe keeps its own (as `thread_local!` would).
    std::arch::global_asm!(
        ".pushsection .tbss.proofscope_alloc_slot,\"awT\",@nobits",
        ".p2align 3",
        ".globl proofscope_alloc_slot",
        ".hidden proofscope_alloc_slot",
        ".type proofscope_alloc_slot, @object",
        ".size proofscope_alloc_slot, 8",
        "proofscope_alloc_slot:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    fn addr() -> *mut usize {
        let p: *mut usize;
        // SAFETY: the initial-exec sequence of the x86-64 ELF TLS ABI: the GOT entry holds the
        // word's offset from the thread pointer, and `%fs:0` holds the thread pointer itself.
        // It reads no memory that another thread writes and leaves the flags alone.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr [rip + proofscope_alloc_slot@GOTTPOFF]",
                "add {p}, qword ptr fs:[0]",
                p = out(reg) p,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        p
    }

    /// This thread's value (0 until set).
    #[inline(always)]
    pub fn get() -> usize {
        // SAFETY: `addr` is this thread's own aligned word, live as long as the thread, and
        // written only by this thread.
        unsafe { addr().read() }
    }

    #[inline(always)]
    pub fn set(v: usize) {
        // SAFETY: as for `get`.
        unsafe { addr().write(v) }
    }
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(proofscope_loom)
)))]
mod imp {
    use std::cell::Cell;

    thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(0) };
    }

    /// This thread's value (0 until set; `usize::MAX` once the thread is being torn down,
    /// which sends its last blocks to the shared overflow slot).
    #[inline(always)]
    pub fn get() -> usize {
        SLOT.try_with(Cell::get).unwrap_or(usize::MAX)
    }

    #[inline(always)]
    pub fn set(v: usize) {
        let _ = SLOT.try_with(|c| c.set(v));
    }
}

pub use imp::{get, set};

#[cfg(test)]
mod tests {
    #[test]
    fn each_thread_has_its_own_word() {
        super::set(7);
        std::thread::Builder::new()
            .name("slot-tls-test".into())
            .spawn(|| {
                assert_eq!(super::get(), 0);
                super::set(9);
                assert_eq!(super::get(), 9);
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(super::get(), 7);
    }
}
