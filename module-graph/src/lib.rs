//! The import graph of a crate's modules, read off its sources, for each crate's
//! `tests/module_graph.rs`: a rule of the house is that modules form no import cycle — one job
//! each, and a dependency direction you can draw.
//!
//! Every file is a module (`a/mod.rs` and `a.rs` are `a`; `lib.rs` and `main.rs` the root). A
//! path `crate::a::b…`, `super::…` or `self::…` outside a comment is a reference, `use` lists
//! (`crate::{a, b::{c, d}}`) included. The graph is checked at every level: in a scope (the
//! crate, or a module with submodules) the nodes are its child modules, and a child depends on
//! a sibling when any file under it refers to anything under that sibling. A parent's own file
//! using its children is the normal direction and is not an edge between siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`["source", "live"]`).
pub type ModPath = Vec<String>;

/// Child → siblings it depends on, in one scope.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// One source file: its module and the module paths it refers to.
#[derive(Debug, Clone)]
pub struct File {
    pub module: ModPath,
    pub refs: Vec<ModPath>,
}

/// Reads every `.rs` file under `src`.
///
/// # Panics
/// When the directory cannot be read: the test that called it fails, saying which.
pub fn read(src: &Path) -> Vec<File> {
    let mut files = Vec::new();
    walk(src, src, &mut files);
    files
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<File>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let module = module_of(root, &path);
            let refs = references(&text, &module);
            out.push(File { module, refs });
        }
    }
}

/// `a/b.rs` → `[a, b]`; `a/mod.rs` → `[a]`; `lib.rs`, `main.rs` → `[]`.
fn module_of(root: &Path, path: &Path) -> ModPath {
    let rel = path.strip_prefix(root).unwrap_or(path).with_extension("");
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") || (parts.len() == 1 && is_root(&parts[0])) {
        parts.pop();
    }
    parts
}

fn is_root(stem: &str) -> bool {
    stem == "lib" || stem == "main"
}

/// The module paths `text` refers to, resolved from `module`.
pub fn references(text: &str, module: &[String]) -> Vec<ModPath> {
    // `super` of `a/b.rs` (module [a, b]) is [a]; of `a/mod.rs` (module [a]) it is [].
    let parent: ModPath = module[..module.len().saturating_sub(1)].to_vec();
    let mut refs = Vec::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("//") {
            continue;
        }
        // A file's unit tests (its `#[cfg(test)] mod`, last by convention) may use anything.
        if line == "#[cfg(test)]" && lines.peek().is_some_and(|l| l.starts_with("mod ")) {
            break;
        }
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", parent.clone()),
            ("self::", module.to_vec()),
        ] {
            for (at, _) in line.match_indices(prefix) {
                let before = line[..at].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let mut rest = &line[at + prefix.len()..];
                paths(&mut rest, &base, &mut refs);
            }
        }
    }
    refs
}

/// Parses `a::b::{c, d::e}` at the start of `rest` into full paths under `base`.
fn paths(rest: &mut &str, base: &[String], out: &mut Vec<ModPath>) {
    let mut path = base.to_vec();
    loop {
        *rest = rest.trim_start();
        if let Some(inner) = rest.strip_prefix('{') {
            *rest = inner;
            loop {
                paths(rest, &path, out);
                *rest = rest.trim_start();
                match rest.chars().next() {
                    Some(',') => *rest = &rest[1..],
                    Some('}') => {
                        *rest = &rest[1..];
                        return;
                    }
                    // The list goes on past the line's end, or is not a list after all.
                    _ => return,
                }
            }
        }
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        *rest = &rest[ident.len()..];
        path.push(ident);
        match rest.strip_prefix("::") {
            Some(r) => *rest = r,
            None => break,
        }
    }
    if path.len() > base.len() {
        out.push(path);
    }
}

/// Every scope with two or more child modules, and its graph.
pub fn scopes(files: &[File]) -> BTreeMap<ModPath, Graph> {
    let modules: BTreeSet<ModPath> = files.iter().map(|f| f.module.clone()).collect();
    let mut out: BTreeMap<ModPath, Graph> = BTreeMap::new();
    for m in &modules {
        if let Some((child, scope)) = m.split_last() {
            out.entry(scope.to_vec())
                .or_default()
                .entry(child.clone())
                .or_default();
        }
    }
    for f in files {
        for r in &f.refs {
            add_edge(&mut out, &f.module, r);
        }
    }
    out.retain(|_, g| g.len() > 1);
    out
}

