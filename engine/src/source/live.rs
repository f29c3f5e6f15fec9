//! A live prover as a [`Source`]: the transport thread's messages, the frame taps (recorder and
//! black box: frames are handed on as they arrive), and the hold that keeps a paused view's
//! events within the memory bound.

use super::link::{Link, Next};
use super::socket::Target;
use super::{Control, Held, LinkState, LinkStatus, Said, Source, SourceMsg};
use crate::capture::BlackBox;
use crate::hold::Hold;
use crate::model::Model;
use crate::tap::Taps;
use anyhow::Result;
use probe_protocol::{Event, encode_frames};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a stopping viewer takes of what had already arrived, at most.
const FINISH_DRAIN: Duration = Duration::from_millis(200);

#[derive(Debug)]
pub struct LiveSource {
    link: Link,
    /// The recorder and the black box.
    taps: Taps,
    paused: bool,
    /// Frames that arrived while the view was paused.
    hold: Hold,
}

impl LiveSource {
    /// Connects (in the background) and, with `record`, records from the first frame.
    pub fn start(
        target: Target,
        record: Option<PathBuf>,
        record_dir: PathBuf,
        model: &Model,
        blackbox: Option<BlackBox>,
    ) -> Result<LiveSource> {
        let taps = Taps::new(record, record_dir, model, blackbox)?;
        Ok(LiveSource {
            link: Link::connect(target)?,
            taps,
            paused: false,
            hold: Hold::default(),
        })
    }

    /// Follows another prover from here on (`run`: a process the prover started). What the
    /// old connection delivered is applied first; the recording goes on, the new stream after
    /// the old, as a replay reads two sessions one after the other.
    pub fn retarget(&mut self, target: Target, model: &mut Model, said: &mut Said) -> Result<()> {
        for msg in self.link.retarget(target)? {
            self.handle(msg, model, said);
        }
        Ok(())
    }

    /// Events made here rather than received (a child's log lines read by `run`, a `Hello`
    /// for a child with no probe): recorded and applied as a received frame would be.
    pub fn apply_local(&mut self, events: Vec<Event>, model: &mut Model, said: &mut Said) {
        if events.is_empty() {
            return;
        }
        let frames = match encode_frames(&events) {
            Ok(f) => f,
            Err(e) => {
                said.warnings
                    .push(format!("events of the log not recorded: {e}"));
                Vec::new()
            }
        };
        for raw in frames {
            // The frames of one batch share its events' time span: a window takes them all.
            let failed = self.taps.frame(&raw, &events);
            said.fail(failed);
        }
        self.apply(events, model);
    }

    /// Ingests events, or holds them while the view is paused.
    fn apply(&mut self, events: Vec<Event>, model: &mut Model) {
        if self.paused {
            self.hold.push(events, model.retention().max_bytes);
        } else {
            model.ingest_all(events);
        }
    }

    fn handle(&mut self, msg: SourceMsg, model: &mut Model, said: &mut Said) {
        said.applied += 1;
        match msg {
            SourceMsg::Frame { raw, events } => {
                let failed = self.taps.frame(&raw, &events);
                said.fail(failed);
                self.apply(events, model);
            }
            // The link keeps its state as the message passes.
            SourceMsg::Link(_) => {}
            SourceMsg::Notice(note) => {
                said.message = Some(note.clone());
                said.warnings.push(note);
            }
            SourceMsg::BadFrames { count, why } => {
                model.count_bad_frames(count);
                said.warnings.push(why);
            }
        }
    }

    /// The black box's round (while the view is not paused: the model is behind then):
    /// judges the proofs settled, writes the captures due; each told in the footer and the
    /// report. `ended`: nothing more will come.
    fn judge(&mut self, model: &Model, said: &mut Said, ended: bool) {
        if self.paused && !ended {
            return;
        }
        let ended = ended || matches!(self.link.state(), LinkState::Ended(_));
        said.tell(self.taps.settle(model, ended));
    }

    /// Applies what was held while paused.
    fn resume(&mut self, model: &mut Model, said: &mut Said) {
        for events in self.hold.take() {
            model.ingest_all(events);
        }
        if self.hold.dropped > 0 {
            said.warnings.push(format!(
                "{} events that arrived while the view was paused were dropped (the hold was full)",
                self.hold.dropped
            ));
        }
    }
}

impl Source for LiveSource {
    fn pump(&mut self, model: &mut Model, budget: Duration) -> Said {
        // Paused, frames are still taken (recorded, and held within the memory bound), so the
        // channel from the transport never grows without bound.
        let t0 = Instant::now();
        let mut said = Said::default();
        while t0.elapsed() < budget {
            let Some(m) = self.link.try_next() else { break };
            self.handle(m, model, &mut said);
        }
        self.judge(model, &mut said, false);
        said
    }

    fn wait(&mut self, model: &mut Model, wait: Duration) -> Said {
        let mut said = Said::default();
        if let Next::Msg(m) = self.link.next(wait) {
            self.handle(m, model, &mut said);
        }
        self.judge(model, &mut said, false);
        said
    }

    fn control(&mut self, control: Control, model: &mut Model) -> Said {
        let mut said = Said::default();
        match control {
            Control::TogglePause => {
                self.paused = !self.paused;
                if !self.paused {
                    self.resume(model, &mut said);
                }
            }
            Control::ToggleRecord => said.message = Some(self.taps.toggle_recording(model)),
            _ => {}
        }
        said
    }

    fn status(&self, _model: &Model) -> LinkStatus {
        LinkStatus {
            link: self.link.state().clone(),
            recording: self.taps.recording().map(str::to_owned),
            transport: None,
            paused: self.paused.then_some(Held {
                events: self.hold.events,
                dropped: self.hold.dropped,
            }),
            child: None,
            lost_since: self.link.lost_since(),
        }
    }

    fn is_finite(&self) -> bool {
        false
    }

    fn finish(&mut self, model: &mut Model) -> Said {
        let mut said = Said::default();
        // What had arrived counts, and the captures still waiting for the proofs after
        // theirs are written with what there is: disconnected first (a flooding prover would
        // keep the channel full for ever), then what is left taken, for at most FINISH_DRAIN.
        self.link.close();
        let t = Instant::now();
        while t.elapsed() < FINISH_DRAIN {
            let Some(m) = self.link.try_next() else { break };
            self.handle(m, model, &mut said);
        }
        self.resume(model, &mut said);
        self.paused = false;
        said.tell(self.taps.finish(model));
        said
    }
}
