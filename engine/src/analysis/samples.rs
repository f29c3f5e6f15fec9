//! Where a gap's thread ran, from the kernel's samples of its user-space call stack
//! (`StackSample`, protocol 1.7): the functions of the program's own code the samples inside
//! the gap were in, most samples first. A thread that ran code no span covers is then named
//! by that code ("in `ghost_cpu_loop` (c2.cpp), 28 of 29 samples").

use super::gaps::Interval;
use crate::model::{Session, ThreadId};

/// Functions named at most.
const TOP: usize = 3;

/// The stack samples of the gapped thread inside the gap.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StackSamples {
    pub total: u64,
    /// (function, samples), most first.
    pub top: Vec<(String, u64)>,
}

/// The samples of `thread` inside `gap`; `None` when there are none.
pub fn stack_samples(session: &Session, thread: ThreadId, gap: Interval) -> Option<StackSamples> {
    let series = session.stack_samples(thread)?;
    let mut by: Vec<(String, u64)> = Vec::new();
    let mut total = 0;
    for s in series.range(gap.start, gap.end) {
        total += 1;
        let stack = session.stack(crate::model::StackId(s.stack));
        let Some(f) = stack.and_then(super::frames::running_in) else {
            continue;
        };
        match by.iter_mut().find(|(x, _)| *x == f) {
            Some(x) => x.1 += 1,
            None => by.push((f, 1)),
        }
    }
    if total == 0 {
        return None;
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by.truncate(TOP);
    Some(StackSamples { total, top: by })
}

/// The samples in words: "in `f` (a.cpp), 28 of 29 samples; `g` (b.cpp) 1".
pub fn samples_sentence(s: &StackSamples) -> Option<String> {
    let ((first, n), rest) = s.top.split_first()?;
    let more: Vec<String> = rest.iter().map(|(f, k)| format!("{f} {k}")).collect();
    let more = if more.is_empty() {
        String::new()
    } else {
        format!("; {}", more.join(", "))
    };
    Some(format!(
        "its stack sampled in {first} {n} of {} time{}{more}",
        s.total,
        if s.total == 1 { "" } else { "s" }
    ))
}
