//! Recording a live session from the viewer: a header, a frame that re-states the session
//! (its `Welcome`: Hello and every definition known so far — the same list the prover's
//! collector welcomes a late viewer with — so a recording started mid-session decodes on its
//! own), then the frames exactly as received. Each frame is one write to the file (no
//! buffer), so that when a write fails (a full disk) the file can be cut back to its last
//! whole frame: what was recorded stays readable to the end.

use crate::file_name::{file_word, utc_stamp};
use crate::model::Session;
use anyhow::{Context, Result};
use probe_protocol::{RecordingWriter, encode_frames};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug)]
pub struct Recorder {
    out: RecordingWriter<std::fs::File>,
    pub path: String,
}

impl Recorder {
    /// A recording at `path`, replacing a file there (`--record` checked `--force` first).
    pub fn create(path: &Path, session: Option<&Session>) -> Result<Recorder> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        Self::start(f, path, session)
    }

    /// A recording that `r` starts: a new dated file in `dir`, never one that exists.
    pub fn create_in(dir: &Path, session: Option<&Session>, now: SystemTime) -> Result<Recorder> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let stem = dated_stem(session.map_or("", |s| s.prover_name()), now);
        for n in 1..1000 {
            let path = match n {
                1 => dir.join(format!("{stem}.psrec")),
                n => dir.join(format!("{stem}-{n}.psrec")),
            };
            match std::fs::File::create_new(&path) {
                Ok(f) => return Self::start(f, &path, session),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("creating {}", path.display()));
                }
            }
        }
        anyhow::bail!("{} holds 999 recordings named {stem}", dir.display())
    }

    fn start(f: std::fs::File, path: &Path, session: Option<&Session>) -> Result<Recorder> {
        let mut out = RecordingWriter::new(f)?;
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

    /// Appends a frame; on a failed write the file is cut back to its last whole frame (and
    /// the error says so).
    pub fn frame(&mut self, raw: &[u8]) -> Result<()> {
        if let Err(e) = self.out.write_frame(raw) {
            let whole = self.out.bytes_written();
            // A device (/dev/full) cannot be cut: it holds nothing to read back anyway.
            let cut = self.out.get_mut().set_len(whole).is_ok();
            return Err(anyhow::anyhow!(
                "{e}{}",
                if cut {
                    format!("; {} keeps its {whole} bytes of whole frames", self.path)
                } else {
                    String::new()
                }
            ));
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.out.flush()?;
        self.out.get_mut().sync_data().or_else(|e| {
            // A device or pipe has nothing to sync.
            if e.raw_os_error() == Some(libc::EINVAL) {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        Ok(())
    }
}

/// `proofscope-<prover>-<UTC time>`: sorted by time in a listing, the prover told at a glance.
fn dated_stem(prover: &str, now: SystemTime) -> String {
    let stamp = utc_stamp(now);
    match file_word(prover).as_str() {
        "" => format!("proofscope-{stamp}"),
        p => format!("proofscope-{p}-{stamp}"),
    }
}

/// Where `r` records without `--record-dir`: `$XDG_DATA_HOME/proofscope/recordings`, else
/// `~/.local/share/proofscope/recordings` (the XDG base directory default), else here.
pub fn default_record_dir() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")));
    data.map_or_else(|| PathBuf::from("."), |d| d.join("proofscope/recordings"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn r_names_a_new_dated_file_and_never_replaces_one() {
        let dir = tempfile::tempdir().unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_220_844);
        let a = Recorder::create_in(dir.path(), None, at).unwrap();
        let b = Recorder::create_in(&dir.path().join("new"), None, at).unwrap();
        let c = Recorder::create_in(dir.path(), None, at).unwrap();
        assert!(
            a.path.ends_with("proofscope-20261202T141404Z.psrec"),
            "{}",
            a.path
        );
        assert!(
            b.path.ends_with("new/proofscope-20261202T141404Z.psrec"),
            "{}",
            b.path
        );
        assert!(
            c.path.ends_with("proofscope-20261202T141404Z-2.psrec"),
            "{}",
            c.path
        );
    }

    #[test]
    fn the_prover_name_is_kept_to_letters_digits_and_dashes() {
        let at = SystemTime::UNIX_EPOCH;
        assert_eq!(
            dated_stem("curio cuzk (its log)", at),
            "proofscope-curio-cuzk-its-log-19700101T000000Z"
        );
        assert_eq!(dated_stem("", at), "proofscope-19700101T000000Z");
    }
}
