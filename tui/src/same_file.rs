//! Whether two paths name one file, by what they are rather than how they are spelt: `x`,
//! `./x`, `$PWD/x` and a symlink to it are one file. A guard against a report written over
//! the recording it came from (`replay a.psrec -o a.psrec`, `--record ./x -o $PWD/x`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a path names: an existing file by its device and inode (links followed), a file yet
/// to be made by its directory's real path and its name.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Existing { dev: u64, ino: u64 },
    ToBe(PathBuf),
}

fn identity(p: &Path) -> Option<Identity> {
    if let Ok(m) = std::fs::metadata(p) {
        return Some(Identity::Existing {
            dev: m.dev(),
            ino: m.ino(),
        });
    }
    // A dangling symlink names the file it will create.
    let p = match std::fs::read_link(p) {
        Ok(target) => p.parent().unwrap_or(Path::new(".")).join(target),
        Err(_) => p.to_owned(),
    };
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(Identity::ToBe(std::fs::canonicalize(dir).ok()?.join(name)))
}

/// `a` and `b` name one file (or one file to be).
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((identity(a), identity(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_does_not_matter_identity_does() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let x = d.join("x.psrec");
        // To be made: by directory and name.
        assert!(same_file(&x, &d.join(".").join("x.psrec")));
        assert!(same_file(&x, &d.join("sub/../x.psrec")) || !d.join("sub").exists());
        assert!(!same_file(&x, &d.join("y.psrec")));
        std::fs::write(&x, b"rec").unwrap();
        let link = d.join("link.psrec");
        std::os::unix::fs::symlink(&x, &link).unwrap();
        assert!(same_file(&x, &link), "a symlink to it");
        let hard = d.join("hard.psrec");
        std::fs::hard_link(&x, &hard).unwrap();
        assert!(same_file(&hard, &link), "a hard link and a symlink");
        let dangling = d.join("dangling.psrec");
        std::os::unix::fs::symlink(d.join("new.psrec"), &dangling).unwrap();
        assert!(same_file(&dangling, &d.join("new.psrec")));
        assert!(!same_file(&x, &d.join("new.psrec")));
    }
}
