//! `prover bench --probe-overhead --instructions`: the probe's cost as a count of instructions,
//! which no neighbour's load moves. The bench runs itself twice under `valgrind
//! --tool=callgrind --instr-atstart=no` — probe off, probe on: the same binary, inputs (a fixed
//! seed), environment — and each child counts exactly one proof: it turns instrumentation on
//! just before and off just after, every thread's instructions in between (the probe's
//! threads' included). Parameter loading and the session's start and end are outside.
//!
//! One caveat, and it makes the figure an upper bound: under valgrind the proof runs ~50×
//! slower, and the probe's periodic threads (collector, samplers) wake on the wall clock, so
//! they run ~50× more cycles per proof than they would natively.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;

/// Valgrind's client request: `args[0]` the request, the rest its arguments; the magic
/// instruction sequence below is a no-op outside valgrind (four rotations of `rdi` by 128
/// bits in all, and `xchg rbx, rbx`), and valgrind's JIT recognises it.
#[cfg(target_arch = "x86_64")]
fn client_request(request: u64) {
    let args: [u64; 6] = [request, 0, 0, 0, 0, 0];
    // SAFETY: the documented client-request sequence (valgrind.h, amd64-linux): it reads the
    // array `rax` points to and writes only `rdx` (declared clobbered) and the flags (not
    // declared preserved); `rdi` is rotated back to its value.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") 0u64 => _,
            options(nostack),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn client_request(_request: u64) {}

/// `VG_USERREQ_TOOL_BASE('C', 'T')`: callgrind's requests.
const CALLGRIND: u64 = (b'C' as u64) << 24 | (b'T' as u64) << 16;

/// Instructions are counted from here (a no-op outside callgrind).
pub fn start() {
    client_request(CALLGRIND + 4);
}

/// … to here.
pub fn stop() {
    client_request(CALLGRIND + 5);
}

/// The instruction count in a callgrind output file: its `totals:` line, whose first figure
/// is `Ir` (the default and only event here). Not `summary:`, which callgrind writes as 0 when
/// instrumentation started late.
pub fn instructions(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.strip_prefix("totals:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// Runs `exe bench ARGS --one-proof SIDE` under callgrind; the proof's instruction count.
pub fn count(exe: &Path, args: &[String], side: &str, dir: &Path) -> Result<u64> {
    let out = dir.join(format!("callgrind.{side}.out"));
    let st = Command::new("valgrind")
        .args(["--tool=callgrind", "--instr-atstart=no", "--quiet"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .arg("bench")
        .args(args)
        .args(["--one-proof", side])
        .status()
        .context("running valgrind (is it installed? `apt-get install valgrind`)")?;
    if !st.success() {
        bail!("valgrind on the {side} side: {st}");
    }
    let text =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    instructions(&text).with_context(|| format!("{}: no totals line", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_totals_line_gives_the_count() {
        // As callgrind 3.19 writes it with --instr-atstart=no: summary 0, then the totals.
        let out = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=(1) main\n0 5\nsummary: 0\ntotals: 1234567\n";
        assert_eq!(instructions(out), Some(1_234_567));
        assert_eq!(instructions("events: Ir\nsummary: 42\n"), None);
    }

    #[test]
    fn outside_valgrind_the_requests_do_nothing() {
        let x = std::hint::black_box(7u64);
        start();
        stop();
        assert_eq!(std::hint::black_box(x), 7);
    }
}
