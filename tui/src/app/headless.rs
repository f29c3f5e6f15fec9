//! A headless run: collect until a stop condition, leaving the model ready for a report.
//! Signals (SIGINT, SIGTERM) stop it like a condition does.

use super::App;
use proofscope_engine::source::Control;
use proofscope_engine::source::LinkState;
use std::time::{Duration, Instant};

/// Stop conditions of a headless live run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Until {
    pub proofs: Option<u64>,
    pub duration: Option<Duration>,
}

/// How long a headless live run waits for a prover lost without a goodbye to come back.
pub const RECONNECT_WINDOW: Duration = Duration::from_secs(10);
/// One wait for the live source.
const WAIT: Duration = Duration::from_millis(100);
/// How long the frames a demo prover sent before it exited have to arrive.
const EXIT_DRAIN: Duration = Duration::from_secs(2);
/// What had already arrived when the run stops is taken for at most this long.
const DRAIN: Duration = Duration::from_millis(200);

/// How a headless run ended, beyond its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadlessEnd {
    /// The prover went away without a goodbye and did not come back: why the link was lost.
    pub vanished: Option<String>,
    /// The link failed for good (a refusal, another protocol version): why.
    pub failed: Option<String>,
    /// Nothing at all arrived (no prover there, or the demo prover died first): why.
    pub captured_nothing: Option<String>,
    /// The prover `run` started exited with this (its code, or 128 + the signal).
    pub child_exit: Option<u8>,
    /// A replay stopped by this signal before the end of its file.
    pub interrupted: Option<i32>,
    /// What the user asked for that failed (a recording on a full disk).
    pub failed_task: Option<String>,
}

/// A run with a prover of its own (`run`) stops when the prover has exited and its output is
/// read — or at the stop conditions the user gave; a signal is passed on to it (once), and the
/// run goes on until it exits.
fn should_stop_child(
    app: &mut App,
    until: Until,
    t0: Instant,
    forwarded: &mut bool,
) -> Option<bool> {
    let child = app.session.child()?;
    if let Some(sig) = proofscope_engine::signals::caught()
        && !*forwarded
    {
        *forwarded = true;
        app.session.control(Control::Signal(sig));
    }
    let done = app.model().proofs_done_live();
    Some(
        child.drained
            || until.proofs.is_some_and(|n| done >= n)
            || until.duration.is_some_and(|d| t0.elapsed() >= d),
    )
}

/// Whether a live run should stop now.
fn should_stop(app: &mut App, until: Until, t0: Instant) -> bool {
    // Proofs completed after attaching: the prover's history does not count.
    let done = app.model().proofs_done_live();
    let said_goodbye = app.model().current().is_some_and(|s| s.goodbye().is_some());
    let gone_too_long = app
        .session
        .lost_since()
        .is_some_and(|t| t.elapsed() >= RECONNECT_WINDOW);
    proofscope_engine::signals::caught().is_some()
        || until.proofs.is_some_and(|n| done >= n)
        || until.duration.is_some_and(|d| t0.elapsed() >= d)
        || matches!(app.status().link, LinkState::Failed(_))
        || (said_goodbye && until.duration.is_none())
        || (gone_too_long && until.duration.is_none())
        || demo_gone(app)
}

/// The demo prover exited and its stream is over — its goodbye read, or its link down (the
/// transport says so after the last frame) — or [`EXIT_DRAIN`] has passed since its exit was
/// seen. A run that stopped at the exit alone lost the last proof's end when the viewer was
/// slower than the prover (1 run in 20, the test suite beside it).
fn demo_gone(app: &mut App) -> bool {
    if app.demo.as_mut().is_none_or(|d| d.status().is_none()) {
        return false;
    }
    let since = *app.demo_exited_at.get_or_insert_with(Instant::now);
    let goodbye = app.model().current().is_some_and(|s| s.goodbye().is_some());
    let link_down = !matches!(app.status().link, LinkState::Live(_));
    goodbye || link_down || since.elapsed() >= EXIT_DRAIN
}

