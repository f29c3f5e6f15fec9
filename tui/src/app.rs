//! The app: a source feeding the model, actions applied to the view state, and the two ways
//! to run — the dashboard (ratatui, restores the terminal on exit and on panic) and headless.

use crate::analysis::GapRule;
use crate::child::ChildProver;
use crate::input::{self, Action};
use crate::model::{Model, Retention};
use crate::source::attached::Attached;
use crate::source::live::Target;
use crate::source::replayed::Replayed;
use crate::source::{LinkState, Said, Source};
use crate::view::{Screen, ViewState};
use anyhow::Result;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options shared by every way of running.
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub retention: Retention,
    pub rule: GapRule,
    pub record: Option<PathBuf>,
}

#[derive(Debug)]
pub struct App {
    pub model: Model,
    pub view: ViewState,
    /// Where the session comes from: a live prover, a recording or a log.
    pub feed: Box<dyn Source>,
    /// A prover this viewer started (the demo), stopped when the viewer quits.
    pub demo: Option<ChildProver>,
    /// What the report calls the source.
    pub source: String,
    pub warnings: Vec<String>,
    dirty: bool,
    demo_exit_seen: bool,
}

impl App {
    fn with(opts: &RunOpts, source: String, feed: Box<dyn Source>, model: Model) -> App {
        let mut app = App {
            model,
            view: ViewState {
                rule: opts.rule,
                ..ViewState::default()
            },
            feed,
            demo: None,
            source,
            warnings: Vec::new(),
            dirty: true,
            demo_exit_seen: false,
        };
        app.refresh_link();
        app
    }

    /// Follows a live prover.
    pub fn live(target: Target, opts: &RunOpts) -> Result<App> {
        let source = match &target {
            Target::Socket(p) | Target::Discovered(p) => p.display().to_string(),
        };
        let model = Model::new(opts.retention);
        let feed = Attached::start(target, opts.record.clone(), &model)?;
        Ok(App::with(opts, source, Box::new(feed), model))
    }

    /// Replays a recording file, or a log in a format `import` reads (told apart by content).
    pub fn replay(file: PathBuf, opts: &RunOpts) -> Result<App> {
        let mut model = Model::new(opts.retention);
        // The proof index takes at most a sixteenth of the memory budget.
        let budget = opts.retention.max_bytes / 16;
        let (feed, label, warnings): (Box<dyn Source>, String, Vec<String>) =
            if crate::import::is_recording(&file)? {
                let (r, w) = Replayed::open(&file, budget, &mut model)?;
                (Box::new(r), file.display().to_string(), w)
            } else {
                let (r, w) = Replayed::open_log(&file, budget, &mut model)?;
                (
                    Box::new(r),
                    format!("{} (log, imported)", file.display()),
                    w,
                )
            };
        let mut app = App::with(opts, label, feed, model);
        app.warnings = warnings;
        Ok(app)
    }

    /// Names the source in the header and the report (tests use stable names).
    pub fn relabel(&mut self, label: &str) {
        self.source = label.to_owned();
        self.feed.relabel(label.to_owned());
        self.refresh_link();
    }

    /// What the source says goes to the footer and the report.
    fn take(&mut self, said: Said) -> usize {
        if let Some(m) = said.message {
            self.view.message = Some(m);
        }
        self.warnings.extend(said.warnings);
        if said.applied > 0 {
            self.dirty = true;
        }
        said.applied
    }

    /// The link's state, transport line, recording and hold, as the views show them.
    fn refresh_link(&mut self) {
        self.view.link = self.feed.link();
        self.view.recording = self.feed.recording();
        self.view.transport = self.feed.transport(&self.model);
        let (paused, held) = self.feed.paused();
        self.view.paused = paused;
        self.view.held = held;
    }

    /// Applies what the source has for us, for at most `budget`. Returns messages applied.
    pub fn pump(&mut self, budget: Duration) -> usize {
        let said = self.feed.pump(&mut self.model, budget);
        let n = self.take(said);
        self.refresh_link();
        if self.demo.is_some()
            && self
                .view
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("demo prover starting"))
            && self.model.sessions.iter().any(|s| s.proofs_done > 0)
        {
            self.view.message = None;
        }
        if let Some(d) = self.demo.as_mut()
            && !self.demo_exit_seen
            && let Some(status) = d.status()
        {
            self.demo_exit_seen = true;
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
        n
    }

