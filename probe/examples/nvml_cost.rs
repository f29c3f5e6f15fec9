//! What each NVML query the probe's GPU sampler makes costs on this machine, in the calling
//! thread's CPU time and in wall time (median of 40 calls each, first call excluded): the
//! sampler's share of a proof is their sum per sample times the samples a second.
//! `cargo run --release -p proofscope-probe --example nvml_cost` on a GPU host.

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use std::time::Instant;

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
    v[v.len() / 2]
}

fn main() {
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("no NVML: {e}");
            std::process::exit(1);
        }
    };
    let d = nvml.device_by_index(0).expect("device 0");
    type Query<'a> = (&'a str, Box<dyn Fn() -> bool + 'a>);
    let queries: Vec<Query> = vec![
        (
            "utilization_rates",
            Box::new(|| d.utilization_rates().is_ok()),
        ),
        ("memory_info", Box::new(|| d.memory_info().is_ok())),
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
    ];
    println!("{:<28} {:>12} {:>12}  ok", "query", "cpu µs", "wall µs");
    for (name, q) in &queries {
        q();
        let (mut cpu, mut wall) = (Vec::new(), Vec::new());
        let mut ok = true;
        for _ in 0..40 {
            let (c, w) = (thread_cpu_ns(), Instant::now());
            ok &= q();
            cpu.push(thread_cpu_ns() - c);
            wall.push(w.elapsed().as_nanos() as u64);
        }
        println!(
            "{name:<28} {:>12.1} {:>12.1}  {ok}",
            median(cpu) as f64 / 1e3,
            median(wall) as f64 / 1e3
        );
    }
}
