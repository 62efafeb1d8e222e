//! The `decompose` optimisation of the Mapple paper (§4), on plain numbers.
//!
//! `m.decompose(i, (l_1, …, l_k))` splits dimension `i` of a processor space, of size `d = d_i`,
//! into `k` factors `(d_1, …, d_k)` with `d_1 · … · d_k = d`, one per dimension of the task space
//! `(l_1, …, l_k)`. This module chooses those factors; it knows nothing about machines or the
//! parser, so the machine model can call it with the numbers it has.
//!
//! # Objectives
//!
//! All objectives are minimised over the same search space and are evaluated exactly (with
//! [`Rational`], no floating point):
//!
//! * [`Objective::Isotropic`] (§4.2): `Σ_m d_m / l_m`. The paper derives it from the number of
//!   inter-processor elements of a block partition with uniform nearest-neighbour halos,
//!   `2S = SA(w)·d − SA(l) = 2·Π_m l_m · Σ_m (d_m − 1)/l_m` (see [`communication_volume`]), where
//!   `w_m = l_m / d_m` is the workload vector (see [`workload`]) and `SA` the surface of a
//!   hyperrectangle. `2S` and `Σ_m d_m / l_m` differ by a positive factor and a constant once
//!   `d` and `l` are fixed, so they have the same minimisers.
//! * [`Objective::AnisotropicHalo`] (appendix A.3.1): halo width `h_n` in dimension `n`,
//!   `V = Σ_n d_n h_n Π_{m≠n} l_m = (Σ_n h_n / w_n)·Π_m l_m`; the value minimised is
//!   `V / Π_m l_m = Σ_n h_n d_n / l_n` (see [`halo_volume`]).
//! * [`Objective::Transpose`] (appendix A.3.2): all-to-all exchanges along the dimensions of a
//!   set `T`, `V + Σ_{n∈T} V*_n` with `V*_n = (1 − 1/d_n)·(Π_m w_m)·d = (1 − 1/d_n)·Π_m l_m`
//!   (see [`transpose_volume`]); the value minimised is that total divided by `Π_m l_m`.
//!
//! [`objective_value`] computes the minimised value, [`objective_volume`] the corresponding
//! volume (the value times `Π_m l_m`).
//!
//! # Search (§4.3)
//!
//! [`decompose_with`] factors `d = p_1^{a_1} · … · p_t^{a_t}`, enumerates for each prime power the
//! `C(a_j + k − 1, k − 1)` ways `z_1 + … + z_k = a_j` of spreading its exponent over the `k`
//! dimensions, and walks the Cartesian product of these, which is exactly the set of ordered
//! factorizations of `d` into `k` factors. The minimum is therefore exact.
//!
//! **Tie-breaking**: among factorizations with the same objective value the lexicographically
//! greatest factor tuple wins (more processors on earlier dimensions). This does not depend on
//! the enumeration order, and it agrees with Algorithm 1, which sorts its factors in descending
//! order: on a square task space `decompose` and the greedy baseline pick the same grid.
//!
//! # Baselines
//!
//! * [`greedy`]: Algorithm 1 of appendix A.2 (the Chapel-like heuristic), which ignores the task
//!   space shape.
//! * [`greedy_workload`]: the shape-aware greedy of §4.3 that hands out prime factors one at a
//!   time so as to keep the workload vector as even as possible; the paper uses it to show that
//!   a greedy choice can miss the optimum (72 processors on `(8, 9)`).
//!
//! Every function validates its input and reports problems as a [`DecomposeError`]; arithmetic
//! is checked and never panics or wraps.

use std::cmp::Ordering;
use std::fmt;

/// Upper bound on the number of factorizations [`decompose_with`] and [`factorizations`] are
/// willing to enumerate. Realistic inputs (exponents below 10, at most a handful of dimensions,
/// §4.3) stay many orders of magnitude below it.
pub const MAX_CANDIDATES: u128 = 1 << 20;

