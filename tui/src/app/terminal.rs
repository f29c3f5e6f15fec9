//! The dashboard: the terminal loop (ratatui restores the terminal on exit and on panic).

use super::App;
use crate::input;
use crate::view::Screen;
use anyhow::Result;
use std::time::{Duration, Instant};

/// How long a message stays on screen unless replaced or dismissed (`esc`).
const MESSAGE_LIFE: Duration = Duration::from_secs(10);
/// The screen is redrawn at least this often (clocks, a live session's growth).
const REDRAW: Duration = Duration::from_secs(1);
/// How long one wait for a key lasts, and how long the source is pumped between keys.
const KEY_POLL: Duration = Duration::from_millis(50);
const PUMP_BUDGET: Duration = Duration::from_millis(30);

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
    if let Some(t) = app
        .status()
        .transport
        .filter(|t| t.starts_with("prover output"))
    {
        eprintln!("{t}");
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

/// Waits for a key (or a resize) for up to [`KEY_POLL`]; `true` means quit.
fn handle_input(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<bool> {
    use crossterm::event::{self, Event};
    if !event::poll(KEY_POLL)? {
        return Ok(false);
    }
    match event::read()? {
        Event::Key(k) if app.view.editing => {
            if let Some(f) = input::filter_key(k) {
                app.view.edit_filter(f);
                app.mark_dirty();
            }
        }
        Event::Key(k) => {
            if let Some(a) = input::map(k) {
                return Ok(app.apply(a));
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
    Ok(false)
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<()> {
    let mut last_draw = Instant::now() - REDRAW;
    let mut messages = MessageClock::default();
    loop {
        messages.tick(app);
        if app.take_dirty() || last_draw.elapsed() >= REDRAW {
            draw(terminal, app)?;
            last_draw = Instant::now();
        }
        if handle_input(terminal, app)? {
            return Ok(());
        }
        app.pump(PUMP_BUDGET);
    }
}