    /// Blocks up to `wait` for a message (headless live runs).
    pub fn wait(&mut self, wait: Duration) -> bool {
        let said = self.feed.wait(&mut self.model, wait);
        let n = self.take(said);
        self.refresh_link();
        n > 0
    }

    fn select(&mut self, delta: isize) {
        let keys = self.model.proof_keys();
        if keys.is_empty() {
            return;
        }
        let cur = self
            .view
            .shown(&self.model)
            .and_then(|k| keys.iter().position(|x| *x == k))
            .unwrap_or(keys.len() - 1) as isize;
        let next = (cur + delta).clamp(0, keys.len() as isize - 1) as usize;
        self.view.selected = Some(keys[next]);
        self.view.follow = next == keys.len() - 1 && self.view.follow;
        if next != keys.len() - 1 {
            self.view.follow = false;
        }
    }

    /// Applies an action; `true` means quit.
    pub fn apply(&mut self, a: Action) -> bool {
        self.dirty = true;
        match a {
            Action::Quit => return true,
            Action::Help => self.view.help = !self.view.help,
            Action::Escape => {
                self.view.help = false;
                self.view.message = None;
            }
            Action::NextTab => self.view.tab = self.view.tab.next(),
            Action::Up => self.select(-1),
            Action::Down => self.select(1),
            Action::Left => self.view.pan = (self.view.pan - 0.1).max(0.0),
            Action::Right => self.view.pan = (self.view.pan + 0.1).min(1.0),
            Action::ZoomIn => self.view.zoom = (self.view.zoom * 2.0).min(4096.0),
            Action::ZoomOut => {
                self.view.zoom = (self.view.zoom / 2.0).max(1.0);
                if self.view.zoom == 1.0 {
                    self.view.pan = 0.0;
                }
            }
            Action::Expand => {
                self.view.expand = !self.view.expand;
                self.view.scroll = 0;
            }
            Action::ScrollUp => self.view.scroll = self.view.scroll.saturating_sub(5),
            Action::ScrollDown => {
                let rows = crate::view::timeline::rows_of(&self.model, &self.view);
                self.view.scroll = (self.view.scroll + 5).min(rows.saturating_sub(1));
            }
            Action::Follow => {
                self.view.follow = true;
                self.view.selected = None;
            }
            // The link's keys: the source answers them.
            Action::Pause
            | Action::Record
            | Action::Speed
            | Action::PrevProof
            | Action::NextProof => {
                let said = self.feed.control(a, &mut self.model);
                let jumped = matches!(a, Action::PrevProof | Action::NextProof) && said.applied > 0;
                self.take(said);
                if jumped {
                    self.view.selected = None;
                    self.view.follow = true;
                }
                self.refresh_link();
            }
        }
        false
    }

    /// Follow mode keeps the newest proof shown.
    fn follow(&mut self) {
        if self.view.follow {
            self.view.selected = None;
        }
    }

    pub fn finish(&mut self) {
        if let Some(m) = self.feed.finish() {
            self.view.message = Some(m);
        }
        if let Some(mut d) = self.demo.take() {
            d.stop();
        }
    }
}

/// The dashboard.
pub fn run_tui(mut app: App) -> Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app);
    ratatui::restore();
    app.finish();
    if let Some(d) = &app.demo {
        eprintln!("demo prover log: {}", d.log.display());
    }
    result
}

/// How long a message stays on screen unless replaced or dismissed (`esc`).
const MESSAGE_LIFE: Duration = Duration::from_secs(10);

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<()> {
    use crossterm::event::{self, Event};
    let mut last_draw = Instant::now() - Duration::from_secs(10);
    // The message on screen and since when.
    let mut message: Option<(String, Instant)> = None;
    loop {
        match (&app.view.message, &message) {
            (Some(m), Some((seen, since))) if m == seen => {
                if since.elapsed() >= MESSAGE_LIFE {
                    app.view.message = None;
                    message = None;
                    app.dirty = true;
                }
            }
            (Some(m), _) => message = Some((m.clone(), Instant::now())),
            (None, _) => message = None,
        }
        if app.dirty || last_draw.elapsed() >= Duration::from_secs(1) {
            app.follow();
            terminal.draw(|f| {
                let screen = Screen {
                    model: &app.model,
                    state: &app.view,
                };
                f.render_widget(&screen, f.area());
            })?;
            app.dirty = false;
            last_draw = Instant::now();
        }
        if event::poll(Duration::from_millis(50))? {
            match event::read()? {
                Event::Key(k) => {
                    if let Some(a) = input::map(k)
                        && app.apply(a)
                    {
                        return Ok(());
                    }
                }
                Event::Resize(..) => {
                    terminal.autoresize()?;
                    app.dirty = true;
                }
                _ => {}
            }
        }
        app.pump(Duration::from_millis(30));
    }
}

