//! The probe's own recording: a subscriber that writes frames to a file on a named thread,
//! so a session is captured with no viewer attached. A prover killed without warning must
//! leave a readable file: the header is on disk before the first frame, and buffered frames
//! reach the file at least every [`FLUSH_EVERY`] and at the end of every proof.

use crate::log::log;
use crate::subscriber::SubQueue;
use probe_protocol::{EventKind, RecordingWriter};
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest a written frame waits in the buffer before it reaches the file.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The writer and what is still in its buffer.
struct Output {
    out: RecordingWriter<BufWriter<File>>,
    /// Written since the last flush, and when that was.
    dirty: bool,
    flushed: Instant,
    /// The first failure to write, kept for the session's end (a full disk must not end a
    /// session as if its recording were whole).
    failed: Option<String>,
}

impl Output {
    fn flush(&mut self) {
        if let Err(e) = self.out.flush()
            && self.failed.is_none()
        {
            log(&format!("recording could not be flushed: {e}"));
            self.failed = Some(format!("could not be flushed: {e}"));
        }
        self.dirty = false;
        self.flushed = Instant::now();
    }

    /// How long the queue may be waited on before the buffer is due on disk.
    fn patience(&self) -> Duration {
        if self.dirty {
            FLUSH_EVERY
                .saturating_sub(self.flushed.elapsed())
                .max(Duration::from_millis(1))
        } else {
            Duration::from_millis(200)
        }
    }
}

/// Writes the session's frames until its queue closes; the recording's first failure, if any.
pub(crate) fn run(queue: Arc<SubQueue>, out: RecordingWriter<BufWriter<File>>) -> Option<String> {
    let mut o = Output {
        out,
        dirty: false,
        flushed: Instant::now(),
        failed: None,
    };
    loop {
        match queue.pop_blocking(o.patience()) {
            Ok(Some(f)) => {
                if let Err(e) = o.out.write_frame(&f.bytes) {
                    log(&format!("recording stopped: {e}"));
                    queue.close();
                    return Some(o.failed.unwrap_or(format!("stopped: {e}")));
                }
                o.dirty = true;
                if f.counts[EventKind::ProofEnd] > 0 || o.flushed.elapsed() >= FLUSH_EVERY {
                    o.flush();
                }
            }
            Ok(None) if o.dirty => o.flush(),
            Ok(None) => {}
            Err(()) => break,
        }
    }
    o.flush();
    o.failed
}
