//! `proofscope demo`: the built-in prover started as this binary's child, watched live.

use super::Ended;
use super::opts::run_opts;
use super::watch::{Headless, wants_report, watch};
use crate::app::App;
use crate::cli::{LiveArgs, MemoryArgs, ReportArgs};
use anyhow::Result;

/// `demo`: the prover started and watched; headless, it stops after a few proofs.
pub(crate) fn demo(
    demo: &crate::demo::DemoArgs,
    live: &LiveArgs,
    report: &ReportArgs,
    memory: &MemoryArgs,
) -> Result<Ended> {
    let opts = run_opts(report, memory, Some(live))?;
    let headless = wants_report(report, Some(live), None);
    let stop_after = if headless {
        live.proofs.or(Some(3))
    } else {
        None
    };
    let child = crate::demo::start(demo, stop_after)?;
    let how = Headless {
        headless,
        report,
        live: Some(live),
        first_proofs: None,
    };
    watch(App::demo(child, &opts)?, &how)
}
