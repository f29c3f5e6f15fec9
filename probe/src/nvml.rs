//! NVML: the GPU inventory for `Hello`, and a named sampler thread (10 Hz by default) that
//! reads utilisation and memory of every device, power, temperature and clocks at a fifth of
//! that, and the energy and PCIe counters at a fiftieth (each PCIe read samples for ~20 ms).
//! Without NVML (no driver, no library) `Hello` says why and no thread runs.

use crate::session::{Session, SlowEvent};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use probe_protocol::{Event, GpuInfo, GpuProcess, GpuSample};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PCIe counters and the energy counter are read every this many samples (the first sample
/// included). Measured on the H200 host (`probe/examples/nvml_cost.rs`, median of 40 calls):
/// `pcie_throughput` 0.7 ms of CPU and 21 ms of wall a counter, `total_energy_consumption`
/// 3.1 ms of CPU — read at every 100 ms sample, the energy counter alone was 3 % of a core,
/// the sampler 23–134 ms of CPU a 1-second proof; every other query costs under 7 µs. Read
/// every tenth sample the sampler still took 5.5 ms of a 0.7 s proof (bench --probe-overhead's
/// accounting, 1 × SHA-256 2^20): every fiftieth (5 s at the default cadence) it is ~1 ms a
/// second. The energy counter is cumulative: read every 5 s it still gives a session's
/// energy; PCIe throughput is a 20 ms window per reading at any cadence.
const COUNTERS_EVERY: u32 = 50;

/// Power, temperature and clocks are read every this many samples (the first included):
/// 500 ms at the default cadence. Power on Ampere and newer is NVML's average over the last
/// second, so a reading every 100 ms mostly repeated the one before; temperature and clocks
/// move as slowly. Utilisation and memory, which follow the proof's phases, stay at every
/// sample.
const SLOW_EVERY: u32 = 5;

/// What NVML said at start.
#[derive(Debug)]
pub struct Inventory {
    pub nvml: Option<Nvml>,
    pub gpus: Vec<GpuInfo>,
    pub unavailable_reason: Option<String>,
    pub driver_version: Option<String>,
}

/// Why NVML did not start, as a user reads it: the loader's own message names a library, not
/// the situation.
fn why_unavailable(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) => {
            "no NVIDIA driver on this machine (libnvidia-ml.so.1 not found)".to_owned()
        }
        NvmlError::DriverNotLoaded => {
            "the NVIDIA driver is installed but not loaded (nvidia-smi says why)".to_owned()
        }
        NvmlError::NoPermission => "no permission to use the NVIDIA driver (NVML)".to_owned(),
        other => format!("NVML unavailable: {other}"),
    }
}

/// Enumerates GPUs. Never panics: a missing library is a reason, not an error.
pub fn inventory() -> Inventory {
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            return Inventory {
                nvml: None,
                gpus: Vec::new(),
                unavailable_reason: Some(why_unavailable(&e)),
                driver_version: None,
            };
        }
    };
    let driver_version = nvml.sys_driver_version().ok();
    let count = match nvml.device_count() {
        Ok(c) => c,
        Err(e) => {
            return Inventory {
                nvml: None,
                gpus: Vec::new(),
                unavailable_reason: Some(format!("NVML could not count devices: {e}")),
                driver_version,
            };
        }
    };
    let mut gpus = Vec::new();
    for index in 0..count {
        let Ok(d) = nvml.device_by_index(index) else {
            continue;
        };
        gpus.push(GpuInfo {
            index,
            name: d.name().unwrap_or_else(|_| "unknown GPU".into()),
            memory_total_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
            uuid: d.uuid().unwrap_or_default(),
            pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
        });
    }
    let unavailable_reason = gpus.is_empty().then(|| "NVML found no GPU".to_string());
    Inventory {
        nvml: Some(nvml),
        gpus,
        unavailable_reason,
        driver_version,
    }
}

/// `query`'s answer in this sample, or `None` when the sample does not read it (or it fails).
fn read<T>(now: bool, query: impl FnOnce() -> Result<T, NvmlError>) -> Option<T> {
    if now { query().ok() } else { None }
}

/// Samples the `visible` devices (NVML indices) until the session stops.
pub(crate) fn run(nvml: Nvml, session: Arc<Session>, every: Duration, visible: Vec<u32>) {
    let devices: Vec<_> = visible
        .into_iter()
        .filter_map(|i| nvml.device_by_index(i).ok().map(|d| (i, d)))
        .collect();
    let mut contexts = Contexts::default();
    let mut n: u32 = 0;
    let mut next = Instant::now();
    while !session.control.stopping() {
        let counters = n.is_multiple_of(COUNTERS_EVERY);
        let slow = n.is_multiple_of(SLOW_EVERY);
        n = n.wrapping_add(1);
        for (index, d) in &devices {
            let util = d.utilization_rates().ok();
            let mem = d.memory_info().ok();
            let (rx, tx) = (
                read(counters, || d.pcie_throughput(PcieUtilCounter::Receive)),
                read(counters, || d.pcie_throughput(PcieUtilCounter::Send)),
            );
            let sample = GpuSample {
                ts: session.clock.now_ns(),
                device: *index,
                util_pct: util.as_ref().map(|u| u.gpu.min(100) as u8),
                mem_util_pct: util.as_ref().map(|u| u.memory.min(100) as u8),
                mem_used_bytes: mem.as_ref().map(|m| m.used),
                mem_total_bytes: mem.as_ref().map(|m| m.total),
                power_mw: read(slow, || d.power_usage()),
                energy_mj: read(counters, || d.total_energy_consumption()),
                temp_c: read(slow, || d.temperature(TemperatureSensor::Gpu)),
                sm_clock_mhz: read(slow, || d.clock_info(Clock::SM)),
                mem_clock_mhz: read(slow, || d.clock_info(Clock::Memory)),
                pcie_rx_kbps: rx,
                pcie_tx_kbps: tx,
            };
            session
                .slow
                .push(SlowEvent::Session(Event::GpuSample(Box::new(sample))));
            if slow && let Some(p) = contexts.changed(*index, d, session.clock.now_ns()) {
                session.slow.push(SlowEvent::Session(Event::GpuProcess(p)));
            }
        }
        next += every;
        let now = Instant::now();
        if next > now {
            std::thread::park_timeout(next - now);
        } else {
            next = now;
        }
    }
}

/// This process's CUDA context on each device, from NVML's list of the device's compute
/// processes, read with the slow readings: an event when it appears, goes or its memory moves.
/// A process in another pid namespace (a container without the host's) is not found by its
/// pid: nothing is sent.
#[derive(Default)]
struct Contexts {
    /// Per device, what was last sent: `Some(used)` held, `None` not held.
    last: std::collections::HashMap<u32, Option<Option<u64>>>,
}

impl Contexts {
    fn changed(&mut self, index: u32, d: &nvml_wrapper::Device<'_>, ts: u64) -> Option<GpuProcess> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let me = std::process::id();
        let now = d
            .running_compute_processes()
            .ok()?
            .into_iter()
            .find(|p| p.pid == me)
            .map(|p| match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            });
        let before = self.last.insert(index, now).flatten();
        if before == now {
            return None;
        }
        Some(GpuProcess {
            ts,
            device: index,
            context: now.is_some(),
            used_bytes: now.flatten(),
        })
    }
}
