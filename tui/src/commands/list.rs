//! `proofscope list [--json]`: the provers' sockets found, running or stale, and why any was
//! passed over.

use super::attach::socket_dirs;
use crate::exit::Exit;
use anyhow::Result;
use probe_protocol::discovery as discover;
use std::io::Write;

pub(crate) fn list(json: bool) -> Result<Exit> {
    let discover::Scan { found, refused } = discover::scan(&discover::socket_dirs());
    let mut out = std::io::stdout().lock();
    let state = |f: &discover::Found| match (f.alive, f.removed) {
        (true, _) => "running",
        (false, true) => "stale, removed",
        (false, false) => "stale",
    };
    if json {
        let rows: Vec<_> = found
            .iter()
            .map(|f| {
                serde_json::json!({
                    "state": state(f),
                    "prover": f.prover,
                    "pid": f.pid,
                    "path": f.path.display().to_string(),
                    "command_line": f.pid.map(command_line).unwrap_or_default(),
                })
            })
            .chain(refused.iter().map(|r| {
                serde_json::json!({
                    "state": "refused",
                    "path": r.path.display().to_string(),
                    "why": r.why,
                })
            }))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(Exit::Ok);
    }
    if found.is_empty() {
        writeln!(out, "no prover sockets in {}", socket_dirs())?;
    }
    for r in &refused {
        writeln!(out, "{:<15} {}: {}", "refused", r.path.display(), r.why)?;
    }
    for f in &found {
        writeln!(
            out,
            "{:<15} {:<12} pid {:<8} {}",
            state(f),
            f.prover,
            f.pid.map_or("?".into(), |p| p.to_string()),
            f.path.display()
        )?;
        // Two provers of one name tell apart by how they were started.
        let cmd = f.pid.map(command_line).unwrap_or_default().join(" ");
        if f.alive && !cmd.is_empty() {
            let cut: String = cmd.chars().take(200).collect();
            let more = if cut.len() < cmd.len() { " …" } else { "" };
            writeln!(out, "{:<15} {cut}{more}", "")?;
        }
    }
    Ok(Exit::Ok)
}

/// A running process's command line, from `/proc` (empty when it is gone or not ours).
fn command_line(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}
