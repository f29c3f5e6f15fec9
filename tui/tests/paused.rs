//! A paused live dashboard holds what arrives within the memory bound, says when it dropped
//! some, and applies what it held on resume.

mod common;

use probe_protocol::{Event, SpanBegin, SpanEnd, encode_frame};
use proofscope::app::{App, RunOpts};
use proofscope::input::Action;
use proofscope_engine::model::Retention;
use proofscope_engine::source::Target;
use std::io::Write;
use std::time::{Duration, Instant};

/// A fake prover: Hello, then frames of 1,000 span edges as fast as the socket takes them.
fn flood(sock: &std::path::Path) -> std::thread::JoinHandle<u64> {
    let listener = std::os::unix::net::UnixListener::bind(sock).unwrap();
    std::thread::Builder::new()
        .name("flooding-prover".into())
        .spawn(move || {
            let mut s = common::greet_viewer(&listener, "flood");
            let mut sent = 0u64;
            for f in 0u64.. {
                let evs: Vec<Event> = (0..500u64)
                    .flat_map(|i| {
                        let id = f * 1000 + i + 1;
                        [
                            Event::SpanBegin(SpanBegin {
                                ts: id * 10,
                                span: id,
                                parent: None,
                                proof: None,
                                name: 1,
                                thread: 1,
                            }),
                            Event::SpanEnd(SpanEnd {
                                ts: id * 10 + 5,
                                span: id,
                            }),
                        ]
                    })
                    .collect();
                if s.write_all(&encode_frame(f * 10_000, &evs).unwrap())
                    .is_err()
                {
                    break;
                }
                sent += evs.len() as u64;
            }
            sent
        })
        .unwrap()
}

#[test]
fn a_paused_view_holds_within_its_bound_and_catches_up_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("flood.sock");
    let server = flood(&sock);
    let budget = 2 << 20;
    let opts = RunOpts {
        retention: Retention {
            max_proofs: 1000,
            max_bytes: budget,
        },
        ..RunOpts::default()
    };
    let mut app = App::live(Target::Socket(sock), &opts).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.model().events() < 10_000 {
        assert!(Instant::now() < deadline, "nothing arrived");
        app.pump(Duration::from_millis(20));
    }
    app.apply(Action::Pause);
    let before = app.model().events();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(2) {
        app.pump(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(5));
    }
    let h = app.status().paused.expect("paused");
    let (held, dropped) = (h.events, h.dropped);
    assert_eq!(
        app.model().events(),
        before,
        "nothing is applied while paused"
    );
    assert!(held > 0, "events are held");
    assert!(
        held * 160 <= budget as u64,
        "{held} events held over the budget"
    );
    assert!(dropped > 0, "a flood this long overflows a 2 MiB hold");
    app.apply(Action::Pause);
    assert!(
        app.model().events() > before,
        "the hold is applied on resume"
    );
    assert!(
        app.session
            .warnings()
            .iter()
            .any(|w| w.contains("while the view was paused were dropped")),
        "{:?}",
        app.session.warnings()
    );
    app.finish();
    drop(app);
    let sent = server.join().unwrap();
    assert!(sent > 0);
}
