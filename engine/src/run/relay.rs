//! The relay: a small process of its own (`proofscope __relay`) between `proofscope run` and
//! the prover it starts. It starts the prover with pipes for stdout and stderr, passes every
//! byte on unchanged to its own stdout and stderr (the user's, or the `--log` file) as soon as
//! it arrives, and sends the lines — each with its arrival time and its place in the stream,
//! by which the viewer finds the write that carried it (`stamps.rs`) — to the viewer without
//! ever waiting for it: a viewer that is slow, paused or stopped (SIGSTOP) costs dropped
//! lines, counted, never a stalled prover. Being a process apart is what makes that hold: a
//! stopped viewer's threads would stop reading the pipes, and the prover would block on a full
//! pipe.

use super::channel::{self, Batch, Msg};
use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How much one read of a pipe takes.
const READ_BYTES: usize = 256 << 10;
/// The prover's pipes are made this large (Linux's default is 64 KiB; an unprivileged process
/// may go up to `fs.pipe-max-size`, 1 MiB by default): a prover that prints in bursts writes
/// ahead while the relay passes the previous chunk on, instead of waiting for it.
const PIPE_BYTES: libc::c_int = 1 << 20;
/// Longest line sent to the viewer (its bytes still all pass through).
const MAX_LINE: usize = crate::import::MAX_LINE;

/// What the viewer asks of the relay.
#[derive(Debug, Default)]
pub struct RelayArgs {
    /// The datagram socket to the viewer, inherited.
    pub channel_fd: i32,
    /// Environment for the prover only (`LD_PRELOAD`, the probe's socket).
    pub env: Vec<(String, String)>,
    pub cmd: Vec<std::ffi::OsString>,
}

/// Reads the relay's arguments: `--channel-fd N [--env K=V]... -- CMD [ARGS]...`.
pub fn parse_args(args: &[std::ffi::OsString]) -> Result<RelayArgs, String> {
    let mut out = RelayArgs::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--channel-fd") => {
                let v = it.next().and_then(|v| v.to_str()?.parse().ok());
                out.channel_fd = v.ok_or("--channel-fd needs a descriptor number")?;
            }
            Some("--env") => {
                let v = it
                    .next()
                    .and_then(|v| v.to_str())
                    .ok_or("--env needs K=V")?;
                let (k, v) = v.split_once('=').ok_or("--env needs K=V")?;
                out.env.push((k.into(), v.into()));
            }
            Some("--") => {
                out.cmd = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unexpected relay argument {a:?}")),
        }
    }
    if out.cmd.is_empty() {
        return Err("no command to run".into());
    }
    Ok(out)
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Sends without waiting; a batch the viewer's socket cannot take now waits in a bounded
/// backlog (the relay's memory, not the prover's time), and only a batch the backlog cannot
/// hold is dropped and counted. Dropped at once, a viewer stopped 250 ms of every 300 ms lost
/// two calls in twenty (the kernel queues 10 datagrams on a Unix socket by default).
#[derive(Debug)]
struct Channel {
    sock: UnixDatagram,
    dropped: AtomicU64,
    reported: AtomicU64,
    backlog: std::sync::Mutex<Backlog>,
}

/// Batches waiting for room on the viewer's socket, oldest first.
#[derive(Debug, Default)]
struct Backlog {
    batches: std::collections::VecDeque<(Vec<u8>, u64)>,
    bytes: usize,
}

