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

/// An example of `proofscope-probe`: `cargo test --workspace` builds it beside this package's
/// binaries; when it is missing (this package's tests alone), it is built now.
pub fn example(name: &str) -> PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_proofscope"));
    let dir = bin.parent().unwrap().to_owned();
    let exe = dir.join("examples").join(name);
    if !exe.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-p", "proofscope-probe", "--example", name])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap())
            .status()
            .expect("running cargo");
        assert!(status.success(), "building the {name} example");
    }
    exe
}
