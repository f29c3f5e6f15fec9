//! The exporter's log, as Prometheus exporters write theirs: one line per event on stderr, at
//! or above `--log.level` (`debug`, `info`, `warn`, `error`), as `--log.format` says —
//! `logfmt` (`time=… level=info msg="…" key=value`) or `json` (one object a line), with the
//! same keys as node_exporter's (`time`, `level`, `msg`), so the collectors that read those
//! read these.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;

/// How much is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        [Level::Debug, Level::Info, Level::Warn, Level::Error]
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| format!("{s:?}: expected debug, info, warn or error"))
    }
}

/// How a line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Logfmt,
    Json,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "logfmt" => Ok(Format::Logfmt),
            "json" => Ok(Format::Json),
            _ => Err(format!("{s:?}: expected logfmt or json")),
        }
    }
}

static CONFIG: OnceLock<(Level, Format)> = OnceLock::new();

/// Sets the level and format for the life of the process (the first call wins); before it,
/// lines are `info` and up, in logfmt.
pub fn init(level: Level, format: Format) {
    let _ = CONFIG.set((level, format));
}

fn config() -> (Level, Format) {
    CONFIG
        .get()
        .copied()
        .unwrap_or((Level::Info, Format::Logfmt))
}

/// Writes `msg` with `fields` at `level`, when the configured level lets it through.
pub fn log(level: Level, msg: &str, fields: &[(&str, &str)]) {
    let (min, format) = config();
    if level < min {
        return;
    }
    let time = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let line = line(format, &time, level, msg, fields);
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// One line, without its newline.
fn line(format: Format, time: &str, level: Level, msg: &str, fields: &[(&str, &str)]) -> String {
    let all = [("time", time), ("level", level.as_str()), ("msg", msg)];
    let pairs = all.iter().chain(fields);
    match format {
        Format::Json => {
            let map: serde_json::Map<String, serde_json::Value> = pairs
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
                .collect();
            serde_json::Value::Object(map).to_string()
        }
        Format::Logfmt => {
            let mut out = String::new();
            for (i, (k, v)) in pairs.enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let _ = write!(out, "{sep}{k}={}", logfmt_value(v));
            }
            out
        }
    }
}

/// A logfmt value: bare when it needs no quoting, else quoted with `"` and `\` escaped.
fn logfmt_value(v: &str) -> String {
    let bare = !v.is_empty()
        && v.chars()
            .all(|c| c > ' ' && c != '"' && c != '=' && c != '\\');
    if bare {
        return v.to_owned();
    }
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_in_each_format() {
        let t = "2026-12-06T17:30:00.123Z";
        let f = [("worker", "c2 (pid 42)"), ("path", "/run/x.sock")];
        assert_eq!(
            line(Format::Logfmt, t, Level::Warn, "cannot watch", &f),
            r#"time=2026-12-06T17:30:00.123Z level=warn msg="cannot watch" worker="c2 (pid 42)" path=/run/x.sock"#
        );
        let j: serde_json::Value =
            serde_json::from_str(&line(Format::Json, t, Level::Info, "say \"hi\"", &f)).unwrap();
        assert_eq!(j["msg"], "say \"hi\"");
        assert_eq!(j["level"], "info");
        assert_eq!(j["worker"], "c2 (pid 42)");
        assert_eq!(logfmt_value("a=b"), "\"a=b\"");
        assert_eq!(logfmt_value(""), "\"\"");
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!("warn".parse::<Level>(), Ok(Level::Warn));
        assert!("loud".parse::<Level>().is_err());
        assert!(Level::Debug < Level::Error);
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
    }
}
