//! The dashboard: the terminal loop (ratatui restores the terminal on exit and on panic).

use super::App;
use crate::input;
use crate::view::Screen;
use anyhow::Result;
use proofscope_engine::source::Transport;
use std::time::{Duration, Instant};

/// How long a message stays on screen unless replaced or dismissed (`esc`).
const MESSAGE_LIFE: Duration = Duration::from_secs(10);
/// The screen is redrawn at least this often (clocks, a live session's growth).
const REDRAW: Duration = Duration::from_secs(1);
/// How long one wait for a key lasts, and how long the source is pumped between keys.
const KEY_POLL: Duration = Duration::from_millis(50);
const PUMP_BUDGET: Duration = Duration::from_millis(30);
/// New data redraws the screen at most this often (a key redraws it at once).
const DATA_FRAME: Duration = Duration::from_millis(100);

/// The dashboard.
pub fn run_tui(mut app: App) -> Result<()> {
    run_tui_then(&mut app)
}

/// The dashboard; the app is left for its caller to ask how it ended (a prover's exit).
pub fn run_tui_then(app: &mut App) -> Result<()> {
    let mut terminal = ratatui::try_init()?;
    // Mouse reporting is an extra: a terminal without it still gets the dashboard.
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    app.view.monochrome = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let result = event_loop(&mut terminal, app);
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    ratatui::restore();
    app.finish();
    if let Some(d) = &app.demo {
        eprintln!("demo prover log: {}", d.log.display());
    }
    if let Some(t @ Transport::ProverOutput(_)) = app.status().transport {
        eprintln!("{}", crate::view::transport::line(&t));
    }
    result
}

/// Clears a message once it has been on screen for [`MESSAGE_LIFE`].
#[derive(Default)]
struct MessageClock {
    shown: Option<(String, Instant)>,
}

impl MessageClock {
    fn tick(&mut self, app: &mut App) {
        match (&app.view.message, &self.shown) {
            (Some(m), Some((seen, since))) if m == seen => {
                if since.elapsed() >= MESSAGE_LIFE {
                    app.view.message = None;
                    self.shown = None;
                    app.mark_dirty();
                }
            }
            (Some(m), _) => self.shown = Some((m.clone(), Instant::now())),
            (None, _) => self.shown = None,
        }
    }
}

fn draw(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<()> {
    app.view.follow_if_following();
    let link = app.status();
    terminal.draw(|f| {
        let screen = Screen {
            model: app.model(),
            state: &app.view,
            link: &link,
        };
        f.render_widget(&screen, f.area());
    })?;
    Ok(())
}

/// What one wait for input gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Nothing,
    /// A key, a click or a resize: the screen answers it at once.
    Handled,
    Quit,
}

/// Waits for a key (or a resize) for up to `wait`.
fn handle_input(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    wait: Duration,
) -> Result<Input> {
    use crossterm::event::{self, Event};
    if !event::poll(wait)? {
        return Ok(Input::Nothing);
    }
    match event::read()? {
        Event::Key(k) if app.view.editing => {
            if let Some(f) = input::filter_key(k) {
                app.view.edit_filter(f);
                app.mark_dirty();
            }
        }
        Event::Key(k) => {
            if let Some(a) = input::map(k)
                && app.apply(a)
            {
                return Ok(Input::Quit);
            }
        }
        Event::Mouse(m) => {
            if let Some(p) = input::mouse(m) {
                let size = terminal.size()?;
                app.point(p, ratatui::layout::Rect::new(0, 0, size.width, size.height));
            }
        }
        Event::Resize(..) => {
            terminal.autoresize()?;
            app.mark_dirty();
        }
        _ => {}
    }
    Ok(Input::Handled)
}

/// Keys first: every key that arrived while the last frame drew or the source was pumped is
/// answered before the next frame, and new data redraws at most every [`DATA_FRAME`] (a
/// frame per pump kept a loaded machine drawing, and `q` waited behind a frame and a pump:
/// 0.09–0.48 s under eight busy loops in the demo; now the screen is left within one pump).
fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<()> {
    let mut last_draw = Instant::now() - REDRAW;
    let mut messages = MessageClock::default();
    let mut answered = false;
    loop {
        loop {
            match handle_input(terminal, app, Duration::ZERO)? {
                Input::Quit => return Ok(()),
                Input::Handled => answered = true,
                Input::Nothing => break,
            }
        }
        messages.tick(app);
        let since = last_draw.elapsed();
        if since >= REDRAW || (app.is_dirty() && (answered || since >= DATA_FRAME)) {
            app.take_dirty();
            draw(terminal, app)?;
            last_draw = Instant::now();
            answered = false;
        }
        match handle_input(terminal, app, KEY_POLL)? {
            Input::Quit => return Ok(()),
            Input::Handled => answered = true,
            Input::Nothing => {}
        }
        app.pump(PUMP_BUDGET);
    }
}
