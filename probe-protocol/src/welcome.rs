//! What a reader that joins a session midway needs before anything else, defined once: the
//! prover's collector sends it to every viewer that subscribes, and a viewer that starts a
//! recording in the middle of a session writes it first, so the file reads on its own.

use crate::event::{Event, Hello, NameId, StackId, ThreadId};

/// The session's `Hello` and every definition made so far (names, threads, call stacks).
/// A new kind of definition is a field here, which both writers must then fill.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Welcome {
    /// `None` only for a stream that never said hello (a viewer's partial session).
    pub hello: Option<Hello>,
    pub names: Vec<(NameId, String)>,
    /// (id, name, OS thread id).
    pub threads: Vec<(ThreadId, String, u64)>,
    /// (id, frames innermost first).
    pub stacks: Vec<(StackId, Vec<String>)>,
}

impl Welcome {
    /// The events, in the order a reader needs them: `Hello`, then names, threads, stacks.
    pub fn into_events(self) -> Vec<Event> {
        let mut evs =
            Vec::with_capacity(1 + self.names.len() + self.threads.len() + self.stacks.len());
        evs.extend(self.hello.map(|h| Event::Hello(Box::new(h))));
        evs.extend(
            self.names
                .into_iter()
                .map(|(id, name)| Event::NameDef { id, name }),
        );
        evs.extend(
            self.threads
                .into_iter()
                .map(|(id, name, os_tid)| Event::ThreadDef { id, name, os_tid }),
        );
        evs.extend(
            self.stacks
                .into_iter()
                .map(|(id, frames)| Event::StackDef { id, frames }),
        );
        evs
    }
}
