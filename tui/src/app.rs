//! The app: a source feeding the model, actions applied to the view state, and the two ways
//! to run — the dashboard (ratatui, restores the terminal on exit and on panic) and headless.

use crate::analysis::GapRule;
use crate::child::ChildProver;
use crate::input::{self, Action};
use crate::model::{LinkState, Model, Retention};
use crate::source::SourceMsg;
use crate::source::live::{self, Live, Target};
use crate::source::record::Recorder;
use crate::source::replay::Replay;
use crate::view::{Screen, ViewState};
use anyhow::Result;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
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
    rx: Receiver<SourceMsg>,
    tx: Sender<SourceMsg>,
    live: Option<Live>,
    pub replay: Option<Replay>,
    recorder: Option<Recorder>,
    record_path: Option<PathBuf>,
    /// A prover this viewer started (the demo), stopped when the viewer quits.
    pub demo: Option<ChildProver>,
    pub source: String,
    pub warnings: Vec<String>,
    dirty: bool,
    demo_exit_seen: bool,
    /// Since when the prover has been lost without a goodbye (live).
    lost_since: Option<Instant>,
    /// Frames that arrived while the live view was paused.
    hold: crate::hold::Hold,
    /// The recording a log was imported into, when `replay` was given a log: it lives as long
    /// as the replay reads it.
    imported: Option<tempfile::NamedTempFile>,
}

impl App {
    fn new(opts: &RunOpts, source: String) -> App {
        let (tx, rx) = channel();
        App {
            model: Model::new(opts.retention),
            view: ViewState {
                rule: opts.rule,
                ..ViewState::default()
            },
            rx,
            tx,
            live: None,
            replay: None,
            recorder: None,
            record_path: opts.record.clone(),
            demo: None,
            source,
            warnings: Vec::new(),
            dirty: true,
            demo_exit_seen: false,
            lost_since: None,
            hold: crate::hold::Hold::default(),
            imported: None,
        }
    }

    /// Follows a live prover.
    pub fn live(target: Target, opts: &RunOpts) -> Result<App> {
        let source = match &target {
            Target::Socket(p) | Target::Discovered(p) => p.display().to_string(),
        };
        let mut app = App::new(opts, source);
        app.live = Some(live::start(target, app.tx.clone())?);
        if let Some(p) = opts.record.clone() {
            app.start_recording(p)?;
        }
        Ok(app)
    }

    /// Replays a recording file, or a log in a format `import` reads (told apart by content).
    pub fn replay(file: PathBuf, opts: &RunOpts) -> Result<App> {
        if !crate::import::is_recording(&file)? {
            let imported = crate::import::to_temporary(&file)?;
            let mut app = App::replay(imported.path().to_owned(), opts)?;
            app.source = format!("{} (log, imported)", file.display());
            app.imported = Some(imported);
            return Ok(app);
        }
        let mut app = App::new(opts, file.display().to_string());
        // The proof index takes at most a sixteenth of the memory budget.
        let r = Replay::open(&file, opts.retention.max_bytes / 16)?;
        app.warnings.extend(r.warnings.iter().cloned());
        app.model.bad_frames += r.bad_frames();
        app.replay = Some(r);
        app.update_transport();
        Ok(app)
    }

    fn start_recording(&mut self, path: PathBuf) -> Result<()> {
        let rec = Recorder::create(&path, self.model.current())?;
        self.model.recording = Some(rec.path.clone());
        self.recorder = Some(rec);
        Ok(())
    }

    fn stop_recording(&mut self) -> Option<String> {
        let rec = self.recorder.take()?;
        let path = rec.path.clone();
        if let Err(e) = rec.finish() {
            self.view.message = Some(format!("recording {path} failed: {e}"));
        }
        self.model.recording = None;
        Some(path)
    }

    fn handle(&mut self, msg: SourceMsg) {
        match msg {
            SourceMsg::Frame { raw, events } => {
                if let Some(r) = self.recorder.as_mut()
                    && let Err(e) = r.frame(&raw)
                {
                    self.view.message = Some(format!("recording stopped: {e}"));
                    self.stop_recording();
                }
                if self.view.paused {
                    self.hold.push(events, self.model.retention.max_bytes);
                    self.view.held = (self.hold.events, self.hold.dropped);
                } else {
                    self.model.ingest_all(events);
                }
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
            }
            SourceMsg::Link(state) => {
                match &state {
                    LinkState::Disconnected(_) => {
                        self.lost_since.get_or_insert_with(Instant::now);
                    }
                    _ => self.lost_since = None,
                }
                self.model.link = state;
            }
            SourceMsg::Notice(note) => {
                self.view.message = Some(note.clone());
                self.warnings.push(note);
            }
            SourceMsg::BadFrame(why) => {
                self.model.bad_frames += 1;
                self.warnings.push(why);
            }
        }
        self.dirty = true;
    }

