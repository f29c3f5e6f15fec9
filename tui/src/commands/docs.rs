//! `proofscope completions SHELL` and `proofscope man`: made from the command line's own
//! definition, so they cannot drift from it.

use super::opts::refuse_to_replace;
use crate::exit::Exit;
use anyhow::{Context, Result};
use std::io::Write;

/// `proofscope completions SHELL`: the script on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit> {
    let mut cmd = crate::cli::command();
    // Into memory first: clap_complete panics on a write error (`… | head`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "proofscope", &mut script);
    std::io::stdout().write_all(&script)?;
    Ok(Exit::Ok)
}

/// `proofscope man [--dir DIR]`: the top page on stdout, or every page into DIR.
pub(crate) fn man(dir: Option<&std::path::Path>, force: bool) -> Result<Exit> {
    let cmd = crate::cli::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
        return Ok(Exit::Ok);
    };
    // Built as clap_mangen::generate_to builds it: subcommands named `proofscope-demo`.
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let pages: Vec<clap_mangen::Man> = std::iter::once(cmd.clone())
        .chain(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .map(clap_mangen::Man::new)
        .collect();
    for page in &pages {
        refuse_to_replace(&dir.join(page.get_filename()), force)?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for page in pages {
        let path = page
            .generate_to(dir)
            .with_context(|| format!("writing {}", dir.join(page.get_filename()).display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(Exit::Ok)
}
