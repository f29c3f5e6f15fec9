//! A recording as a [`Source`], with its transport (speed, pause, proof jumps); a log imported
//! on the fly is the same replay over its frames held in memory ([`ReplaySource::open_log`]).

use super::tape::{FileTape, JoinedTape, MemoryTape, Replay, Speed, Tape};
use super::{Control, Held, LinkState, LinkStatus, Play, Said, Source, Transport};
use crate::model::Model;
use anyhow::Result;
use std::path::Path;
use std::time::Duration;

#[derive(Debug)]
pub struct ReplaySource {
    replay: Replay,
    /// Made from a log: there is nothing to play, the log is drawn whole.
    from_log: bool,
}

impl ReplaySource {
    /// Opens a recording; `index_budget` bytes bound its proof index. The file's problems
    /// (bad frames, truncation) are counted in `model` and returned as warnings.
    pub fn open(
        path: &Path,
        index_budget: usize,
        model: &mut Model,
    ) -> Result<(ReplaySource, Vec<String>)> {
        let r = Replay::open(path, index_budget)?;
        model.count_bad_frames(r.bad_frames());
        let warnings = r.warnings.clone();
        Ok((
            ReplaySource {
                replay: r,
                from_log: false,
            },
            warnings,
        ))
    }

    /// Imports a log (`import`'s formats) and replays what it made, from memory: its latest
    /// calls, within `budget` (the replay's `--max-mib`).
    pub fn open_log(log: &Path, budget: usize) -> Result<(ReplaySource, Vec<String>)> {
        let imp = crate::import::import_within(&[log.to_owned()], budget)?;
        let tape = MemoryTape::new(imp.events, crate::import::EVENTS_PER_FRAME);
        let label = format!("{} (imported log)", log.display());
        let mut r = Replay::of(label, Box::new(tape), budget)?;
        r.set_speed(Speed::Max);
        // The import's warnings are stated in the session (the header shows them).
        let warnings = r.warnings.clone();
        Ok((
            ReplaySource {
                replay: r,
                from_log: true,
            },
            warnings,
        ))
    }

