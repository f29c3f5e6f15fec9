//! Call stacks of large blocks, on the collector thread: interned (a stack is defined once with
//! `StackDef`, then referred to by id) and symbolised here, off the allocator's path. Bounded:
//! past [`MAX_STACKS`] distinct stacks, new ones are not defined and their blocks carry none.

use crate::alloc::RawStack;
use probe_protocol::Event;
use std::collections::HashMap;

/// Distinct stacks a session defines at most (each is kept for viewers that join later).
pub const MAX_STACKS: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct StackTable {
    ids: HashMap<Vec<usize>, u32>,
    /// Every definition sent (id, frames), for the welcome of a viewer that joins later.
    defs: Vec<(u32, Vec<String>)>,
    /// Stacks drained but whose block has not arrived yet, by sequence number.
    pending: HashMap<u64, RawStack>,
    /// Distinct stacks refused past [`MAX_STACKS`].
    pub refused: u64,
}

impl StackTable {
    pub fn add_pending(&mut self, s: RawStack) {
        // A stack whose block was dropped would wait forever: the pending set stays no larger
        // than the queue that feeds it.
        if self.pending.len() >= crate::alloc::STACK_QUEUE_CAPACITY {
            self.pending.clear();
        }
        self.pending.insert(s.seq, s);
    }

    /// The id of the stack captured as `seq`, defining it (into `defs`) on first sight.
    pub fn id_of(&mut self, seq: u64, defs: &mut Vec<Event>) -> Option<u32> {
        let raw = self.pending.remove(&seq)?;
        self.id_of_ips(raw.ips[..raw.depth as usize].to_vec(), defs)
    }

    /// The id of the stack of return addresses `ips` (innermost first), defining it on first
    /// sight; `None` past [`MAX_STACKS`].
    pub fn id_of_ips(&mut self, ips: Vec<usize>, defs: &mut Vec<Event>) -> Option<u32> {
        if let Some(&id) = self.ids.get(&ips) {
            return Some(id);
        }
        if self.ids.len() >= MAX_STACKS {
            self.refused += 1;
            return None;
        }
        let id = self.ids.len() as u32 + 1;
        let frames = symbolise(&ips);
        self.ids.insert(ips, id);
        defs.push(Event::StackDef {
            id,
            frames: frames.clone(),
        });
        self.defs.push((id, frames));
        Some(id)
    }

    /// Every stack defined: (id, frames).
    pub fn definitions(&self) -> impl Iterator<Item = (u32, Vec<String>)> + '_ {
        self.defs.iter().cloned()
    }
}

/// `function (file:line)` per frame, innermost first; inlined frames each get a line. A
/// return address is looked up one byte back, inside the call that it returns from.
fn symbolise(ips: &[usize]) -> Vec<String> {
    let mut frames = Vec::with_capacity(ips.len());
    for (i, &ip) in ips.iter().enumerate() {
        let addr = if i == 0 { ip } else { ip.saturating_sub(1) };
        let before = frames.len();
        backtrace::resolve(addr as *mut std::ffi::c_void, |sym| {
            let name = sym
                .name()
                .map(|n| format!("{n:#}"))
                .unwrap_or_else(|| format!("{ip:#x}"));
            let at = match (sym.filename(), sym.lineno()) {
                (Some(f), Some(l)) => format!(" ({}:{l})", f.display()),
                _ => String::new(),
            };
            frames.push(format!("{name}{at}"));
        });
        if frames.len() == before {
            frames.push(format!("{ip:#x}"));
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "symbolises through the unwinder and the binary's DWARF"
    )]
    fn a_stack_is_defined_once_and_named() {
        let mut t = StackTable::default();
        // This test's own stack, as the allocator hook takes it.
        let mut ips = [0usize; crate::alloc::STACK_DEPTH];
        let mut depth = 0;
        backtrace::trace(|f| {
            ips[depth] = f.ip() as usize;
            depth += 1;
            depth < crate::alloc::STACK_DEPTH
        });
        for seq in [1, 2] {
            t.add_pending(RawStack {
                seq,
                depth: depth as u8,
                ips,
            });
        }
        let mut defs = Vec::new();
        assert_eq!(t.id_of(1, &mut defs), Some(1));
        assert_eq!(t.id_of(2, &mut defs), Some(1));
        assert_eq!(t.id_of(3, &mut defs), None);
        assert_eq!(defs.len(), 1);
        let Event::StackDef { frames, .. } = &defs[0] else {
            panic!("{defs:?}")
        };
        assert!(
            frames.iter().any(
                |f| f.contains("a_stack_is_defined_once_and_named") && f.contains("stacks.rs:")
            ),
            "{frames:?}"
        );
    }
}