/// `from` (a file's module) refers to `to`: an edge in the deepest scope that holds both
/// under different children.
fn add_edge(scopes: &mut BTreeMap<ModPath, Graph>, from: &[String], to: &[String]) {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common >= from.len() || common >= to.len() {
        // Within the same module, or a parent and its child.
        return;
    }
    let scope = &from[..common];
    let Some(g) = scopes.get_mut(scope) else {
        return;
    };
    let (a, b) = (&from[common], &to[common]);
    if g.contains_key(b) {
        g.entry(a.clone()).or_default().insert(b.clone());
    }
}

/// A cycle in `g`, if any, as the nodes in order with the first repeated at the end.
pub fn cycle(g: &Graph) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| find_cycle(g, n, &mut Vec::new(), &mut done))
}

fn find_cycle(
    g: &Graph,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|p| p == node) {
        let mut c = path[at..].to_vec();
        c.push(node.to_owned());
        return Some(c);
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

/// Every import cycle of the crate whose sources are under `src`, one line each
/// (`scope: a → b → a`); empty when there is none.
pub fn cycles(src: &Path) -> Vec<String> {
    scopes(&read(src))
        .iter()
        .filter_map(|(scope, g)| {
            cycle(g).map(|c| format!("{}: {}", scope_name(scope), c.join(" → ")))
        })
        .collect()
}

/// The test each crate's `tests/module_graph.rs` runs: no import cycle at any level under
/// `src`, and the edge `from → to` between two of the crate's top modules seen (a reader that
/// sees nothing would find no cycle either).
///
/// # Panics
/// With every cycle found, or when the edge is not seen.
pub fn assert_acyclic(src: &str, (from, to): (&str, &str)) {
    let files = read(Path::new(src));
    let scopes = scopes(&files);
    let root = scopes.get(&Vec::new());
    assert!(
        root.and_then(|g| g.get(from))
            .is_some_and(|deps| deps.contains(to)),
        "the reader did not see {from} → {to} in {src}: {root:?}"
    );
    let cycles = cycles(Path::new(src));
    assert!(
        cycles.is_empty(),
        "import cycles in {src}:\n{}",
        cycles.join("\n")
    );
}

fn scope_name(scope: &[String]) -> String {
    if scope.is_empty() {
        "crate".to_owned()
    } else {
        scope.join("::")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(p: &[&str]) -> ModPath {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn use_lists_nested_and_relative_paths_resolve() {
        let text = "use crate::{model::Model, source::{live, Said}};\nuse super::tape::Speed;\n\
                    // crate::commented::out\nlet x = self::inner::f();";
        let refs = references(text, &v(&["source", "replay"]));
        assert!(refs.contains(&v(&["model", "Model"])));
        assert!(refs.contains(&v(&["source", "live"])));
        assert!(refs.contains(&v(&["source", "Said"])));
        assert!(refs.contains(&v(&["source", "tape", "Speed"])));
        assert!(refs.contains(&v(&["source", "replay", "inner", "f"])));
        assert!(!refs.iter().any(|r| r[0] == "commented"));
    }

    #[test]
    fn a_cycle_between_siblings_is_found_at_its_level() {
        let files = vec![
            File {
                module: v(&["a", "x"]),
                refs: vec![v(&["a", "y", "f"])],
            },
            File {
                module: v(&["a", "y"]),
                refs: vec![v(&["a", "x", "g"])],
            },
            File {
                module: v(&["b"]),
                refs: vec![v(&["a", "x"])],
            },
            File {
                module: v(&["a"]),
                refs: vec![v(&["a", "x"])],
            },
        ];
        let s = scopes(&files);
        assert_eq!(cycle(&s[&v(&[])]), None, "a → b is one way");
        let c = cycle(&s[&v(&["a"])]).expect("x ↔ y");
        assert!(c.contains(&"x".to_owned()) && c.contains(&"y".to_owned()));
    }

    #[test]
    fn a_parent_using_its_children_is_no_edge() {
        let files = vec![
            File {
                module: v(&["a"]),
                refs: vec![v(&["a", "x"])],
            },
            File {
                module: v(&["a", "x"]),
                refs: vec![v(&["a", "Item"])],
            },
            File {
                module: v(&["a", "y"]),
                refs: vec![],
            },
        ];
        assert_eq!(cycle(&scopes(&files)[&v(&["a"])]), None);
    }
}
