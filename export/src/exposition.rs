//! What a scrape gets back: OpenMetrics to a client that asks for it (Prometheus does), the
//! Prometheus text format 0.0.4 to any other (`curl | promtool check metrics`, older
//! scrapers, other agents), gzipped when the client accepts it.
//!
//! prometheus-client encodes OpenMetrics only; the 0.0.4 text is derived from it line by line
//! (one encoder, so the two can never disagree on a value).

use std::collections::HashMap;
use std::io::Write;

/// The media type of a scrape's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    OpenMetrics,
    PrometheusText,
}

impl Exposition {
    /// OpenMetrics when the `Accept` header names it, else the Prometheus text format.
    pub fn negotiate(accept: Option<&str>) -> Exposition {
        if accepts(accept, |media| {
            media.eq_ignore_ascii_case("application/openmetrics-text")
        }) {
            Exposition::OpenMetrics
        } else {
            Exposition::PrometheusText
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Exposition::PrometheusText => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The body in this format, from prometheus-client's OpenMetrics text.
    pub fn body(self, openmetrics: String) -> String {
        match self {
            Exposition::OpenMetrics => openmetrics,
            Exposition::PrometheusText => prometheus_text(&openmetrics),
        }
    }
}

/// Whether an `Accept-Encoding` header accepts gzip (and does not refuse it with `q=0`).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accepts(accept_encoding, |coding| {
        coding.eq_ignore_ascii_case("gzip") || coding == "*"
    })
}

/// Whether a header's comma-separated list (`Accept`, `Accept-Encoding`) holds a value that
/// `wanted` takes, not refused with `q=0`.
fn accepts(header: Option<&str>, wanted: impl Fn(&str) -> bool) -> bool {
    header.is_some_and(|h| {
        h.split(',').any(|part| {
            let mut fields = part.split(';').map(str::trim);
            let value = fields.next().unwrap_or("");
            let refused = fields.any(|f| f.replace(' ', "") == "q=0");
            wanted(value) && !refused
        })
    })
}

/// `body` gzipped (the fast level: a scrape is answered in milliseconds, and text of repeated
/// label sets compresses well at any level).
pub fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    enc.write_all(body)?;
    enc.finish()
}

/// OpenMetrics text as the Prometheus text format 0.0.4: a counter family `x` is named by its
/// sample `x_total`, an info family `x` becomes the gauge `x_info`, `unknown` is `untyped`;
/// `# UNIT` and `# EOF` lines and exemplars have no place there and are dropped.
fn prometheus_text(om: &str) -> String {
    let types: HashMap<&str, &str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let renamed = |name: &str| -> (String, Option<&'static str>) {
        match types.get(name).copied() {
            Some("counter") => (format!("{name}_total"), None),
            Some("info") => (format!("{name}_info"), Some("gauge")),
            Some("unknown") => (name.to_owned(), Some("untyped")),
            Some("gaugehistogram" | "stateset") => (name.to_owned(), Some("untyped")),
            _ => (name.to_owned(), None),
        }
    };
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str(&format!("# HELP {} {help}\n", renamed(name).0));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, as_kind) = renamed(name);
            out.push_str(&format!("# TYPE {name} {}\n", as_kind.unwrap_or(kind)));
        } else if line.starts_with('#') {
            // `# UNIT`, `# EOF`.
        } else {
            out.push_str(without_exemplar(line));
            out.push('\n');
        }
    }
    out
}

/// `openmetrics` with each counter sample's `_created` (OpenMetrics: when the series began, in
/// Unix seconds), right after its `_total`: a worker's series began when its first prover's
/// session did — before the exporter started, for a prover already running then, so that a
/// consumer that reads `_created` takes the restarted exporter's totals for what they are,
/// not for proofs counted since its start. `born(worker)` says when (`None` for a counter
/// without a worker label: the exporter's own, born with it); a counter whose worker is not
/// known gets none.
pub fn with_created(openmetrics: String, born: impl Fn(Option<&str>) -> Option<f64>) -> String {
    let mut out = String::with_capacity(openmetrics.len() + openmetrics.len() / 4);
    let mut counter: Option<String> = None;
    for line in openmetrics.lines() {
        out.push_str(line);
        out.push('\n');
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            counter = match rest.split_once(' ') {
                Some((name, "counter")) => Some(format!("{name}_total")),
                _ => None,
            };
            continue;
        }
        let Some(total) = counter.as_deref() else {
            continue;
        };
        let sample = without_exemplar(line);
        let Some(labels) = sample.strip_prefix(total) else {
            continue;
        };
        let labels = match labels.find(' ') {
            Some(end) if labels.starts_with('{') => &labels[..end],
            Some(0) => "",
            _ => continue,
        };
        if let Some(t) = born(label(labels, "worker").as_deref()) {
            let name = &total[..total.len() - "_total".len()];
            out.push_str(&format!("{name}_created{labels} {t}\n"));
        }
    }
    out
}

/// The value of label `key` in a label set `{a="x",b="y"}` (escapes undone).
fn label(labels: &str, key: &str) -> Option<String> {
    let body = labels.strip_prefix('{')?.strip_suffix('}')?;
    let mut rest = body;
    while !rest.is_empty() {
        let (k, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        value.push(match n {
                            'n' => '\n',
                            other => other,
                        });
                    }
                }
                '"' => {
                    end = Some(i);
                    break;
                }
                c => value.push(c),
            }
        }
        if k.trim_start_matches(',') == key {
            return Some(value);
        }
        rest = after[end? + 1..].trim_start_matches(',');
    }
    None
}