/// Stop conditions of a headless live run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Until {
    pub proofs: Option<u64>,
    pub duration: Option<Duration>,
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// How long a headless live run waits for a prover lost without a goodbye to come back.
pub const RECONNECT_WINDOW: Duration = Duration::from_secs(10);

/// How a headless run ended, beyond its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadlessEnd {
    /// The prover went away without a goodbye and did not come back: why the link was lost.
    pub vanished: Option<String>,
    /// The link failed for good (a refusal, another protocol version): why.
    pub failed: Option<String>,
    /// Nothing at all arrived (no prover there, or the demo prover died first): why.
    pub captured_nothing: Option<String>,
}

/// Collects until the stop condition, then leaves the model ready for a report. A live run
/// stops after `--proofs N` proofs completed after attaching, after `--duration`, on a signal,
/// when the prover says goodbye (unless a duration was asked for: a restarted prover is then
/// followed until it ends), or when the prover has been gone without a goodbye for
/// [`RECONNECT_WINDOW`].
pub fn run_headless(app: &mut App, until: Until) -> HeadlessEnd {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_sigint as *const () as libc::sighandler_t);
    }
    if app.feed.is_finite() {
        app.wait(Duration::ZERO);
        app.finish();
        return HeadlessEnd::default();
    }
    let t0 = Instant::now();
    loop {
        app.wait(Duration::from_millis(100));
        // Proofs completed after attaching: the prover's history does not count.
        let done: u64 = app.model.sessions.iter().map(|s| s.proofs_done_live).sum();
        let said_goodbye = app.model.current().is_some_and(|s| s.goodbye.is_some());
        let gone_too_long = app
            .feed
            .lost_since()
            .is_some_and(|t| t.elapsed() >= RECONNECT_WINDOW);
        let stop = INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
            || until.proofs.is_some_and(|n| done >= n)
            || until.duration.is_some_and(|d| t0.elapsed() >= d)
            || matches!(app.view.link, LinkState::Failed(_))
            || (said_goodbye && until.duration.is_none())
            || (gone_too_long && until.duration.is_none())
            || app.demo.as_mut().is_some_and(|d| d.status().is_some());
        if stop {
            // Take what had already arrived — not what keeps arriving: a live prover sends a
            // frame every few milliseconds and never pauses long enough to wait for a lull.
            app.pump(Duration::from_millis(200));
            break;
        }
    }
    let vanished = match &app.view.link {
        LinkState::Disconnected(why) if app.feed.lost_since().is_some() => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = &vanished {
        app.warnings.push(format!(
            "the prover vanished without a goodbye ({why}); this report covers what arrived before"
        ));
    }
    let failed = match &app.view.link {
        LinkState::Failed(why) => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = &failed {
        app.warnings.push(format!("the connection failed: {why}"));
    }
    let captured_nothing = (app.model.events == 0).then(|| {
        let demo = app.demo.as_mut().and_then(|d| {
            let status = d.status()?;
            Some(match d.last_words() {
                Some(w) => format!("the demo prover exited ({status}): {w}"),
                None => format!("the demo prover exited ({status})"),
            })
        });
        demo.unwrap_or_else(|| match &app.view.link {
            LinkState::Disconnected(why) | LinkState::Failed(why) | LinkState::Ended(why) => {
                why.clone()
            }
            LinkState::Connecting(at) => format!("no prover answered at {at}"),
            _ => "no events arrived".to_owned(),
        })
    });
    app.finish();
    HeadlessEnd {
        vanished,
        failed,
        captured_nothing,
    }
}
