//! An instrumented Groth16 prover over BLS12-381. It carries the proofscope probe like any other
//! prover would: a dependency on `proofscope-probe`, re-exported as `probe` to keep call sites
//! short.

pub mod cli;
pub mod gpu;
pub mod groth16;
pub mod output;

pub use proofscope_probe as probe;
pub use proofscope_probe::{marker, span};