/// Errors reported by this module for invalid input or results that do not fit the arithmetic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecomposeError {
    /// The processor count was 0.
    #[error("the processor count must be positive, got 0")]
    ZeroProcessors,
    /// The task space had no dimensions (`k = 0`).
    #[error("the task space has no dimensions; decompose needs at least one")]
    EmptyShape,
    /// A task space extent was 0.
    #[error("extent {index} of the task space is 0; every extent must be positive")]
    ZeroExtent {
        /// Index of the offending dimension.
        index: usize,
    },
    /// A factor of a factorization passed to an evaluator was 0.
    #[error("factor {index} of the factorization is 0; every factor must be positive")]
    ZeroFactor {
        /// Index of the offending factor.
        index: usize,
    },
    /// A factorization, or a per-dimension parameter of an objective, did not have one entry per
    /// task space dimension.
    #[error("{what} has {got} entries but the task space has {expected} dimensions")]
    LengthMismatch {
        /// What had the wrong length.
        what: &'static str,
        /// Number of task space dimensions.
        expected: usize,
        /// Number of entries supplied.
        got: usize,
    },
    /// A transposed dimension of [`Objective::Transpose`] does not exist.
    #[error("transposed dimension {dim} does not exist in a {rank}-dimensional task space")]
    DimensionOutOfRange {
        /// The dimension named.
        dim: usize,
        /// Number of task space dimensions.
        rank: usize,
    },
    /// A dimension was listed twice among the transposed dimensions of [`Objective::Transpose`].
    #[error("transposed dimension {dim} is listed more than once")]
    DuplicateDimension {
        /// The repeated dimension.
        dim: usize,
    },
    /// The number of factorizations to enumerate exceeds [`MAX_CANDIDATES`].
    #[error(
        "decomposing {processors} processors over {rank} dimensions means enumerating {} \
         factorizations, more than the limit of {limit}",
        count.map_or_else(|| "more than 2^128".to_string(), |c| c.to_string())
    )]
    SearchSpaceTooLarge {
        /// The processor count.
        processors: u64,
        /// Number of task space dimensions.
        rank: usize,
        /// Number of factorizations, or `None` if it does not even fit in a `u128`.
        count: Option<u128>,
        /// The limit, [`MAX_CANDIDATES`].
        limit: u128,
    },
    /// An intermediate value did not fit the integer arithmetic.
    #[error("arithmetic overflow while computing {what}")]
    Overflow {
        /// The quantity being computed.
        what: &'static str,
    },
}

fn overflow(what: &'static str) -> DecomposeError {
    DecomposeError::Overflow { what }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// An exact non-negative rational number, always kept in lowest terms with a positive
/// denominator, used for workloads and objective values.
///
/// Comparison is exact and cannot overflow (it compares continued-fraction expansions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    num: u128,
    den: u128,
}

impl Rational {
    /// Zero.
    pub const ZERO: Rational = Rational { num: 0, den: 1 };

    /// `num / den` in lowest terms, or `None` when `den` is 0.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den);
        // `g` is at least 1 because `den` is positive.
        Some(Rational {
            num: num / g,
            den: den / g,
        })
    }

    /// The integer `n`.
    pub const fn from_integer(n: u128) -> Self {
        Rational { num: n, den: 1 }
    }

    /// The numerator (in lowest terms).
    pub const fn numer(self) -> u128 {
        self.num
    }

    /// The denominator (in lowest terms, positive).
    pub const fn denom(self) -> u128 {
        self.den
    }

    /// Whether the value is an integer.
    pub const fn is_integer(self) -> bool {
        self.den == 1
    }

    /// The nearest `f64` (approximately; for display and plotting only).
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Rational) -> Option<Rational> {
        let (a, b, lcm) = self.over_common_denominator(other)?;
        Rational::new(a.checked_add(b)?, lcm)
    }

    /// `self − other`, or `None` if the result would be negative or on overflow.
    pub fn checked_sub(self, other: Rational) -> Option<Rational> {
        let (a, b, lcm) = self.over_common_denominator(other)?;
        Rational::new(a.checked_sub(b)?, lcm)
    }

    /// The numerators of `self` and `other` over their least common denominator, and that
    /// denominator; `None` on overflow.
    fn over_common_denominator(self, other: Rational) -> Option<(u128, u128, u128)> {
        let g = gcd(self.den, other.den);
        let lcm = (self.den / g).checked_mul(other.den)?;
        let a = self.num.checked_mul(lcm / self.den)?;
        let b = other.num.checked_mul(lcm / other.den)?;
        Some((a, b, lcm))
    }

    /// `self · n`, or `None` on overflow.
    pub fn checked_mul_int(self, n: u128) -> Option<Rational> {
        // `g` is at least 1 because the denominator is positive.
        let g = gcd(n, self.den);
        Rational::new(self.num.checked_mul(n / g)?, self.den / g)
    }

    /// `self / n`, or `None` when `n` is 0 or on overflow.
    pub fn checked_div_int(self, n: u128) -> Option<Rational> {
        if n == 0 {
            return None;
        }
        let g = gcd(self.num, n);
        // `g` is at least 1 because `n` is positive.
        Rational::new(self.num / g, self.den.checked_mul(n / g)?)
    }
}

