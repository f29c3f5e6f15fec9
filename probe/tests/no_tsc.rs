//! The probe on CLOCK_MONOTONIC (`PROOFSCOPE_NO_TSC`): every span edge takes the slow path
//! (slow-only producers), and spans still arrive complete and correctly nested. A test binary
//! of its own: the tick source is decided once per process.
mod common;

use common::*;
use probe_protocol::Event;

#[test]
fn spans_nest_across_threads_on_the_monotonic_clock() {
    let _g = serial();
    // SAFETY: set before any thread of this test binary reads the environment for the probe;
    // the only test in this binary, so no other test thread runs.
    unsafe { std::env::set_var("PROOFSCOPE_NO_TSC", "1") };
    let events = spans_nest_across_threads();
    let clock = events.iter().find_map(|e| match e {
        Event::Hello(h) => Some(h.clock.clone()),
        _ => None,
    });
    assert_eq!(clock.as_deref(), Some("monotonic"));
}