/// The most the backlog holds: a viewer stopped for seconds while the prover floods.
const BACKLOG_BYTES: usize = 16 << 20;
/// How often the backlog is offered to the viewer again while the prover is quiet.
const BACKLOG_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// How long the relay keeps trying to tell the viewer that the prover started, failed or
/// exited (a full channel: the viewer is behind on lines). Only these wait, and never while
/// the prover's output is being passed on: the prover has not started reading yet, or has
/// exited.
const CONTROL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Channel {
    fn send(&self, m: &Msg) -> bool {
        self.sock.send(&channel::encode(m)).is_ok()
    }

    /// Sends a message the viewer must not miss, retrying while the channel is full for up
    /// to [`CONTROL_PATIENCE`] (a viewer gone or stopped longer learns of the exit from the
    /// relay's own exit status).
    fn send_control(&self, m: &Msg) {
        let bytes = channel::encode(m);
        let deadline = std::time::Instant::now() + CONTROL_PATIENCE;
        while self.sock.send(&bytes).is_err() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn send_batch(&self, b: &mut Batch) {
        if b.is_empty() {
            return;
        }
        {
            let mut bl = self.backlog.lock().unwrap_or_else(|e| e.into_inner());
            self.offer(&mut bl);
            let sent = bl.batches.is_empty() && self.sock.send(b.bytes()).is_ok();
            if !sent {
                if bl.bytes + b.bytes().len() <= BACKLOG_BYTES {
                    bl.bytes += b.bytes().len();
                    bl.batches.push_back((b.bytes().to_vec(), b.lines));
                } else {
                    self.dropped.fetch_add(b.lines, Ordering::Relaxed);
                }
            }
        }
        b.clear();
        self.report_drops();
    }

    /// Sends what the backlog holds, oldest first, while the socket takes it.
    fn offer(&self, bl: &mut Backlog) {
        while let Some((bytes, _)) = bl.batches.front() {
            if self.sock.send(bytes).is_err() {
                return;
            }
            bl.bytes -= bytes.len();
            bl.batches.pop_front();
        }
    }

    /// Offers the backlog again; whether it is empty now.
    fn flush_backlog(&self) -> bool {
        let mut bl = self.backlog.lock().unwrap_or_else(|e| e.into_inner());
        self.offer(&mut bl);
        bl.batches.is_empty()
    }

    /// Sends the backlog before the exit, waiting for the viewer up to [`CONTROL_PATIENCE`];
    /// what is left then is counted dropped.
    fn drain_backlog(&self) {
        let deadline = std::time::Instant::now() + CONTROL_PATIENCE;
        while !self.flush_backlog() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut bl = self.backlog.lock().unwrap_or_else(|e| e.into_inner());
        let lost: u64 = bl.batches.drain(..).map(|(_, lines)| lines).sum();
        bl.bytes = 0;
        drop(bl);
        if lost > 0 {
            self.dropped.fetch_add(lost, Ordering::Relaxed);
        }
        self.report_drops();
    }

    fn report_drops(&self) {
        let d = self.dropped.load(Ordering::Relaxed);
        if d != self.reported.load(Ordering::Relaxed) && self.send(&Msg::Dropped { lines: d }) {
            self.reported.store(d, Ordering::Relaxed);
        }
    }
}

/// Offers the backlog to the viewer every [`BACKLOG_EVERY`] until `done`: a prover that
/// stops printing must not leave its last lines waiting for its next.
fn start_backlog_ticker(
    chan: &Arc<Channel>,
    done: &Arc<std::sync::atomic::AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let (c, d) = (chan.clone(), done.clone());
    std::thread::Builder::new()
        .name("relay-backlog".into())
        .spawn(move || {
            while !d.load(Ordering::Relaxed) {
                std::thread::sleep(BACKLOG_EVERY);
                c.flush_backlog();
            }
        })
        .ok()
}

/// The exit status a shell would give for a command that could not start.
fn spawn_status(e: &std::io::Error) -> u8 {
    match e.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    }
}

/// Where forwarded signals go: the prover's pid, then — once it has exited — its process group
/// (negative), where what it left running (a daemonised prover) still is (0: not started).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; the pid is our own child's.
        unsafe { libc::kill(pid, sig) };
    }
}

fn forward_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only reads an atomic and calls kill, both async-signal-safe.
        unsafe { libc::signal(sig, forward as *const () as libc::sighandler_t) };
    }
}

/// Passes one pipe's bytes on to `out` as they come, and its lines to the viewer.
fn pump(mut pipe: impl Read, mut out: impl Write, stderr: bool, chan: &Channel) {
    let mut buf = vec![0u8; READ_BYTES];
    let mut line: Vec<u8> = Vec::new();
    let mut batch = Batch::new(stderr);
    // Bytes of the stream before the current line: where the probe's write stamps say the
    // line's first byte was written.
    let mut read: u64 = 0;
    let mut line_at: u64 = 0;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // The bytes first, whole and unchanged: the user sees them at once.
        let _ = out.write_all(&buf[..n]);
        let _ = out.flush();
        let arrival = now_ns();
        for chunk in buf[..n].split_inclusive(|&b| b == b'\n') {
            read += chunk.len() as u64;
            if line.len() < MAX_LINE {
                let room = MAX_LINE - line.len();
                line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            if chunk.last() == Some(&b'\n') {
                line.pop();
                if !batch.push(arrival, line_at, &line, MAX_LINE) {
                    chan.send_batch(&mut batch);
                    batch.push(arrival, line_at, &line, MAX_LINE);
                }
                line.clear();
                line_at = read;
            }
        }
        // The pipe is drained for now: what it said goes to the viewer now.
        if n < buf.len() {
            chan.send_batch(&mut batch);
        }
    }
    if !line.is_empty() {
        batch.push(now_ns(), line_at, &line, MAX_LINE);
    }
    chan.send_batch(&mut batch);
}

