//! Discovery as another user, or many provers, would break it. A socket directory squatted by
//! another user: uid 65534 makes the viewer's socket directory first (mode 777) and serves a
//! fake prover in it. `proofscope list` and `attach` refuse the
//! directory, with the reason, and never report the fake prover's proofs as the user's (they
//! did: "16 proofs from fake (pid 4242)", no warning), as the prover itself refuses it. Needs
//! root to give the directory to another uid (CI runs as root); says SKIPPED elsewhere.

mod common;

use common::{BIN, greet_viewer};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;

const NOBODY: u32 = 65534;

/// A fake prover at `sock` that greets every viewer as `fake`, for the test's lifetime.
fn fake_prover(sock: &Path) {
    let listener = UnixListener::bind(sock).unwrap();
    std::thread::Builder::new()
        .name("fake-prover".into())
        .spawn(move || {
            loop {
                let _s = greet_viewer(&listener, "fake");
            }
        })
        .unwrap();
}

#[test]
fn a_socket_directory_of_another_user_is_refused_with_the_reason() {
    let runtime = tempfile::tempdir().unwrap();
    let dir = runtime.path().join("proofscope");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let sock = dir.join("fake-4242.sock");
    fake_prover(&sock);
    let given = std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY))
        .and_then(|_| std::os::unix::fs::lchown(&sock, Some(NOBODY), Some(NOBODY)));
    if let Err(e) = given {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root: {e}");
        println!("SKIPPED: cannot give a directory to uid {NOBODY} here ({e})");
        return;
    }
    let viewer = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .output()
            .unwrap()
    };
    let list = viewer(&["list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{list:?}");
    assert!(
        text.contains(&format!(
            "refused         {}: owned by uid {NOBODY}",
            dir.display()
        )),
        "{text}"
    );
    assert!(
        !text.contains("fake-4242"),
        "the fake prover is not listed: {text}"
    );

    let attach = viewer(&["attach", "--headless", "--duration", "2"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&attach.stdout),
        String::from_utf8_lossy(&attach.stderr)
    );
    assert!(
        !all.contains("fake"),
        "never attached to the fake prover: {all}"
    );
    assert!(
        all.contains(&format!("refused {}: owned by uid {NOBODY}", dir.display())),
        "says why: {all}"
    );

    // The user's own directory, but writable by everyone: refused too.
    std::os::unix::fs::chown(&dir, Some(0), Some(0)).unwrap();
    std::fs::remove_file(&sock).unwrap();
    let text = String::from_utf8_lossy(&viewer(&["list"]).stdout).into_owned();
    assert!(
        text.contains("mode 777 lets other users write into it"),
        "{text}"
    );
}

/// `list` tells provers of one name apart: live ones by prover and pid as numbers (pid 9
/// before 10; as strings 10 came first), each with the command line it was started with.
#[test]
fn list_sorts_pids_as_numbers_and_shows_each_command_line() {
    let runtime = tempfile::tempdir().unwrap();
    let dir = runtime.path().join("proofscope");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut sleeps: Vec<std::process::Child> = ["31", "32"]
        .iter()
        .map(|s| Command::new("sleep").arg(s).spawn().unwrap())
        .collect();
    // Until each has exec'd `sleep`, its command line is the test's (or, mid-exec, empty).
    for c in &sleeps {
        let t0 = std::time::Instant::now();
        while !std::fs::read(format!("/proc/{}/cmdline", c.id()))
            .unwrap_or_default()
            .starts_with(b"sleep")
        {
            assert!(
                t0.elapsed().as_secs() < 10,
                "sleep {} never started",
                c.id()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let mut listeners = Vec::new();
    for pid in [10, 9].into_iter().chain(sleeps.iter().map(|c| c.id())) {
        listeners.push(UnixListener::bind(dir.join(format!("p-{pid}.sock"))).unwrap());
    }
    let out = Command::new(BIN)
        .arg("list")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    for c in &mut sleeps {
        let _ = c.kill();
        let _ = c.wait();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in {text}"));
    assert!(at("pid 9 ") < at("pid 10 "), "{text}");
    assert!(
        text.contains("sleep 31") && text.contains("sleep 32"),
        "{text}"
    );
    drop(listeners);
}
