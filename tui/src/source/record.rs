//! Recording a live session from the viewer: a header, a frame that re-states the session
//! (Hello and every definition known so far, so a recording started mid-session decodes on
//! its own), then the frames exactly as received.

use crate::model::Session;
use anyhow::{Context, Result};
use probe_protocol::{Event, RecordingWriter, encode_frame};
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
        if let Some(s) = session {
            let mut evs = Vec::new();
            if let Some(h) = &s.hello {
                evs.push(Event::Hello(Box::new(h.clone())));
            }
            let mut names: Vec<_> = s.names.iter().collect();
            names.sort_by_key(|(id, _)| **id);
            for (id, name) in names {
                evs.push(Event::NameDef {
                    id: *id,
                    name: name.clone(),
                });
            }
            let mut threads: Vec<_> = s.threads.iter().collect();
            threads.sort_by_key(|(id, _)| **id);
            for (id, (name, tid)) in threads {
                evs.push(Event::ThreadDef {
                    id: *id,
                    name: name.clone(),
                    os_tid: *tid,
                });
            }
            if !evs.is_empty() {
                out.write_frame(&encode_frame(0, &evs)?)?;
            }
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
