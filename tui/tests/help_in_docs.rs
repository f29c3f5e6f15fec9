//! The `--help` texts of every command and subcommand are part of docs/CLI.md, verbatim: this
//! keeps the two from drifting. (The documented texts are the default build's, with `demo`.)
#![cfg(feature = "demo")]
use clap::CommandFactory;

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md")).unwrap()
}

/// `cmd`'s help and every subcommand's (as `<bin> <sub> --help` prints it) are in the docs.
fn all_helps_documented(cmd: clap::Command, bin: &str) {
    // The width tools/cli-help.py renders the docs' blocks at.
    let mut cmd = cmd.term_width(100);
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
    all_helps_documented(proofscope::cli::command(), "proofscope");
}

#[test]
fn prover_helps_are_in_the_docs() {
    all_helps_documented(prover_core::cli::Cli::command(), "prover");
}

/// The key table of docs/CLI.md, made from the one keymap (`input::KEYS`) as the help is.
fn keys_table() -> String {
    use proofscope::input::{KEYS, MOUSE, When};
    let mut t = String::from("| key | action | in |\n|---|---|---|\n");
    for k in KEYS.iter().filter(|k| !k.keys.is_empty()) {
        let keys = k
            .keys
            .split("  ")
            .map(|k| format!("`{}`", k.trim()))
            .collect::<Vec<_>>()
            .join(" ");
        let when = match k.when {
            When::Always => "",
            When::Live => "live",
            When::Replay => "replay",
        };
        t.push_str(&format!("| {keys} | {} | {when} |\n", k.what));
    }
    t.push_str(&format!("| mouse | {MOUSE} | |\n"));
    t
}

#[test]
fn keys_are_in_the_docs() {
    let table = keys_table();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/CLI.md");
    let docs = docs();
    if std::env::var_os("PROOFSCOPE_GOLDEN_UPDATE").is_some() && !docs.contains(&table) {
        let start = docs.find("### Keys\n\n").expect("a Keys section") + "### Keys\n\n".len();
        let end = start + docs[start..].find("\n\n").expect("the table's end") + 1;
        std::fs::write(path, format!("{}{table}{}", &docs[..start], &docs[end..])).unwrap();
        return;
    }
    assert!(
        docs.contains(&table),
        "docs/CLI.md's key table is out of date (PROOFSCOPE_GOLDEN_UPDATE=1 rewrites it); it should read:\n{table}"
    );
}
