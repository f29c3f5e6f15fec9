//! Typed ids: a span id cannot be passed where a proof id is meant, and "none" is an `Option`,
//! never a `0`. They wrap the wire's numbers unchanged (docs/PROTOCOL.md).

use serde::Serialize;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident($raw:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub $raw);

        impl $name {
            /// The number on the wire.
            pub fn get(self) -> $raw {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id!(
    /// A proof (one batch), unique within a session.
    ProofId(u64)
);
id!(
    /// A span, unique within a session.
    SpanId(u64)
);
id!(
    /// A thread as the stream numbers it (small, dense, per session).
    ThreadId(u32)
);
id!(
    /// An interned name.
    NameId(u32)
);
id!(
    /// An interned call stack.
    StackId(u32)
);
