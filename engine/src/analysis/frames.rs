//! Who freed (or allocated) a block, from its call stack: the drop that released it and the
//! code that ran the drop, named as a reader looks for them — `drop_in_place<ProvingAssignment>`
//! ← `prove_batch` (pipeline.rs:312) — past the allocator's, the probe's and the standard
//! library's own frames.

use crate::model::{Block, Session};

/// Who made block `b`'s call, when the probe captured its stack.
pub fn who_of(session: &Session, b: &Block) -> Option<String> {
    who(session.stack(b.stack?)?)
}

/// Bytes by who freed them: adds `b` to the tally (kept most bytes first).
pub fn tally(by: &mut Vec<(String, u64)>, session: &Session, b: &Block) {
    let Some(w) = who_of(session, b) else { return };
    match by.iter_mut().find(|(x, _)| *x == w) {
        Some(x) => x.1 += b.bytes,
        None => by.push((w, b.bytes)),
    }
    by.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
}

/// One frame as the probe symbolised it: `function (file:line)`, or an address.
fn split(frame: &str) -> Frame<'_> {
    match frame.rsplit_once(" (") {
        Some((name, loc)) if loc.ends_with(')') => (name, Some(&loc[..loc.len() - 1])),
        _ => (frame, None),
    }
}

/// Frames of the machinery between the code and the system allocator. Inlined frames carry
/// short names (`dealloc`, `drop_in_place<…>`), so a frame is also known by its file.
fn is_machinery(name: &str, loc: Option<&str>) -> bool {
    const PREFIXES: [&str; 11] = [
        "backtrace::",
        "proofscope_probe::",
        "<proofscope_probe::",
        "proofscope_preload::",
        "__rust",
        "__rdl",
        "__rg_",
        "alloc::alloc::",
        "<alloc::alloc::",
        "std::alloc::",
        "0x",
    ];
    const NAMES: [&str; 12] = [
        "alloc",
        "dealloc",
        "realloc",
        "alloc_zeroed",
        "free",
        "cfree",
        "__libc_free",
        "munmap",
        "malloc",
        "calloc",
        "operator delete(void*)",
        "operator new(unsigned long)",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || NAMES.contains(&name)
        || loc.is_some_and(|l| {
            l.contains("/backtrace-0.")
                || l.contains("proofscope-probe")
                || l.contains("proofscope-preload")
                || l.contains("/probe/src/")
                || l.contains("/preload/src/")
        })
}

fn is_drop(name: &str) -> bool {
    let n = name.strip_prefix("core::ptr::").unwrap_or(name);
    n.starts_with("drop_in_place<")
}

/// A drop of a standard container: the interesting drop is the one of what it holds.
fn is_container_drop(name: &str) -> bool {
    let n = name.strip_prefix("core::ptr::").unwrap_or(name);
    [
        "drop_in_place<alloc::vec::Vec<",
        "drop_in_place<alloc::boxed::Box<",
        "drop_in_place<alloc::sync::Arc<",
        "drop_in_place<alloc::rc::Rc<",
        "drop_in_place<alloc::raw_vec",
        "drop_in_place<[",
    ]
    .iter()
    .any(|p| n.starts_with(p))
}

/// The standard library's or a dependency's frame (by name, or by a source file that is not
/// the program's own).
fn is_library(name: &str, loc: Option<&str>) -> bool {
    [
        "core::", "alloc::", "std::", "<core::", "<alloc::", "<std::", "rayon", "<rayon",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || loc.is_some_and(|l| {
            l.starts_with("/rustc/")
                || l.contains("/.cargo/registry/")
                || l.contains("/.cargo/git/")
                || l.starts_with("/usr/include/")
        })
}

/// `a::b::C<d::E>` → `C<E>`; `a::b::f::{{closure}}` → `f::{{closure}}`.
pub fn short(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut seg = String::new();
    for c in name.chars() {
        match c {
            '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | '&' | ';' => {
                out.push_str(&seg);
                seg.clear();
                out.push(c);
            }
            ':' => seg.push(c),
            _ => {
                // A path segment ends at `::`: drop it when it is a module (lowercase).
                if seg.ends_with("::") {
                    let head = &seg[..seg.len() - 2];
                    let last = head.rsplit("::").next().unwrap_or(head);
                    let module = last.chars().next().is_some_and(|f| f.is_ascii_lowercase())
                        && !last.starts_with("{{");
                    if module {
                        seg.clear();
                    }
                }
                seg.push(c);
            }
        }
    }
    out.push_str(&seg);
    // The default allocator parameter says nothing.
    out.replace(", Global>", ">")
}

fn file_line(loc: &str) -> String {
    match loc.rsplit_once(':') {
        Some((path, line)) => {
            let file = path.rsplit('/').next().unwrap_or(path);
            format!("{file}:{line}")
        }
        None => loc.to_owned(),
    }
}

/// The frames a reader wants for a block's stack: the drop that freed it (the outermost
/// `drop_in_place` of a run, past container drops) and the first frame of the program's own
/// code after it, with its file:line — or, with no drop in the stack (a C `free`, a realloc),
/// the outermost C++ destructor and its caller, else the first two frames of the program's
/// code. `None` when nothing but machinery is known.
pub fn who(frames: &[String]) -> Option<String> {
    let parsed: Vec<Frame<'_>> = frames
        .iter()
        .map(|f| split(f))
        .filter(|(n, l)| !is_machinery(n, *l))
        .collect();
    // `head ← the first frame of the program's own code after frame `last``.
    let with_caller = |head: String, last: usize| match parsed[last + 1..]
        .iter()
        .find(|(n, l)| !is_library(n, *l))
    {
        Some(&c) => format!("{head} ← {}", describe(c)),
        None => head,
    };
    if let Some(first) = parsed.iter().position(|(n, _)| is_drop(n)) {
        // Drops, containers' `Drop::drop` and `mem::drop` between them belong to the run.
        let last = run_end(&parsed, first, |(n, l)| {
            is_drop(n) || (is_library(n, *l) && (n.starts_with("drop") || n.contains("::drop")))
        });
        let run = &parsed[first..=last];
        let chosen = run
            .iter()
            .rev()
            .find(|(n, _)| is_drop(n) && !is_container_drop(n))
            .or_else(|| run.iter().rev().find(|(n, _)| is_drop(n)))?;
        return Some(with_caller(format!("`{}`", short(chosen.0)), last));
    }
    // C++: the outermost destructor of the first run, then the code that ran it.
    if let Some(first) = parsed.iter().position(|(n, _)| n.contains("::~")) {
        let last = run_end(&parsed, first, |(n, _)| n.contains("::~"));
        return Some(with_caller(describe(parsed[last]), last));
    }
    let mut own = parsed.iter().filter(|(n, l)| !is_library(n, *l)).copied();
    let a = own.next()?;
    Some(match own.next() {
        Some(b) => format!("{} ← {}", describe(a), describe(b)),
        None => describe(a),
    })
}

/// The function of the program's own code a sampled stack was running in: its innermost frame
/// that is neither the probe's, the allocator's nor a library's (nor an unsymbolised address),
/// as "`name` (file)" — without the line, so that the samples of one function count together.
/// The innermost frame when none is the program's.
///
/// The C library's system-call wrappers (`__GI_mlock` in syscall-template.S) are passed over
/// for their caller when the stack has it, and said by their plain name when it has not (a
/// thread in the kernel, its callers' frames lost without frame pointers).
pub fn running_in(frames: &[String]) -> Option<String> {
    let parsed: Vec<Frame<'_>> = frames.iter().map(|f| split(f)).collect();
    let program =
        |(n, l): &&Frame<'_>| !is_machinery(n, *l) && !is_library(n, *l) && !n.starts_with("0x");
    let own = parsed
        .iter()
        .filter(program)
        .find(|(n, l)| !is_c_library(n, *l));
    if own.is_none()
        && let Some(&(name, _)) = parsed.iter().find(program)
    {
        let plain = name
            .trim_start_matches("__GI_")
            .trim_start_matches("__libc_");
        return Some(format!("`{plain}` (the C library)"));
    }
    let &(name, loc) = own.or_else(|| parsed.first())?;
    let file = loc.map(|l| {
        let path = l.rsplit_once(':').map_or(l, |(p, _)| p);
        path.rsplit('/').next().unwrap_or(path).to_owned()
    });
    Some(match file {
        Some(f) => format!("`{}` ({f})", short(name)),
        None => format!("`{}`", short(name)),
    })
}

/// A frame of the C library's own: its internal names, its assembly and `sysdeps/` sources.
fn is_c_library(name: &str, loc: Option<&str>) -> bool {
    name.starts_with("__GI_")
        || name.starts_with("__libc_")
        || loc.is_some_and(|l| l.contains("sysdeps/") || l.contains("syscall-template.S"))
}

/// A frame: function name and `file:line`, when known.
type Frame<'a> = (&'a str, Option<&'a str>);

/// The last index of the run of frames from `first` on that `in_run` accepts.
fn run_end(frames: &[Frame<'_>], first: usize, in_run: impl Fn(&Frame<'_>) -> bool) -> usize {
    let mut last = first;
    while frames.get(last + 1).is_some_and(&in_run) {
        last += 1;
    }
    last
}

fn describe((name, loc): Frame<'_>) -> String {
    match loc {
        Some(l) => format!("`{}` ({})", short(name), file_line(l)),
        None => format!("`{}`", short(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_drop_of_what_a_container_held_and_the_code_that_ran_it() {
        let stack = s(&[
            "backtrace::backtrace::libunwind::trace (/x/libunwind.rs:117)",
            "proofscope_probe::alloc::capture_stack_cold (/p/alloc.rs:240)",
            "<proofscope_probe::alloc::CountingAllocator as core::alloc::global::GlobalAlloc>::dealloc (/p/alloc.rs:300)",
            "__rustc::__rust_dealloc",
            "<alloc::raw_vec::RawVec<T,A> as core::ops::drop::Drop>::drop (/rustc/raw_vec.rs:400)",
            "core::ptr::drop_in_place<alloc::raw_vec::RawVec<blstrs::scalar::Scalar>> (/rustc/mod.rs:524)",
            "core::ptr::drop_in_place<alloc::vec::Vec<blstrs::scalar::Scalar>> (/rustc/mod.rs:524)",
            "core::ptr::drop_in_place<prover_core::groth16::assignment::ProvingAssignment> (/rustc/mod.rs:524)",
            "core::ptr::drop_in_place<alloc::vec::Vec<prover_core::groth16::assignment::ProvingAssignment>> (/rustc/mod.rs:524)",
            "prover_core::groth16::pipeline::prove_batch (/w/prover-core/src/groth16/pipeline.rs:312)",
            "main",
        ]);
        assert_eq!(
            who(&stack).as_deref(),
            Some("`drop_in_place<ProvingAssignment>` ← `prove_batch` (pipeline.rs:312)")
        );
    }

    /// As the probe symbolises a real stack: inlined frames carry short names.
    #[test]
    fn inlined_frames_with_short_names() {
        let stack = s(&[
            "drop_in_place<[alloc::vec::Vec<u8, alloc::alloc::Global>]> (/rustc/abc/library/core/src/ptr/mod.rs:805)",
            "drop<alloc::vec::Vec<u8, alloc::alloc::Global>, alloc::alloc::Global> (/rustc/abc/library/alloc/src/vec/mod.rs:4224)",
            "drop_in_place<alloc::vec::Vec<alloc::vec::Vec<u8, alloc::alloc::Global>, alloc::alloc::Global>> (/rustc/abc/library/core/src/ptr/mod.rs:805)",
            "drop<alloc::vec::Vec<alloc::vec::Vec<u8, alloc::alloc::Global>, alloc::alloc::Global>> (/rustc/abc/library/core/src/mem/mod.rs:975)",
            "main (/work/main/probe/examples/minimal_prover.rs:108)",
        ]);
        assert_eq!(
            who(&stack).as_deref(),
            Some("`drop_in_place<Vec<Vec<u8>>>` ← `main` (minimal_prover.rs:108)")
        );
    }

    #[test]
    fn containers_only_and_no_drop_at_all() {
        let stack = s(&[
            "core::ptr::drop_in_place<alloc::vec::Vec<u8>> (/rustc/mod.rs:524)",
            "core::ptr::drop_in_place<alloc::vec::Vec<alloc::vec::Vec<u8>>> (/rustc/mod.rs:524)",
            "core::mem::drop (/rustc/mem/mod.rs:950)",
            "minimal_prover::main (/w/probe/examples/minimal_prover.rs:106)",
        ]);
        assert_eq!(
            who(&stack).as_deref(),
            Some("`drop_in_place<Vec<Vec<u8>>>` ← `main` (minimal_prover.rs:106)")
        );
        let c = s(&[
            "free",
            "std::vector<int>::~vector() (/usr/include/c++/12/bits/stl_vector.h:730)",
            "prove_batch(Job&) (/w/c2.cpp:88)",
        ]);
        assert_eq!(
            who(&c).as_deref(),
            Some("`vector<int>::~vector()` (stl_vector.h:730) ← `prove_batch(Job&)` (c2.cpp:88)")
        );
        assert_eq!(who(&s(&["0x1234", "free"])), None);
    }
}
