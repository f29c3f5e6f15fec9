//! The capture directory: each capture written whole under a temporary name and renamed
//! (a reader never sees half a file), then the oldest captures removed until the directory
//! is within its count and byte bounds again. Only files this writer names (`capture-*.psrec`)
//! are counted or removed; several watchers may share a directory.

use probe_protocol::RecordingWriter;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Every capture file's name starts so.
pub const PREFIX: &str = "capture-";
const SUFFIX: &str = ".psrec";
/// A recording's header.
const HEADER_LEN: u64 = 12;

#[derive(Debug, Clone)]
pub struct Store {
    pub dir: PathBuf,
    pub max_files: usize,
    pub max_bytes: u64,
}

/// What became of one capture.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// At this path, this long; `removed` older captures made room.
    File {
        path: PathBuf,
        bytes: u64,
        removed: usize,
    },
    /// Larger alone than the directory's byte bound: not written.
    TooLarge { bytes: u64 },
}

impl Store {
    /// Writes the capture `name` of these frames (prefixes included), then rotates.
    pub fn write(&self, name: &str, frames: &[&[u8]]) -> std::io::Result<Written> {
        let bytes = HEADER_LEN + frames.iter().map(|f| f.len() as u64).sum::<u64>();
        if bytes > self.max_bytes {
            return Ok(Written::TooLarge { bytes });
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let written = write_file(&tmp, frames).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let removed = self.rotate(&path)?;
        Ok(Written::File {
            path,
            bytes,
            removed,
        })
    }

    /// Removes the oldest captures (by modification time, then name) until at most
    /// `max_files` remain within `max_bytes`; `newest` is kept.
    fn rotate(&self, newest: &Path) -> std::io::Result<usize> {
        let mut files: Vec<(std::time::SystemTime, PathBuf, u64)> = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(PREFIX) && name.ends_with(SUFFIX)) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let when = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            files.push((when, entry.path(), meta.len()));
        }
        files.sort();
        let mut count = files.len();
        let mut total: u64 = files.iter().map(|f| f.2).sum();
        let mut removed = 0;
        for (_, path, len) in &files {
            if count <= self.max_files && total <= self.max_bytes {
                break;
            }
            if path == newest {
                continue;
            }
            // Another watcher may have removed it first: it is gone either way.
            if std::fs::remove_file(path).is_ok() {
                removed += 1;
            }
            count -= 1;
            total -= len;
        }
        Ok(removed)
    }
}

fn write_file(path: &Path, frames: &[&[u8]]) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = RecordingWriter::new(BufWriter::new(f))?;
    for f in frames {
        w.write_frame(f)?;
    }
    w.flush()?;
    w.into_inner()
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_the_newest_within_count_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("notes.txt");
        std::fs::write(&other, vec![b'x'; 10_000]).unwrap();
        let store = Store {
            dir: dir.path().to_owned(),
            max_files: 3,
            max_bytes: 400,
        };
        let frame = [7u8; 88]; // 100 bytes a file with the header
        for i in 0..10 {
            let w = store
                .write(&format!("capture-{i:02}.psrec"), &[&frame])
                .unwrap();
            assert!(matches!(w, Written::File { bytes: 100, .. }), "{w:?}");
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "capture-07.psrec",
                "capture-08.psrec",
                "capture-09.psrec",
                "notes.txt"
            ]
        );
        let four = Store {
            max_files: 100,
            max_bytes: 250,
            ..store.clone()
        };
        four.write("capture-10.psrec", &[&frame]).unwrap();
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(
            left, 3,
            "two captures of 100 bytes within 250, and the notes"
        );
        assert_eq!(
            store.write("capture-11.psrec", &[&[0u8; 500]]).unwrap(),
            Written::TooLarge { bytes: 512 }
        );
        assert!(
            std::fs::read(&other).is_ok(),
            "files not ours are left alone"
        );
        let head = std::fs::read(dir.path().join("capture-10.psrec")).unwrap();
        assert_eq!(
            head[..8],
            probe_protocol::RECORDING_MAGIC,
            "a capture is a recording"
        );
    }
}