/// `openmetrics` without the exemplars that name a capture `kept` says is gone: a bucket keeps
/// its latest exemplar for as long as the exporter runs, and the capture directory's rotation
/// (`--capture-max-files`, `--capture-max-mib`) removes files meanwhile — an exemplar must not
/// send an operator to a file that is not there.
pub fn without_removed_captures(openmetrics: String, kept: impl Fn(&str) -> bool) -> String {
    const MARK: &str = "# {capture=\"";
    if !openmetrics.contains(MARK) {
        return openmetrics;
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        let named = line
            .find(MARK)
            .and_then(|at| line[at + MARK.len()..].split('"').next());
        match named {
            Some(file) if !kept(file) => out.push_str(without_exemplar(line)),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A sample line without its exemplar (` # {…} value [ts]`): outside label values, which
/// are quoted and may hold ` # ` themselves.
fn without_exemplar(line: &str) -> &str {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            '#' if !in_quotes && line[..i].ends_with(' ') => return line[..i].trim_end(),
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const OM: &str = "# HELP proofscope_proofs Proofs completed.\n\
# TYPE proofscope_proofs counter\n\
proofscope_proofs_total{prover=\"a # b\"} 3 # {trace_id=\"x\"} 1.0\n\
# HELP proofscope_build Build.\n\
# TYPE proofscope_build info\n\
proofscope_build_info{version=\"0.1.0\"} 1\n\
# HELP proofscope_proof_seconds Proof duration.\n\
# TYPE proofscope_proof_seconds histogram\n\
# UNIT proofscope_proof_seconds seconds\n\
proofscope_proof_seconds_bucket{le=\"+Inf\"} 3\n\
proofscope_proof_seconds_sum 1.5\n\
proofscope_proof_seconds_count 3\n\
# EOF\n";

    #[test]
    fn openmetrics_becomes_text_0_0_4() {
        let t = prometheus_text(OM);
        assert_eq!(
            t,
            "# HELP proofscope_proofs_total Proofs completed.\n\
# TYPE proofscope_proofs_total counter\n\
proofscope_proofs_total{prover=\"a # b\"} 3\n\
# HELP proofscope_build_info Build.\n\
# TYPE proofscope_build_info gauge\n\
proofscope_build_info{version=\"0.1.0\"} 1\n\
# HELP proofscope_proof_seconds Proof duration.\n\
# TYPE proofscope_proof_seconds histogram\n\
proofscope_proof_seconds_bucket{le=\"+Inf\"} 3\n\
proofscope_proof_seconds_sum 1.5\n\
proofscope_proof_seconds_count 3\n"
        );
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        use Exposition::*;
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Exposition::negotiate(Some(prom)), OpenMetrics);
        assert_eq!(
            Exposition::negotiate(Some("text/plain;version=0.0.4")),
            PrometheusText
        );
        assert_eq!(Exposition::negotiate(Some("*/*")), PrometheusText);
        assert_eq!(Exposition::negotiate(None), PrometheusText);
        assert_eq!(
            Exposition::negotiate(Some("application/openmetrics-text; q=0, text/plain")),
            PrometheusText
        );
        assert!(accepts_gzip(Some("gzip, deflate")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let z = gzip(OM.as_bytes()).unwrap();
        let mut back = String::new();
        flate2::read::GzDecoder::new(&z[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, OM);
    }

    #[test]
    fn an_exemplar_naming_a_removed_capture_is_dropped_and_the_sample_kept() {
        let om = "x_bucket{le=\"1\"} 1 # {capture=\"capture-a.psrec\"} 0.5\nx_bucket{le=\"2\"} 3 # {capture=\"capture-b.psrec\"} 1.5 17.0\nx_count 3\n# EOF\n";
        let kept = without_removed_captures(om.to_owned(), |f| f == "capture-b.psrec");
        assert_eq!(
            kept,
            "x_bucket{le=\"1\"} 1\nx_bucket{le=\"2\"} 3 # {capture=\"capture-b.psrec\"} 1.5 17.0\nx_count 3\n# EOF\n"
        );
        let none = "x_count 3\n# EOF\n".to_owned();
        assert_eq!(without_removed_captures(none.clone(), |_| false), none);
    }

    #[test]
    fn a_counter_gets_its_created_time_right_after_its_total() {
        let om = "# HELP p Proofs.\n# TYPE p counter\np_total{host=\"h\",worker=\"w\\\"q\"} 3 # {capture=\"c\"} 1.0\np_total{host=\"h\",worker=\"gone\"} 1\n# TYPE s counter\ns_total 7\n# TYPE g gauge\ng{worker=\"w\\\"q\"} 1\n# EOF\n";
        let born = |w: Option<&str>| match w {
            Some("w\"q") => Some(1700000000.5),
            Some(_) => None,
            None => Some(1800000000.0),
        };
        assert_eq!(
            with_created(om.to_owned(), born),
            "# HELP p Proofs.\n# TYPE p counter\np_total{host=\"h\",worker=\"w\\\"q\"} 3 # {capture=\"c\"} 1.0\np_created{host=\"h\",worker=\"w\\\"q\"} 1700000000.5\np_total{host=\"h\",worker=\"gone\"} 1\n# TYPE s counter\ns_total 7\ns_created 1800000000\n# TYPE g gauge\ng{worker=\"w\\\"q\"} 1\n# EOF\n"
        );
    }
}
