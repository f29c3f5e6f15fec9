//! Kernel-side evidence of a thread, read beside its scheduler counters ([`crate::sched`]) for
//! the same threads: its page faults and its split of CPU time between user space and the
//! kernel (`/proc/self/task/<tid>/stat`), and the system call it is blocked in
//! (`/proc/self/task/<tid>/syscall`). A gap whose thread was on a CPU is then told apart: the
//! program's own code (user time), pages touched for the first time or pinned (minor faults,
//! kernel time: a fresh 2 GB vector's first touch, `mlock`), or another call into the kernel
//! (kernel time without faults: a `munmap` of a huge mapping); and a gap whose thread was
//! blocked names what it was blocked in (`futex`: a lock or a condition; `ioctl`: a driver).
//!
//! Both files stay open (one `pread` each a sample, as `schedstat`). The kernel answers
//! `running` for the system call of a thread on a CPU (or runnable), so a call that keeps the
//! CPU busy in the kernel is seen by its kernel time, not by name. Context switches (in
//! `status`, a third and larger file) are not read: `schedstat`'s timeslices and run-queue
//! time already say how often and how long the thread was off a CPU.
//!
//! Only changes are sent, each preceded by the last unchanged reading: a blocked thread costs
//! nothing on the wire, and a change is placed between two readings the collector took.

use probe_protocol::{Event, ThreadKernel};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// One reading of a thread's kernel counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Reading {
    pub minor_faults: u64,
    pub major_faults: u64,
    pub user_ticks: u64,
    pub system_ticks: u64,
    /// The system call it is blocked in: (number, second argument).
    pub syscall: Option<(u32, u64)>,
}

/// A thread's open files and what was last sent of it.
#[derive(Debug, Default)]
pub(crate) struct KernelTrack {
    stat: Option<File>,
    syscall: Option<File>,
    /// The last reading sent, and when.
    sent: Option<(u64, Reading)>,
    /// The latest reading equal to the one sent, not sent itself: it goes before the next
    /// change.
    held: Option<u64>,
}

impl KernelTrack {
    /// Opens thread `os_tid`'s files; `None` when its `stat` cannot be opened (gone, no procfs).
    pub fn open(os_tid: u32) -> Option<KernelTrack> {
        let open = |f: &str| File::open(format!("/proc/self/task/{os_tid}/{f}")).ok();
        Some(KernelTrack {
            stat: Some(open("stat")?),
            // Refused where a security policy hides it: faults and times still come.
            syscall: open("syscall"),
            ..KernelTrack::default()
        })
    }

    /// Reads the thread now; a change goes to `out` as `ThreadKernel` of wire thread `thread`,
    /// stamped by `now` right after the reading. `false`: its counters can no longer be read
    /// (it exited).
    pub fn sample(
        &mut self,
        now: &impl Fn() -> u64,
        thread: u32,
        names: &mut SyscallNames,
        out: &mut Vec<Event>,
    ) -> bool {
        let Some(r) = self.read() else {
            return false;
        };
        let now = now();
        match self.sent {
            Some((_, s)) if s == r => self.held = Some(now),
            _ => {
                if let (Some(ts), Some((_, s))) = (self.held.take(), self.sent) {
                    out.push(names.event(ts, thread, s));
                }
                out.push(names.event(now, thread, r));
                self.sent = Some((now, r));
            }
        }
        true
    }

    fn read(&self) -> Option<Reading> {
        let (minor_faults, major_faults, user_ticks, system_ticks) =
            read_stat(self.stat.as_ref()?)?;
        Some(Reading {
            minor_faults,
            major_faults,
            user_ticks,
            system_ticks,
            syscall: self.syscall.as_ref().and_then(read_syscall),
        })
    }
}

/// System call numbers to interned names (the name table takes a lock: once per number).
#[derive(Debug, Default)]
pub(crate) struct SyscallNames {
    ids: HashMap<u32, u32>,
}

/// Nanoseconds per clock tick of `stat`'s times (asked once, when first needed).
fn tick_ns() -> u64 {
    static TICK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICK.get_or_init(|| {
        // SAFETY: sysconf only reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        1_000_000_000 / u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
    })
}

impl SyscallNames {
    fn id(&mut self, nr: u32) -> u32 {
        *self.ids.entry(nr).or_insert_with(|| {
            let name = syscalls::Sysno::new(nr as usize).map(|s| s.name());
            match name {
                Some(n) => crate::names::intern(n),
                None => crate::names::intern(&format!("syscall {nr}")),
            }
        })
    }