    /// A recording with logs captured beside it joined in (`replay REC --log LOG`): the logs'
    /// calls are placed by their wall clock against the recording's, their caller on the
    /// process's main thread as the probe defined it, so a preloaded prover's releases fall
    /// inside the calls they belong to.
    pub fn open_joined(
        path: &Path,
        logs: &[std::path::PathBuf],
        index_budget: usize,
        model: &mut Model,
    ) -> Result<(ReplaySource, Vec<String>)> {
        let to = first_session(path)?;
        let joined = crate::import::join(logs, &to)?;
        let tape = JoinedTape::new(FileTape::open(path)?, joined.events);
        let label = format!(
            "{} + {}",
            path.display(),
            logs.iter()
                .map(|l| l.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let r = Replay::of(label, Box::new(tape), index_budget)?;
        model.count_bad_frames(r.bad_frames());
        let warnings = r.warnings.clone();
        Ok((
            ReplaySource {
                replay: r,
                from_log: false,
            },
            warnings,
        ))
    }

    /// Ingests up to frame `idx` (into a fresh model when going back).
    fn seek(&mut self, idx: usize, model: &mut Model) -> Said {
        let mut said = Said::default();
        let sought = self.replay.seek(idx, |frame| match frame {
            Some(events) => model.ingest_all(events),
            None => model.restart(),
        });
        if let Err(e) = sought {
            said.message = Some(format!("replay: {e:#}"));
        }
        said.applied = 1;
        said
    }
}

impl ReplaySource {
    /// Where the transport stands (the proofs are counted once, in the header).
    fn transport(&self) -> Transport {
        let r = &self.replay;
        if self.from_log {
            return Transport::Log { end_ns: r.end() };
        }
        Transport::Replay {
            play: if r.paused {
                Play::Paused
            } else if r.done() {
                Play::Ended
            } else {
                Play::Playing
            },
            speed: r.speed,
            position_ns: r.position(),
            end_ns: r.end(),
            frame: r.next,
            frames: r.frame_count(),
        }
    }
}

/// A headless replay reads the file in slices of this long, checking for a signal between.
const SLICE: Duration = Duration::from_millis(50);

impl Source for ReplaySource {
    fn pump(&mut self, model: &mut Model, _budget: Duration) -> Said {
        Said {
            applied: self.replay.due(None, |events| model.ingest_all(events)),
            ..Said::default()
        }
    }

    /// Headless: the whole file, as fast as it reads.
    fn wait(&mut self, model: &mut Model, _wait: Duration) -> Said {
        self.replay.set_speed(Speed::Max);
        Said {
            applied: self
                .replay
                .due(Some(SLICE), |events| model.ingest_all(events)),
            ..Said::default()
        }
    }

    fn control(&mut self, control: Control, model: &mut Model) -> Said {
        let r = &mut self.replay;
        match control {
            Control::TogglePause => {
                let p = !r.paused;
                r.set_paused(p);
            }
            Control::NextSpeed => {
                let s = r.speed.next();
                r.set_speed(s);
            }
            Control::Speed(s) => r.set_speed(s),
            Control::PrevProof | Control::NextProof => {
                if let Some(i) = r.proof_target(control == Control::NextProof) {
                    return self.seek(i, model);
                }
            }
            Control::Last => {
                let last = r.frame_count().saturating_sub(1);
                return self.seek(last, model);
            }
            Control::Signal(_) => {}
            Control::ToggleRecord => {
                return Said {
                    message: Some("a replay is already a recording".into()),
                    ..Said::default()
                };
            }
        }
        Said::default()
    }

    fn status(&self, _model: &Model) -> LinkStatus {
        let r = &self.replay;
        LinkStatus {
            link: LinkState::Replay {
                file: r.file.clone(),
                position: r.position(),
                total: r.end(),
                speed: r.speed.label().into(),
                paused: r.paused,
            },
            recording: None,
            transport: Some(self.transport()),
            paused: r.paused.then_some(Held::default()),
            child: None,
            lost_since: None,
        }
    }

    fn is_finite(&self) -> bool {
        true
    }

    fn finish(&mut self, _model: &mut Model) -> Said {
        Said::default()
    }
}

/// What a log is joined to: the recording's first session — its time 0 on the wall clock, its
/// main thread (the one whose OS id is the process id) when the probe defined it, and that
/// thread's large frees.
fn first_session(path: &Path) -> Result<crate::import::JoinTo> {
    use probe_protocol::Event;
    let mut tape = FileTape::open(path)?;
    let mut hello: Option<(u64, u32)> = None;
    let mut to = crate::import::JoinTo::default();
    let mut frees: Vec<(u32, u64, u64)> = Vec::new();
    'frames: while let Some(frame) = tape.next_frame() {
        let Ok(events) = frame else { continue };
        for e in events {
            match e {
                Event::Hello(_) if hello.is_some() => break 'frames,
                Event::Hello(h) => hello = Some((h.session_start_unix_ns, h.pid)),
                Event::ThreadDef { id, os_tid, .. }
                    if hello.is_some_and(|(_, pid)| u64::from(pid) == os_tid) =>
                {
                    to.caller.get_or_insert(id);
                }
                Event::Release(b) => frees.push((b.thread, b.ts, b.ts + b.inside_ns)),
                _ => {}
            }
        }
    }
    match hello {
        Some((origin, _)) if origin > 0 => to.origin_ns = origin,
        _ => anyhow::bail!(
            "{}: no session with a wall-clock start to join a log to (its Hello is missing or has no start time)",
            path.display()
        ),
    }
    to.caller_frees = frees
        .into_iter()
        .filter(|f| Some(f.0) == to.caller)
        .map(|f| (f.1, f.2))
        .collect();
    to.caller_frees.sort_unstable();
    Ok(to)
}
