//! Built without the `nvml` feature: no GPU telemetry, and `Hello` says why.

use crate::session::Session;
use probe_protocol::GpuInfo;
use std::sync::Arc;
use std::time::Duration;

/// Never made: there is no library to hold.
#[derive(Debug)]
pub enum Handle {}

#[derive(Debug)]
pub struct Inventory {
    pub nvml: Option<Handle>,
    pub gpus: Vec<GpuInfo>,
    pub unavailable_reason: Option<String>,
    pub driver_version: Option<String>,
}

pub fn inventory() -> Inventory {
    Inventory {
        nvml: None,
        gpus: Vec::new(),
        unavailable_reason: Some(
            "this probe was built without GPU telemetry (the `nvml` feature of proofscope-probe)"
                .into(),
        ),
        driver_version: None,
    }
}

pub(crate) fn run(nvml: Handle, _session: Arc<Session>, _every: Duration, _visible: Vec<u32>) {
    match nvml {}
}
