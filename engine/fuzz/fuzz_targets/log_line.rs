//! Arbitrary bytes as a prover's log: each line through the importer's line parser (ANSI
//! colours stripped, wall-clock stamps read). Must never panic; a timer it accepts is within
//! the parser's bound.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proofscope_engine::import::lines::{self, LogLine, MAX_TIMER_MS};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for raw in text.lines() {
        let _ = lines::strip_ansi(raw);
        let _ = lines::wall_clock(raw);
        if let Some(Ok(parsed)) = lines::parse(raw)
            && let LogLine::Wrapper(_, d) | LogLine::Synthesis(d) = parsed.line
        {
            let bound = std::time::Duration::from_millis(MAX_TIMER_MS);
            assert!(d <= bound, "a timer past the bound: {d:?} in {raw:?}");
        }
    }
});
