//! The words of the file names the engine writes (recordings, captures): a UTC time that sorts,
//! and names made safe for any file system.

use std::time::SystemTime;

/// `20261202T141404Z`: a UTC time for a file name (sorts as time, no `:` for other systems).
pub fn utc_stamp(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect()
}

/// `s` as one word of a file name: runs of anything but ASCII letters and digits become one
/// `-`, none at either end.
pub fn file_word(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
