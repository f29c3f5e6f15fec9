//! Why a launched prover's probe has not answered, read from `/proc`: a definite reason when
//! the preload is not in the process and never will be (a static binary, a setuid program, an
//! `LD_PRELOAD` the program or a wrapper cleared), or `None` when it is loaded and only slow —
//! on a loaded machine its first `Hello` can take seconds, and a run that gave up after a fixed
//! wait lost every name of the session ("— ? 3.11 s", "gap in ?") for a prover that was fine.

use std::path::Path;

/// The preload's file name, as it appears in a process's memory map.
const PRELOAD: &str = "libproofscope_preload";

/// Why process `pid`'s probe can never answer; `None` while its preload is loaded (or the
/// process is gone: nothing more to say).
pub fn why_no_probe(pid: u32) -> Option<String> {
    let proc = Path::new("/proc").join(pid.to_string());
    let maps = std::fs::read_to_string(proc.join("maps")).ok()?;
    if maps.contains(PRELOAD) {
        return None;
    }
    let status = std::fs::read_to_string(proc.join("status")).unwrap_or_default();
    if setuid(&status) {
        return Some(format!(
            "pid {pid} runs setuid or setgid: the loader ignores LD_PRELOAD for it"
        ));
    }
    if !maps
        .lines()
        .any(|l| l.contains("/ld-linux") || l.contains("/ld-musl"))
    {
        return Some(format!(
            "pid {pid} is a static binary: no dynamic loader, so no LD_PRELOAD"
        ));
    }
    let environ = std::fs::read(proc.join("environ")).unwrap_or_default();
    let preload_set = environ.split(|&b| b == 0).any(|kv| {
        kv.starts_with(b"LD_PRELOAD=") && kv.windows(PRELOAD.len()).any(|w| w == PRELOAD.as_bytes())
    });
    if !preload_set {
        return Some(format!(
            "pid {pid} started without the preload in LD_PRELOAD (the program or a wrapper cleared it)"
        ));
    }
    Some(format!(
        "pid {pid} has LD_PRELOAD set but the preload is not loaded in it (the loader could not open it?)"
    ))
}

/// Real and effective ids differ (`Uid:`/`Gid:` lines of `/proc/PID/status`).
fn setuid(status: &str) -> bool {
    status
        .lines()
        .filter(|l| l.starts_with("Uid:") || l.starts_with("Gid:"))
        .any(|l| {
            let ids: Vec<&str> = l.split_whitespace().skip(1).collect();
            ids.len() >= 2 && ids[0] != ids[1]
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_differ_are_setuid() {
        assert!(setuid(
            "Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n"
        ));
        assert!(!setuid("Uid:\t1000\t1000\t1000\t1000\nGid:\t5\t5\t5\t5\n"));
    }

    #[test]
    fn this_process_without_the_preload_has_a_reason_and_a_gone_one_none() {
        let why = why_no_probe(std::process::id()).expect("no preload in the test");
        assert!(why.contains(&std::process::id().to_string()), "{why}");
        assert_eq!(why_no_probe(u32::MAX), None);
    }
}
