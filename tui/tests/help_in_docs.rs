//! The `--help` texts are part of docs/CLI.md, verbatim: this keeps the two from drifting.
use clap::CommandFactory;

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md")).unwrap()
}

// The documented help is the default build's (with `demo`).
#[cfg(feature = "demo")]
#[test]
fn proofscope_help_is_in_the_docs() {
    let help = proofscope::cli::Cli::command().render_help().to_string();
    let help = help.trim_end();
    assert!(
        docs().contains(help),
        "docs/CLI.md is out of date; `proofscope --help` says:\n{help}"
    );
}

#[cfg(feature = "demo")]
#[test]
fn prover_help_is_in_the_docs() {
    let help = prover_core::cli::Cli::command().render_help().to_string();
    let help = help.trim_end();
    assert!(
        docs().contains(help),
        "docs/CLI.md is out of date; `prover --help` says:\n{help}"
    );
}

#[cfg(feature = "demo")]
#[test]
fn gpu_bench_help_is_in_the_docs() {
    let mut cmd = prover_core::cli::Cli::command();
    let sub = cmd
        .find_subcommand_mut("gpu-bench")
        .expect("prover has a gpu-bench subcommand");
    let help = sub.render_help().to_string();
    // The subcommand renders its own usage line; clap names it after the parent when built.
    let help = help
        .trim_end()
        .replace("Usage: gpu-bench", "Usage: prover gpu-bench");
    assert!(
        docs().contains(&help),
        "docs/CLI.md is out of date; `prover gpu-bench --help` says:\n{help}"
    );
}