    /// Applies what the source has for us, for at most `budget`. Returns messages applied.
    pub fn pump(&mut self, budget: Duration) -> usize {
        let t0 = Instant::now();
        let mut n = 0;
        if let Some(r) = self.replay.as_mut() {
            let model = &mut self.model;
            n += r.due(|events| model.ingest_all(events));
            if n > 0 {
                self.dirty = true;
            }
            self.update_transport();
            return n;
        }
        // Paused, frames are still taken (recorded, and held within the memory bound), so the
        // channel from the source never grows without bound.
        while t0.elapsed() < budget {
            match self.rx.try_recv() {
                Ok(m) => {
                    self.handle(m);
                    n += 1;
                }
                Err(_) => break,
            }
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
        match self.rx.recv_timeout(wait) {
            Ok(m) => {
                self.handle(m);
                true
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => false,
        }
    }

    fn update_transport(&mut self) {
        let Some(r) = &self.replay else { return };
        let proofs = self.model.proof_keys().len();
        self.view.transport = Some(format!(
            "{} {}  │  +{} of {}  │  frame {}/{}  │  {} proofs  │  s speed  [ ] proof  space pause",
            if r.paused {
                "⏸"
            } else if r.done() {
                "■"
            } else {
                "▶"
            },
            r.speed.label(),
            crate::format::dur(r.position()),
            crate::format::dur(r.end()),
            r.next,
            r.frame_count(),
            proofs
        ));
        self.model.link = LinkState::Replay {
            file: r.file.clone(),
            position: r.position(),
            total: r.end(),
            speed: r.speed.label().into(),
            paused: r.paused,
        };
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

    /// Ingests a replay up to frame `idx` (a fresh model when going back).
    fn replay_seek(&mut self, idx: usize) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        let model = &mut self.model;
        let sought = r.seek(idx, |frame| match frame {
            Some(events) => model.ingest_all(events),
            None => {
                let link = std::mem::take(&mut model.link);
                let bad = model.bad_frames;
                *model = Model::new(model.retention);
                model.link = link;
                model.bad_frames = bad;
            }
        });
        if let Err(e) = sought {
            self.view.message = Some(format!("replay: {e:#}"));
        }
        self.view.selected = None;
        self.view.follow = true;
        self.update_transport();
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
            Action::Pause => match self.replay.as_mut() {
                Some(r) => {
                    let p = !r.paused;
                    r.set_paused(p);
                    self.update_transport();
                }
                None => {
                    self.view.paused = !self.view.paused;
                    if !self.view.paused {
                        self.resume();
                    }
                }
            },
            Action::Record => {
                if self.replay.is_some() {
                    self.view.message = Some("a replay is already a recording".into());
                } else if let Some(p) = self.stop_recording() {
                    self.view.message = Some(format!("recording saved to {p}"));
                } else {
                    let path = self.record_path.clone().unwrap_or_else(|| {
                        let secs = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs());
                        PathBuf::from(format!("proofscope-{secs}.psrec"))
                    });
                    match self.start_recording(path) {
                        Ok(()) => self.view.message = Some("recording (r stops)".into()),
                        Err(e) => self.view.message = Some(format!("cannot record: {e:#}")),
                    }
                }
            }
            Action::Speed => {
                if let Some(r) = self.replay.as_mut() {
                    let s = r.speed.next();
                    r.set_speed(s);
                    self.update_transport();
                }
            }
            Action::PrevProof | Action::NextProof => {
                let target = self
                    .replay
                    .as_ref()
                    .and_then(|r| r.proof_target(a == Action::NextProof));
                if let Some(i) = target {
                    self.replay_seek(i);
                }
            }
        }
        false
    }

    /// Applies what was held while paused.
    fn resume(&mut self) {
        for events in self.hold.take() {
            self.model.ingest_all(events);
        }
        if self.hold.dropped > 0 {
            self.warnings.push(format!(
                "{} events that arrived while the view was paused were dropped (the hold was full)",
                self.hold.dropped
            ));
        }
        self.view.held = (0, self.hold.dropped);
    }

    /// Follow mode keeps the newest proof shown.
    fn follow(&mut self) {
        if self.view.follow {
            self.view.selected = None;
        }
    }

    pub fn finish(&mut self) {
        self.stop_recording();
        self.live.take();
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
    if let Some(r) = app.replay.as_mut() {
        r.set_speed(crate::source::replay::Speed::Max);
        app.pump(Duration::ZERO);
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
            .lost_since
            .is_some_and(|t| t.elapsed() >= RECONNECT_WINDOW);
        let stop = INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
            || until.proofs.is_some_and(|n| done >= n)
            || until.duration.is_some_and(|d| t0.elapsed() >= d)
            || matches!(app.model.link, LinkState::Failed(_))
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
    let vanished = match &app.model.link {
        LinkState::Disconnected(why) if app.lost_since.is_some() => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = &vanished {
        app.warnings.push(format!(
            "the prover vanished without a goodbye ({why}); this report covers what arrived before"
        ));
    }
    let failed = match &app.model.link {
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
        demo.unwrap_or_else(|| match &app.model.link {
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
