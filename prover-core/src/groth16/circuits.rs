//! Built-in, scalable circuits. Each has a *blank* form (no witness: for parameters and
//! shapes) and a form with a fresh random valid witness (for proving), and knows its expected
//! public inputs natively so verification checks the statement, not just the proof.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use bellperson::gadgets::multipack;
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use blstrs::Scalar;
use ff::Field;
use rand::SeedableRng;
use rand_core::RngCore;

/// Which circuit (also the `--circuit` values: clap reads these doc comments as their help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum CircuitKind {
    /// A chain of SHA-256 compressions over random blocks: a PoRep-like witness, mostly 0/1
    Sha256,
    /// x ↦ x² repeated: a dense witness, no 0 or 1 anywhere
    Squaring,
    /// Squares of a witness drawn like supraseal's C2 benchmark: 45 % zeros, 45 % ones, 10 %
    /// field elements, at positions the circuit fixes
    Mixed,
}

/// Smallest and largest log2 sizes accepted (2^27 is the 32 GiB PoRep domain).
pub const MAX_LOG: u32 = 27;

impl CircuitKind {
    /// The name `--circuit` takes (a test holds it to clap's).
    pub fn name(self) -> &'static str {
        match self {
            CircuitKind::Sha256 => "sha256",
            CircuitKind::Squaring => "squaring",
            CircuitKind::Mixed => "mixed",
        }
    }

    pub fn min_log(self) -> u32 {
        match self {
            // One compression is 25,840 constraints plus the 512 input bits: 2^15.
            CircuitKind::Sha256 => 15,
            CircuitKind::Squaring | CircuitKind::Mixed => 3,
        }
    }

    /// The size `--log-size` defaults to: the smallest for SHA-256, a few thousand
    /// constraints for the others (a proof in well under a second on two cores).
    pub fn default_log(self) -> u32 {
        match self {
            CircuitKind::Sha256 => 15,
            CircuitKind::Squaring | CircuitKind::Mixed => 12,
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
            // len squares + their running sums + 2 input constraints.
            CircuitKind::Mixed => CircuitSize {
                kind: self,
                log,
                units: MixedChain::len_within(n - 2),
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
            CircuitKind::Mixed => AnyCircuit::Mixed(MixedChain {
                len: self.units,
                seed: None,
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
            CircuitKind::Mixed => {
                let c = MixedChain {
                    len: self.units,
                    seed: Some(rng.next_u64()),
                };
                let out = c.output();
                (AnyCircuit::Mixed(c), out.into_iter().collect())
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

/// `x_i² = y_i` for `len` values x_i drawn like the witness of supraseal's C2 benchmark
/// (`../shared/data/supraseal/`): 45 % zeros, 45 % ones, 10 % random field elements. Which
/// positions hold field elements is the circuit's (the same in every instance, as a real
/// circuit's structure fixes where its non-boolean values are), so the batch's split keeps
/// 10 % of each query for the tail MSMs however many circuits it ORs; which of the others are
/// 0 or 1 is the instance's. The public input is Σ y_i, bound through running sums of
/// [`MIXED_SUM_TERMS`] squares each.
#[derive(Debug, Clone)]
pub struct MixedChain {
    pub len: usize,
    /// The instance's draw (`None`: blank).
    pub seed: Option<u64>,
}

/// Squares per running-sum constraint in [`MixedChain`]: one sum over the whole circuit would
/// be a linear combination of up to 2^27 terms (gigabytes while it is built).
pub const MIXED_SUM_TERMS: usize = 1024;

/// One in this many of [`MixedChain`]'s positions holds a field element.
const MIXED_FIELD_EVERY: u64 = 10;

impl MixedChain {
    /// Constraints of a chain of `len` squares, input constraints aside.
    pub fn constraints(len: usize) -> usize {
        len + len.div_ceil(MIXED_SUM_TERMS).max(1)
    }

    /// The longest chain whose constraints fit in `room`.
    fn len_within(room: usize) -> usize {
        let mut len = room * MIXED_SUM_TERMS / (MIXED_SUM_TERMS + 1);
        while len > 0 && Self::constraints(len) > room {
            len -= 1;
        }
        while Self::constraints(len + 1) <= room {
            len += 1;
        }
        len
    }

    /// Whether position `i` holds a field element (a fixed hash of `i`: splitmix64's
    /// finaliser, so the positions are spread without a pattern a kernel could favour).
    pub fn field_valued(i: usize) -> bool {
        let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)).is_multiple_of(MIXED_FIELD_EVERY)
    }

    /// The instance's x_i, in order (`None`: blank).
    fn values(&self) -> Option<impl Iterator<Item = Scalar>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed?);
        Some((0..self.len).map(move |i| {
            if Self::field_valued(i) {
                Scalar::random(&mut rng)
            } else if rng.next_u32() & 1 == 1 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            }
        }))
    }

    /// The public input, Σ x_i², computed natively (`None`: blank).
    pub fn output(&self) -> Option<Scalar> {
        Some(self.values()?.map(|x| x.square()).sum())
    }
}

impl Circuit<Scalar> for MixedChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let missing = || SynthesisError::AssignmentMissing;
        let mut values = self.values();
        // The running sum so far: its variable (none before the first) and value.
        let mut sum: Option<Variable> = None;
        let mut sum_val = values.as_ref().map(|_| Scalar::ZERO);
        let mut terms: Vec<Variable> = Vec::with_capacity(MIXED_SUM_TERMS);
        let running = |sum: Option<Variable>, terms: &[Variable]| {
            let start = sum.map_or_else(LinearCombination::zero, |s| LinearCombination::zero() + s);
            terms.iter().fold(start, |lc, &t| lc + t)
        };
        for i in 0..self.len {
            let x_val = match values.as_mut() {
                Some(v) => Some(v.next().ok_or_else(missing)?),
                None => None,
            };
            let y_val = x_val.map(|x| x.square());
            let x = cs.alloc(|| format!("x{i}"), || x_val.ok_or_else(missing))?;
            let y = cs.alloc(|| format!("y{i}"), || y_val.ok_or_else(missing))?;
            cs.enforce(
                || format!("square {i}"),
                |lc| lc + x,
                |lc| lc + x,
                |lc| lc + y,
            );
            terms.push(y);
            sum_val = sum_val.zip(y_val).map(|(s, y)| s + y);
            if terms.len() == MIXED_SUM_TERMS && i + 1 < self.len {
                let s = cs.alloc(|| format!("sum{i}"), || sum_val.ok_or_else(missing))?;
                let lc = running(sum, &terms);
                cs.enforce(
                    || format!("sum to {i}"),
                    |_| lc,
                    |l| l + CS::one(),
                    |l| l + s,
                );
                sum = Some(s);
                terms.clear();
            }
        }
        let out = cs.alloc_input(|| "sum", || sum_val.ok_or_else(missing))?;
        let lc = running(sum, &terms);
        cs.enforce(|| "bind sum", |_| lc, |l| l + CS::one(), |l| l + out);
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
    Mixed(MixedChain),
}

