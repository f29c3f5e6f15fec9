//! An instrumented Groth16 prover over BLS12-381, and the proofscope probe that watches it.

pub mod cli;
pub mod gpu;
pub mod groth16;
pub mod probe;