impl Ord for Rational {
    fn cmp(&self, other: &Self) -> Ordering {
        // Compare a/b with c/d by their continued fractions: integer parts first, then the
        // fractional parts r1/b and r2/d, which compare the opposite way to b/r1 and d/r2.
        let (mut a, mut b, mut c, mut d) = (self.num, self.den, other.num, other.den);
        let mut flipped = false;
        loop {
            let (q1, q2) = (a / b, c / d);
            let (r1, r2) = (a % b, c % d);
            let ord = if q1 != q2 {
                q1.cmp(&q2)
            } else {
                match (r1 == 0, r2 == 0) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    (false, false) => {
                        (a, b, c, d) = (b, r1, d, r2);
                        flipped = !flipped;
                        continue;
                    }
                }
            };
            return if flipped { ord.reverse() } else { ord };
        }
    }
}

impl PartialOrd for Rational {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// What `decompose` minimises; see the [module documentation](self) for the formulas.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Objective {
    /// §4.2: uniform nearest-neighbour halos, minimise `Σ_m d_m / l_m`.
    #[default]
    Isotropic,
    /// Appendix A.3.1: halo width `widths[n]` in dimension `n`, minimise
    /// `Σ_n h_n d_n / l_n = V / Π_m l_m` with `V = Σ_n d_n h_n Π_{m≠n} l_m`.
    ///
    /// With all widths equal to 1 this is [`Objective::Isotropic`]. A width of 0 means no
    /// exchange along that dimension.
    AnisotropicHalo {
        /// Halo width per task space dimension (one entry per dimension).
        widths: Vec<u64>,
    },
    /// Appendix A.3.2: halo exchanges as in [`Objective::AnisotropicHalo`] plus an all-to-all
    /// exchange (a transpose) along each dimension `n` of `transposed`; minimise
    /// `(V + Σ_{n∈T} V*_n) / Π_m l_m = Σ_n h_n d_n / l_n + Σ_{n∈T} (1 − 1/d_n)`.
    ///
    /// Use halo widths of 0 for a computation that only transposes.
    Transpose {
        /// Halo width per task space dimension (one entry per dimension).
        halo_widths: Vec<u64>,
        /// The set `T` of dimensions (0-based) that take part in an all-to-all exchange.
        transposed: Vec<usize>,
    },
}

impl Objective {
    /// Checks that the objective's parameters fit a `rank`-dimensional task space.
    pub fn validate(&self, rank: usize) -> Result<(), DecomposeError> {
        let check_widths = |widths: &[u64]| {
            if widths.len() == rank {
                Ok(())
            } else {
                Err(DecomposeError::LengthMismatch {
                    what: "the halo width vector",
                    expected: rank,
                    got: widths.len(),
                })
            }
        };
        match self {
            Objective::Isotropic => Ok(()),
            Objective::AnisotropicHalo { widths } => check_widths(widths),
            Objective::Transpose {
                halo_widths,
                transposed,
            } => {
                check_widths(halo_widths)?;
                for (i, &dim) in transposed.iter().enumerate() {
                    if dim >= rank {
                        return Err(DecomposeError::DimensionOutOfRange { dim, rank });
                    }
                    if transposed[..i].contains(&dim) {
                        return Err(DecomposeError::DuplicateDimension { dim });
                    }
                }
                Ok(())
            }
        }
    }
}

/// The result of [`decompose_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomposition {
    /// The chosen factors `(d_1, …, d_k)`, one per task space dimension; their product is the
    /// processor count.
    pub factors: Vec<u64>,
    /// The objective's value for `factors` (as [`objective_value`] computes it).
    pub objective: Rational,
    /// How many factorizations were enumerated (`Π_j C(a_j + k − 1, k − 1)`).
    pub candidates: u128,
}

