//! The app: a session controller (source + model), the view's state, and — for the demo — the
//! prover this viewer started. Actions from the keymap are applied here; the two ways to run
//! are [`terminal`] (the dashboard) and [`headless`] (a report).

pub mod headless;
pub mod terminal;

pub use headless::{HeadlessEnd, RECONNECT_WINDOW, Until, run_headless};
pub use proofscope_engine::controller::Controller;
pub use terminal::{run_tui, run_tui_then};

use crate::child::ChildProver;
use crate::input::Action;
use crate::view::ViewState;
use anyhow::Result;
use proofscope_engine::analysis::GapRule;
use proofscope_engine::model::{Model, Retention};
use proofscope_engine::source::Target;
use proofscope_engine::source::live::LiveSource;
use proofscope_engine::source::replay::ReplaySource;
use proofscope_engine::source::{Control, LinkStatus, Said, Source};
use std::path::PathBuf;
use std::time::Duration;

/// Options shared by every way of running.
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub retention: Retention,
    pub rule: GapRule,
    /// `--record`: recorded from the first frame.
    pub record: Option<PathBuf>,
    /// `--record-dir`: where `r` starts a new dated recording.
    pub record_dir: PathBuf,
    /// `--capture-dir`: the black box.
    pub capture: Option<proofscope_engine::capture::CaptureOpts>,
}

impl RunOpts {
    /// A black box for one live source, when `--capture-dir` was given.
    pub fn blackbox(&self) -> Option<proofscope_engine::capture::BlackBox> {
        self.capture
            .clone()
            .map(|c| proofscope_engine::capture::BlackBox::new(c, self.rule))
    }
}

impl Default for RunOpts {
    fn default() -> RunOpts {
        RunOpts {
            retention: Retention::default(),
            rule: GapRule::default(),
            record: None,
            record_dir: proofscope_engine::tap::record::default_record_dir(),
            capture: None,
        }
    }
}

#[derive(Debug)]
pub struct App {
    pub session: Controller,
    pub view: ViewState,
    /// A prover this viewer started (the demo), stopped when the viewer quits.
    pub demo: Option<ChildProver>,
    /// Something changed since the last draw.
    dirty: bool,
    demo_exit_seen: bool,
    /// When a headless run first saw the demo prover exited (its last frames are read after).
    pub(crate) demo_exited_at: Option<std::time::Instant>,
}

impl App {
    fn with(opts: &RunOpts, session: Controller) -> App {
        App {
            session,
            view: ViewState {
                rule: opts.rule,
                ..ViewState::default()
            },
            demo: None,
            dirty: true,
            demo_exit_seen: false,
            demo_exited_at: None,
        }
    }

    /// Follows a live prover.
    pub fn live(target: Target, opts: &RunOpts) -> Result<App> {
        let label = match &target {
            Target::Socket(p) | Target::Discovered(p) => p.display().to_string(),
        };
        let model = Model::new(opts.retention);
        let feed = LiveSource::start(
            target,
            opts.record.clone(),
            opts.record_dir.clone(),
            &model,
            opts.blackbox(),
        )?;
        Ok(App::with(
            opts,
            Controller::new(model, Box::new(feed), label),
        ))
    }

    /// Replays a recording file, or a log in a format `import` reads (told apart by content).
    pub fn replay(file: PathBuf, opts: &RunOpts) -> Result<App> {
        App::replay_with_logs(file, &[], opts)
    }

    /// Replays a recording with `logs` captured beside it joined in (or, without logs, as
    /// [`App::replay`]).
    pub fn replay_with_logs(file: PathBuf, logs: &[PathBuf], opts: &RunOpts) -> Result<App> {
        let mut model = Model::new(opts.retention);
        // The proof index takes at most a sixteenth of the memory budget.
        let budget = opts.retention.max_bytes / 16;
        for f in std::iter::once(&file).chain(logs) {
            proofscope_engine::import::require_a_file(f)?;
        }
        let recording = proofscope_engine::import::is_recording(&file)?;
        if !logs.is_empty() && !recording {
            anyhow::bail!(
                "{} is a log, not a recording: --log joins logs to a recording made beside them",
                file.display()
            );
        }
        let (feed, label, warnings): (Box<dyn Source>, String, Vec<String>) = if !logs.is_empty() {
            let (r, w) = ReplaySource::open_joined(&file, logs, budget, &mut model)?;
            let label = format!(
                "{} (joined with {} log{})",
                file.display(),
                logs.len(),
                if logs.len() == 1 { "" } else { "s" }
            );
            (Box::new(r), label, w)
        } else if recording {
            let (r, w) = ReplaySource::open(&file, budget, &mut model)?;
            (Box::new(r), file.display().to_string(), w)
        } else {
            let (r, w) = ReplaySource::open_log(&file, opts.retention.max_bytes)?;
            (
                Box::new(r),
                format!("{} (log, imported)", file.display()),
                w,
            )
        };
        let mut session = Controller::new(model, feed, label);
        for w in warnings {
            session.warn(w);
        }
        Ok(App::with(opts, session))
    }

