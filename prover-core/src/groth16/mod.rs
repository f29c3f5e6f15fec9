//! A Groth16 prover over BLS12-381, shaped like Filecoin's C2 so its timeline speaks the
//! operators' language.

pub mod assignment;
pub mod backend;
pub mod circuits;
pub mod column;
pub mod dealloc;
pub mod msm;
pub mod ntt;
pub mod overlap;
pub mod params;
pub mod pipeline;
pub mod prep;
