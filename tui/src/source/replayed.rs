//! A recording as a [`Source`], with its transport (speed, pause, proof jumps); a log imported
//! on the fly is the same replay over a temporary recording it owns ([`Replayed::open_log`]).

use super::replay::{Replay, Speed};
use super::{LinkState, Said, Source};
use crate::input::Action;
use crate::model::Model;
use anyhow::Result;
use std::path::Path;
use std::time::Duration;

#[derive(Debug)]
pub struct Replayed {
    replay: Replay,
    /// The recording a log was imported into: it lives as long as the replay reads it.
    _imported: Option<tempfile::NamedTempFile>,
}

impl Replayed {
    /// Opens a recording; `index_budget` bytes bound its proof index. The file's problems
    /// (bad frames, truncation) are counted in `model` and returned as warnings.
    pub fn open(
        path: &Path,
        index_budget: usize,
        model: &mut Model,
    ) -> Result<(Replayed, Vec<String>)> {
        let r = Replay::open(path, index_budget)?;
        model.bad_frames += r.bad_frames();
        let warnings = r.warnings.clone();
        Ok((
            Replayed {
                replay: r,
                _imported: None,
            },
            warnings,
        ))
    }

    /// Imports a log (`import`'s formats) into a temporary recording and opens that.
    pub fn open_log(
        log: &Path,
        index_budget: usize,
        model: &mut Model,
    ) -> Result<(Replayed, Vec<String>)> {
        let file = crate::import::to_temporary(log)?;
        let (mut replayed, warnings) = Replayed::open(file.path(), index_budget, model)?;
        replayed.relabel(format!("{} (imported log)", log.display()));
        replayed._imported = Some(file);
        Ok((replayed, warnings))
    }

    /// Ingests up to frame `idx` (into a fresh model when going back).
    fn seek(&mut self, idx: usize, model: &mut Model) -> Said {
        let mut said = Said::default();
        let sought = self.replay.seek(idx, |frame| match frame {
            Some(events) => model.ingest_all(events),
            None => {
                let bad = model.bad_frames;
                *model = Model::new(model.retention);
                model.bad_frames = bad;
            }
        });
        if let Err(e) = sought {
            said.message = Some(format!("replay: {e:#}"));
        }
        said.applied = 1;
        said
    }
}

impl Source for Replayed {
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

    fn link(&self) -> LinkState {
        let r = &self.replay;
        LinkState::Replay {
            file: r.file.clone(),
            position: r.position(),
            total: r.end(),
            speed: r.speed.label().into(),
            paused: r.paused,
        }
    }

    fn transport(&self, model: &Model) -> Option<String> {
        let r = &self.replay;
        Some(format!(
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
        ))
    }

    fn is_finite(&self) -> bool {
        true
    }

    fn paused(&self) -> (bool, (u64, u64)) {
        (self.replay.paused, (0, 0))
    }

    fn relabel(&mut self, label: String) {
        self.replay.file = label;
    }

    fn finish(&mut self) -> Option<String> {
        None
    }
}