fn validate_processors(d: u64) -> Result<(), DecomposeError> {
    if d == 0 {
        Err(DecomposeError::ZeroProcessors)
    } else {
        Ok(())
    }
}

fn validate_shape(shape: &[u64]) -> Result<(), DecomposeError> {
    if shape.is_empty() {
        return Err(DecomposeError::EmptyShape);
    }
    match shape.iter().position(|&l| l == 0) {
        Some(index) => Err(DecomposeError::ZeroExtent { index }),
        None => Ok(()),
    }
}

fn validate_factors(factors: &[u64], shape: &[u64]) -> Result<(), DecomposeError> {
    validate_shape(shape)?;
    if factors.len() != shape.len() {
        return Err(DecomposeError::LengthMismatch {
            what: "the factorization",
            expected: shape.len(),
            got: factors.len(),
        });
    }
    match factors.iter().position(|&f| f == 0) {
        Some(index) => Err(DecomposeError::ZeroFactor { index }),
        None => Ok(()),
    }
}

/// The prime factorization of `d` as `(prime, exponent)` pairs in increasing order of the prime
/// (empty for `d = 1`), by trial division.
///
/// Trial division stops at `√n` of the remaining cofactor, so processor counts with only small
/// primes (every real machine) factor instantly; the worst case, a prime near `2^64`, takes on
/// the order of 10^9 divisions.
pub fn prime_factorization(d: u64) -> Result<Vec<(u64, u32)>, DecomposeError> {
    validate_processors(d)?;
    let mut n = d;
    let mut out = Vec::new();
    let mut take = |n: &mut u64, p: u64| {
        let mut a = 0;
        while (*n).is_multiple_of(p) {
            *n /= p;
            a += 1;
        }
        if a > 0 {
            out.push((p, a));
        }
    };
    take(&mut n, 2);
    take(&mut n, 3);
    // Candidates 6j ± 1; `p <= n / p` avoids computing p² (which could overflow).
    let mut p: u64 = 5;
    while p <= n / p {
        take(&mut n, p);
        let q = p + 2;
        if q > n / q {
            break;
        }
        take(&mut n, q);
        p = match p.checked_add(6) {
            Some(next) => next,
            None => break,
        };
    }
    if n > 1 {
        out.push((n, 1));
    }
    Ok(out)
}

/// `C(n, r)`, or `None` on overflow.
fn binomial(n: u128, r: u128) -> Option<u128> {
    let r = r.min(n - r);
    let mut acc: u128 = 1;
    for i in 0..r {
        // acc · (n − i) / (i + 1) is C(n, i + 1), an integer; divide by the gcd first to keep
        // the intermediate product small.
        let num = n - i;
        let den = i + 1;
        let g = gcd(acc, den);
        acc = (acc / g).checked_mul(num / (den / g))?;
    }
    Some(acc)
}

fn count_for(primes: &[(u64, u32)], k: usize) -> Option<u128> {
    let k = u128::try_from(k).ok()?;
    primes.iter().try_fold(1u128, |acc, &(_, a)| {
        let n = u128::from(a).checked_add(k - 1)?;
        acc.checked_mul(binomial(n, k - 1)?)
    })
}

/// The number of ordered factorizations of `d` into `k` positive factors,
/// `Π_j C(a_j + k − 1, k − 1)` for `d = Π_j p_j^{a_j}` (§4.3).
pub fn factorization_count(d: u64, k: usize) -> Result<u128, DecomposeError> {
    validate_processors(d)?;
    if k == 0 {
        return Err(DecomposeError::EmptyShape);
    }
    let primes = prime_factorization(d)?;
    count_for(&primes, k).ok_or(overflow("the number of factorizations"))
}

