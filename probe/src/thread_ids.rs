//! Wire ids of the threads a session has seen, and their definitions. A thread is defined
//! (`ThreadDef`) the first time anything of it is sent; the definitions a new viewer receives
//! are those of threads that are alive or that a frame still kept in the flight recorder
//! mentions, so a server that starts threads for every proof does not grow its welcome
//! without bound.

use probe_protocol::Event;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug)]
struct ThreadInfo {
    os_tid: u32,
    name: String,
    /// Its ring is open (the thread has not exited as far as the probe knows).
    has_ring: bool,
    /// The data-stream position of its latest event (see `EncodedFrame::first_pos`).
    last_pos: u64,
}

#[derive(Debug, Default)]
pub(crate) struct ThreadTable {
    /// OS thread id → wire id.
    by_tid: HashMap<u32, u32>,
    /// Wire id → what it is, for definitions.
    info: BTreeMap<u32, ThreadInfo>,
    next: u32,
}

impl ThreadTable {
    /// The wire id of an OS thread, defining it (into `defs`) on first sight. A reused tid
    /// under another name is a new thread.
    pub fn id_of(&mut self, os_tid: u32, name: Option<&str>, defs: &mut Vec<Event>) -> u32 {
        if let Some(&id) = self.by_tid.get(&os_tid)
            && let Some(info) = self.info.get(&id)
            && name.is_none_or(|n| n == info.name)
        {
            return id;
        }
        let name = name
            .map(str::to_owned)
            .unwrap_or_else(|| crate::system::thread_label(os_tid));
        self.next += 1;
        let id = self.next;
        self.by_tid.insert(os_tid, id);
        defs.push(Event::ThreadDef {
            id,
            name: name.clone(),
            os_tid: os_tid as u64,
        });
        self.info.insert(
            id,
            ThreadInfo {
                os_tid,
                name,
                has_ring: false,
                last_pos: 0,
            },
        );
        id
    }

    pub fn attach_ring(&mut self, id: u32) {
        if let Some(t) = self.info.get_mut(&id) {
            t.has_ring = true;
        }
    }

    pub fn ring_closed(&mut self, id: u32) {
        if let Some(t) = self.info.get_mut(&id) {
            t.has_ring = false;
        }
    }

    /// Notes that the event at data-stream position `pos` is of thread `id`.
    pub fn seen(&mut self, id: u32, pos: u64) {
        if let Some(t) = self.info.get_mut(&id) {
            t.last_pos = t.last_pos.max(pos);
        }
    }

    /// Forgets threads that have exited (ring closed, or gone from `/proc` for threads that
    /// never had a ring) and whose latest event went out before `oldest_kept` (the position of
    /// the oldest event still kept; `None`: no frame is kept): no frame a viewer can still
    /// receive mentions them.
    pub fn retire_before(&mut self, oldest_kept: Option<u64>) {
        let gone: Vec<u32> = self
            .info
            .iter()
            .filter(|(_, t)| {
                !t.has_ring
                    && oldest_kept.is_none_or(|o| t.last_pos < o)
                    && !crate::system::thread_alive(t.os_tid)
            })
            .map(|(&id, _)| id)
            .collect();
        for id in gone {
            if let Some(t) = self.info.remove(&id)
                && self.by_tid.get(&t.os_tid) == Some(&id)
            {
                self.by_tid.remove(&t.os_tid);
            }
        }
    }

    /// Definitions of every thread kept, in id order.
    /// Every thread defined: (id, name, OS thread id).
    pub fn definitions(&self) -> impl Iterator<Item = (u32, String, u64)> + '_ {
        self.info
            .iter()
            .map(|(&id, t)| (id, t.name.clone(), t.os_tid as u64))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.info.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An OS thread id no live thread has (above the kernel's pid_max limit of 2^22).
    const DEAD_TID: u32 = (1 << 22) + 17;

    #[test]
    fn exited_threads_are_forgotten_once_no_kept_frame_mentions_them() {
        let mut t = ThreadTable::default();
        let mut defs = Vec::new();
        let a = t.id_of(DEAD_TID, Some("worker"), &mut defs);
        assert_eq!(t.id_of(DEAD_TID, None, &mut defs), a);
        assert_eq!(defs.len(), 1);
        t.attach_ring(a);
        t.seen(a, 100);
        t.retire_before(None);
        assert_eq!(t.len(), 1, "a thread with an open ring stays");
        t.ring_closed(a);
        t.retire_before(Some(50));
        assert_eq!(t.len(), 1, "a kept frame from 50 on may mention it");
        t.retire_before(Some(101));
        assert_eq!(t.len(), 0);
        // Seen again: defined again, under a new id.
        let b = t.id_of(DEAD_TID, Some("worker"), &mut defs);
        assert_ne!(a, b);
        assert_eq!(defs.len(), 2);
    }

    #[test]
    fn a_reused_tid_under_another_name_is_another_thread() {
        let mut t = ThreadTable::default();
        let mut defs = Vec::new();
        let a = t.id_of(DEAD_TID, Some("prep_msm"), &mut defs);
        let b = t.id_of(DEAD_TID, Some("gpu-0"), &mut defs);
        assert_ne!(a, b);
        assert_eq!(t.definitions().count(), 2);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri's thread ids are not the kernel's (/proc)")]
    fn live_threads_without_a_ring_stay() {
        let mut t = ThreadTable::default();
        let me = crate::thread::os_tid();
        let id = t.id_of(me, Some("me"), &mut Vec::new());
        t.seen(id, 1);
        t.retire_before(None);
        assert_eq!(t.len(), 1);
    }
}
