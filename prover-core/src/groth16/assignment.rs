//! Our own constraint system: bellperson keeps its `ProvingAssignment` private, and a prover
//! that wants phase-level control needs the evaluations and densities itself.

use super::column::{Column, ColumnPool};
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// Which variables a query uses (a bitmap, one bit per variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
}

impl Density {
    /// Room for `bits` variables without growing.
    pub fn with_capacity(bits: usize) -> Density {
        Density {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }

    pub fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    pub fn set(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] |= 1 << (i % 64);
        }
    }

    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Variables set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Values at the set positions, in order.
    pub fn select<T: Copy>(&self, values: &[T]) -> Vec<T> {
        values
            .iter()
            .enumerate()
            .filter(|(i, _)| self.get(*i))
            .map(|(_, v)| *v)
            .collect()
    }
}

/// Evaluations of A, B, C at every constraint, the assignment, and the query densities.
/// Memory is the point here: a, b, c hold one 32-byte scalar per constraint each (4.17 GB
/// per vector for a 32 GiB PoRep circuit).
#[derive(Debug, Default)]
pub struct ProvingAssignment {
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    pub a: Column,
    pub b: Column,
    pub c: Column,
    pub input_assignment: Vec<Scalar>,
    pub aux_assignment: Vec<Scalar>,
}

fn eval(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            let v = inputs.get(i).copied().unwrap_or(Scalar::ZERO);
            acc += if *coeff == Scalar::ONE { v } else { v * coeff };
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            let v = aux.get(i).copied().unwrap_or(Scalar::ZERO);
            acc += if *coeff == Scalar::ONE { v } else { v * coeff };
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    acc
}

impl ProvingAssignment {
    /// Synthesises `circuit` the way bellperson's prover does.
    pub fn synthesize<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
    ) -> Result<ProvingAssignment, SynthesisError> {
        Self::synthesize_into(circuit, ProvingAssignment::default())
    }

    /// As `synthesize`, with every vector allocated once at its final size: a, b, c at the
    /// evaluation domain (`domain` ≥ constraints: the H computation pads them to it), the
    /// assignments and densities from `shape`. Growing them instead copies each vector about
    /// once more and frees the old blocks (tens of GB per batch at 2^22 × 48). With `pool`,
    /// a, b, c are written into columns it lends (memory an earlier proof gave back).
    pub fn synthesize_sized<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
        shape: &Shape,
        domain: usize,
        pool: Option<&ColumnPool>,
    ) -> Result<ProvingAssignment, SynthesisError> {
        let n = domain.max(shape.constraints);
        let column = || Column::new_in(pool, n);
        let cs = ProvingAssignment {
            a_aux_density: Density::with_capacity(shape.aux),
            b_input_density: Density::with_capacity(shape.inputs),
            b_aux_density: Density::with_capacity(shape.aux),
            a: column(),
            b: column(),
            c: column(),
            input_assignment: Vec::with_capacity(shape.inputs),
            aux_assignment: Vec::with_capacity(shape.aux),
        };
        Self::synthesize_into(circuit, cs)
    }

    fn synthesize_into<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
        cs: ProvingAssignment,
    ) -> Result<ProvingAssignment, SynthesisError> {
        synthesize_with_inputs(circuit, cs, |cs: &ProvingAssignment| {
            cs.input_assignment.len()
        })
    }

    pub fn constraints(&self) -> usize {
        self.a.len()
    }
}

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let (inp, aux) = (&self.input_assignment, &self.aux_assignment);
        let av = eval(&a, None, Some(&mut self.a_aux_density), inp, aux);
        let bv = eval(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inp,
            aux,
        );
        let cv = eval(&c, None, None, inp, aux);
        self.a.push(av);
        self.b.push(bv);
        self.c.push(cv);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The shape of a circuit without a witness: counts and densities, for sizing parameters
