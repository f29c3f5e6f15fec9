//! Built-in, scalable circuits. Each has a *blank* form (no witness: for parameters and
//! shapes) and a form with a fresh random valid witness (for proving), and knows its expected
//! public inputs natively so verification checks the statement, not just the proof.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::gadgets::multipack;
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;

/// Which circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CircuitKind {
    /// A chain of SHA-256 compressions over random blocks: PoRep-like witnesses, mostly 0/1,
    /// which exercise the batch-addition split.
    Sha256,
    /// x ↦ x² repeated: dense witnesses.
    Squaring,
}

/// Smallest and largest log2 sizes accepted (2^27 is the 32 GiB PoRep domain).
pub const MAX_LOG: u32 = 27;

impl CircuitKind {
    pub fn name(self) -> &'static str {
        match self {
            CircuitKind::Sha256 => "sha256",
            CircuitKind::Squaring => "squaring",
        }
    }

    pub fn parse(s: &str) -> Option<CircuitKind> {
        match s {
            "sha256" | "sha-256" => Some(CircuitKind::Sha256),
            "squaring" | "square" => Some(CircuitKind::Squaring),
            _ => None,
        }
    }

    pub fn min_log(self) -> u32 {
        match self {
            // One compression is 25,840 constraints plus the 512 input bits: 2^15.
            CircuitKind::Sha256 => 15,
            CircuitKind::Squaring => 3,
        }
    }

    /// The circuit sized to fit a domain of 2^log (constraints + input constraints ≤ 2^log).
    pub fn size_for(self, log: u32) -> Result<CircuitSize, SizeError> {
        if log < self.min_log() || log > MAX_LOG {
            return Err(SizeError {
                kind: self,
                log,
                min: self.min_log(),
                max: MAX_LOG,
            });
        }
        let n = 1usize << log;
        Ok(match self {
            // len squarings + the output binding + 2 input constraints.
            CircuitKind::Squaring => CircuitSize {
                kind: self,
                log,
                units: n - 3,
            },
            CircuitKind::Sha256 => CircuitSize {
                kind: self,
                log,
                units: 1 + n.saturating_sub(SHA_FIRST_BLOCK_CONSTRAINTS)
                    / SHA_NEXT_BLOCK_CONSTRAINTS,
            },
        })
    }
}

/// Constraints of a one-block chain, everything included (its compression starts from the
/// constant IV, which is cheaper than a later block). Pinned by a test.
pub const SHA_FIRST_BLOCK_CONSTRAINTS: usize = 26_357;
/// Constraints each further block adds (compression + 512 input-bit booleanity).
pub const SHA_NEXT_BLOCK_CONSTRAINTS: usize = 26_704;

/// A size that does not exist for a circuit.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "impossible size 2^{log} for the {} circuit: it needs 2^{min} to 2^{max} constraints",
    kind.name()
)]
pub struct SizeError {
    pub kind: CircuitKind,
    pub log: u32,
    pub min: u32,
    pub max: u32,
}

/// A circuit kind at a size: `units` is the chain length (squarings or SHA-256 blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CircuitSize {
    pub kind: CircuitKind,
    pub log: u32,
    pub units: usize,
}

impl CircuitSize {
    /// The circuit without a witness.
    pub fn blank(&self) -> AnyCircuit {
        match self.kind {
            CircuitKind::Squaring => AnyCircuit::Squaring(SquaringChain {
                len: self.units,
                x0: None,
            }),
            CircuitKind::Sha256 => AnyCircuit::Sha256(Sha256Chain {
                blocks: self.units,
                data: None,
            }),
        }
    }

    /// The circuit with a fresh random witness, and its public inputs (without the leading 1).
    pub fn random(&self, rng: &mut impl RngCore) -> (AnyCircuit, Vec<Scalar>) {
        match self.kind {
            CircuitKind::Squaring => {
                let x0 = Scalar::random(&mut *rng);
                let c = SquaringChain {
                    len: self.units,
                    x0: Some(x0),
                };
                let out = c.output(x0);
                (AnyCircuit::Squaring(c), vec![out])
            }
            CircuitKind::Sha256 => {
                let data: Vec<[u8; 64]> = (0..self.units)
                    .map(|_| {
                        let mut b = [0u8; 64];
                        rng.fill_bytes(&mut b);
                        b
                    })
                    .collect();
                let inputs = Sha256Chain::expected_inputs(&data);
                (
                    AnyCircuit::Sha256(Sha256Chain {
                        blocks: self.units,
                        data: Some(data),
                    }),
                    inputs,
                )
            }
        }
    }
}

/// `x_{i+1} = x_i²` for `len` steps; the public input is the last value.
#[derive(Debug, Clone)]
pub struct SquaringChain {
    pub len: usize,
    pub x0: Option<Scalar>,
}

impl SquaringChain {
    pub fn output(&self, x0: Scalar) -> Scalar {
        (0..self.len).fold(x0, |x, _| x.square())
    }
}

