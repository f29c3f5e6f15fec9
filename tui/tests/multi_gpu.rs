//! A batch split across two GPUs, as the prover streams it (one `gpu-i` thread per device,
//! GPU spans tagged with the device, NVML samples of both): the timeline tells the two
//! devices' phases apart and draws each device's streams under its own phase, the GPU panel
//! shows both devices, the report lists both threads' phases. Built from synthetic events:
//! no two-GPU host was available to record one.
mod common;

use probe_protocol::*;
use proofscope::app::App;
use proofscope::view::{Screen, Tab};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MS: u64 = 1_000_000;

fn events() -> Vec<Event> {
    let mut ev = vec![Event::Hello(Box::new(Hello {
        protocol_major: 1,
        backend: "gpu".into(),
        gpus: (0..2)
            .map(|i| GpuInfo {
                index: i,
                name: "NVIDIA H200".into(),
                memory_total_bytes: 150 << 30,
                ..GpuInfo::default()
            })
            .collect(),
        cpu_count: 32,
        ..Hello::default()
    }))];
    for (id, name) in [(1, "prove"), (2, "ntt_msm_h"), (3, "msm_buckets_affine")] {
        ev.push(Event::NameDef {
            id,
            name: name.into(),
        });
    }
    for (id, name) in [(1, "main"), (2, "gpu-0"), (3, "gpu-1")] {
        ev.push(Event::ThreadDef {
            id,
            name: name.into(),
            os_tid: 100 + id as u64,
        });
    }
    ev.push(Event::ProofBegin(Box::new(ProofBegin {
        ts: 0,
        proof: 1,
        span: 10,
        circuit: "sha256".into(),
        constraints: 1 << 22,
        circuits: 4,
        backend: "gpu".into(),
        synthetic_srs: true,
    })));
    let begin = |ts, span, parent, thread| {
        Event::SpanBegin(SpanBegin {
            ts,
            span,
            parent,
            proof: Some(1),
            name: if span == 10 { 1 } else { 2 },
            thread,
        })
    };
    ev.push(begin(0, 10, None, 1));
    // gpu-0 takes circuits 0..2, gpu-1 circuits 2..4; each device's MSM under its own phase.
    ev.push(begin(5 * MS, 11, Some(10), 2));
    ev.push(begin(6 * MS, 12, Some(10), 3));
    for (device, span, start) in [(0, 11, 10 * MS), (1, 12, 12 * MS)] {
        ev.push(Event::GpuSpan(GpuSpan {
            start,
            end: start + 60 * MS,
            device,
            stream: 0,
            name: 3,
            span: Some(span),
        }));
    }
    for i in 0..10u64 {
        for device in 0..2 {
            ev.push(Event::GpuSample(Box::new(GpuSample {
                ts: i * 10 * MS,
                device,
                util_pct: Some(80 + device as u8),
                mem_used_bytes: Some((2 + device as u64) << 30),
                mem_total_bytes: Some(150 << 30),
                ..GpuSample::default()
            })));
        }
    }
    ev.push(Event::SpanEnd(SpanEnd {
        ts: 80 * MS,
        span: 11,
    }));
    ev.push(Event::SpanEnd(SpanEnd {
        ts: 85 * MS,
        span: 12,
    }));
    ev.push(Event::SpanEnd(SpanEnd {
        ts: 90 * MS,
        span: 10,
    }));
    ev.push(Event::ProofEnd(Box::new(ProofEnd {
        ts: 90 * MS,
        proof: 1,
        ok: true,
        verification: Verification::Unverifiable,
        error: None,
    })));
    ev
}

fn app() -> App {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two-gpus.psrec");
    let mut w = RecordingWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    w.write_frame(&encode_frame(0, &events()).unwrap()).unwrap();
    w.flush().unwrap();
    drop(w);
    let mut app = App::replay(path, &common::opts()).unwrap();
    common::read_through(&mut app);
    app
}

fn render(app: &App, tab: Tab) -> String {
    let mut app_view = app.view.clone();
    app_view.tab = tab;
    let mut t = Terminal::new(TestBackend::new(120, 30)).unwrap();
    let link = app.status();
    t.draw(|f| {
        let s = Screen {
            model: app.model(),
            state: &app_view,
            link: &link,
        };
        f.render_widget(&s, f.area());
    })
    .unwrap();
    format!("{}", t.backend())
}

