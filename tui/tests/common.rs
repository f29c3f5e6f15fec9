#![allow(dead_code)]
use proofscope::analysis::GapRule;
use proofscope::app::{App, RunOpts};
use proofscope::model::Retention;
use std::path::PathBuf;

pub fn recording(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../recordings")
        .join(name)
}

pub fn opts() -> RunOpts {
    RunOpts {
        retention: Retention::default(),
        rule: GapRule::default(),
        record: None,
    }
}

/// A replay of `name`, fully ingested, labelled with a stable source name.
pub fn replayed(name: &str) -> App {
    let mut app = App::replay(recording(name), &opts()).unwrap();
    app.source = format!("recordings/{name}");
    if let Some(r) = app.replay.as_mut() {
        r.file = format!("recordings/{name}");
        r.set_speed(proofscope::source::replay::Speed::Max);
    }
    app.pump(std::time::Duration::ZERO);
    app
}
