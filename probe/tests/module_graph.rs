//! The probe's modules form no import cycle (a rule of the house: each module one job, and a
//! dependency direction you can draw). Read off the sources: every `crate::m` / `super::m`
//! outside comments is an edge.

use std::collections::{BTreeMap, BTreeSet};

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sources = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|x| x == "rs") && stem != "lib" {
            // `no_nvml.rs` is the `nvml` module built without the feature.
            let name = if stem == "no_nvml" { "nvml" } else { stem };
            sources.push((name.to_owned(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    let names: BTreeSet<String> = sources.iter().map(|(n, _)| n.clone()).collect();
    for (name, text) in &sources {
        let deps = g.entry(name.clone()).or_default();
        for line in text.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
            for prefix in ["crate::", "super::"] {
                for (i, _) in line.match_indices(prefix) {
                    let rest = &line[i + prefix.len()..];
                    let rest = rest.trim_start_matches('{');
                    // `use crate::{a, b::c}` lists several.
                    let list = if line[i + prefix.len()..].starts_with('{') {
                        rest.split('}').next().unwrap_or("")
                    } else {
                        rest
                    };
                    for item in list.split(',') {
                        let m: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        if names.contains(&m) && m != *name {
                            deps.insert(m);
                        }
                        if !line[i + prefix.len()..].starts_with('{') {
                            break;
                        }
                    }
                }
            }
        }
    }
    g
}

/// A cycle through `node`, if any (depth-first, with the path so far).
fn find_cycle(
    g: &BTreeMap<String, BTreeSet<String>>,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|p| p == node) {
        let mut cycle = path[at..].to_vec();
        cycle.push(node.to_owned());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_owned());
    for dep in g.get(node).into_iter().flatten() {
        if let Some(c) = find_cycle(g, dep, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.to_owned());
    None
}

#[test]
fn the_probe_modules_form_no_cycle() {
    let g = graph();
    assert!(g.len() > 10, "read {} modules", g.len());
    // The edges the graph must see, or the reader is broken.
    assert!(g["collector"].contains("session"));
    assert!(g["thread"].contains("ring"));
    let mut done = BTreeSet::new();
    for node in g.keys() {
        if let Some(c) = find_cycle(&g, node, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}", c.join(" → "));
        }
    }
}

#[test]
fn the_reader_finds_a_planted_cycle() {
    let mut g = graph();
    g.get_mut("ring").unwrap().insert("thread".into());
    let c = find_cycle(&g, "thread", &mut Vec::new(), &mut BTreeSet::new());
    assert!(c.is_some_and(|c| c.contains(&"ring".to_owned())));
}