/// Why nothing arrived: the demo prover's exit, else the link's last word.
fn why_nothing(app: &mut App) -> String {
    let demo = app.demo.as_mut().and_then(|d| {
        let status = d.status()?;
        Some(match d.last_words() {
            Some(w) => format!("the demo prover exited ({status}): {w}"),
            None => format!("the demo prover exited ({status})"),
        })
    });
    demo.unwrap_or_else(|| match app.status().link {
        LinkState::Disconnected(why) | LinkState::Failed(why) | LinkState::Ended(why) => why,
        LinkState::Connecting(at) => format!("no prover answered at {at}"),
        _ => "no events arrived".to_owned(),
    })
}

/// How the run ended, with the warnings the report carries for it.
fn ending(app: &mut App) -> HeadlessEnd {
    let link = app.status().link;
    let vanished = match &link {
        LinkState::Disconnected(why) if app.session.lost_since().is_some() => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = &vanished {
        app.session.warn(format!(
            "the prover vanished without a goodbye ({why}); this report covers what arrived before"
        ));
    }
    let failed = match &link {
        LinkState::Failed(why) => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = &failed {
        app.session.warn(format!("the connection failed: {why}"));
    }
    let captured_nothing = (app.model().events() == 0).then(|| why_nothing(app));
    HeadlessEnd {
        vanished,
        failed,
        captured_nothing,
        child_exit: app.session.child().and_then(|c| c.exit),
        interrupted: None,
        failed_task: app.session.failed().map(str::to_owned),
    }
}

/// Collects until the stop condition, then leaves the model ready for a report. A live run
/// stops after `--proofs N` proofs completed after attaching, after `--duration`, on a signal,
/// when the prover says goodbye (unless a duration was asked for: a restarted prover is then
/// followed until it ends), or when the prover has been gone without a goodbye for
/// [`RECONNECT_WINDOW`]. A finite source (a file) is read to its end.
pub fn run_headless(app: &mut App, until: Until) -> HeadlessEnd {
    proofscope_engine::signals::catch();
    if app.session.is_finite() {
        while proofscope_engine::signals::caught().is_none() && app.wait(Duration::ZERO) {}
        let interrupted = proofscope_engine::signals::caught();
        if let Some(sig) = interrupted {
            app.session.warn(format!(
                "interrupted by {} before the end of the file: this report covers what was read",
                proofscope_engine::signals::name(sig)
            ));
        }
        app.finish();
        return HeadlessEnd {
            interrupted,
            ..HeadlessEnd::default()
        };
    }
    let t0 = Instant::now();
    let mut forwarded = false;
    loop {
        app.wait(WAIT);
        let stop = match should_stop_child(app, until, t0, &mut forwarded) {
            Some(stop) => stop,
            None => should_stop(app, until, t0),
        };
        if stop {
            // Take what had already arrived — not what keeps arriving: a live prover sends a
            // frame every few milliseconds and never pauses long enough to wait for a lull.
            app.pump(DRAIN);
            break;
        }
    }
    let mut end = ending(app);
    let running = end.child_exit.is_none();
    app.finish();
    // Stopping the prover (a stop condition came first) settles its exit: the SIGTERM the run
    // sent as asked (`--proofs`, `--duration`) is no failure of the prover's — the run is
    // done (status 0, not 143); a prover that ignored it and was killed says so.
    if running {
        end.child_exit = match app.session.child().and_then(|c| c.exit) {
            Some(c) if i32::from(c) == 128 + libc::SIGTERM => None,
            Some(c) if i32::from(c) == 128 + libc::SIGKILL => {
                app.session.warn(
                    "the prover ignored SIGTERM for 3 s when the run stopped it: killed (SIGKILL)",
                );
                Some(c)
            }
            other => other,
        };
    }
    end
}
