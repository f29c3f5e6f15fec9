//! Whole screens rendered from a real recording on fixed-size TestBackends (80×24 and
//! 160×48), one snapshot per panel, plus the help overlay.
mod common;

use proofscope::view::{Screen, Tab};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn render(app: &proofscope::app::App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let link = app.status();
    t.draw(|f| {
        let s = Screen {
            model: app.model(),
            state: &app.view,
            link: &link,
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

/// The timeline of every recording at 120×36 and 80×24: every phase of the shown proof has its
/// row (thread sub-rows collapsed), the unaccounted line is on screen, and the ghost's flagged
/// gap is counted there. Expanded, the rows scroll and say how many are above and below.
#[test]
fn the_timeline_of_every_recording_shows_all_phases_and_the_unaccounted_line() {
    let names = common::all_recordings();
    for name in &names {
        let mut app = common::replayed(name);
        app.view.tab = Tab::Timeline;
        let key = app.view.shown(app.model()).expect("a proof to show");
        let (s, p) = (
            &app.model().sessions()[key.session],
            app.model().proof(key).unwrap(),
        );
        let outer = p.outer().unwrap();
        let phases: std::collections::BTreeSet<String> = p
            .children(outer.id)
            .map(|c| s.name(c.name).chars().take(9).collect())
            .collect();
        for (w, h) in [(120, 36), (80, 24)] {
            let screen = render(&app, w, h);
            for ph in &phases {
                assert!(
                    screen.contains(&format!("│{ph}")),
                    "{name} at {w}x{h}: no row for {ph}\n{screen}"
                );
            }
            assert!(
                !screen.contains("more rows"),
                "{name} at {w}x{h}: rows cut\n{screen}"
            );
            assert!(
                screen.contains("│unaccounted "),
                "{name} at {w}x{h}: no unaccounted line\n{screen}"
            );
            if name == "h200-ghost-sync.psrec" {
                // Flagged, what it is, and the key to the whole diagnosis: on the first screen.
                assert!(screen.contains("), 1 of "), "{screen}");
                assert!(screen.contains("! tail gap 1.39 s"), "{screen}");
                assert!(screen.contains("press 2 for the diagnosis"), "{screen}");
            }
        }
    }
    // Expanded, the ghost's 48 synthesis threads do not fit: the panel scrolls.
    let mut app = common::replayed("h200-ghost-sync.psrec");
    app.apply(proofscope::input::Action::Expand);
    let top = render(&app, 120, 36);
    assert!(top.contains("0 rows above"), "{top}");
    assert!(top.contains("│unaccounted "), "{top}");
    app.apply(proofscope::input::Action::ScrollDown);
    let down = render(&app, 120, 36);
    assert!(down.contains("5 rows above"), "{down}");
    assert!(down.contains("│unaccounted "), "{down}");
}

/// Two GPUs share the GPU panel at 120×36: each keeps its legend and its per-proof summary.
#[test]
fn two_gpus_keep_their_legends_at_120x36() {
    let mut app = common::replayed("h200-multi-gpu.psrec");
    app.view.tab = Tab::Gpu;
    let screen = render(&app, 120, 36);
    insta::assert_snapshot!("multi_gpu_120x36", screen);
    assert_eq!(screen.matches("util %").count(), 2, "{screen}");
    assert!(
        screen.contains("gpu0 in proof 2: busy 10% (GPU spans) (!)  NVML util")
            && screen.contains("gpu1 in proof 2: busy 10% (GPU spans) (!)  NVML util"),
        "{screen}"
    );
}

/// `replay A --compare B`: the Stats panel shows B's phase statistics and bars beside A's.
#[test]
fn stats_compare_the_ghost_fixed_with_the_ghost() {
    let mut app = common::replayed("h200-ghost-sync.psrec");
    let b = common::replayed("h200-ghost-async.psrec");
    app.view.compare = Some(proofscope::view::Comparison::new(
        "recordings/h200-ghost-async.psrec".into(),
        b.model(),
        &app.report(),
        &b.report(),
    ));
    app.view.tab = Tab::Stats;
    let screen = render(&app, 120, 36);
    insta::assert_snapshot!("stats_compare_120x36", screen);
    assert!(screen.contains("B vs A"), "{screen}");
    assert!(
        screen.contains("▒ B: recordings/h200-ghost-async.psrec"),
        "{screen}"
    );
    // prove: 19.3 s before, 15.5 s after the fix, both as bars.
    let prove = screen.lines().position(|l| l.contains("│prove ")).unwrap();
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        lines[prove].contains("19.3 s") && lines[prove].contains('█'),
        "{screen}"
    );
    assert!(
        lines[prove + 1].contains("15.5 s") && lines[prove + 1].contains('▒'),
        "{screen}"
    );
    assert!(lines[prove].contains("−19."), "the change: {screen}");
}

/// One number, one definition: the header's proof count and rate are the JSON report's, for
/// every recording.
#[test]
fn the_screens_figures_are_the_reports() {
    for name in common::all_recordings() {
        let app = common::replayed(&name);
        let screen = render(&app, 160, 48);
        let json: serde_json::Value =
            serde_json::from_str(&proofscope_engine::report::json(&app.report())).unwrap();
        let last = json["sessions"]
            .as_array()
            .and_then(|s| s.last())
            .cloned()
            .unwrap_or_default();
        let done: usize = json["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s["proofs"]
                    .as_array()
                    .map_or(0, |p| p.iter().filter(|p| p["complete"] == true).count())
            })
            .sum();
        let header = screen.lines().nth(1).unwrap_or_default();
        let evicted = json["evicted_proofs"].as_u64().unwrap_or(0) as usize;
        assert!(
            header.contains(&format!("proofs {} ", done + evicted))
                || header.contains(&format!("proofs {} (", done + evicted)),
            "{name}: the header's count is not the report's {done} (+{evicted} evicted):\n{header}"
        );
        let t = &last["throughput"];
        if t["proofs"].as_u64().unwrap_or(0) >= 2 {
            let rate = format!("({:.1}/min)", t["per_minute"].as_f64().unwrap());
            assert!(
                header.contains(&rate),
                "{name}: rate {rate} not on screen:\n{header}"
            );
        }
    }
}

/// Every panel of every recording at the three sizes the issue names and a compact one, one
/// snapshot per recording and size (the five panels one under another): reviewed by looking.
#[test]
fn every_panel_of_every_recording() {
    for name in viewed() {
        let mut app = common::replayed(&name);
        let stem = name.trim_end_matches(".psrec").replace('/', "-");
        for (w, h) in SIZES {
            let mut all = String::new();
            for tab in Tab::ALL {
                app.view.tab = tab;
                all += &format!("── {} ──\n{}\n", tab.title(), render(&app, w, h));
            }
            insta::assert_snapshot!(format!("screens_{stem}_{w}x{h}"), all);
        }
    }
}

/// What a user opens: every recording, the supraseal captures (a preloaded prover: frees, no
/// proofs) and the log (imported on the fly).
fn viewed() -> Vec<String> {
    let mut names = common::all_recordings();
    names.extend(
        [
            "supraseal/fork-k22x4.psrec",
            "supraseal/upstream-k22x4.psrec",
            "logs/cuzk-c2-3-partitions.log",
        ]
        .map(String::from),
    );
    names
}

/// The sizes every recording is drawn at: the three, and one below 80×24 (compact).
const SIZES: [(u16, u16); 4] = [(120, 36), (80, 24), (200, 60), (64, 20)];

/// Text that does not fit ends in `…`: at every size, on every panel of every recording, the
/// last column of the screen (and of the proof list, in the body) never ends a word cut short:
/// what ends there is a blank, an ellipsis, a border or chart glyph, or a whole figure
/// ("662.2 ms", "41%") set flush right.
#[test]
fn no_line_is_cut_without_an_ellipsis() {
    let glyph = |c: char| !c.is_alphanumeric() && c != '(' && c != '[';
    let figure = |tok: &str| {
        let units = [
            "ns", "µs", "ms", "s", "B", "KB", "MB", "GB", "TB", "%", "W", "J", "min",
        ];
        let t = tok
            .trim_start_matches(['+', '−', '-', '('])
            .trim_end_matches(')');
        units.contains(&t)
            || t.trim_end_matches(|c: char| c.is_alphabetic() || c == '%')
                .parse::<f64>()
                .is_ok()
    };
    let mut bad = Vec::new();
    for name in viewed() {
        let mut app = common::replayed(&name);
        for tab in Tab::ALL {
            app.view.tab = tab;
            for (w, h) in SIZES {
                let screen = render(&app, w, h);
                let list_w = match w {
                    120.. => Some(30),
                    80.. => Some(20),
                    _ => None, // compact: no list
                };
                let head_h = if h < 24 { 1 } else { 2 };
                for (y, line) in screen.lines().enumerate() {
                    let cells: Vec<char> = line.trim_matches('"').chars().collect();
                    let body = y >= head_h && y + 1 < h as usize;
                    let edges = [Some(w as usize - 1), list_w.filter(|_| body).map(|l| l - 2)];
                    for x in edges.into_iter().flatten() {
                        let Some(&c) = cells.get(x) else { continue };
                        if glyph(c) {
                            continue;
                        }
                        let start = cells[..=x].iter().rposition(|c| *c == ' ' || *c == '│');
                        let tok: String = cells[start.map_or(0, |s| s + 1)..=x].iter().collect();
                        if !figure(&tok) {
                            bad.push(format!("{name} {tab:?} {w}x{h} row {y} `{tok}`: {line}"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} lines cut without …:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
