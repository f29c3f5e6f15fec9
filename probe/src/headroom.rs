//! A program that bounds its address space (`RLIMIT_AS`) keeps what it bounded: a session
//! starts only where what its threads reserve leaves the program most of what it has left.
//!
//! Why a refusal and not a smaller probe: glibc gives each new thread that allocates an arena
//! of its own, and an arena reserves 64 MiB of address space whatever it holds (the first
//! eight threads of a process always get one; nothing outside glibc can hand a thread another).
//! The probe's server and collector reserved 140 MiB so before storing anything: a program
//! that set its limit at what it used + 64 MiB and then allocated 400 blocks of 128 KiB had 8
//! of its `malloc`s fail under `proofscope run` (0 alone), 351 of 400 at 150 KiB. Refusing
//! costs the profile of such a program, with the reason said; starting cost the program.

use crate::error::ProbeError;

/// What glibc reserves for a thread's arena (`HEAP_MAX_SIZE` on 64-bit).
const ARENA: u64 = 64 << 20;
/// A thread's stack (Rust's default) and its guard page.
const STACK: u64 = (2 << 20) + (4 << 10);

/// What a session of `threads` threads and `budgets` bytes of buffers (flight recorder,
/// viewers' queues) may come to reserve.
pub(crate) fn need(threads: u64, budgets: u64) -> u64 {
    threads * (ARENA + STACK) + budgets
}

/// Refuses when the process's address space is bounded and `need` is more than half of what
/// is left under the bound.
pub(crate) fn check(need: u64) -> Result<(), ProbeError> {
    let Some(limit) = soft_limit() else {
        return Ok(());
    };
    let used = used_bytes().unwrap_or(0);
    judge(limit, used, need)
}

fn judge(limit: u64, used: u64, need: u64) -> Result<(), ProbeError> {
    let free = limit.saturating_sub(used);
    if need <= free / 2 {
        return Ok(());
    }
    Err(ProbeError::AddressSpace {
        limit_mib: limit >> 20,
        free_mib: free >> 20,
        need_mib: need.div_ceil(1 << 20),
    })
}

/// `RLIMIT_AS`'s soft value; `None` when unbounded.
fn soft_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0 {
        return None;
    }
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// The process's address space in bytes: `/proc/self/statm`'s first field, in pages.
fn used_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the process.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_session_starts_where_it_takes_at_most_half_of_what_is_left() {
        let need = need(2, 64 * MIB);
        assert_eq!(need, 2 * (66 * MIB + 4096) + 64 * MIB);
        assert!(judge(10_000 * MIB, 100 * MIB, need).is_ok());
        assert!(judge(100 * MIB + 2 * need, 100 * MIB, need).is_ok());
        let err = judge(100 * MIB + 64 * MIB, 100 * MIB, need).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("RLIMIT_AS"), "{text}");
        assert!(text.contains("64 MiB"), "{text}");
        assert!(
            judge(50 * MIB, 100 * MIB, need).is_err(),
            "over the limit already"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "getrlimit and /proc")]
    fn an_unbounded_process_always_starts() {
        if soft_limit().is_none() {
            assert!(check(u64::MAX / 2).is_ok());
        }
        assert!(used_bytes().is_some_and(|b| b > 0));
    }
}
