//! The frame taps: what sees every frame of a live stream as it arrives, beside the model —
//! the recorder (`--record`, `r`) and the black box (`--capture-dir`). One chain, so a source
//! hands each frame on once and asks once per round for what the taps have to say.

pub mod record;

use crate::capture::BlackBox;
use crate::model::Model;
use anyhow::Result;
use probe_protocol::Event;
use record::Recorder;
use std::path::PathBuf;
use std::time::SystemTime;

#[derive(Debug)]
pub struct Taps {
    recorder: Option<Recorder>,
    /// Where `r` starts a new dated recording (`--record-dir`).
    record_dir: PathBuf,
    /// `--capture-dir`: the window around each anomalous proof, written to a file.
    blackbox: Option<BlackBox>,
}

impl Taps {
    /// With `record`, a recording from the first frame (re-stating `model`'s session first).
    pub fn new(
        record: Option<PathBuf>,
        record_dir: PathBuf,
        model: &Model,
        blackbox: Option<BlackBox>,
    ) -> Result<Taps> {
        let recorder = match record {
            Some(p) => Some(Recorder::create(&p, model.current())?),
            None => None,
        };
        Ok(Taps {
            recorder,
            record_dir,
            blackbox,
        })
    }

    /// A frame as it arrived (its bytes, prefix included, and its events): recorded and kept
    /// for the black box. A recording that fails stops: why, for the user (a failure of
    /// what they asked for).
    pub fn frame(&mut self, raw: &[u8], events: &[Event]) -> Option<String> {
        if let Some(b) = &mut self.blackbox {
            b.frame(raw, events);
        }
        let r = self.recorder.as_mut()?;
        let e = r.frame(raw).err()?;
        self.stop_recording();
        Some(format!("recording stopped: {e}"))
    }

    /// The file being recorded to.
    pub fn recording(&self) -> Option<&str> {
        self.recorder.as_ref().map(|r| r.path.as_str())
    }

    /// Starts a new dated recording in the record directory, or stops the one running; what
    /// the user should read.
    pub fn toggle_recording(&mut self, model: &Model) -> String {
        if let Some((path, err)) = self.stop_recording() {
            return err.unwrap_or(format!("recording saved to {path}"));
        }
        match Recorder::create_in(&self.record_dir, model.current(), SystemTime::now()) {
            Ok(rec) => {
                let path = rec.path.clone();
                self.recorder = Some(rec);
                format!("recording to {path}")
            }
            Err(e) => format!("cannot record: {e:#}"),
        }
    }

    /// Closes the recording; its path, and an error message if closing failed.
    fn stop_recording(&mut self) -> Option<(String, Option<String>)> {
        let rec = self.recorder.take()?;
        let path = rec.path.clone();
        let err = rec
            .finish()
            .err()
            .map(|e| format!("recording {path} failed: {e}"));
        Some((path, err))
    }

    /// The black box's round: judges the proofs settled in `model`, writes the captures due;
    /// a line for each, for the footer and the report. `ended`: nothing more will come.
    pub fn settle(&mut self, model: &Model, ended: bool) -> Vec<String> {
        let Some(b) = &mut self.blackbox else {
            return Vec::new();
        };
        b.scan(model, ended).iter().map(|o| o.describe()).collect()
    }

    /// The stream is over: the last captures written with what there is, the recording
    /// closed; a line for each capture and for a recording that could not be closed.
    pub fn finish(&mut self, model: &Model) -> Vec<String> {
        let mut lines = self.settle(model, true);
        lines.extend(self.stop_recording().and_then(|(_, e)| e));
        lines
    }
}
