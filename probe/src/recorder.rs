//! The probe's own recording: a subscriber that writes frames to a file on a named thread,
//! so a session is captured with no viewer attached.

use crate::log::log;
use crate::subscriber::SubQueue;
use probe_protocol::RecordingWriter;
use std::io::BufWriter;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn run(queue: Arc<SubQueue>, mut out: RecordingWriter<BufWriter<std::fs::File>>) {
    loop {
        match queue.pop_blocking(Duration::from_millis(200)) {
            Ok(Some(f)) => {
                if let Err(e) = out.write_frame(&f.bytes) {
                    log(&format!("recording stopped: {e}"));
                    queue.close();
                    return;
                }
            }
            Ok(None) => {
                let _ = out.flush();
            }
            Err(()) => break,
        }
    }
    if let Err(e) = out.flush() {
        log(&format!("recording could not be flushed: {e}"));
    }
}
