//! Connection behaviour with real processes and a fake server; retention; replay jumps.
// These run the built-in prover (`proofscope prover …`): the `demo` feature.
#![cfg(feature = "demo")]
mod common;

use common::BIN;

use proofscope::app::App;
use proofscope::input::Action;
use proofscope_engine::model::{Model, Retention};
use proofscope_engine::source::LinkState;
use proofscope_engine::source::Target;
use std::io::Write;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A prover of `proofs` small proofs that lingers after each (`--pause-ms`) longer than the
/// viewer's longest wait between two attempts to connect (5 s): a prover of one 2^10 proof is
/// gone in a third of a second, and a viewer that had tried just before its socket appeared
/// missed it whole (3 runs in 8 here, "cannot connect … No such file", the prover exited 0).
fn prover(sock: &std::path::Path, proofs: u32) -> Child {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proofscope-cache");
    Command::new(BIN)
        .args([
            "prover",
            "serve",
            "--circuit",
            "squaring",
            "--log-size",
            "10",
            "--circuits",
            "2",
            "--proofs",
        ])
        .arg(proofs.to_string())
        .args(["--pause-ms", "5500"])
        .arg("--socket")
        .arg(sock)
        .arg("--cache")
        .arg(cache)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn pump_until(app: &mut App, secs: u64, mut f: impl FnMut(&App) -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        app.wait(Duration::from_millis(50));
        app.pump(Duration::from_millis(10));
        if f(app) {
            return true;
        }
    }
    false
}

#[test]
fn the_ui_keeps_its_data_and_reconnects_when_the_prover_returns() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("p.sock");
    let mut first = prover(&sock, 1);
    let mut app = App::live(Target::Socket(sock.clone()), &common::opts()).unwrap();
    assert!(
        pump_until(&mut app, 120, |a| a
            .model()
            .sessions()
            .first()
            .is_some_and(|s| s.goodbye().is_some())),
        "first prover never finished: {} sessions, link {:?}, prover {:?}",
        app.model().sessions().len(),
        app.status().link,
        first.try_wait()
    );
    first.wait().unwrap();
    assert!(
        pump_until(&mut app, 10, |a| matches!(
            &a.status().link,
            LinkState::Ended(why) if why.starts_with("prover finished: done: 1 proofs")
        )),
        "the UI did not say the prover finished: {:?}",
        app.status().link
    );
    let kept = app.model().sessions()[0].proofs_done();
    assert_eq!(kept, 1);
    // The socket returns with a new prover process: the UI reconnects by itself.
    let mut second = prover(&sock, 1);
    assert!(
        pump_until(&mut app, 120, |a| a.model().sessions().len() == 2
            && a.model().sessions()[1].proofs_done() == 1),
        "no reconnection: {:?}",
        app.status().link
    );
    assert_eq!(
        app.model().sessions()[0].proofs_done(),
        kept,
        "old data kept"
    );
    second.wait().unwrap();
}

#[test]
fn a_protocol_mismatch_is_a_clear_message_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("future.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let server = std::thread::Builder::new()
        .name("fake-future-prover".into())
        .spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            // A frame of protocol 2.0: body [2, 0, 0, [15, 0]].
            let body = [0xdd, 0, 0, 0, 4, 0x02, 0x00, 0x00, 0x92, 0x0f, 0x00];
            s.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
            s.write_all(&body).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        })
        .unwrap();
    let mut app = App::live(Target::Socket(sock), &common::opts()).unwrap();
    assert!(pump_until(&mut app, 10, |a| matches!(
        a.status().link,
        LinkState::Failed(_)
    )));
    let LinkState::Failed(msg) = &app.status().link else {
        unreachable!()
    };
    assert!(
        msg.contains(&probe_protocol::protocol_version())
            && msg.contains("2.0")
            && msg.contains("incompatible"),
        "{msg}"
    );
    server.join().unwrap();
}

#[test]
fn retention_evicts_the_oldest_proofs_and_counts_them() {
    let app = common::replayed("cpu-sha256-sync.psrec");
    let mut m = Model::new(Retention {
        max_proofs: 2,
        max_bytes: usize::MAX,
    });
    // Re-ingest the recording's events into a model that keeps two proofs.
    let mut r = proofscope_engine::source::tape::Replay::open(
        &common::recording("cpu-sha256-sync.psrec"),
        1 << 20,
    )
    .unwrap();
    r.set_speed(proofscope_engine::source::tape::Speed::Max);
    r.due(None, |events| m.ingest_all(events));
    assert_eq!(app.model().proof_keys().len(), 4);
    let keys: Vec<u64> = m.proof_keys().iter().map(|k| k.proof.get()).collect();
    assert_eq!(keys, vec![3, 4]);
    assert_eq!(m.evicted_proofs(), 2);
    assert!(m.evicted_events() > 0);
}

