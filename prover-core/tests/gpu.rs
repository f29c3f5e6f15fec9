//! The GPU backend. The fallback test runs everywhere; the device tests run only where
//! `PROOFSCOPE_GPU_TESTS=1` (they need an NVIDIA GPU, driver and NVRTC).
mod support;
use prover_core::cli::BackendChoice;
use prover_core::gpu::NttOp;
use prover_core::gpu::msm_bench::random_scalars;
use prover_core::groth16::backend::{Abc, Backend, G2Tail, compute_h_cpu};
use prover_core::groth16::column::ColumnPool;
use prover_core::groth16::ntt::Domain;
use rand::SeedableRng;
use support::{cache, first_gpu, max_log};

/// Without a GPU, `auto` proves on the CPU and says why, in the log line and in `Hello`.
#[test]
fn cpu_fallback_happens_and_reports_its_reason() {
    if prover_core::gpu::preflight().is_ok() {
        eprintln!("SKIPPED: a GPU is present; the fallback cannot be observed here");
        return;
    }
    let (backend, reason) = prover_core::cli::select_backend(BackendChoice::Auto).unwrap();
    assert_eq!(backend.name(), "cpu");
    assert!(reason.starts_with("GPU backend off: "), "{reason}");
    assert!(
        reason.len() > "GPU backend off: ".len() + 10,
        "the reason says something: {reason}"
    );
    let err = prover_core::cli::select_backend(BackendChoice::Gpu).unwrap_err();
    assert!(
        err.to_string()
            .contains(reason.trim_start_matches("GPU backend off: ")),
        "{err}"
    );
    // The reason travels in Hello.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("s.psrec");
    let p = prover_core::cli::ProbeArgs {
        socket: None,
        record: Some(rec.clone()),
        force: false,
    }
    .start(
        prover_core::probe::SocketChoice::None,
        backend.name(),
        &reason,
    )
    .unwrap();
    p.shutdown("done");
    let r = probe_protocol::read_all(std::fs::File::open(&rec).unwrap()).unwrap();
    let hello = r.frames[0].events.iter().find_map(|e| match e {
        probe_protocol::Event::Hello(h) => Some(h.clone()),
        _ => None,
    });
    let hello = hello.unwrap();
    assert_eq!(hello.backend, "cpu");
    assert_eq!(hello.backend_reason, reason);
}

#[test]
fn gpu_transforms_equal_the_cpu_at_every_size() {
    let Some(gpu) = first_gpu() else { return };
    for log in 1..=max_log(24) {
        let d = Domain::new(log).unwrap();
        let input = random_scalars(d.n, log as u64);
        for op in [
            NttOp::Forward,
            NttOp::Inverse,
            NttOp::Coset,
            NttOp::InverseCoset,
        ] {
            let mut want = input.clone();
            match op {
                NttOp::Forward => d.ntt(&mut want),
                NttOp::Inverse => d.intt(&mut want),
                NttOp::Coset => d.coset_ntt(&mut want),
                NttOp::InverseCoset => d.icoset_ntt(&mut want),
            }
            let mut got = input.clone();
            gpu.ntt(op, &mut got).unwrap();
            let bad = got.iter().zip(&want).position(|(a, b)| a != b);
            assert!(bad.is_none(), "{op:?} 2^{log}: first difference at {bad:?}");
        }
        eprintln!("2^{log}: forward, inverse, coset, inverse coset equal the CPU");
    }
}

#[test]
fn gpu_h_computation_equals_the_cpu() {
    let Some(gpu) = first_gpu() else { return };
    for log in [10u32, 12, 16, 20, max_log(24)] {
        let d = Domain::new(log).unwrap();
        // A shorter input than the domain, as from synthesis.
        let len = d.n - 3;
        let mk = |s| Abc {
            a: random_scalars(len, s).into(),
            b: random_scalars(len, s + 1).into(),
            c: random_scalars(len, s + 2).into(),
        };
        let mut cpu = mk(100 + log as u64);
        let mut dev = mk(100 + log as u64);
        compute_h_cpu(&d, &mut cpu).unwrap();
        let (_, ops) = gpu.h_one(&d, &mut dev, true, None).unwrap();
        assert!(cpu.a == dev.a, "H differs at 2^{log}");
        assert!(
            ops.iter().any(|o| o.name == "upload_a") && ops.iter().any(|o| o.name == "download_h")
        );
        // The same from pooled columns page-locked once (`--dealloc reuse`): copied directly.
        support::columns_on_pages_of_their_own();
        let pool = ColumnPool::new(gpu.page_locker());
        let src = mk(100 + log as u64);
        let mut pooled = Abc {
            a: pool.take(d.n),
            b: pool.take(d.n),
            c: pool.take(d.n),
        };
        for (to, from) in pooled
            .columns_mut()
            .into_iter()
            .zip([&src.a, &src.b, &src.c])
        {
            from.iter().for_each(|x| to.push(*x));
        }
        assert!(
            pooled.page_locked(),
            "2^{log}: the pool's columns are page-locked"
        );
        gpu.h_one(&d, &mut pooled, true, None).unwrap();
        assert!(
            cpu.a == pooled.a,
            "H from page-locked columns differs at 2^{log}"
        );
        eprintln!(
            "2^{log}: H equals the CPU; device ops {:?}",
            ops.iter()
                .map(|o| (o.name, format!("{:.3} ms", o.ms())))
                .collect::<Vec<_>>()
        );
    }
}

