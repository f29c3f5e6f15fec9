//! Recording a live session from the viewer: a header, a frame that re-states the session
//! (its `Welcome`: Hello and every definition known so far — the same list the prover's
//! collector welcomes a late viewer with — so a recording started mid-session decodes on its
//! own), then the frames exactly as received.

use crate::model::Session;
use anyhow::{Context, Result};
use probe_protocol::{RecordingWriter, encode_frames};
use std::io::BufWriter;
use std::path::Path;

#[derive(Debug)]
pub struct Recorder {
    out: RecordingWriter<BufWriter<std::fs::File>>,
    pub path: String,
}

impl Recorder {
    pub fn create(path: &Path, session: Option<&Session>) -> Result<Recorder> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = RecordingWriter::new(BufWriter::new(f))?;
        let welcome = session
            .map(|s| s.welcome().into_events())
            .unwrap_or_default();
        for frame in encode_frames(&welcome)? {
            out.write_frame(&frame)?;
        }
        Ok(Recorder {
            out,
            path: path.display().to_string(),
        })
    }

    pub fn frame(&mut self, raw: &[u8]) -> Result<()> {
        self.out.write_frame(raw)?;
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