#[test]
fn replay_jumps_between_proofs_and_back() {
    let mut app = App::replay(common::recording("cpu-sha256-sync.psrec"), &common::opts()).unwrap();
    let shown = |app: &App| app.view.shown(app.model()).map(|k| k.proof.get());
    let done = |app: &App| app.model().sessions()[0].proofs_done();
    app.apply(Action::Pause);
    app.apply(Action::NextProof);
    // A frame is a collector batch: the next proof may have begun in the same frame.
    assert_eq!((shown(&app), done(&app)), (Some(1), 1));
    app.apply(Action::NextProof);
    app.apply(Action::NextProof);
    assert_eq!((shown(&app), done(&app)), (Some(3), 3));
    app.apply(Action::PrevProof);
    assert_eq!(
        (shown(&app), done(&app)),
        (Some(2), 2),
        "a fresh model, replayed to the previous proof"
    );
    assert!(app.model().proof_keys().iter().all(|k| k.proof.get() <= 3));
    app.apply(Action::Speed);
    let transport = app.status().transport.expect("a replay has a transport");
    assert!(matches!(
        transport,
        proofscope_engine::source::Transport::Replay {
            speed: proofscope_engine::source::Speed::X2,
            ..
        }
    ));
    assert!(proofscope::view::transport::line(&transport).contains("2×"));
}

/// A prover that never stops streaming must not keep a headless run past its stop condition.
#[test]
fn headless_stops_on_time_while_the_prover_keeps_streaming() {
    use probe_protocol::{Event, Hello, encode_frame};
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("busy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let server = std::thread::Builder::new()
        .name("busy-prover".into())
        .spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let hello = encode_frame(
                0,
                &[Event::Hello(Box::new(Hello {
                    prover_name: "busy".into(),
                    ..Hello::default()
                }))],
            )
            .unwrap();
            let _ = s.write_all(&hello);
            let mut ts = 0u64;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                ts += 1_000_000;
                if s.write_all(&encode_frame(ts, &[Event::Heartbeat { ts }]).unwrap())
                    .is_err()
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .unwrap();
    let mut app = App::live(Target::Socket(sock), &common::opts()).unwrap();
    let t0 = Instant::now();
    proofscope::app::run_headless(
        &mut app,
        proofscope::app::Until {
            proofs: None,
            duration: Some(Duration::from_secs(1)),
        },
    );
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
    assert!(
        took < Duration::from_secs(5),
        "headless ran {took:?} for a 1 s duration"
    );
    assert!(app.model().events() > 100, "it did read the stream");
}

/// A prover that says goodbye and then takes a moment to remove its socket: the viewer says
/// "prover finished", and failing to reconnect meanwhile does not turn that into an error.
#[test]
fn a_clean_finish_stays_a_finish_while_the_socket_goes_away() {
    use probe_protocol::{Event, Hello, encode_frame};
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("finishing.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let path = sock.clone();
    let server = std::thread::Builder::new()
        .name("finishing-prover".into())
        .spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let hello = Event::Hello(Box::new(Hello {
                protocol_major: 1,
                pid: 42,
                prover_name: "finishing".into(),
                ..Default::default()
            }));
            let bye = Event::Goodbye {
                ts: 10,
                reason: "done".into(),
            };
            s.write_all(&encode_frame(0, &[hello, bye]).unwrap())
                .unwrap();
            drop(s);
            // The socket lingers (still bound, no longer answering), then goes.
            std::thread::sleep(Duration::from_millis(800));
            drop(listener);
            std::fs::remove_file(&path).unwrap();
        })
        .unwrap();
    let mut app = App::live(Target::Socket(sock), &common::opts()).unwrap();
    assert!(pump_until(&mut app, 10, |a| matches!(
        a.status().link,
        LinkState::Ended(_)
    )));
    server.join().unwrap();
    // Retries meanwhile (the socket still there, then gone) keep the finish.
    pump_until(&mut app, 2, |_| false);
    match &app.status().link {
        LinkState::Ended(why) => assert_eq!(why, "prover finished: done"),
        other => panic!("the clean finish became {other:?}"),
    }
}
