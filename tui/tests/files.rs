//! What the viewer writes and where (#26): one overwrite rule (`--force`) for every file a
//! command writes, `r` recording into `--record-dir` under a dated name that never replaces
//! another, `list --json`, shell completions and man pages, examples and exit statuses in every
//! subcommand's help, and an attach to a socket that does not exist failing at once.

mod common;

use common::BIN;
use probe_protocol::{Event, SpanBegin, SpanEnd, encode_frame};
use proofscope::app::{App, RunOpts};
use proofscope::input::Action;
use proofscope_engine::source::Target;
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_existing_report_file_is_kept_without_force_and_replaced_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.txt");
    std::fs::write(&out, "mine").unwrap();
    let rec = common::recording("cpu-sha256-sync.psrec");
    let refused = Command::new(BIN)
        .arg("replay")
        .arg(&rec)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("pass --force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
    let replaced = Command::new(BIN)
        .arg("replay")
        .arg(&rec)
        .arg("-o")
        .arg(&out)
        .arg("--force")
        .output()
        .unwrap();
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("proofscope")
    );
    // --force with nothing to replace is a mistake, said as one.
    let nothing = Command::new(BIN)
        .arg("replay")
        .arg(&rec)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(nothing.status.code(), Some(2), "{}", stderr(&nothing));
}

#[test]
fn attaching_to_a_socket_that_does_not_exist_fails_at_once() {
    let t = Instant::now();
    let out = Command::new(BIN)
        .args(["attach", "/nonexistent/nope.sock", "--headless"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no prover socket at"),
        "{}",
        stderr(&out)
    );
    // Not the 10 s a vanished prover is given (a loaded machine still starts in well under 5).
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn list_json_is_an_array_of_sockets() {
    let dir = tempfile::tempdir().unwrap();
    // A stale socket: a file nobody listens on, where viewers look first.
    std::fs::create_dir(dir.path().join("proofscope")).unwrap();
    let stale = dir.path().join("proofscope/ghost-4242.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let list = || {
        let out = Command::new(BIN)
            .args(["list", "--json"])
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ghost = v
            .as_array()
            .expect("an array")
            .iter()
            .find(|r| r["path"] == stale.display().to_string())
            .unwrap_or_else(|| panic!("{v}"))
            .clone();
        (v, ghost)
    };
    // Just made: its prover may be about to listen (discovery::STALE_GRACE).
    let (v, ghost) = list();
    assert_eq!(ghost["state"], "stale", "{v}");
    // Ten seconds old: stale for good, and removed.
    let c = std::ffi::CString::new(stale.as_os_str().as_encoded_bytes()).unwrap();
    let past = libc::timespec {
        tv_sec: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as libc::time_t
            - 10,
        tv_nsec: 0,
    };
    // SAFETY: a NUL-terminated path and two valid timespecs.
    let r = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), [past, past].as_ptr(), 0) };
    assert_eq!(r, 0);
    let (v, ghost) = list();
    assert_eq!(ghost["state"], "stale, removed", "{v}");
    assert_eq!(ghost["prover"], "ghost", "{v}");
    assert_eq!(ghost["pid"], 4242, "{v}");
}

#[test]
fn completions_and_man_pages_cover_every_subcommand() {
    let subs = [
        "demo", "attach", "run", "list", "export", "diff", "import", "replay",
    ];
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for sub in subs {
            assert!(script.contains(sub), "{shell} completes no {sub}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let write = || {
        Command::new(BIN)
            .arg("man")
            .arg("--dir")
            .arg(&man)
            .output()
            .unwrap()
    };
    let first = write();
    assert!(first.status.success(), "{}", stderr(&first));
    for sub in subs {
        let page = std::fs::read_to_string(man.join(format!("proofscope-{sub}.1"))).unwrap();
        assert!(
            page.contains(".TH") && page.contains("Exit status"),
            "{sub}"
        );
    }
    let again = write();
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
}

/// Every subcommand's help has examples that parse and the exit statuses it can end with.
#[test]
fn every_subcommand_shows_examples_that_parse_and_its_exit_statuses() {
    let mut cmd = proofscope::cli::command();
    cmd.build();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let help = sub.clone().render_long_help().to_string();
        let name = sub.get_name();
        assert!(help.contains("Examples:"), "{name} has no examples");
        assert!(help.contains("Exit status:\n  0  done"), "{name}:\n{help}");
        assert_eq!(help.contains("  4  "), name == "diff", "{name}: {help}");
        let examples = help
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("proofscope "));
        for ex in examples {
            // The command itself: up to a pipe or a redirection.
            let words: Vec<&str> = ex
                .split_whitespace()
                .take_while(|w| !matches!(*w, "|" | ">"))
                .collect();
            let parsed = proofscope::cli::command().try_get_matches_from(&words);
            assert!(parsed.is_ok(), "{ex}: {}", parsed.unwrap_err());
        }
    }
}