#[test]
fn two_gpus_appear_in_the_timeline_the_gpu_panel_and_the_report() {
    let app = app();
    let timeline = render(&app, Tab::Timeline);
    let lines: Vec<&str> = timeline.lines().collect();
    let row = |label: &str| {
        lines
            .iter()
            .position(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no row {label:?} in\n{timeline}"))
    };
    // Each device's phase, and its GPU stream right under it.
    assert_eq!(row("└gpu0.s0"), row("ntt_msm_h:0") + 1, "{timeline}");
    assert_eq!(row("└gpu1.s0"), row("ntt_msm_h:1") + 1, "{timeline}");

    let gpu = render(&app, Tab::Gpu);
    // Each device's busy share of the shown proof, and its average utilisation over it.
    let line = |dev: &str| {
        gpu.lines()
            .find(|l| l.contains(dev))
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        line("gpu0 in proof 1: busy").contains("NVML util 80%"),
        "{gpu}"
    );
    assert!(
        line("gpu1 in proof 1: busy").contains("NVML util 81%"),
        "{gpu}"
    );

    let r =
        proofscope_engine::report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let threads: Vec<&str> = r.sessions[0].proofs[0]
        .phases
        .iter()
        .filter(|p| p.name == "ntt_msm_h")
        .map(|p| p.thread.as_str())
        .collect();
    assert_eq!(threads, ["gpu-0", "gpu-1"]);
    assert_eq!(r.sessions[0].gpus.len(), 2);
}

/// The same on a real recording (`recordings/h200-multi-gpu.psrec`, the 2-GPU H200 host): two
/// proofs of 4 × SHA-256 2^20, circuits split 2 + 2 across `gpu-0` and `gpu-1`.
#[test]
fn a_real_two_gpu_recording_shows_both_devices() {
    let app = common::replayed("h200-multi-gpu.psrec");
    let timeline = render(&app, Tab::Timeline);
    for label in ["ntt_msm_h:0", "ntt_msm_h:1", "gpu0.s0", "gpu1.s0"] {
        assert!(timeline.contains(label), "no {label:?} in\n{timeline}");
    }
    let gpu = render(&app, Tab::Gpu);
    assert!(
        gpu.contains("gpu0 in proof 2: busy 10% (GPU spans) (!)")
            && gpu.contains("gpu1 in proof 2: busy 10% (GPU spans) (!)"),
        "{gpu}"
    );

    let r =
        proofscope_engine::report::build(app.model(), &app.view.rule, app.session.label(), vec![]);
    let s = &r.sessions[0];
    assert_eq!(s.gpus.len(), 2);
    assert_eq!(s.proofs.len(), 2);
    for p in &s.proofs {
        for phase in ["ntt_msm_h", "batch_add", "tail_msm"] {
            let mut threads: Vec<&str> = p
                .phases
                .iter()
                .filter(|ph| ph.name == phase)
                .map(|ph| ph.thread.as_str())
                .collect();
            threads.sort();
            assert_eq!(threads, ["gpu-0", "gpu-1"], "{phase} of proof {}", p.id);
        }
        // Split across two devices, the proof still has no unaccounted time worth flagging.
        assert!(
            !p.gaps.iter().any(|g| g.flagged && g.span == "prove"),
            "{:?}",
            p.gaps
        );
    }
}

/// NVML's reading speaks for the time before it (`analysis::nvml`): on the H200 recording,
/// proof 2's own GPU phases read their kernels' utilisation and its synthesis reads the idle
/// GPU. Placed at read time, proof 1's kernels showed as a hump in proof 2's synthesis.
#[test]
fn proof_twos_gpu_phases_read_their_own_utilisation() {
    use proofscope_engine::analysis::{Interval, nvml};
    let app = common::replayed("h200-multi-gpu.psrec");
    let model = app.model();
    let s = &model.sessions()[0];
    let key = model.proof_keys()[1];
    let p = model.proof(key).expect("proof 2");
    let mean = |dev: u32, name: &str| -> f64 {
        let (mut sum, mut n) = (0.0, 0.0);
        for ph in p.phases().filter(|ph| s.name(ph.name) == name) {
            let iv = Interval::new(ph.start, ph.end_or(s.now()));
            if let Some(u) = nvml::mean_util(s, dev, iv) {
                sum += u * iv.len() as f64;
                n += iv.len() as f64;
            }
        }
        assert!(n > 0.0, "no NVML reading over {name} on gpu{dev}");
        sum / n
    };
    for dev in [0, 1] {
        let synthesis = mean(dev, "synthesis");
        let gpu = mean(dev, "ntt_msm_h").max(mean(dev, "batch_add"));
        assert!(
            synthesis <= 10.0,
            "gpu{dev}: synthesis reads {synthesis:.0}%"
        );
        assert!(
            gpu >= 20.0 && gpu >= 3.0 * synthesis.max(1.0),
            "gpu{dev}: GPU phases {gpu:.0}% vs synthesis {synthesis:.0}%"
        );
    }
}
