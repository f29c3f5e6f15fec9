//! The `--help` texts of every command and subcommand are part of docs/CLI.md, verbatim: this
//! keeps the two from drifting. (The documented texts are the default build's, with `demo`.)
#![cfg(feature = "demo")]
use clap::CommandFactory;

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md")).unwrap()
}

/// `cmd`'s help and every subcommand's (as `<bin> <sub> --help` prints it) are in the docs.
fn all_helps_documented(mut cmd: clap::Command, bin: &str) {
    cmd.build();
    let docs = docs();
    // `--help` prints the long form when any option has more to say, else the short one.
    let top = cmd.render_long_help().to_string();
    let short = cmd.render_help().to_string();
    assert!(
        docs.contains(top.trim_end()) || docs.contains(short.trim_end()),
        "docs/CLI.md is out of date; `{bin} --help` says:\n{short}"
    );
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() == "help" {
            continue;
        }
        let name = sub.get_name().to_owned();
        // A subcommand renders its usage under its parent's name once built.
        let fix = |h: String| {
            let prefixed = format!("Usage: {bin} {name}");
            if h.contains(&prefixed) {
                h.trim_end().to_owned()
            } else {
                h.trim_end().replace(&format!("Usage: {name}"), &prefixed)
            }
        };
        let long = fix(sub.render_long_help().to_string());
        let short = fix(sub.render_help().to_string());
        assert!(
            docs.contains(&long) || docs.contains(&short),
            "docs/CLI.md is out of date; `{bin} {name} --help` says:\n{long}"
        );
    }
}

#[test]
fn proofscope_helps_are_in_the_docs() {
    all_helps_documented(proofscope::cli::Cli::command(), "proofscope");
}

#[test]
fn prover_helps_are_in_the_docs() {
    all_helps_documented(prover_core::cli::Cli::command(), "prover");
}