/// The staging buffers round-trip data longer than the whole ring, in pieces that do not divide
/// it.
#[test]
fn staged_transfers_round_trip_across_several_buffers() {
    let Some(gpu) = first_gpu() else { return };
    let d = &gpu.device;
    // 160 MB and three words: two 64 MiB pieces and a short one, around the ring and back.
    let words = (8usize << 20) * 5 / 2 + 3;
    let src: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let mut dev = d.upload.alloc_zeros::<u64>(words).unwrap();
    d.stager.upload(&d.ctx, &d.upload, &src, &mut dev).unwrap();
    let mut back = vec![0u64; words];
    d.stager
        .download(&d.ctx, &d.upload, &dev, &mut back)
        .unwrap();
    assert!(back == src, "staged round trip differs");
    // A short download of a longer buffer takes its start; a long one is an error.
    let mut head = vec![0u64; 1000];
    d.stager
        .download(&d.ctx, &d.upload, &dev, &mut head)
        .unwrap();
    assert_eq!(head[..], src[..1000]);
    let mut too_long = vec![0u64; words + 1];
    assert!(
        d.stager
            .download(&d.ctx, &d.upload, &dev, &mut too_long)
            .is_err()
    );
}

#[test]
fn gpu_proofs_verify() {
    let Some(gpu) = first_gpu() else { return };
    use prover_core::groth16::circuits::CircuitKind;
    use prover_core::groth16::dealloc::DeallocMode;
    use prover_core::groth16::params::{self, SrsMode};
    use prover_core::groth16::pipeline::{BatchRequest, VerifyMode, prove_batch};
    // Every visible GPU, as `--backend gpu` opens them: with two or more, the batch is split.
    let (all, what) = prover_core::gpu::detect().unwrap();
    eprintln!("{what}: {} device(s)", all.unit_count());
    let mut backends: Vec<&dyn Backend> = vec![&gpu];
    if all.unit_count() > 1 {
        backends.push(all.as_ref());
    }
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    for backend in backends {
        // Without a pool, then with one (`--dealloc reuse`): two batches each, so the second
        // pooled batch uploads from the page-locked columns the first gave back. The second
        // batch sums B's G2 tail on the device (`--g2-tail device`), the first on the CPU.
        // Squaring's B is dense (no split: the whole G2 query), SHA-256's all zeros and ones
        // (an empty tail), the mixed witness's split with a tenth in the tails and ones for
        // batch addition in every query, as a real C2 batch (its columns are SHA-256's,
        // reused for a smaller circuit).
        for pooled in [false, true] {
            support::columns_on_pages_of_their_own();
            let pool = pooled
                .then(|| prover_core::groth16::column::ColumnPool::new(backend.page_locker()));
            for (kind, log) in [
                (CircuitKind::Squaring, 12),
                (CircuitKind::Sha256, 15),
                (CircuitKind::Mixed, 12),
            ] {
                let size = kind.size_for(log).unwrap();
                let ps = params::obtain(size, SrsMode::Real, &cache()).unwrap();
                for batch in 0..2 {
                    let circuits = (0..3).map(|_| size.random(&mut rng)).collect();
                    let out = prove_batch(BatchRequest {
                        params: &ps,
                        backend,
                        circuits,
                        dealloc: DeallocMode::Async,
                        columns: pool.as_ref(),
                        verify: VerifyMode::Every,
                        g2_tail: [G2Tail::Prep, G2Tail::Device][batch],
                        stages: None,
                        ballast: Default::default(),
                    })
                    .unwrap();
                    assert_eq!(
                        out.verification,
                        prover_core::probe::Verification::Valid,
                        "{kind:?} on {} device(s), pooled {pooled}, batch {batch} ({:?})",
                        backend.unit_count(),
                        out.g2_tail
                    );
                }
            }
            if let Some(pool) = &pool {
                let (kept, locked) = (pool.kept().0, pool.page_locked());
                eprintln!("pool: {kept} columns kept, {locked} page-locked");
                assert_eq!((kept, locked), (9, 9), "three circuits' a, b, c, locked");
            }
        }
    }
}
