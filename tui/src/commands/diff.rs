//! `proofscope diff A B`, and the comparison `replay A --compare B` draws: both recordings
//! replayed headless, reported, compared.

use crate::app::{self, App, RunOpts, Until};
use crate::exit::Exit;
use anyhow::{Context, Result, bail};
use std::io::Write;

/// A recording (or log) replayed headless, for `diff` and `--compare`.
fn replayed(file: &std::path::Path, opts: &RunOpts) -> Result<App> {
    let mut app = App::replay(file.to_owned(), opts)
        .with_context(|| format!("reading {}", file.display()))?;
    app::run_headless(&mut app, Until::default());
    Ok(app)
}

/// `proofscope diff A B`: both recordings replayed headless, reported, compared.
pub(crate) fn diff(x: &crate::cli::DiffArgs) -> Result<Exit> {
    let opts = RunOpts {
        retention: x.memory.retention(),
        rule: x.gap.rule(),
        ..RunOpts::default()
    };
    let (a, b) = (
        replayed(&x.a, &opts)?.report(),
        replayed(&x.b, &opts)?.report(),
    );
    let d = proofscope_engine::diff::diff(&a, &b);
    let out = match x.format {
        crate::cli::DiffFormat::Text => proofscope_engine::diff::text(&d),
        crate::cli::DiffFormat::Json => proofscope_engine::diff::json(&d),
    };
    std::io::stdout().write_all(out.as_bytes())?;
    if x.fail_on_regression.is_some() && (d.proofs_a == 0 || d.proofs_b == 0) {
        // A gate that passes on nothing would wave through a prover that stopped proving.
        bail!(
            "--fail-on-regression: {} has no complete proof, so nothing can be judged",
            if d.proofs_b == 0 {
                x.b.display()
            } else {
                x.a.display()
            }
        );
    }
    let Some(pct) = x.fail_on_regression else {
        return Ok(Exit::Ok);
    };
    let worse = d.regressions(pct, x.min_change / 1e3);
    if !worse.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "regressions (over {pct}%, at least {} ms, interval above zero; or a new flagged gap):\n  {}",
            x.min_change,
            worse.join("\n  ")
        );
        return Ok(Exit::Regression);
    }
    if d.prove_s.interval.is_none() {
        let why = format!(
            "--fail-on-regression: {} and {} complete proofs, fewer than {} a side: no figure could be judged, only new flagged gaps (none)",
            d.proofs_a,
            d.proofs_b,
            proofscope_engine::diff::MIN_FOR_INTERVAL
        );
        if !x.allow_unjudged {
            // A CI gate that cannot judge must not pass as if it had.
            bail!("{why}; --allow-unjudged passes such a pair");
        }
        let _ = writeln!(std::io::stderr(), "warning: {why} (--allow-unjudged)");
    }
    Ok(Exit::Ok)
}

/// B's phase statistics for `replay A --compare B`, and `diff`'s verdicts on A → B: both
/// replayed headless, once.
pub(crate) fn comparison(
    a: &std::path::Path,
    b: &std::path::Path,
    opts: &RunOpts,
) -> Result<crate::view::Comparison> {
    let this = replayed(a, opts)?;
    let other = replayed(b, opts)?;
    Ok(crate::view::Comparison::new(
        b.display().to_string(),
        other.model(),
        &this.report(),
        &other.report(),
    ))
}
