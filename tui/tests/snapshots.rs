//! Whole screens rendered from a real recording on fixed-size TestBackends (80×24 and
//! 160×48), one snapshot per panel, plus the help overlay.
mod common;

use proofscope::view::{Screen, Tab};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn render(app: &proofscope::app::App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| {
        let s = Screen {
            model: &app.model,
            state: &app.view,
        };
        f.render_widget(&s, f.area());
    })
    .unwrap();
    format!("{}", t.backend())
}

#[test]
fn every_panel_at_80x24_and_160x48() {
    let mut app = common::replayed("cpu-sha256-sync.psrec");
    for tab in Tab::ALL {
        app.view.tab = tab;
        for (w, h) in [(80, 24), (160, 48)] {
            insta::assert_snapshot!(
                format!("sync_{}_{w}x{h}", tab.title().to_lowercase()),
                render(&app, w, h)
            );
        }
    }
}

#[test]
fn help_overlay_and_a_selected_older_proof() {
    let mut app = common::replayed("cpu-sha256-async.psrec");
    app.apply(proofscope::input::Action::Up);
    app.apply(proofscope::input::Action::Up);
    insta::assert_snapshot!("async_selected_80x24", render(&app, 80, 24));
    app.apply(proofscope::input::Action::Help);
    insta::assert_snapshot!("async_help_80x24", render(&app, 80, 24));
}

#[test]
fn zoomed_and_panned_timeline() {
    let mut app = common::replayed("cpu-sha256-sync.psrec");
    for a in [
        proofscope::input::Action::ZoomIn,
        proofscope::input::Action::ZoomIn,
        proofscope::input::Action::Right,
    ] {
        app.apply(a);
    }
    insta::assert_snapshot!("sync_zoomed_80x24", render(&app, 80, 24));
}

#[test]
fn tiny_terminals_do_not_panic() {
    let app = common::replayed("cpu-sha256-sync.psrec");
    for (w, h) in [(1, 1), (10, 3), (20, 6), (40, 10)] {
        render(&app, w, h);
    }
}

/// A real GPU session (the H200 recording): GPU spans per stream under ntt_msm_h on the
/// timeline, NVML utilisation, memory and power in the GPU panel.
#[test]
fn h200_gpu_session_timeline_and_gpu_panel() {
    let mut app = common::replayed("h200-gpu-sha256.psrec");
    for tab in [Tab::Timeline, Tab::Gpu] {
        app.view.tab = tab;
        insta::assert_snapshot!(
            format!("h200_{}_160x48", tab.title().to_lowercase()),
            render(&app, 160, 48)
        );
    }
}