impl Circuit<Scalar> for AnyCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            AnyCircuit::Squaring(c) => c.synthesize(cs),
            AnyCircuit::Sha256(c) => c.synthesize(cs),
            AnyCircuit::Mixed(c) => c.synthesize(cs),
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
        for &kind in <CircuitKind as clap::ValueEnum>::value_variants() {
            let size = kind.size_for(kind.min_log().max(11)).unwrap();
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
    fn names_are_the_ones_the_cli_takes() {
        for &kind in <CircuitKind as clap::ValueEnum>::value_variants() {
            let value = clap::ValueEnum::to_possible_value(&kind).unwrap();
            assert_eq!(value.get_name(), kind.name());
        }
    }

    #[test]
    fn mixed_chains_fill_their_domain() {
        for log in [3, 10, 11, 12, 20, 27] {
            let size = CircuitKind::Mixed.size_for(log).unwrap();
            let room = (1usize << log) - 2;
            assert!(MixedChain::constraints(size.units) <= room, "2^{log}");
            assert!(
                MixedChain::constraints(size.units + 1) > room,
                "2^{log} is filled"
            );
        }
        // Several running sums (2^12 squares make 4 of 1,024), counted as synthesis counts.
        let size = CircuitKind::Mixed.size_for(12).unwrap();
        let shape = Shape::of(size.blank()).unwrap();
        assert_eq!(shape.constraints, MixedChain::constraints(size.units) + 2);
        assert!(shape.constraints <= 1 << 12);
    }

    /// 45 % zeros, 45 % ones, 10 % field elements, and the field elements where the circuit
    /// puts them in every instance (what keeps a batch's tail at 10 %).
    #[test]
    fn mixed_witnesses_are_drawn_like_supraseals() {
        let len = 1 << 14;
        let draw = |seed| {
            MixedChain {
                len,
                seed: Some(seed),
            }
            .values()
            .unwrap()
            .collect::<Vec<_>>()
        };
        let (one, two) = (draw(1), draw(2));
        let share = |v: &[Scalar], f: &dyn Fn(&Scalar) -> bool| {
            v.iter().filter(|x| f(x)).count() as f64 / len as f64
        };
        for v in [&one, &two] {
            let zeros = share(v, &|x| bool::from(x.is_zero()));
            let ones = share(v, &|x| *x == Scalar::ONE);
            assert!((0.42..0.48).contains(&zeros), "zeros {zeros}");
            assert!((0.42..0.48).contains(&ones), "ones {ones}");
            assert!(
                (0.08..0.12).contains(&(1.0 - zeros - ones)),
                "field {zeros} {ones}"
            );
        }
        let neither = |x: &Scalar| !(bool::from(x.is_zero()) || *x == Scalar::ONE);
        for i in 0..len {
            assert_eq!(
                neither(&one[i]),
                MixedChain::field_valued(i),
                "position {i}"
            );
            assert_eq!(
                neither(&two[i]),
                MixedChain::field_valued(i),
                "position {i}"
            );
        }
        let differ = one.iter().zip(&two).filter(|(a, b)| a != b).count();
        assert!(
            differ > len / 3,
            "instances share their 0/1 draw: {differ} differ"
        );
    }

    #[test]
    fn impossible_sizes_are_refused_with_the_range() {
        let e = CircuitKind::Sha256.size_for(12).unwrap_err();
        assert!(e.to_string().contains("2^15"), "{e}");
        assert!(CircuitKind::Squaring.size_for(40).is_err());
    }
}
