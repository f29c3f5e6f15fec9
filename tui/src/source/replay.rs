//! A recording as a [`Source`], with its transport (speed, pause, proof jumps); a log imported
//! on the fly is the same replay over its frames held in memory ([`ReplaySource::open_log`]).

use super::tape::{MemoryTape, Replay, Speed};
use super::{Held, LinkState, LinkStatus, Said, Source};
use crate::input::Action;
use crate::model::Model;
use anyhow::Result;
use std::path::Path;
use std::time::Duration;

#[derive(Debug)]
pub struct ReplaySource {
    replay: Replay,
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
        Ok((ReplaySource { replay: r }, warnings))
    }

    /// Imports a log (`import`'s formats) and replays what it made, from memory.
    pub fn open_log(log: &Path, index_budget: usize) -> Result<(ReplaySource, Vec<String>)> {
        let imp = crate::import::import(&[log.to_owned()])?;
        let tape = MemoryTape::new(imp.events, crate::import::EVENTS_PER_FRAME);
        let label = format!("{} (imported log)", log.display());
        let r = Replay::of(label, Box::new(tape), index_budget)?;
        let warnings = r.warnings.clone();
        Ok((ReplaySource { replay: r }, warnings))
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
    /// The transport line: state, speed, position, frame, proofs, keys.
    fn transport(&self, model: &Model) -> String {
        let r = &self.replay;
        format!(
            "{} {}  │  +{} of {}  │  frame {}/{}  │  {} proofs  │  s speed  [ ] proof  space pause",
            if r.paused {
                "⏸"
            } else if r.done() {
                "■"
            } else {
                "▶"
            },
            r.speed.label(),
            crate::format::dur(r.position()),
            crate::format::dur(r.end()),
            r.next,
            r.frame_count(),
            model.proof_keys().len()
        )
    }
}

impl Source for ReplaySource {
    fn pump(&mut self, model: &mut Model, _budget: Duration) -> Said {
        Said {
            applied: self.replay.due(|events| model.ingest_all(events)),
            ..Said::default()
        }
    }

    /// Headless: the whole file, as fast as it reads.
    fn wait(&mut self, model: &mut Model, _wait: Duration) -> Said {
        self.replay.set_speed(Speed::Max);
        self.pump(model, Duration::ZERO)
    }

    fn control(&mut self, action: Action, model: &mut Model) -> Said {
        let r = &mut self.replay;
        match action {
            Action::Pause => {
                let p = !r.paused;
                r.set_paused(p);
            }
            Action::Speed => {
                let s = r.speed.next();
                r.set_speed(s);
            }
            Action::PrevProof | Action::NextProof => {
                if let Some(i) = r.proof_target(action == Action::NextProof) {
                    return self.seek(i, model);
                }
            }
            Action::Record => {
                return Said {
                    message: Some("a replay is already a recording".into()),
                    ..Said::default()
                };
            }
            _ => {}
        }
        Said::default()
    }

    fn status(&self, model: &Model) -> LinkStatus {
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
            transport: Some(self.transport(model)),
            paused: r.paused.then_some(Held::default()),
        }
    }

    fn is_finite(&self) -> bool {
        true
    }

    fn relabel(&mut self, label: String) {
        self.replay.file = label;
    }

    fn finish(&mut self) -> Option<String> {
        None
    }
}
