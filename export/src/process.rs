//! The exporter's own `process_*` metrics, the names every Prometheus client library uses
//! (CPU seconds, resident and virtual memory, open and maximum file descriptors, start time),
//! read from /proc at each scrape. On a system without /proc they are left out.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

#[derive(Debug, Default)]
pub struct ProcessCollector;

/// What /proc says about this process.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    cpu_seconds: f64,
    resident_bytes: i64,
    virtual_bytes: i64,
    start_time_seconds: f64,
    open_fds: i64,
    max_fds: Option<i64>,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(r) = read() else { return Ok(()) };
        let cpu = ConstCounter::new(r.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, f64); 4] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                r.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                r.virtual_bytes as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                r.start_time_seconds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                r.open_fds as f64,
            ),
        ];
        for (name, help, v) in gauges {
            let g = ConstGauge::new(v);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        if let Some(max) = r.max_fds {
            let g = ConstGauge::new(max as f64);
            g.encode(encoder.encode_descriptor(
                "process_max_fds",
                "Maximum number of open file descriptors.",
                None,
                g.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

fn read() -> Option<Reading> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // Numbered as proc(5) numbers them: field 3 (state) is fields[0].
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if ticks <= 0 || page <= 0 {
        return None;
    }
    let ticks = ticks as f64;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok())?;
    Some(Reading {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks,
        virtual_bytes: field(23)? as i64,
        resident_bytes: (field(24)? * page as u64) as i64,
        start_time_seconds: boot as f64 + field(22)? as f64 / ticks,
        open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as i64,
        max_fds: max_open_files(),
    })
}

/// The soft limit on open files, from /proc/self/limits.
fn max_open_files() -> Option<i64> {
    std::fs::read_to_string("/proc/self/limits")
        .ok()?
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_as_it_is() {
        let Some(r) = read() else { return };
        assert!(r.resident_bytes > 1 << 20, "{r:?}");
        assert!(r.virtual_bytes >= r.resident_bytes, "{r:?}");
        assert!(r.open_fds >= 3, "{r:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(r.start_time_seconds <= now + 1.0, "{r:?}");
        assert!(r.start_time_seconds > now - 86_400.0 * 365.0, "{r:?}");
        assert!(r.max_fds.is_some_and(|m| m >= r.open_fds), "{r:?}");
    }
}
