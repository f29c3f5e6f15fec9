//! Facts about the machine and the process, for `Hello` and allocator samples.

/// Reads this process's resident set size from `/proc/self/statm`, kept open: one `pread` a
/// sample instead of open, read and close (the path lookup and file setup were most of the
/// collector's kernel time at 100 samples a second).
#[derive(Debug)]
pub struct RssReader {
    file: Option<std::fs::File>,
    page: u64,
}

impl RssReader {
    pub fn new() -> RssReader {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        RssReader {
            file: std::fs::File::open("/proc/self/statm").ok(),
            page: page.max(4096) as u64,
        }
    }

    /// Resident bytes now (0 when unknown).
    pub fn bytes(&self) -> u64 {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let Some(n) = self.file.as_ref().and_then(|f| f.read_at(&mut buf, 0).ok()) else {
            return 0;
        };
        let pages: u64 = std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|s| s.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        pages * self.page
    }
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or
    // truncates, and we read only up to the first NUL.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub fn total_ram_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// The CPU model as the OS names it: `model name` (x86) or `Model`/`Hardware` (Arm) of
/// `/proc/cpuinfo`; empty when it says none.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| cpu_model_in(&s))
        .unwrap_or_default()
}

fn cpu_model_in(cpuinfo: &str) -> String {
    ["model name", "Model", "Hardware"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_owned())
            })
        })
        .unwrap_or_default()
}

/// OS and kernel: `PRETTY_NAME` of os-release and the kernel release, e.g.
/// `Debian GNU/Linux 12 (bookworm), Linux 6.1.0-18-amd64`; the parts that are known.
pub fn os() -> String {
    let pretty = ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| {
            s.lines().find_map(|l| {
                let v = l.strip_prefix("PRETTY_NAME=")?;
                Some(v.trim().trim_matches('"').to_owned())
            })
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|r| format!("Linux {}", r.trim()));
    [pretty, kernel]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn cpu_count() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// The kernel's name for a thread of this process (`comm`), if it still exists.
pub fn thread_name(os_tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{os_tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

/// What to call a thread of this process that has no Rust name: `main` for the process's
/// first thread; else the name the kernel knows it by (`pthread_setname_np`) when it is not
/// just the program's; else `thread-<tid>`.
pub fn thread_label(os_tid: u32) -> String {
    if os_tid == std::process::id() {
        return "main".into();
    }
    let program = thread_name(std::process::id());
    thread_name(os_tid)
        .filter(|n| !n.is_empty() && Some(n) != program.as_ref())
        .unwrap_or_else(|| format!("thread-{os_tid}"))
}

/// Whether a thread of this process with this kernel id still exists.
pub fn thread_alive(os_tid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{os_tid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_is_read_on_x86_and_arm() {
        assert_eq!(
            cpu_model_in("processor\t: 0\nmodel name\t: AMD EPYC 9454 48-Core Processor\n"),
            "AMD EPYC 9454 48-Core Processor"
        );
        assert_eq!(
            cpu_model_in("CPU part\t: 0xd0c\nModel\t: Raspberry Pi 4\n"),
            "Raspberry Pi 4"
        );
        assert_eq!(cpu_model_in("processor\t: 0\n"), "");
    }

    #[test]
    fn this_machine_names_its_kernel() {
        assert!(os().contains("Linux "), "{}", os());
    }

    #[test]
    #[cfg_attr(miri, ignore = "reads /proc through pread")]
    fn rss_follows_touched_memory() {
        let r = RssReader::new();
        let before = r.bytes();
        assert!(before > 0);
        // Other tests of this process allocate and free meanwhile: touch far more than the
        // margin asked for (a 64 MiB vector once measured 47.9 MiB of growth).
        // Kept visible to the optimiser: an optimised build may drop an unused vector whole.
        let v = std::hint::black_box(vec![1u8; 128 << 20]);
        let during = r.bytes();
        assert!(during >= before + (64 << 20), "{before} → {during}");
        drop(v);
    }
}