/// (synthetic SRS, estimates) without evaluating anything.
#[derive(Debug, Default, Clone)]
pub struct Shape {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl Shape {
    pub fn of<C: bellpepper_core::Circuit<Scalar>>(circuit: C) -> Result<Shape, SynthesisError> {
        synthesize_with_inputs(circuit, Shape::default(), |s: &Shape| s.inputs)
    }
}

/// Bellperson's synthesis order, for the prover and for the setup alike: the constant ONE as
/// input 0, the circuit, then one `input · 1 = 0`-shaped constraint per input (so inputs have
/// full density in the A query, matching the parameters).
fn synthesize_with_inputs<CS, C>(
    circuit: C,
    mut cs: CS,
    inputs: impl Fn(&CS) -> usize,
) -> Result<CS, SynthesisError>
where
    CS: ConstraintSystem<Scalar>,
    C: bellpepper_core::Circuit<Scalar>,
{
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..inputs(&cs) {
        cs.enforce(
            || "input",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs)
}

impl ConstraintSystem<Scalar> for Shape {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        for (&i, c) in a.iter_aux() {
            if !bool::from(c.is_zero()) {
                self.a_aux_density.set(i);
            }
        }
        for (&i, c) in b.iter_inputs() {
            if !bool::from(c.is_zero()) {
                self.b_input_density.set(i);
            }
        }
        for (&i, c) in b.iter_aux() {
            if !bool::from(c.is_zero()) {
                self.b_aux_density.set(i);
            }
        }
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::circuits::CircuitKind;
    use rand::SeedableRng;

    /// Sized synthesis gives the same assignment, and a, b, c reach the domain size without
    /// reallocating (the H computation pads them there).
    #[test]
    fn sized_synthesis_matches_and_never_grows() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
        for kind in [CircuitKind::Squaring, CircuitKind::Sha256] {
            let size = kind.size_for(kind.min_log()).unwrap();
            let (c, _) = size.random(&mut rng);
            let shape = Shape::of(size.blank()).unwrap();
            let n = shape.constraints.next_power_of_two();
            let grown = ProvingAssignment::synthesize(c.clone()).unwrap();
            let mut sized = ProvingAssignment::synthesize_sized(c, &shape, n, None).unwrap();
            assert_eq!(sized.a, grown.a, "{kind:?}");
            assert_eq!((&sized.b, &sized.c), (&grown.b, &grown.c));
            assert_eq!(sized.aux_assignment, grown.aux_assignment);
            assert_eq!(sized.input_assignment, grown.input_assignment);
            assert_eq!(sized.a_aux_density, grown.a_aux_density);
            assert_eq!(sized.b_aux_density, grown.b_aux_density);
            assert_eq!(sized.b_input_density, grown.b_input_density);
            assert_eq!(sized.aux_assignment.capacity(), shape.aux);
            let ptr = sized.a.as_ptr();
            sized.a.pad_to(n);
            assert_eq!(sized.a.as_ptr(), ptr, "{kind:?}: padding a reallocated it");
        }
    }

    /// Written into pooled columns, a, b, c are the same, fit without leaving the pool, and
    /// the next proof writes into the memory this one gave back.
    #[test]
    fn pooled_synthesis_matches_and_reuses_the_memory() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let kind = CircuitKind::Sha256;
        let size = kind.size_for(kind.min_log()).unwrap();
        let shape = Shape::of(size.blank()).unwrap();
        let n = shape.constraints.next_power_of_two();
        let pool = ColumnPool::new(None);
        let (c, _) = size.random(&mut rng);
        let heap = ProvingAssignment::synthesize_sized(c.clone(), &shape, n, None).unwrap();
        let mut pooled = ProvingAssignment::synthesize_sized(c, &shape, n, Some(&pool)).unwrap();
        assert_eq!(
            (&pooled.a, &pooled.b, &pooled.c),
            (&heap.a, &heap.b, &heap.c)
        );
        pooled.a.pad_to(n);
        assert!(
            [&pooled.a, &pooled.b, &pooled.c]
                .iter()
                .all(|c| c.is_pooled())
        );
        let mut first: Vec<usize> = [&pooled.a, &pooled.b, &pooled.c]
            .iter()
            .map(|c| c.as_ptr() as usize)
            .collect();
        drop(pooled);
        assert_eq!(pool.kept().0, 3);
        let (c, _) = size.random(&mut rng);
        let next = ProvingAssignment::synthesize_sized(c, &shape, n, Some(&pool)).unwrap();
        let mut second: Vec<usize> = [&next.a, &next.b, &next.c]
            .iter()
            .map(|c| c.as_ptr() as usize)
            .collect();
        first.sort_unstable();
        second.sort_unstable();
        assert_eq!(first, second, "the second proof writes where the first did");
    }
}
