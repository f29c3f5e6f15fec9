//! The build's revision and compiler, for `proofscope_exporter_build_info` (as
//! node_exporter's `build_info` carries them): `git rev-parse` where the source is a git
//! checkout, `rustc --version` of the compiler cargo runs; "unknown" where either cannot say.

use std::path::Path;
use std::process::Command;

fn main() {
    let revision = output("git", &["rev-parse", "--short=12", "HEAD"]);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    // "rustc 1.89.0 (29483883e 2025-08-04)" → "1.89.0".
    let rustc = output(&rustc, &["--version"])
        .split_whitespace()
        .nth(1)
        .unwrap_or("unknown")
        .to_owned();
    println!("cargo:rustc-env=PROOFSCOPE_REVISION={revision}");
    println!("cargo:rustc-env=PROOFSCOPE_RUSTC={rustc}");
    // A new commit changes the revision; a path that does not exist would rerun this always.
    println!("cargo:rerun-if-changed=build.rs");
    for f in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs"] {
        if Path::new(f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
}

/// The first line `program args` prints, else "unknown".
fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::trim).map(str::to_owned))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