impl Circuit<Scalar> for SquaringChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut val = self.x0;
        let mut x = cs.alloc(|| "x0", || val.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.len {
            let next = val.map(|v| v.square());
            let y = cs.alloc(
                || format!("x{}", i + 1),
                || next.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("square {i}"),
                |lc| lc + x,
                |lc| lc + x,
                |lc| lc + y,
            );
            x = y;
            val = next;
        }
        let out = cs.alloc_input(|| "out", || val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(
            || "bind output",
            |lc| lc + x,
            |lc| lc + CS::one(),
            |lc| lc + out,
        );
        Ok(())
    }
}

/// The SHA-256 initial hash value.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A chain of SHA-256 compressions from the IV over `blocks` 64-byte blocks; the public
/// inputs are the final state's 256 bits, multipacked.
#[derive(Debug, Clone)]
pub struct Sha256Chain {
    pub blocks: usize,
    pub data: Option<Vec<[u8; 64]>>,
}

impl Sha256Chain {
    /// The public inputs computed natively (sha2's compression function).
    pub fn expected_inputs(data: &[[u8; 64]]) -> Vec<Scalar> {
        let mut state = IV;
        for block in data {
            sha2::compress256(&mut state, &[(*block).into()]);
        }
        let bits: Vec<bool> = state
            .iter()
            .flat_map(|w| (0..32).map(move |j| (w >> (31 - j)) & 1 == 1))
            .collect();
        multipack::compute_multipacking(&bits)
    }
}

impl Circuit<Scalar> for Sha256Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut state: Vec<UInt32> = IV.iter().map(|&v| UInt32::constant(v)).collect();
        for b in 0..self.blocks {
            let block = self.data.as_ref().map(|d| d[b]);
            let mut bits = Vec::with_capacity(512);
            for i in 0..512 {
                let bit = block.map(|d| (d[i / 8] >> (7 - i % 8)) & 1 == 1);
                bits.push(Boolean::from(AllocatedBit::alloc(
                    cs.namespace(|| format!("block {b} bit {i}")),
                    bit,
                )?));
            }
            state = sha256_compression_function(
                cs.namespace(|| format!("compress {b}")),
                &bits,
                &state,
            )?;
        }
        let out: Vec<Boolean> = state.into_iter().flat_map(|u| u.into_bits_be()).collect();
        multipack::pack_into_inputs(cs.namespace(|| "output"), &out)
    }
}

/// Any built-in circuit.
#[derive(Debug, Clone)]
pub enum AnyCircuit {
    Squaring(SquaringChain),
    Sha256(Sha256Chain),
}

impl Circuit<Scalar> for AnyCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            AnyCircuit::Squaring(c) => c.synthesize(cs),
            AnyCircuit::Sha256(c) => c.synthesize(cs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::assignment::{ProvingAssignment, Shape};
    use rand::SeedableRng;

    #[test]
    fn sha256_constraint_counts_are_what_sizing_assumes() {
        let one = Shape::of(Sha256Chain {
            blocks: 1,
            data: None,
        })
        .unwrap();
        let three = Shape::of(Sha256Chain {
            blocks: 3,
            data: None,
        })
        .unwrap();
        assert_eq!(one.constraints, SHA_FIRST_BLOCK_CONSTRAINTS);
        assert_eq!(
            three.constraints - one.constraints,
            2 * SHA_NEXT_BLOCK_CONSTRAINTS
        );
        for (log, blocks) in [(15, 1), (16, 2), (17, 4)] {
            let size = CircuitKind::Sha256.size_for(log).unwrap();
            assert_eq!(size.units, blocks, "2^{log}");
            let c = SHA_FIRST_BLOCK_CONSTRAINTS + (blocks - 1) * SHA_NEXT_BLOCK_CONSTRAINTS;
            assert!(
                c <= 1 << log && c + SHA_NEXT_BLOCK_CONSTRAINTS > 1 << log,
                "2^{log} is filled"
            );
        }
    }

    #[test]
    fn witnesses_satisfy_and_match_native_outputs() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        for kind in [CircuitKind::Squaring, CircuitKind::Sha256] {
            let size = kind.size_for(kind.min_log()).unwrap();
            let (c, inputs) = size.random(&mut rng);
            let pa = ProvingAssignment::synthesize(c).unwrap();
            assert_eq!(
                &pa.input_assignment[1..],
                &inputs[..],
                "{kind:?} public inputs"
            );
            for i in 0..pa.a.len() {
                assert_eq!(
                    pa.a[i] * pa.b[i],
                    pa.c[i],
                    "{kind:?} constraint {i} unsatisfied"
                );
            }
            assert!(pa.constraints() <= 1 << size.log);
            let shape = Shape::of(size.blank()).unwrap();
            assert_eq!(shape.constraints, pa.constraints());
            assert_eq!(shape.a_aux_density, pa.a_aux_density);
            assert_eq!(shape.b_aux_density, pa.b_aux_density);
        }
    }

    #[test]
    fn impossible_sizes_are_refused_with_the_range() {
        let e = CircuitKind::Sha256.size_for(12).unwrap_err();
        assert!(e.to_string().contains("2^15"), "{e}");
        assert!(CircuitKind::Squaring.size_for(40).is_err());
    }
}
