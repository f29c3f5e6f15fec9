//! proofscope's engine: everything the front ends (the dashboard, headless reports, the
//! Prometheus exporter) share and nothing they draw. Sources (a live socket, a recording, a log
//! imported on the fly, a prover started by `run`) feed the session model; the analysis finds
//! the unaccounted gaps and their diagnoses; reports, diffs and the black box read the model.
//!
//! No terminal, HTTP or CLI crate is in this crate's tree (`.ci/run` checks it): a source
//! answers the engine's [`source::Control`], never a key, and says where it stands as data
//! ([`source::LinkStatus`]), never as screen text.

pub mod analysis;
pub mod capture;
pub mod controller;
pub mod diff;
pub mod file_name;
pub mod format;
pub mod hold;
pub mod import;
pub mod model;
pub mod report;
pub mod run;
pub mod settle;
pub mod signals;
pub mod source;
pub mod tap;
pub mod warnings;
