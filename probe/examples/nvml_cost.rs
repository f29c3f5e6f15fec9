//! What each NVML query the probe's GPU sampler makes costs on this machine, in the calling
//! thread's CPU time and in wall time (medians, first call excluded), three ways:
//! - **back to back**: 40 calls in a row. NVML may answer a repeated query from a cache, so
//!   this is what a cached answer costs, not what the sampler pays;
//! - **at the sampler's spacing**: 20 calls 100 ms apart (the default cadence), each query on
//!   its own and then a whole sample as the sampler takes one (utilisation and memory; with
//!   power, temperature and clocks, every fifth sample) — the figures the sampler's share of a
//!   proof is made of;
//! - **the driver's sample buffer** (`nvmlDeviceGetSamples`, GPU utilisation): called every
//!   500 ms from the last timestamp seen, what one call costs, how many readings it returns
//!   and how far apart they lie — NVML's own utilisation period on this GPU, which decides
//!   whether one buffered call could replace five polled readings.
//!
//! `cargo run --release -p proofscope-probe --example nvml_cost` on a GPU host.

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, Sampling, TemperatureSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use std::time::{Duration, Instant};

/// The sampler's default cadence (`PROOFSCOPE_GPU_SAMPLE_MS`).
const SPACING: Duration = Duration::from_millis(100);
const BACK_TO_BACK_CALLS: usize = 40;
const SPACED_CALLS: usize = 20;
const BUFFER_CALLS: usize = 12;
const BUFFER_SPACING: Duration = Duration::from_millis(500);

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes; the clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// One call's cost: (CPU ns, wall ns, whether it answered).
fn timed(q: &dyn Fn() -> bool) -> (u64, u64, bool) {
    let (c, w) = (thread_cpu_ns(), Instant::now());
    let ok = q();
    (thread_cpu_ns() - c, w.elapsed().as_nanos() as u64, ok)
}

/// `calls` calls of `q`, `gap` apart (none: back to back), after one unmeasured call; prints
/// the medians.
fn measure(name: &str, q: &dyn Fn() -> bool, calls: usize, gap: Option<Duration>) {
    q();
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    let mut ok = true;
    for _ in 0..calls {
        if let Some(gap) = gap {
            std::thread::sleep(gap);
        }
        let (c, w, answered) = timed(q);
        cpu.push(c);
        wall.push(w);
        ok &= answered;
    }
    println!(
        "{name:<34} {:>10.1} {:>10.1}  {ok}",
        median(cpu) as f64 / 1e3,
        median(wall) as f64 / 1e3
    );
}

fn header(title: &str) {
    println!("== {title}");
    println!(
        "{:<34} {:>10} {:>10}  answered",
        "query", "cpu µs", "wall µs"
    );
}

/// Calls `nvmlDeviceGetSamples` for GPU utilisation every [`BUFFER_SPACING`], from the last
/// timestamp seen, and prints what each call cost and returned.
fn driver_buffer(d: &nvml_wrapper::Device) {
    println!(
        "== the driver's sample buffer (GPU utilisation), a call every {} ms",
        BUFFER_SPACING.as_millis()
    );
    let mut last = None;
    let (mut cpu, mut counts, mut deltas) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..=BUFFER_CALLS {
        let (c0, w0) = (thread_cpu_ns(), Instant::now());
        let got = d.samples(Sampling::GpuUtilization, last);
        let (c, w) = (thread_cpu_ns() - c0, w0.elapsed().as_micros());
        let samples = match got {
            Ok(s) => s,
            // NVML's answer when nothing is newer than `last`.
            Err(NvmlError::NotFound) => Vec::new(),
            Err(e) => {
                println!("nvmlDeviceGetSamples: {e}");
                return;
            }
        };
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_micros() as i128);
        let values: Vec<String> = samples
            .iter()
            .map(|s| match s.value {
                SampleValue::U32(v) => v.to_string(),
                SampleValue::U64(v) => v.to_string(),
                SampleValue::I64(v) => v.to_string(),
                SampleValue::F64(v) => format!("{v:.0}"),
            })
            .collect();
        let newest = samples.iter().map(|s| s.timestamp).max();
        println!(
            "call {i:>2}: {:>7.1} µs cpu, {w:>6} µs wall, {:>3} readings, newest {} µs before the host's realtime clock; values {}",
            c as f64 / 1e3,
            samples.len(),
            newest.map_or("-".into(), |t| (now_us - t as i128).to_string()),
            values.join(" ")
        );
        let mut ts: Vec<u64> = samples.iter().map(|s| s.timestamp).collect();
        ts.sort_unstable();
        // The first call returns the whole buffer; the rest, what came since.
        if i > 0 {
            cpu.push(c);
            counts.push(samples.len() as u64);
            deltas.extend(ts.windows(2).map(|w| w[1] - w[0]));
        }
        last = newest.or(last);
        std::thread::sleep(BUFFER_SPACING);
    }
    println!(
        "median: {:.1} µs cpu a call, {} readings a call, {} µs between readings",
        median(cpu) as f64 / 1e3,
        median(counts),
        median(deltas)
    );
}

fn main() {
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("no NVML: {e}");
            std::process::exit(1);
        }
    };
    let d = match nvml.device_by_index(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no device 0: {e}");
            std::process::exit(1);
        }
    };
    type Query<'a> = (&'a str, Box<dyn Fn() -> bool + 'a>);
    let util = || d.utilization_rates().is_ok();
    let mem = || d.memory_info().is_ok();
    let slow = || {
        d.power_usage().is_ok()
            & d.temperature(TemperatureSensor::Gpu).is_ok()
            & d.clock_info(Clock::SM).is_ok()
            & d.clock_info(Clock::Memory).is_ok()
    };
    let queries: Vec<Query> = vec![
        ("utilization_rates", Box::new(util)),
        ("memory_info", Box::new(mem)),
        ("power_usage", Box::new(|| d.power_usage().is_ok())),
        (
            "total_energy_consumption",
            Box::new(|| d.total_energy_consumption().is_ok()),
        ),
        (
            "temperature",
            Box::new(|| d.temperature(TemperatureSensor::Gpu).is_ok()),
        ),
        (
            "clock_info(SM)",
            Box::new(|| d.clock_info(Clock::SM).is_ok()),
        ),
        (
            "clock_info(Memory)",
            Box::new(|| d.clock_info(Clock::Memory).is_ok()),
        ),
        (
            "pcie_throughput(Receive)",
            Box::new(|| d.pcie_throughput(PcieUtilCounter::Receive).is_ok()),
        ),
        // The GpuProcess reading (protocol 1.6), with the slow readings.
        (
            "running_compute_processes",
            Box::new(|| d.running_compute_processes().is_ok()),
        ),
    ];
    header(&format!(
        "back to back, median of {BACK_TO_BACK_CALLS} calls"
    ));
    for (name, q) in &queries {
        measure(name, q.as_ref(), BACK_TO_BACK_CALLS, None);
    }
    header(&format!(
        "{} ms apart (the sampler's default cadence), median of {SPACED_CALLS} calls",
        SPACING.as_millis()
    ));
    for (name, q) in &queries {
        measure(name, q.as_ref(), SPACED_CALLS, Some(SPACING));
    }
    measure(
        "a sample: utilisation + memory",
        &|| util() & mem(),
        SPACED_CALLS,
        Some(SPACING),
    );
    measure(
        "a fifth sample: + power, temp, clocks",
        &|| util() & mem() & slow(),
        SPACED_CALLS,
        Some(SPACING),
    );
    driver_buffer(&d);
}
