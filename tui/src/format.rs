//! Human formats shared by views and reports.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(dur(1_800_000_000), "1.80 s");
        assert_eq!(dur(12_345_678), "12.3 ms");
        assert_eq!(dur(999), "999 ns");
        assert_eq!(bytes(41_700_000_000), "41.7 GB");
        assert_eq!(bytes(512_000), "512 kB");
    }
}