    fn event(&mut self, ts: u64, thread: u32, r: Reading) -> Event {
        Event::ThreadKernel(ThreadKernel {
            ts,
            thread,
            minor_faults: r.minor_faults,
            major_faults: r.major_faults,
            user_ns: r.user_ticks * tick_ns(),
            system_ns: r.system_ticks * tick_ns(),
            syscall: r.syscall.map(|(nr, _)| self.id(nr)),
            syscall_arg: r.syscall.map_or(0, |(_, a)| a),
        })
    }
}

/// `stat`'s minor faults, major faults, user and system ticks.
fn read_stat(f: &File) -> Option<(u64, u64, u64, u64)> {
    // 52 fields: under 1 KiB even with every number at its widest.
    let mut buf = [0u8; 1024];
    let n = f.read_at(&mut buf, 0).ok()?;
    parse_stat(std::str::from_utf8(&buf[..n]).ok()?)
}

/// After the command name (in parentheses, which may hold anything, parentheses included):
/// state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime,
/// stime.
fn parse_stat(s: &str) -> Option<(u64, u64, u64, u64)> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().take(13).collect();
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some((num(7)?, num(9)?, num(11)?, num(12)?))
}

/// The system call the thread is blocked in: (number, second argument); `None` when it is
/// running (`running`), or blocked outside a system call (`-1 …`).
fn read_syscall(f: &File) -> Option<(u32, u64)> {
    let mut buf = [0u8; 256];
    let n = f.read_at(&mut buf, 0).ok()?;
    parse_syscall(std::str::from_utf8(&buf[..n]).ok()?)
}

/// `nr arg1 … arg6 sp pc`, the arguments in hexadecimal.
fn parse_syscall(s: &str) -> Option<(u32, u64)> {
    let mut it = s.split_whitespace();
    let nr = it.next()?.parse::<u32>().ok()?;
    let _first = it.next()?;
    let second = it.next()?;
    let arg = u64::from_str_radix(second.trim_start_matches("0x"), 16).ok()?;
    Some((nr, arg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 2622 10 3 0 17 250 0 0 20 0 9 0 \
                    1234 5678 90 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        assert_eq!(parse_stat(line), Some((2622, 3, 17, 250)));
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
    }

    #[test]
    fn a_blocked_call_is_named_and_a_running_thread_is_not() {
        assert_eq!(
            parse_syscall("202 0x7f00 0x80 0x2 0x0 0x0 0x0 0x7ffc 0x7f11\n"),
            Some((202, 0x80))
        );
        assert_eq!(
            parse_syscall("11 0x7f0000000000 0x40000000 0x0 0x0 0x0 0x0 0x1 0x2\n"),
            Some((11, 1 << 30))
        );
        assert_eq!(parse_syscall("running\n"), None);
        assert_eq!(parse_syscall("-1 0x7ffc 0x7f11\n"), None);
    }

    /// A thread sleeping in `nanosleep` is read as such, then only changes are sent, each
    /// after the last unchanged reading.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc/self/task/<tid>/")]
    fn only_changes_are_sent_after_the_last_unchanged_reading() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::Builder::new()
            .name("sleeper".into())
            .spawn(move || {
                tx.send(crate::thread::os_tid()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(300));
                // Touch fresh pages: minor faults.
                let v = std::hint::black_box(vec![1u8; 8 << 20]);
                drop(v);
                go_rx.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut t = KernelTrack::open(tid).expect("a live thread's stat");
        let mut names = SyscallNames::default();
        let mut out = Vec::new();
        for ts in [1, 2, 3] {
            assert!(t.sample(&|| ts, 9, &mut names, &mut out));
        }
        assert_eq!(out.len(), 1, "asleep, unchanged: {out:?}");
        let Event::ThreadKernel(k) = &out[0] else {
            panic!("{out:?}")
        };
        let name = crate::names::range(k.syscall.unwrap(), k.syscall.unwrap());
        assert!(name[0].1.contains("nanosleep"), "asleep in {name:?}");
        std::thread::sleep(std::time::Duration::from_millis(400));
        assert!(t.sample(&|| 4, 9, &mut names, &mut out));
        let ts: Vec<u64> = out.iter().filter_map(Event::ts).collect();
        assert_eq!(ts, [1, 3, 4], "{out:?}");
        let (Event::ThreadKernel(a), Event::ThreadKernel(b)) = (&out[1], &out[2]) else {
            panic!("{out:?}")
        };
        assert!(b.minor_faults >= a.minor_faults + 1000, "{a:?} → {b:?}");
        go_tx.send(()).unwrap();
        sleeper.join().unwrap();
        assert!(
            !t.sample(&|| 5, 9, &mut names, &mut out),
            "an exited thread"
        );
    }
}
