//! `proofscope run` as a [`Source`]: the prover started by the relay with the allocator probe
//! preloaded and a socket of its own (so nothing races its start), its socket's stream as a
//! live source, and its log lines — read by the relay, placed by the prover's own writes
//! (`stamps.rs`) — turned into
//! proofs and phases joined to the same session: one dashboard, one recording, one report.

use super::channel::{self, Msg};
use super::descendants::Descendants;
use super::stamps::{Joined, Stamper};
use crate::import::feed::LogFeed;
use crate::model::Model;
use crate::source::live::LiveSource;
use crate::source::{ChildStatus, Control, LinkState, LinkStatus, Said, Source, Target, Transport};
use anyhow::{Context, Result};
use probe_protocol::{Event, Hello};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a settled call waits for the probe to define the main thread (the callers'
/// thread) before the log's calls go on a thread of their own.
const MAIN_THREAD_WAIT: Duration = Duration::from_secs(10);
/// How long a child may run without a probe's `Hello` before the run looks into why: a
/// preload that is not in the process (and never will be) makes the session its log alone at
/// once, with the reason; a loaded one is waited for as long as the prover lives.
const HELLO_WAIT: Duration = Duration::from_secs(3);
/// How long a stopped child has to exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// How often the run's directory is looked at for a process the prover started.
const SCAN_EVERY: Duration = Duration::from_millis(250);
/// How long a started process's socket must have been there before the run follows it: the
/// short-lived processes of a script (`date`, `sed`) are gone by then.
const DESCENDANT_SETTLE: Duration = Duration::from_millis(500);
/// Messages from the relay taken per pump at most (the rest next time).
const MSGS_PER_PUMP: usize = 4096;

/// What starting the prover needs.
#[derive(Debug)]
pub struct Launch {
    /// The relay process (`proofscope __relay`), already started.
    pub relay: Child,
    /// The viewer's end of the relay's channel.
    pub channel: UnixDatagram,
    /// The socket the prover's probe serves on, `{pid}` standing for its process id.
    pub socket: PathBuf,
    /// The command, for the session's name when the prover carries no probe.
    pub cmd: Vec<String>,
    /// Where the prover's output goes, when not to the viewer's own stdout/stderr.
    pub log: Option<PathBuf>,
    pub record: Option<PathBuf>,
    pub record_dir: PathBuf,
    pub blackbox: Option<crate::capture::BlackBox>,
}

#[derive(Debug)]
pub struct RunSource {
    /// The prover's probe, once its pid (and so its socket) is known.
    live: Option<LiveSource>,
    socket: PathBuf,
    record: Option<PathBuf>,
    record_dir: PathBuf,
    /// Handed to the probe's source once it exists.
    blackbox: Option<crate::capture::BlackBox>,
    /// Said before the probe's source exists (the prover could not start).
    pending_said: Said,
    relay: Option<Child>,
    channel: super::reader::Reader,
    feed: LogFeed,
    cmd: Vec<String>,
    log: Option<PathBuf>,
    pid: Option<u32>,
    /// The process whose probe is followed (the prover, or the latest process it started).
    followed: Option<u32>,
    /// The run's processes' sockets, for the next one to follow.
    descendants: Option<Descendants>,
    last_scan: Instant,
    started: Instant,
    spawned_wall_ns: u64,
    /// The prover's exit (code, signal), once the relay says.
    exited: Option<(i32, i32)>,
    failed: Option<(u8, String)>,
    relay_done: bool,
    /// The relay's exit status, once reaped.
    relay_exit: Option<std::process::ExitStatus>,
    lines_dropped: u64,
    /// The dropped lines were said.
    drops_said: bool,
    /// The probe defined the prover's main thread (the callers' thread).
    caller_known: bool,
    /// The log's clock is the followed process's session's.
    feed_rebased: bool,
    /// When the first call settled while the callers' thread was unknown.
    first_settled: Option<Instant>,
    /// Proofs of the log ingested, to tell them from the probe's own.
    log_proofs: usize,
    /// The probe reports proofs itself: the log's are not added again.
    probe_proofs: bool,
    /// The relay's lines, until each is placed by the write that carried it.
    stamps: Stamper,
    /// No probe answered: lines are placed by their arrival.
    no_probe: bool,
    /// When the prover was seen to have exited.
    exited_at: Option<Instant>,
    /// How the lines were placed was said.
    stamps_said: bool,
    /// The process whose preload was seen loaded while its probe had not answered (said once).
    preload_seen: Option<u32>,
    /// Every line has been placed and the log's last calls taken.
    log_done: bool,
    /// How the prover stood after the last round.
    child: ChildStatus,
}

impl RunSource {
    pub fn start(l: Launch) -> Result<RunSource> {
        let channel = super::reader::Reader::start(l.channel).context("the relay's channel")?;
        Ok(RunSource {
            live: None,
            socket: l.socket.clone(),
            record: l.record,
            record_dir: l.record_dir,
            blackbox: l.blackbox,
            pending_said: Said::default(),
            relay: Some(l.relay),
            channel,
            feed: LogFeed::new(),
            cmd: l.cmd,
            log: l.log,
            pid: None,
            followed: None,
            descendants: Descendants::new(&l.socket, DESCENDANT_SETTLE),
            last_scan: Instant::now(),
            started: Instant::now(),
            spawned_wall_ns: wall_ns(),
            exited: None,
            failed: None,
            relay_done: false,
            relay_exit: None,
            lines_dropped: 0,
            drops_said: false,
            caller_known: false,
            feed_rebased: false,
            first_settled: None,
            log_proofs: 0,
            probe_proofs: false,
            stamps: Stamper::default(),
            no_probe: false,
            exited_at: None,
            stamps_said: false,
            preload_seen: None,
            log_done: false,
            child: ChildStatus::default(),
        })
    }

    /// The relay's messages waiting now.
    fn drain_channel(&mut self) -> usize {
        let mut n = 0;
        while n < MSGS_PER_PUMP {
            let Some(msg) = self.channel.next() else {
                break;
            };
            n += 1;
            match channel::decode(&msg) {
                Some(Msg::Started { pid }) => self.pid = Some(pid),
                Some(Msg::Lines(lines)) => lines.into_iter().for_each(|l| self.stamps.push(l)),
                Some(Msg::Dropped { lines }) => self.lines_dropped = lines,
                Some(Msg::Exited { code, signal }) => self.exited = Some((code, signal)),
                Some(Msg::Failed { status, why }) => self.failed = Some((status, why)),
                None => {}
            }
        }
        n
    }

    /// Follows the prover's probe once the relay said its pid: its socket is known then.
    fn connect(&mut self, model: &Model) -> Result<()> {
        if self.live.is_some() {
            return Ok(());
        }
        let Some(pid) = self.pid else { return Ok(()) };
        let live = LiveSource::start(
            Target::Socket(self.socket_of(pid)),
            self.record.take(),
            self.record_dir.clone(),
            model,
            self.blackbox.take(),
        )?;
        self.live = Some(live);
        self.followed = Some(pid);
        if let Some(d) = self.descendants.as_mut() {
            d.follow(pid);
        }
        Ok(())
    }

    fn socket_of(&self, pid: u32) -> PathBuf {
        self.socket
            .to_string_lossy()
            .replace("{pid}", &pid.to_string())
            .into()
    }

    /// A process the prover started (a wrapper script's prover, a daemon's worker) carries
    /// the preload too and serves on a socket of its own in the run's directory: the run
    /// follows the latest one to appear ([`Descendants`]), a session of its own after the one
    /// before (the earlier processes' sessions stay, as far as they were seen).
    fn follow_descendants(&mut self, model: &mut Model, said: &mut Said) {
        let Some(pid) = self.followed else {
            return;
        };
        if self.last_scan.elapsed() < SCAN_EVERY {
            return;
        }
        self.last_scan = Instant::now();
        let Some(next) = self
            .descendants
            .as_mut()
            .and_then(|d| d.scan(Instant::now()))
        else {
            return;
        };
        let target = Target::Socket(self.socket_of(next));
        let Some(live) = self.live.as_mut() else {
            return;
        };
        // Its real parent: a wrapper's shell starts the prover beside a `sleep` it was
        // following (the message named `sleep` as the prover's parent).
        let mut why = match super::descendants::parent(next) {
            Some(p) if p == pid => format!("started by the prover (pid {pid})"),
            Some(p) => format!("started by pid {p}, after pid {pid}"),
            None => format!("after pid {pid}"),
        };
        if let Some(d) = self.descendants.as_mut() {
            if d.followed_before(next) {
                why = "again: it exec'd another program".into();
            }
            d.follow(next);
        }
        match live.retarget(target, model, said) {
            Ok(()) => {
                said.warnings
                    .push(format!("following pid {next}, {why}: a session of its own"));
                self.followed = Some(next);
                self.caller_known = false;
                self.feed_rebased = false;
                self.log_proofs = 0;
            }
            Err(e) => said
                .warnings
                .push(format!("cannot follow pid {next}: {e:#}")),
        }
    }

    /// Whether the relay has exited (the prover with it, and every line sent).
    fn relay_exited(&mut self) -> bool {
        if !self.relay_done {
            match self.relay.as_mut().map(|r| r.try_wait()) {
                None | Some(Err(_)) => self.relay_done = true,
                Some(Ok(Some(status))) => {
                    self.relay_done = true;
                    self.relay_exit = Some(status);
                }
                Some(Ok(None)) => {}
            }
        }
        self.relay_done
    }

    /// The prover's exit as the relay's own status gives it: its code, or 128 + a signal.
    fn relay_status(&self) -> (i32, i32) {
        use std::os::unix::process::ExitStatusExt;
        match self.relay_exit {
            Some(s) if s.signal().is_some() => (-1, s.signal().unwrap_or(0)),
            Some(s) => match s.code().unwrap_or(1) {
                c if c > 128 => (-1, c - 128),
                c => (c, 0),
            },
            // Not known: a failure, never a success.
            None => (1, 0),
        }
    }

    /// Ties the log to the session: its time 0 from the probe's `Hello` — or, for a prover
    /// with no probe, from a `Hello` made here after [`HELLO_WAIT`] — and the callers' thread:
    /// the main thread, once the probe defines it (it does when the thread first allocates or
    /// frees a large block).
    fn tie_log(&mut self, model: &mut Model, said: &mut Said) {
        let hello = model.current().and_then(|s| s.hello());
        // Until the process followed now says hello, the current session is the one before.
        if let (Some(h), Some(pid)) = (hello, self.followed)
            && h.pid != pid
            && self.feed.has_origin()
        {
            return;
        }
        if let Some(h) = hello {
            if !self.feed.has_origin() {
                self.feed.set_origin(h.session_start_unix_ns, None);
                self.feed_rebased = true;
            } else if !self.feed_rebased && self.followed == Some(h.pid) {
                // The process followed now said hello: the log's next calls are its own.
                self.feed.rebase(h.session_start_unix_ns);
                self.feed_rebased = true;
            }
            if !self.caller_known {
                let main = model
                    .current()
                    .and_then(|s| s.thread_by_os_tid(u64::from(h.pid)));
                if let Some(t) = main {
                    self.feed.set_caller(t.get());
                    self.caller_known = true;
                }
            }
            return;
        }
        if self.feed.has_origin() || self.started.elapsed() < HELLO_WAIT && self.exited.is_none() {
            return;
        }
        let pid = self.followed.or(self.pid);
        let why = if self.exited.is_some() {
            Some("it exited before its probe said hello".to_owned())
        } else if pid.is_some() && pid == self.preload_seen {
            // Loaded once, loaded for good: its memory map is not read again every pump.
            None
        } else {
            pid.and_then(super::absence::why_no_probe)
        };
        let Some(why) = why else {
            if pid.is_some() && self.preload_seen != pid {
                self.preload_seen = pid;
                said.warnings.push(format!(
                    "the prover's probe (pid {}) has not answered after {} s: its preload is loaded, so the run waits for it as long as the prover runs (a loaded machine?)",
                    pid.map_or("?".into(), |p| p.to_string()),
                    HELLO_WAIT.as_secs()
                ));
            }
            return;
        };
        let hello = self.own_hello();
        let origin = hello.session_start_unix_ns;
        self.apply_local(vec![Event::Hello(Box::new(hello))], model, said);
        said.warnings.push(format!(
            "no probe answered in the prover: {why}; this session is its log alone, on the viewer's clock"
        ));
        self.feed.set_origin(origin, None);
        self.caller_known = true;
        self.no_probe = true;
    }

    /// Hands the log feed every line whose place is known: by the followed process's write
    /// stamps ([`Stamper`]), else by arrival. Once the prover has exited, its output is all
    /// read and its probe said goodbye (or three seconds passed), every line goes.
    fn place_lines(&mut self, model: &Model) {
        let session = model.current().filter(|s| {
            s.hello()
                .is_some_and(|h| self.followed.is_none_or(|pid| h.pid == pid))
        });
        let joined = match session {
            _ if self.no_probe => Joined::NoProbe,
            Some(s) => Joined::Probe(s),
            None => Joined::Waiting,
        };
        if self.exited.is_some() && self.exited_at.is_none() {
            self.exited_at = Some(Instant::now());
        }
        let drained = self.exited.is_some() && self.relay_exited();
        let flush = drained
            && (session.is_none_or(|s| s.goodbye().is_some())
                || self.exited_at.is_some_and(|t| t.elapsed() >= STOP_GRACE));
        self.stamps.release(joined, flush, &mut self.feed);
    }

    /// Whether the log's settled calls may be placed now: once the callers' thread is known,
    /// or [`MAIN_THREAD_WAIT`] after the first call settled without it, or once the prover
    /// exited.
    fn may_place(&mut self) -> bool {
        if self.caller_known || self.exited.is_some() {
            return true;
        }
        if self.feed.settled() == 0 {
            return false;
        }
        self.first_settled
            .get_or_insert_with(Instant::now)
            .elapsed()
            >= MAIN_THREAD_WAIT
    }

    /// The session of a prover that carries no probe: what its command line says.
    fn own_hello(&self) -> Hello {
        let name = self
            .cmd
            .first()
            .map(|c| c.rsplit('/').next().unwrap_or(c).to_owned())
            .unwrap_or_default();
        Hello {
            protocol_major: probe_protocol::PROTOCOL_MAJOR,
            protocol_minor: probe_protocol::PROTOCOL_MINOR,
            prover_name: name,
            pid: self.pid.unwrap_or(0),
            session_start_unix_ns: self.spawned_wall_ns,
            clock: "the viewer's wall clock (no probe in the prover)".into(),
            backend_reason: "its log only: the allocator probe did not start in it".into(),
            gpu_unavailable_reason: Some("no probe in the prover: no GPU telemetry".into()),
            command_line: self.cmd.clone(),
            // The child inherits our environment.
            instance: std::env::var("PROOFSCOPE_INSTANCE").unwrap_or_default(),
            ..Hello::default()
        }
    }

    /// Applies the log's settled calls (none while the probe reports proofs of its own).
    fn apply_log(&mut self, model: &mut Model, said: &mut Said) {
        if !self.may_place() {
            return;
        }
        let finished = self.exited.is_some() && self.relay_exited() && self.stamps.is_empty();
        let events = self.feed.take(finished);
        self.log_done |= finished;
        if events.is_empty() {
            return;
        }
        let own = model.current().map_or(0, |s| s.proof_count());
        if !self.probe_proofs && own > self.log_proofs {
            self.probe_proofs = true;
            said.warnings.push(
                "the prover reports its proofs through its own probe: the log's calls are not added again"
                    .into(),
            );
        }
        if self.probe_proofs {
            return;
        }
        let proofs = events
            .iter()
            .filter(|e| matches!(e, Event::ProofBegin(_)))
            .count();
        self.log_proofs += proofs;
        self.apply_local(events, model, said);
    }

    /// Events made here, through the probe's source (recorded, held while paused), or
    /// straight into the model while there is none.
    fn apply_local(&mut self, events: Vec<Event>, model: &mut Model, said: &mut Said) {
        match self.live.as_mut() {
            Some(l) => l.apply_local(events, model, said),
            None => model.ingest_all(events),
        }
    }

    fn step(&mut self, model: &mut Model, said: &mut Said) {
        said.applied += self.drain_channel();
        if let Err(e) = self.connect(model) {
            said.warnings
                .push(format!("cannot follow the prover's probe: {e:#}"));
        }
        let early = std::mem::take(&mut self.pending_said);
        said.warnings.extend(early.warnings);
        self.follow_descendants(model, said);
        self.tie_log(model, said);
        self.place_lines(model);
        self.apply_log(model, said);
        if self.log_done && !self.stamps_said {
            self.stamps_said = true;
            // With the probe's own proofs, the log's calls are not used: nothing was placed.
            if !self.probe_proofs {
                said.warnings.extend(self.stamps.summary());
            }
        }
        // The relay's last count comes before its exit message: said once, in the report.
        if self.exited.is_some() && self.lines_dropped > 0 && !self.drops_said {
            self.drops_said = true;
            said.warnings.push(format!(
                "{} of the prover's lines were not read by the viewer (it was too slow or stopped): calls in them are missing; the prover's output itself is whole",
                self.lines_dropped
            ));
        }
        if let (Some((status, why)), None) = (&self.failed, &said.message) {
            said.message = Some(format!("the prover did not start ({status}): {why}"));
        }
        self.child = self.child_status();
    }

    /// Signals the prover (through the relay, which forwards it).
    fn signal(&self, sig: i32) {
        if let Some(r) = &self.relay {
            // SAFETY: signalling our own child process; failure (already gone) is harmless.
            unsafe { libc::kill(r.id() as i32, sig) };
        }
    }

    /// The prover, as it stands.
    fn child_status(&mut self) -> ChildStatus {
        // Its exit may be waiting in the channel.
        if self.exited.is_none() && self.failed.is_none() {
            self.drain_channel();
        }
        // The relay exits as the prover did: its status says so even when its last message
        // never reached the channel.
        if self.exited.is_none() && self.failed.is_none() && self.relay_exited() {
            self.drain_channel();
            if self.exited.is_none() && self.failed.is_none() {
                self.exited = Some(self.relay_status());
            }
        }
        let exit = self
            .failed
            .as_ref()
            .map(|f| f.0)
            .or_else(|| self.exited.map(|(c, s)| super::relay::exit_byte(c, s)));
        // Drained once every line is placed too: lines wait for the probe's last write stamps,
        // which come with its last frames; a headless run that stopped before lost the last
        // calls (18 proofs of 20 with the viewer starved).
        let drained = (self.exited.is_some() && self.log_done || self.failed.is_some())
            && self.relay_exited();
        ChildStatus { exit, drained }
    }
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Source for RunSource {
    fn pump(&mut self, model: &mut Model, budget: Duration) -> Said {
        let mut said = match self.live.as_mut() {
            Some(l) => l.pump(model, budget),
            None => Said::default(),
        };
        self.step(model, &mut said);
        said
    }

    fn wait(&mut self, model: &mut Model, wait: Duration) -> Said {
        let wait = wait.min(Duration::from_millis(20));
        let mut said = match self.live.as_mut() {
            Some(l) => l.wait(model, wait),
            None => {
                std::thread::sleep(wait);
                Said::default()
            }
        };
        self.step(model, &mut said);
        said
    }

    fn control(&mut self, control: Control, model: &mut Model) -> Said {
        if let Control::Signal(sig) = control {
            self.signal(sig);
            return Said::default();
        }
        match self.live.as_mut() {
            Some(l) => l.control(control, model),
            None => Said::default(),
        }
    }

    fn status(&self, model: &Model) -> LinkStatus {
        let mut s = self
            .live
            .as_ref()
            .map_or_else(LinkStatus::default, |l| l.status(model));
        s.child = Some(self.child);
        // `run` knows how its prover ended (its exit), not by a link lost for a while.
        s.lost_since = None;
        let who = self.cmd.first().cloned().unwrap_or_default();
        if let Some((status, why)) = &self.failed {
            s.link = LinkState::Failed(format!("{who} did not start ({status}): {why}"));
        } else if let Some((code, signal)) = self.exited {
            s.link = LinkState::Ended(match signal {
                0 => format!("{who} exited with status {code}"),
                sig => format!("{who} was killed by signal {sig}"),
            });
        } else if matches!(s.link, LinkState::Connecting(_) | LinkState::Idle) {
            s.link = LinkState::Connecting(format!(
                "{who} (pid {}), waiting for its probe",
                self.pid.map_or("?".into(), |p| p.to_string())
            ));
        }
        if let Some(l) = &self.log {
            s.transport = Some(Transport::ProverOutput(l.display().to_string()));
        }
        s
    }

    fn is_finite(&self) -> bool {
        false
    }

    fn finish(&mut self, model: &mut Model) -> Said {
        if let Some(mut relay) = self.relay.take() {
            if relay.try_wait().ok().flatten().is_none() {
                // The viewer is leaving first: the prover is stopped as the demo's is.
                // SAFETY: signalling our own child process.
                unsafe { libc::kill(relay.id() as i32, libc::SIGTERM) };
                let deadline = Instant::now() + STOP_GRACE;
                while Instant::now() < deadline && relay.try_wait().ok().flatten().is_none() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if relay.try_wait().ok().flatten().is_none() {
                    if let Some(pid) = self.pid {
                        // SAFETY: the prover is the relay's child, ours to stop.
                        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    }
                    let _ = relay.kill();
                    // The relay goes with it, before it could say how the prover ended.
                    if self.exited.is_none() {
                        self.exited = Some((-1, libc::SIGKILL));
                    }
                }
            }
            if let Ok(status) = relay.wait() {
                self.relay_exit.get_or_insert(status);
            }
            self.relay_done = true;
        }
        let mut said = self
            .live
            .as_mut()
            .map(|l| l.finish(model))
            .unwrap_or_default();
        if let Some(d) = &self.descendants {
            d.clean_up();
        }
        if self.lines_dropped > 0 {
            said.message.get_or_insert_with(|| {
                format!(
                    "{} of the prover's lines were not read by the viewer (it was too slow or stopped); its output is whole",
                    self.lines_dropped
                )
            });
        }
        self.child = self.child_status();
        said
    }
}