/// All ways `z_1 + … + z_k = a` with `z_m ≥ 0`.
fn compositions(a: u32, k: usize) -> Vec<Vec<u32>> {
    fn go(rest: u32, k: usize, prefix: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if prefix.len() + 1 == k {
            prefix.push(rest);
            out.push(prefix.clone());
            prefix.pop();
            return;
        }
        for z in 0..=rest {
            prefix.push(z);
            go(rest - z, k, prefix, out);
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    go(a, k, &mut Vec::with_capacity(k), &mut out);
    out
}

/// Enumerates the ordered factorizations of `d` into `k` factors as §4.3 describes and calls
/// `visit` on each; returns the number visited.
fn enumerate(
    d: u64,
    k: usize,
    mut visit: impl FnMut(&[u64]) -> Result<(), DecomposeError>,
) -> Result<u128, DecomposeError> {
    validate_processors(d)?;
    if k == 0 {
        return Err(DecomposeError::EmptyShape);
    }
    let primes = prime_factorization(d)?;
    let count = count_for(&primes, k);
    if count.is_none_or(|c| c > MAX_CANDIDATES) {
        return Err(DecomposeError::SearchSpaceTooLarge {
            processors: d,
            rank: k,
            count,
            limit: MAX_CANDIDATES,
        });
    }
    // For each prime p_j: every distribution of its exponent a_j over the k dimensions, already
    // turned into the k multipliers p_j^{z_m}. Every such multiplier divides d, so no overflow.
    let mut per_prime: Vec<Vec<Vec<u64>>> = Vec::with_capacity(primes.len());
    for &(p, a) in &primes {
        let mut options = Vec::new();
        for z in compositions(a, k) {
            let mults = z
                .iter()
                .map(|&e| p.checked_pow(e).ok_or(overflow("a prime power")))
                .collect::<Result<Vec<_>, _>>()?;
            options.push(mults);
        }
        per_prime.push(options);
    }
    // Cartesian product with an odometer over the per-prime choices.
    let mut choice = vec![0usize; per_prime.len()];
    let mut factors = vec![1u64; k];
    let mut visited: u128 = 0;
    loop {
        factors.iter_mut().for_each(|f| *f = 1);
        for (options, &c) in per_prime.iter().zip(&choice) {
            for (f, &m) in factors.iter_mut().zip(&options[c]) {
                *f = f.checked_mul(m).ok_or(overflow("a factor"))?;
            }
        }
        visit(&factors)?;
        visited += 1;
        // Advance the odometer; stop once every digit has wrapped around.
        let mut j = 0;
        loop {
            if j == choice.len() {
                return Ok(visited);
            }
            choice[j] += 1;
            if choice[j] < per_prime[j].len() {
                break;
            }
            choice[j] = 0;
            j += 1;
        }
    }
}

/// Every ordered factorization of `d` into `k` positive factors, produced by the prime-power
/// enumeration of §4.3 and returned in increasing lexicographic order.
pub fn factorizations(d: u64, k: usize) -> Result<Vec<Vec<u64>>, DecomposeError> {
    let mut out = Vec::new();
    enumerate(d, k, |f| {
        out.push(f.to_vec());
        Ok(())
    })?;
    out.sort_unstable();
    Ok(out)
}

/// `decompose` with the isotropic objective of §4.2: the factors `(d_1, …, d_k)` of `d`, one per
/// extent of `shape`, that minimise `Σ_m d_m / l_m` (ties: see the [module
/// documentation](self)).
pub fn decompose(d: u64, shape: &[u64]) -> Result<Vec<u64>, DecomposeError> {
    decompose_with(d, shape, &Objective::Isotropic).map(|r| r.factors)
}

/// `decompose` with any [`Objective`]: enumerates every ordered factorization of `d` into
/// `shape.len()` factors (§4.3) and returns one of minimum [`objective_value`]; among equal
/// values the lexicographically greatest factor tuple.
pub fn decompose_with(
    d: u64,
    shape: &[u64],
    objective: &Objective,
) -> Result<Decomposition, DecomposeError> {
    validate_processors(d)?;
    validate_shape(shape)?;
    objective.validate(shape.len())?;
    let mut best: Option<(Rational, Vec<u64>)> = None;
    let candidates = enumerate(d, shape.len(), |factors| {
        let value = objective_value(objective, factors, shape)?;
        let better = match &best {
            None => true,
            Some((v, f)) => match value.cmp(v) {
                Ordering::Less => true,
                Ordering::Equal => factors > f.as_slice(),
                Ordering::Greater => false,
            },
        };
        if better {
            best = Some((value, factors.to_vec()));
        }
        Ok(())
    })?;
    // `enumerate` visits at least one factorization (all ones for d = 1).
    let (objective, factors) = best.ok_or(DecomposeError::ZeroProcessors)?;
    Ok(Decomposition {
        factors,
        objective,
        candidates,
    })
}

/// The primes of `d` with multiplicity, in increasing order.
fn prime_list(d: u64) -> Result<Vec<u64>, DecomposeError> {
    Ok(prime_factorization(d)?
        .into_iter()
        .flat_map(|(p, a)| std::iter::repeat_n(p, a as usize))
        .collect())
}

/// Algorithm 1 of appendix A.2, the greedy baseline (Chapel-like): multiply the primes of `d`
/// in increasing order, each into the currently smallest factor (the first one on ties), then
/// sort the factors in descending order. It ignores the task space shape; `k` is its rank.
pub fn greedy(d: u64, k: usize) -> Result<Vec<u64>, DecomposeError> {
    validate_processors(d)?;
    if k == 0 {
        return Err(DecomposeError::EmptyShape);
    }
    let mut factors = vec![1u64; k];
    for p in prime_list(d)? {
        let mut j = 0;
        for (i, &f) in factors.iter().enumerate() {
            if f < factors[j] {
                j = i;
            }
        }
        factors[j] = factors[j].checked_mul(p).ok_or(overflow("a factor"))?;
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    Ok(factors)
}

/// The shape-aware greedy assignment of §4.3 that the paper contrasts with the exact search:
/// the primes of `d` are taken in increasing order (the paper lists 72 as 2, 2, 2, 3, 3) and
/// each divides the workload of the dimension that leaves the smallest maximum difference
/// between workload entries (`max_m w_m − min_m w_m`), the lowest dimension on ties.
///
/// For 72 processors on `(8, 9)` it returns `(6, 12)`, workload `(4/3, 3/4)`, where the optimum
/// is `(8, 9)` with workload `(1, 1)`.
pub fn greedy_workload(d: u64, shape: &[u64]) -> Result<Vec<u64>, DecomposeError> {
    validate_processors(d)?;
    validate_shape(shape)?;
    let mut factors = vec![1u64; shape.len()];
    let mut work: Vec<Rational> = shape
        .iter()
        .map(|&l| Rational::from_integer(u128::from(l)))
        .collect();
    for p in prime_list(d)? {
        let mut best: Option<(Rational, usize, Rational)> = None;
        for j in 0..work.len() {
            let divided = work[j]
                .checked_div_int(u128::from(p))
                .ok_or(overflow("a workload"))?;
            let entries = work
                .iter()
                .enumerate()
                .map(|(i, &w)| if i == j { divided } else { w });
            let (lo, hi) = entries.fold((divided, divided), |(lo, hi), w| (lo.min(w), hi.max(w)));
            let spread = hi.checked_sub(lo).ok_or(overflow("a workload spread"))?;
            if best.as_ref().is_none_or(|(s, _, _)| spread < *s) {
                best = Some((spread, j, divided));
            }
        }
        if let Some((_, j, divided)) = best {
            work[j] = divided;
            factors[j] = factors[j].checked_mul(p).ok_or(overflow("a factor"))?;
        }
    }
    Ok(factors)
}

/// The workload vector `w_m = l_m / d_m` of §4.2: the extent, along each dimension, of the block
/// of the task space that one processor receives.
pub fn workload(factors: &[u64], shape: &[u64]) -> Result<Vec<Rational>, DecomposeError> {
    validate_factors(factors, shape)?;
    factors
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(index, (&d, &l))| {
            Rational::new(u128::from(l), u128::from(d)).ok_or(DecomposeError::ZeroFactor { index })
        })
        .collect()
}

/// The number of task space points per processor, `Π_m w_m = Π_m l_m / Π_m d_m`.
pub fn points_per_processor(factors: &[u64], shape: &[u64]) -> Result<Rational, DecomposeError> {
    validate_factors(factors, shape)?;
    let volume = product(shape)?;
    let d = product(factors)?;
    Rational::new(volume, d).ok_or(DecomposeError::ZeroProcessors)
}

fn product(xs: &[u64]) -> Result<u128, DecomposeError> {
    xs.iter()
        .try_fold(1u128, |acc, &x| acc.checked_mul(u128::from(x)))
        .ok_or(overflow("a product of extents"))
}

/// `Π_{m≠n} l_m`: the size of a cross-section of the task space orthogonal to dimension `n`.
fn cross_section(shape: &[u64], n: usize) -> Result<u128, DecomposeError> {
    shape
        .iter()
        .enumerate()
        .filter(|&(m, _)| m != n)
        .try_fold(1u128, |acc, (_, &l)| acc.checked_mul(u128::from(l)))
        .ok_or(overflow("a cross-section of the task space"))
}

/// The communication volume of §4.2 and Figures 8–9: the number of inter-processor elements
/// when the task space `shape` is cut into a `factors` grid of blocks with unit halos,
///
/// `2S = SA(w)·d − SA(l) = Σ_m 2·(d_m − 1)·Π_{n≠m} l_n`,
///
/// i.e. the summed surface of all `d` blocks minus the surface of the task space (every cut is
/// counted once per side). The paper's examples: 96 for the `(3, 2)` grid on `(12, 18)`, 84 for
/// `(2, 3)` on `(12, 18)` and for `(3, 2)` on `(18, 12)`.
///
/// This is the paper's formula; it counts elements exactly when every `d_m ≤ l_m` (with more
/// processors than points along a dimension some blocks are empty and fewer cuts exist).
pub fn communication_volume(factors: &[u64], shape: &[u64]) -> Result<u128, DecomposeError> {
    validate_factors(factors, shape)?;
    let mut total: u128 = 0;
    for (m, &d) in factors.iter().enumerate() {
        let cuts = u128::from(d - 1);
        let term = cuts
            .checked_mul(2)
            .and_then(|c| c.checked_mul(cross_section(shape, m).ok()?))
            .ok_or(overflow("the communication volume"))?;
        total = total
            .checked_add(term)
            .ok_or(overflow("the communication volume"))?;
    }
    Ok(total)
}

/// The halo communication volume of appendix A.3.1, `V = Σ_n d_n h_n Π_{m≠n} l_m`, for halo
/// width `widths[n]` in dimension `n`.
///
/// With unit widths, `2·V − SA(l) = ` [`communication_volume`].
pub fn halo_volume(factors: &[u64], shape: &[u64], widths: &[u64]) -> Result<u128, DecomposeError> {
    validate_factors(factors, shape)?;
    Objective::AnisotropicHalo {
        widths: widths.to_vec(),
    }
    .validate(shape.len())?;
    let mut total: u128 = 0;
    for (n, (&d, &h)) in factors.iter().zip(widths).enumerate() {
        let term = u128::from(d)
            .checked_mul(u128::from(h))
            .and_then(|t| t.checked_mul(cross_section(shape, n).ok()?))
            .ok_or(overflow("the halo volume"))?;
        total = total.checked_add(term).ok_or(overflow("the halo volume"))?;
    }
    Ok(total)
}

/// The all-to-all (transpose) volume along dimension `dim` of appendix A.3.2,
/// `V*_n = v_n · Π_m d_m = (1 − 1/d_n)·(Π_m w_m)·d = (1 − 1/d_n)·Π_m l_m`.
pub fn transpose_volume(
    factors: &[u64],
    shape: &[u64],
    dim: usize,
) -> Result<Rational, DecomposeError> {
    validate_factors(factors, shape)?;
    let rank = shape.len();
    let d_n = *factors
        .get(dim)
        .ok_or(DecomposeError::DimensionOutOfRange { dim, rank })?;
    let volume = product(shape)?;
    let num = volume
        .checked_mul(u128::from(d_n - 1))
        .ok_or(overflow("the transpose volume"))?;
    Rational::new(num, u128::from(d_n)).ok_or(DecomposeError::ZeroFactor { index: dim })
}

/// The value `decompose` minimises for `objective` (see the [module documentation](self)):
/// `Σ_m d_m / l_m`, `Σ_n h_n d_n / l_n`, or `Σ_n h_n d_n / l_n + Σ_{n∈T} (1 − 1/d_n)`.
pub fn objective_value(
    objective: &Objective,
    factors: &[u64],
    shape: &[u64],
) -> Result<Rational, DecomposeError> {
    validate_factors(factors, shape)?;
    objective.validate(shape.len())?;
    let add = |acc: Rational, term: Rational| {
        acc.checked_add(term).ok_or(overflow("the objective value"))
    };
    let halo_sum = |widths: Option<&[u64]>| {
        let mut acc = Rational::ZERO;
        for (n, (&d, &l)) in factors.iter().zip(shape).enumerate() {
            let h = widths.map_or(1, |w| w[n]);
            let num = u128::from(d)
                .checked_mul(u128::from(h))
                .ok_or(overflow("the objective value"))?;
            let term =
                Rational::new(num, u128::from(l)).ok_or(DecomposeError::ZeroExtent { index: n })?;
            acc = add(acc, term)?;
        }
        Ok::<_, DecomposeError>(acc)
    };
    match objective {
        Objective::Isotropic => halo_sum(None),
        Objective::AnisotropicHalo { widths } => halo_sum(Some(widths)),
        Objective::Transpose {
            halo_widths,
            transposed,
        } => {
            let mut acc = halo_sum(Some(halo_widths))?;
            for &n in transposed {
                let d_n = u128::from(factors[n]);
                let term =
                    Rational::new(d_n - 1, d_n).ok_or(DecomposeError::ZeroFactor { index: n })?;
                acc = add(acc, term)?;
            }
            Ok(acc)
        }
    }
}

/// The communication volume behind `objective`: [`objective_value`] times `Π_m l_m`, i.e. `V` of
/// appendix A.3.1 (with unit widths for [`Objective::Isotropic`]) or `V + Σ_{n∈T} V*_n` of
/// appendix A.3.2.
pub fn objective_volume(
    objective: &Objective,
    factors: &[u64],
    shape: &[u64],
) -> Result<Rational, DecomposeError> {
    let value = objective_value(objective, factors, shape)?;
    value
        .checked_mul_int(product(shape)?)
        .ok_or(overflow("the objective volume"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: u128, d: u128) -> Rational {
        Rational::new(n, d).unwrap()
    }

    #[test]
    fn rational_arithmetic_and_order() {
        assert_eq!(r(2, 4), r(1, 2));
        assert_eq!(r(1, 3).checked_add(r(1, 6)), Some(r(1, 2)));
        assert_eq!(r(1, 3).checked_sub(r(1, 2)), None);
        assert_eq!(r(3, 4).checked_mul_int(8), Some(r(6, 1)));
        assert_eq!(r(3, 4).checked_div_int(6), Some(r(1, 8)));
        assert!(r(1, 3) < r(1, 2));
        assert!(r(7, 5) > r(4, 3));
        // x/(x − 1) decreases in x; cross-multiplying these would overflow u128.
        assert!(r(u128::MAX, u128::MAX - 1) < r(u128::MAX - 1, u128::MAX - 2));
        assert_eq!(r(0, 5), Rational::ZERO);
        assert!(Rational::new(1, 0).is_none());
        assert_eq!(r(4, 3).to_string(), "4/3");
        assert_eq!(r(6, 3).to_string(), "2");
    }

    #[test]
    fn rational_order_matches_cross_multiplication() {
        for a in 0..30u128 {
            for b in 1..30u128 {
                for c in 0..30u128 {
                    for d in 1..30u128 {
                        assert_eq!(r(a, b).cmp(&r(c, d)), (a * d).cmp(&(c * b)));
                    }
                }
            }
        }
    }

    #[test]
    fn compositions_count() {
        assert_eq!(compositions(4, 3).len(), 15);
        assert_eq!(compositions(0, 3), vec![vec![0, 0, 0]]);
        assert_eq!(compositions(3, 1), vec![vec![3]]);
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(6, 2), Some(15));
        assert_eq!(binomial(10, 0), Some(1));
        assert_eq!(binomial(62, 31), Some(465_428_353_255_261_088));
    }

    #[test]
    fn primes_of_large_numbers() {
        assert_eq!(prime_factorization(1).unwrap(), vec![]);
        assert_eq!(prime_factorization(u64::MAX).unwrap().len(), 7);
        // The largest prime below 2^16, squared.
        let p = 65_521u64;
        assert_eq!(prime_factorization(p * p).unwrap(), vec![(p, 2)]);
    }
}