    /// Starts `plan`'s prover through the relay and follows it (`proofscope run`).
    pub fn run(plan: proofscope_engine::run::RunPlan, opts: &RunOpts) -> Result<App> {
        let label = plan
            .cmd
            .iter()
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let log = plan.log.clone();
        let model = Model::new(opts.retention);
        let launch = proofscope_engine::run::launch(plan)?;
        let feed = proofscope_engine::run::source::RunSource::start(launch)?;
        let mut app = App::with(opts, Controller::new(model, Box::new(feed), label));
        if let Some(l) = log {
            app.view.notice = Some(format!("prover output → {}", l.display()));
        }
        Ok(app)
    }

    /// Starts the demo prover `child` and follows it.
    pub fn demo(child: ChildProver, opts: &RunOpts) -> Result<App> {
        let mut app = App::live(Target::Socket(child.socket.clone()), opts)?;
        app.view.notice = Some(format!(
            "demo prover starting (log: {})",
            child.log.display()
        ));
        app.demo = Some(child);
        Ok(app)
    }

    pub fn model(&self) -> &Model {
        self.session.model()
    }

    /// The report of everything the model holds, under the view's gap rule.
    pub fn report(&self) -> proofscope_engine::report::Report {
        proofscope_engine::report::build(
            self.model(),
            &self.view.rule,
            self.session.label(),
            self.session.warnings(),
        )
    }

    /// The link as the source reports it now.
    pub fn status(&self) -> LinkStatus {
        self.session.status()
    }

    /// Names the source in the header and the report (tests use stable names).
    pub fn relabel(&mut self, label: &str) {
        self.session.relabel(label);
        self.dirty = true;
    }

    /// What the source says goes to the footer.
    fn take(&mut self, said: Said) -> usize {
        if let Some(m) = said.message {
            self.view.message = Some(m);
        }
        if said.applied > 0 {
            self.dirty = true;
        }
        said.applied
    }

    /// Applies what the source has for us, for at most `budget`. Returns messages applied.
    pub fn pump(&mut self, budget: Duration) -> usize {
        let said = self.session.pump(budget);
        let n = self.take(said);
        if self.view.notice.is_some() && self.model().proofs_done() > 0 {
            self.view.notice = None;
        }
        self.watch_demo();
        n
    }

    /// Says when the demo prover exited, with its last words when it failed.
    fn watch_demo(&mut self) {
        if self.demo_exit_seen {
            return;
        }
        let Some(d) = self.demo.as_mut() else {
            return;
        };
        let Some(status) = d.status() else {
            return;
        };
        self.demo_exit_seen = true;
        self.view.notice = None;
        self.view.message = Some(match d.last_words() {
            Some(words) if !status.success() => format!(
                "the demo prover exited ({status}): {words} (log: {})",
                d.log.display()
            ),
            _ => format!(
                "the demo prover exited ({status}); its log: {}",
                d.log.display()
            ),
        });
        self.dirty = true;
    }

    /// Blocks up to `wait` for a message (headless live runs).
    pub fn wait(&mut self, wait: Duration) -> bool {
        let said = self.session.wait(wait);
        self.take(said) > 0
    }

    /// Applies an action; `true` means quit.
    pub fn apply(&mut self, a: Action) -> bool {
        self.dirty = true;
        match (a, a.control()) {
            (Action::Quit, _) => return true,
            // A replay reads to its end first; the view then shows the last proof.
            (Action::Last, Some(c)) => {
                self.control(c);
                let model = self.session.model();
                self.view.apply(a, model);
            }
            // The link's keys: the source answers them.
            (_, Some(c)) => {
                let applied = self.control(c);
                if applied > 0 && matches!(c, Control::PrevProof | Control::NextProof) {
                    self.view.follow_latest();
                }
            }
            (view_action, None) => {
                let model = self.session.model();
                self.view.apply(view_action, model);
            }
        }
        false
    }

    /// Passes a control to the source; what it applied. A recording just started is told
    /// with the key that stops it.
    pub fn control(&mut self, c: Control) -> usize {
        let mut said = self.session.control(c);
        if c == Control::ToggleRecord
            && self.status().recording.is_some()
            && let Some(m) = said.message.as_mut()
        {
            m.push_str(&format!(
                " ({} stops)",
                crate::input::key_of(Action::Record)
            ));
        }
        self.take(said)
    }

    /// A click or the wheel on a terminal of `screen`'s size.
    pub fn point(&mut self, p: crate::input::Pointer, screen: ratatui::layout::Rect) {
        self.dirty = true;
        let model = self.session.model();
        self.view.point(p, screen, model);
    }

    /// Stops the source and the demo prover.
    pub fn finish(&mut self) {
        if let Some(m) = self.session.finish() {
            self.view.message = Some(m);
        }
        if let Some(mut d) = self.demo.take() {
            d.stop();
        }
    }

    /// Whether the screen needs drawing.
    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Whether the screen needs drawing; clears the flag.
    pub(crate) fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    pub(crate) fn mark_dirty(&mut self) {
        self.dirty = true;
    }
}
