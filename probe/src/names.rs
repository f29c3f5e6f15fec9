//! Interned names. A call site registers its name once per process (the id is cached in a
//! static inside the `span!` macro); afterwards a span refers to its name by number.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug, Default)]
struct Table {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut g = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(Table::default))
}

/// Most distinct names a process may intern (ids travel in 24 bits on the hot path). Names
/// come from call sites and kernels, so this is never reached by a sane program; beyond it
/// every new name maps to one overflow name instead of corrupting ids.
pub const MAX_NAMES: usize = (1 << 24) - 2;
const OVERFLOW_NAME: &str = "<too many distinct names>";

/// The id of `name`, registering it on first use. Ids start at 1 and are never reused.
pub fn intern(name: &str) -> u32 {
    with_table(|t| {
        if let Some(&id) = t.ids.get(name) {
            return id;
        }
        let name = if t.names.len() >= MAX_NAMES {
            if let Some(&id) = t.ids.get(OVERFLOW_NAME) {
                return id;
            }
            OVERFLOW_NAME
        } else {
            name
        };
        t.names.push(name.to_owned());
        let id = t.names.len() as u32;
        t.ids.insert(name.to_owned(), id);
        id
    })
}

/// Number of names registered so far (the highest id).
pub fn count() -> u32 {
    with_table(|t| t.names.len() as u32)
}

/// Names with ids in `from..=to`, for definitions.
pub fn range(from: u32, to: u32) -> Vec<(u32, String)> {
    with_table(|t| {
        (from.max(1)..=to.min(t.names.len() as u32))
            .map(|id| (id, t.names[id as usize - 1].clone()))
            .collect()
    })
}

/// A place in the code that opens spans or markers under one static name. Created by the
/// `span!` / `marker!` macros as a `static`, so registration happens once per call site.
#[derive(Debug)]
pub struct CallSite {
    name: &'static str,
    id: AtomicU32,
}

impl CallSite {
    pub const fn new(name: &'static str) -> CallSite {
        CallSite {
            name,
            id: AtomicU32::new(0),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The interned id: one relaxed load after the first call.
    #[inline(always)]
    pub fn id(&self) -> u32 {
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 { id } else { self.register() }
    }

    #[cold]
    fn register(&self) -> u32 {
        let id = intern(self.name);
        self.id.store(id, Ordering::Relaxed);
        id
    }
}
