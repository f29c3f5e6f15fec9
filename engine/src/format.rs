//! Human formats shared by views and reports.

/// A count with thousands separated ("262,144").
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1.23 s`, `45.6 ms`, `789 µs`, `12 ns`.
pub fn dur(ns: u64) -> String {
    let n = ns as f64;
    if ns >= 10_000_000_000 {
        format!("{:.1} s", n / 1e9)
    } else if ns >= 1_000_000_000 {
        format!("{:.2} s", n / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1} ms", n / 1e6)
    } else if ns >= 1_000 {
        format!("{:.0} µs", n / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// `41.7 GB`, `12.0 MB`, `512 kB`, `12 B` (decimal units, like the C2 literature).
pub fn bytes(b: u64) -> String {
    let n = b as f64;
    if b >= 1_000_000_000 {
        format!("{:.1} GB", n / 1e9)
    } else if b >= 1_000_000 {
        format!("{:.1} MB", n / 1e6)
    } else if b >= 1_000 {
        format!("{:.0} kB", n / 1e3)
    } else {
        format!("{b} B")
    }
}

/// `text` in at most `width` terminal columns: whole when it fits, else cut and ending in `…`
/// (so a reader knows there is more).
pub fn fit(text: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let full: usize = text.chars().map(|c| c.width().unwrap_or(0)).sum();
    if full <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `+12.3 ms` from a proof's start; `+0` at it.
/// `text` broken at spaces into lines of at most `width` characters (a word longer than that
/// is cut with `…`); at least one line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let need = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if !line.is_empty() && need > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&fit(word, width));
    }
    out.push(line);
    out
}

pub fn offset(ns: u64) -> String {
    if ns == 0 {
        "+0".to_owned()
    } else {
        format!("+{}", dur(ns))
    }
}

/// The reason a session has no GPU telemetry, as a sentence: recordings made before the probe
/// said it plainly carry the library loader's message, which names a file, not the situation.
pub fn gpu_reason(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.contains("libloading") && raw.contains("libnvidia-ml.so.1") {
        "no NVIDIA driver on this machine (libnvidia-ml.so.1 not found)".into()
    } else {
        raw.into()
    }
}

/// `2026-11-30 14:02:11 UTC` from nanoseconds since the Unix epoch.
pub fn wall_clock(unix_ns: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ns);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

/// "2 × " before a proof's circuit, nothing when the source did not say how many (0).
pub fn circuits_times(n: u32) -> String {
    if n > 0 {
        format!("{n} × ")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_does_not_fit_ends_in_an_ellipsis() {
        assert_eq!(fit("libnvidia-ml.so.1 not found", 12), "libnvidia-m…");
        assert_eq!(fit("short", 12), "short");
        assert_eq!(fit("exactly", 7), "exactly");
        assert_eq!(fit("µs µs", 3), "µs…");
        assert_eq!(fit("x", 0), "");
    }

    #[test]
    fn units() {
        assert_eq!(dur(1_800_000_000), "1.80 s");
        assert_eq!(dur(12_345_678), "12.3 ms");
        assert_eq!(dur(999), "999 ns");
        assert_eq!(bytes(41_700_000_000), "41.7 GB");
        assert_eq!(bytes(512_000), "512 kB");
    }

    #[test]
    fn a_loader_error_reads_as_the_situation_and_times_as_dates() {
        let raw = "NVML unavailable: a libloading error occurred: libnvidia-ml.so.1: cannot open \
                   shared object file: No such file or directory";
        assert_eq!(
            gpu_reason(raw),
            "no NVIDIA driver on this machine (libnvidia-ml.so.1 not found)"
        );
        assert_eq!(gpu_reason("NVML found no GPU"), "NVML found no GPU");
        assert_eq!(
            wall_clock(1_796_032_261_802_670_575),
            "2026-11-30 09:51:01 UTC"
        );
    }
}