/// Runs the relay: starts the prover, relays it until it has exited and its pipes closed,
/// and exits as it did (128 + the signal when killed).
pub fn main(args: &[std::ffi::OsString]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("proofscope relay: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: the viewer passed this descriptor, inherited and unused otherwise; the relay
    // owns it from here.
    let sock = unsafe { <UnixDatagram as std::os::fd::FromRawFd>::from_raw_fd(args.channel_fd) };
    let _ = sock.set_nonblocking(true);
    let chan = Arc::new(Channel {
        sock,
        dropped: AtomicU64::new(0),
        reported: AtomicU64::new(0),
        backlog: std::sync::Mutex::new(Backlog::default()),
    });
    // What the prover leaves running when it exits (a wrapper that starts the real prover in
    // the background and exits at once) becomes the relay's child, and the relay waits for it:
    // `run` follows that prover to its end, not the wrapper's (it ended after 1.1 s while the
    // prover went on, none of its proofs reported).
    // SAFETY: prctl with an integer option; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let mut cmd = Command::new(&args.cmd[0]);
    cmd.args(&args.cmd[1..])
        .envs(args.env.iter().map(|(k, v)| (k, v)))
        // The prover (the relay's child) starts its preloaded session at once; processes it
        // starts in turn wait as usual.
        .env("PROOFSCOPE_RUN_PARENT", std::process::id().to_string())
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group: a terminal's Ctrl-C reaches the viewer and the relay, and the
    // prover gets it once, forwarded, not twice.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let status = spawn_status(&e);
            let why = format!("{}: {e}", args.cmd[0].to_string_lossy());
            chan.send_control(&Msg::Failed {
                status,
                why: why.clone(),
            });
            eprintln!("proofscope run: {why}");
            return ExitCode::from(status);
        }
    };
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    forward_signals();
    chan.send_control(&Msg::Started { pid: child.id() });
    // Where the bytes go on may be a pipe too (a `| tee`, a service manager's journal).
    widen(&std::io::stdout());
    widen(&std::io::stderr());
    let readers = start_readers(&mut child, &chan);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = start_backlog_ticker(&chan, &done);
    let status = child.wait();
    CHILD.store(-(child.id() as i32), Ordering::Relaxed);
    wait_for_orphans();
    for r in readers.into_iter().flatten() {
        let _ = r.join();
    }
    done.store(true, Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.join();
    }
    // Every line before the exit: the viewer counts the prover done once it has that.
    chan.drain_backlog();
    let (code, signal) = match &status {
        Ok(s) => (
            s.code().unwrap_or(-1),
            std::os::unix::process::ExitStatusExt::signal(s).unwrap_or(0),
        ),
        Err(_) => (-1, 0),
    };
    chan.send_control(&Msg::Exited { code, signal });
    ExitCode::from(exit_byte(code, signal))
}

/// Waits for every process the prover left behind (the relay is their subreaper); their
/// statuses say nothing of the prover's, which is its own child's.
fn wait_for_orphans() {
    loop {
        let mut status = 0;
        // SAFETY: waits for any child of this process; `status` is ours to write.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r == -1 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return; // ECHILD: none left
        }
    }
}

/// What the relay exits with: the prover's code, or 128 + the signal that killed it.
pub fn exit_byte(code: i32, signal: i32) -> u8 {
    if signal > 0 {
        (128 + signal).min(255) as u8
    } else {
        code.clamp(0, 255) as u8
    }
}

/// Grows a pipe to [`PIPE_BYTES`] where the system allows (else, or when it is no pipe, it
/// stays as it is).
fn widen(pipe: &impl std::os::fd::AsRawFd) {
    // SAFETY: fcntl on a pipe descriptor this process owns; a refusal changes nothing.
    unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
}

fn start_readers(
    child: &mut std::process::Child,
    chan: &Arc<Channel>,
) -> [Option<std::thread::JoinHandle<()>>; 2] {
    let out = child.stdout.take().map(|p| {
        widen(&p);
        let c = chan.clone();
        std::thread::Builder::new()
            .name("relay-stdout".into())
            .spawn(move || pump(p, std::io::stdout(), false, &c))
            .ok()
    });
    let err = child.stderr.take().map(|p| {
        widen(&p);
        let c = chan.clone();
        std::thread::Builder::new()
            .name("relay-stderr".into())
            .spawn(move || pump(p, std::io::stderr(), true, &c))
            .ok()
    });
    [out.flatten(), err.flatten()]
}
