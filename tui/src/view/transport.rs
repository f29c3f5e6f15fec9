//! The footer's transport line: where a replay stands and the keys that move it, drawn from the
//! source's [`Transport`] (the source knows nothing of keys).

use crate::input::{Action, key_of};
use proofscope_engine::format::dur;
use proofscope_engine::source::{Play, Transport};

/// The transport as the footer shows it.
pub fn line(t: &Transport) -> String {
    match t {
        Transport::Log { end_ns } => format!(
            "from a log: {} of the log's time, drawn whole  │  {} {} proof",
            dur(*end_ns),
            key_of(Action::PrevProof),
            key_of(Action::NextProof),
        ),
        Transport::Replay {
            play,
            speed,
            position_ns,
            end_ns,
            frame,
            frames,
        } => format!(
            "{} {}  │  +{} of {}  │  frame {frame}/{frames}  │  {} speed  {} {} proof  {} end  {} pause",
            match play {
                Play::Paused => "⏸",
                Play::Ended => "■",
                Play::Playing => "▶",
            },
            speed.label(),
            dur(*position_ns),
            dur(*end_ns),
            key_of(Action::Speed),
            key_of(Action::PrevProof),
            key_of(Action::NextProof),
            key_of(Action::Last),
            key_of(Action::Pause),
        ),
        Transport::ProverOutput(path) => format!("prover output → {path}"),
    }
}