/// A fake prover: Hello and one span, then silence until the test ends.
fn quiet_prover(sock: &std::path::Path) -> std::thread::JoinHandle<()> {
    let listener = std::os::unix::net::UnixListener::bind(sock).unwrap();
    std::thread::Builder::new()
        .name("quiet-prover".into())
        .spawn(move || {
            let mut s = common::greet_viewer(&listener, "quiet prover");
            let span = [
                Event::SpanBegin(SpanBegin {
                    ts: 10,
                    span: 1,
                    parent: None,
                    proof: None,
                    name: 1,
                    thread: 1,
                }),
                Event::SpanEnd(SpanEnd { ts: 20, span: 1 }),
            ];
            let _ = s.write_all(&encode_frame(1, &span).unwrap());
            // Until the viewer hangs up.
            let _ = s.read(&mut [0u8; 256]);
        })
        .unwrap()
}

#[test]
fn r_records_into_the_record_dir_under_new_dated_names() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("quiet.sock");
    let server = quiet_prover(&sock);
    let records = dir.path().join("not/yet/made");
    let opts = RunOpts {
        record_dir: records.clone(),
        ..RunOpts::default()
    };
    let mut app = App::live(Target::Socket(sock), &opts).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.model().current().is_none_or(|s| s.hello().is_none()) {
        assert!(Instant::now() < deadline, "no Hello arrived");
        app.pump(Duration::from_millis(20));
    }
    let mut saved = Vec::new();
    for _ in 0..2 {
        app.apply(Action::Record);
        let started = app.view.message.clone().unwrap_or_default();
        assert!(started.starts_with("recording to "), "{started}");
        app.pump(Duration::from_millis(50));
        app.apply(Action::Record);
        let said = app.view.message.clone().unwrap_or_default();
        let path = said
            .strip_prefix("recording saved to ")
            .unwrap_or_else(|| panic!("{said}"));
        saved.push(std::path::PathBuf::from(path));
    }
    app.finish();
    drop(app);
    server.join().unwrap();
    assert_ne!(
        saved[0], saved[1],
        "the second recording replaced the first"
    );
    for p in &saved {
        assert_eq!(p.parent(), Some(records.as_path()));
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("proofscope-quiet-prover-20"), "{name}");
        assert!(name.ends_with(".psrec"), "{name}");
        let replayed = App::replay(p.clone(), &RunOpts::default()).unwrap();
        drop(replayed);
    }
}

/// A recording that can no longer be written (here a file-size limit, as a full disk would):
/// a headless run says so on stderr and in the report, exits 1, and the file keeps every
/// frame up to the last whole one.
#[test]
fn a_recording_that_cannot_be_written_fails_the_run_and_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("prover-31.sock");
    common::serve_recording(sock.clone(), common::recording("h200-ghost-sync.psrec"));
    let rec = dir.path().join("rec.psrec");
    // 200 blocks of 512 bytes; SIGXFSZ ignored, so a write past it fails with EFBIG.
    let out = Command::new("sh")
        .args([
            "-c",
            "trap '' XFSZ; ulimit -f 200 && exec \"$0\" \"$@\"",
            BIN,
            "attach",
        ])
        .arg(&sock)
        .args(["--headless", "--duration", "3", "--record"])
        .arg(&rec)
        .output()
        .unwrap();
    let err = stderr(&out);
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("recording stopped:"), "{err}");
    assert!(report.contains("recording stopped:"), "{report}");
    let len = std::fs::metadata(&rec).unwrap().len();
    assert!(len > 12 && len <= 200 * 512, "{len} bytes");
    let r = probe_protocol::read_all(std::fs::File::open(&rec).unwrap()).unwrap();
    assert!(r.truncation.is_none(), "cut mid-frame: {:?}", r.truncation);
    assert!(r.errors.is_empty() && !r.frames.is_empty());
}

/// A replay needs a file: a FIFO or a pipe is refused at once, by what it is, with a way out —
/// never opened (`replay FIFO` drained it in its first pass and then blocked for ever on the
/// second open, SIGTERM ignored; `replay <(cat rec)` and a piped /dev/stdin lost their first
/// bytes and read "not a proofscope recording"). A file behind /dev/stdin replays.
#[test]
fn a_replay_of_a_pipe_is_refused_at_once_and_a_file_on_stdin_replays() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let t0 = std::time::Instant::now();
    let o = Command::new(common::BIN)
        .args(["replay", "--headless"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "never blocks"
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("is a pipe or FIFO: a replay reads its input more than once"),
        "{o:?}"
    );

    let rec = std::fs::read(common::recording("cpp-c2-sync.psrec")).unwrap();
    let mut piped = Command::new(common::BIN)
        .args(["replay", "--headless", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = piped.stdin.take().unwrap();
    let _ = stdin.write_all(&rec);
    drop(stdin);
    let o = piped.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is a pipe or FIFO"),
        "{o:?}"
    );

    let o = Command::new(common::BIN)
        .args(["replay", "--headless", "/dev/stdin"])
        .stdin(std::fs::File::open(common::recording("cpp-c2-sync.psrec")).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("== session 1 =="),
        "{o:?}"
    );
}

/// `attach` to a file that is not a socket says what to do with it (status 2); it read as
/// "the prover vanished".
#[test]
fn attach_to_a_recording_says_to_replay_it() {
    let rec = common::recording("cpp-c2-sync.psrec");
    let o = std::process::Command::new(common::BIN)
        .args(["attach", "--headless"])
        .arg(&rec)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "is not a prover's socket; a recording or a log is replayed: proofscope replay"
        ),
        "{err}"
    );
}
