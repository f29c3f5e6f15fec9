//! `--format json`: the report as one JSON document (schema: docs/CLI.md, "JSON report").

use super::Report;

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
