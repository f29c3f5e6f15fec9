//! The session controller: a source feeding the model, the commands the source answers
//! (transport, pause, record), and what it said for the report. No terminal, no view.

use crate::model::Model;
use crate::source::{ChildStatus, Control, LinkState, LinkStatus, Said, Source};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Controller {
    model: Model,
    /// Where the session comes from: a live prover, a recording or a log.
    feed: Box<dyn Source>,
    /// What the report calls the source.
    label: String,
    /// Warnings for the report, from the source.
    /// Bounded: a peer that sends empty frames warns once a frame.
    warnings: crate::warnings::Warnings,
    /// The first failure the source reported (Said::failed).
    failed: Option<String>,
    /// A name given to the source after it started ([`Controller::relabel`]): the header's
    /// replay shows it instead of the file's path.
    shown_as: Option<String>,
}

impl Controller {
    pub fn new(model: Model, feed: Box<dyn Source>, label: String) -> Controller {
        Controller {
            model,
            feed,
            label,
            warnings: crate::warnings::Warnings::default(),
            failed: None,
            shown_as: None,
        }
    }

    /// What failed that the user asked for, if anything did.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// What the report calls the source.
    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.to_vec()
    }

    pub fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }

    /// Names the source in the header and the report (tests use stable names).
    pub fn relabel(&mut self, label: &str) {
        self.label = label.to_owned();
        self.shown_as = Some(label.to_owned());
    }

    /// Keeps what the source said for the report; the rest is for the caller (the footer).
    fn take(&mut self, mut said: Said) -> Said {
        self.warnings.extend(said.warnings.drain(..));
        if self.failed.is_none() {
            self.failed = said.failed.take();
        }
        said
    }

    /// Applies what the source has, for at most `budget`.
    pub fn pump(&mut self, budget: Duration) -> Said {
        let said = self.feed.pump(&mut self.model, budget);
        self.take(said)
    }

    /// Blocks up to `wait` for something, then applies it (a finite source: all of it).
    pub fn wait(&mut self, wait: Duration) -> Said {
        let said = self.feed.wait(&mut self.model, wait);
        self.take(said)
    }

    /// A control the source answers (pause, speed, proof jumps, record).
    pub fn control(&mut self, control: Control) -> Said {
        let said = self.feed.control(control, &mut self.model);
        self.take(said)
    }

    pub fn status(&self) -> LinkStatus {
        let mut status = self.feed.status(&self.model);
        if let (Some(name), LinkState::Replay { file, .. }) = (&self.shown_as, &mut status.link) {
            file.clone_from(name);
        }
        status
    }

    pub fn is_finite(&self) -> bool {
        self.feed.is_finite()
    }

    pub fn lost_since(&self) -> Option<Instant> {
        self.status().lost_since
    }

    /// The prover the source started (`run`), as it stood after the last round.
    pub fn child(&self) -> Option<ChildStatus> {
        self.status().child
    }

    /// Stops the source; what the user should know.
    pub fn finish(&mut self) -> Option<String> {
        let said = self.feed.finish(&mut self.model);
        self.take(said).message
    }
}
