//! The machine model: processor kinds, machines, and processor spaces ([`MSpace`]) with the
//! transformation primitives of Mapple.
//!
//! `Machine(GPU)` in Mapple is the 2-d processor space `(nodes, gpus_per_node)` of one processor
//! kind ([`Machine::space`]). A mapper reshapes it with the primitives [`MSpace::split`],
//! [`MSpace::merge`], [`MSpace::swap`], [`MSpace::slice`], [`MSpace::reverse`],
//! [`MSpace::balance_split`] and [`MSpace::auto_split`] (and `decompose`, which is
//! [`MSpace::split_into`] with the factors chosen by the `decompose` module). Every primitive
//! returns a new, immutable space; the original is untouched, so spaces compose freely.
//!
//! A space never enumerates its points. It keeps its shape and the chain of *inverse index
//! functions* of the primitives that produced it, exactly as the paper's Figure 6 states them:
//! each maps a point of the transformed space to a point of the space it was derived from. To
//! find the processor of a point ([`MSpace::to_processor`]) the chain is applied from the last
//! primitive back to the first, which ends in `(node, processor)` of the original machine. The
//! forward direction ([`MSpace::point_of`]) gives the position of a processor in a transformed
//! space, as Mapple's `task.parent.processor(m)` needs.
//!
//! # Semantics (Figure 6 of the paper)
//!
//! Writing `a` for a point of the transformed space `m'` and `b` for the point of `m` it denotes:
//!
//! * `m.split(i, d)`: shape `(s0, …, d, s_i / d, …)`; `b_i = a_i + a_{i+1} * d`, so the new
//!   dimension `i` (size `d`) varies fastest.
//! * `m.merge(p, q)`: dimensions `p` and `q` become one dimension of size `s_p * s_q` at position
//!   `p` (at `p - 1` when `q < p`, because removing `q` shifts it: the manual's
//!   `merge_dim = dim1 < dim2 ? dim1 : (dim1 - 1)`); `b_p = a_m mod s_p`, `b_q = ⌊a_m / s_p⌋`,
//!   so **dimension `p` varies fastest** and `m.split(i, d).merge(i, i + 1)` is `m` again.
//!
//!   *Difference from the older DSL-mapper manual:* the manual says the second dimension
//!   (`dim2`) is the faster-changing one (`b_dim1 = ⌊a / s_dim2⌋`, `b_dim2 = a mod s_dim2`), which
//!   would make merge *not* the inverse of split. Following the paper, this
//!   implementation uses Figure 6: the first argument varies fastest. The merged dimension's
//!   position and size are the same in both sources. To get the manual's order, swap first:
//!   `m.swap(p, q).merge(p, q)`.
//! * `m.swap(p, q)`: exchanges dimensions `p` and `q` (`swap(p, p)` is the identity).
//! * `m.slice(i, lo, hi)`: keeps indices `lo..=hi` (both ends included, as in the manual) of
//!   dimension `i`; `b_i = a_i + lo`.
//! * `m.reverse(i)`: `b_i = s_i - 1 - a_i`.
//! * `m.split_into(i, (d_1, …, d_k))`: `split(i, d_1)`, then `split(i + 1, d_2)`, …, leaving
//!   dimensions `i..i+k` of sizes `d_1, …, d_k` (the paper's reading of `decompose` as repeated
//!   splits, §4.2). `d_1` varies fastest.
//! * `m.balance_split(i, k)`: `split_into(i, …)` with the `k` factors of `s_i` whose sum is least
//!   (the most square/cubic ones), in non-increasing order (6 into 2 gives `(3, 2)`).
//! * `m.auto_split(i, (l_1, …, l_k))`: `split_into(i, …)` with the factors `d_m` of `s_i` that
//!   minimise `Σ d_m / l_m`, the communication-volume objective of §4.2 (for `k = 3` this is the
//!   manual's `Σ_{i≠j} W_i W_j` with `W_m = l_m / d_m`, since `Π W` is fixed).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::decompose::DecomposeError;

pub use diffuse_machine::{MachineShape, ProcKind, Processor, UnknownProcKind};

/// The most parts `balance_split` and `auto_split` accept.
const MAX_PARTS: usize = 16;

/// A machine: a number of nodes, each with the same number of processors of every kind.
///
/// Kinds that were never given have no processors; asking for their space is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    nodes: usize,
    per_node: BTreeMap<ProcKind, usize>,
}

impl Machine {
    /// A machine with `nodes` nodes and no processors yet (see [`Machine::with_procs`]).
    pub fn new(nodes: usize) -> Machine {
        Machine {
            nodes,
            per_node: BTreeMap::new(),
        }
    }

    /// This machine with `per_node` processors of `kind` on every node.
    pub fn with_procs(mut self, kind: ProcKind, per_node: usize) -> Machine {
        self.per_node.insert(kind, per_node);
        self
    }

    /// `nodes` nodes with `per_node` processors of every kind (the CLI's `--machine NxP`).
    pub fn uniform(nodes: usize, per_node: usize) -> Machine {
        ProcKind::ALL
            .into_iter()
            .fold(Machine::new(nodes), |m, k| m.with_procs(k, per_node))
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The number of processors of `kind` on each node (0 when the machine has none).
    pub fn procs_per_node(&self, kind: ProcKind) -> usize {
        self.per_node.get(&kind).copied().unwrap_or(0)
    }

    /// `Machine(kind)`: the 2-d processor space `(nodes, processors of kind per node)`.
    pub fn space(&self, kind: ProcKind) -> Result<MSpace, MachineError> {
        MSpace::new(kind, self.nodes, self.procs_per_node(kind))
    }
}

impl FromStr for Machine {
    type Err = MachineError;

    /// Parses `NxP` (e.g. `2x4`, also `2X4`): `N` nodes with `P` processors of every kind.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || MachineError::BadMachineSpec(s.to_string());
        let (n, p) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
        let nodes: usize = n.trim().parse().map_err(|_| bad())?;
        let per_node: usize = p.trim().parse().map_err(|_| bad())?;
        if nodes == 0 || per_node == 0 {
            return Err(bad());
        }
        Ok(Machine::uniform(nodes, per_node))
    }
}

/// The machine a backend offers, as a Mapple program sees it (`Machine(CPU)`,
/// `Machine(GPU)`, ...): the kinds it has processors of.
impl From<MachineShape> for Machine {
    fn from(shape: MachineShape) -> Machine {
        [ProcKind::Cpu, ProcKind::Gpu, ProcKind::Omp]
            .into_iter()
            .filter(|&k| shape.per_node(k) > 0)
            .fold(Machine::new(shape.nodes), |m, k| {
                m.with_procs(k, shape.per_node(k))
            })
    }
}

/// The prime factors of `n` (> 0), smallest first (none for 1).
fn prime_factors(mut n: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n % p == 0 {
            out.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// The operation an error comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `Machine(KIND)`: building the original space.
    Machine,
    /// Indexing a space with a point (`m[a, b]`, [`MSpace::to_processor`]).
    Index,
    /// `split`.
    Split,
    /// [`MSpace::split_into`]: several splits of one dimension at once.
    SplitInto,
    /// `merge`.
    Merge,
    /// `swap`.
    Swap,
    /// `slice`.
    Slice,
    /// `reverse`.
    Reverse,
    /// `balance_split`.
    BalanceSplit,
    /// `auto_split`.
    AutoSplit,
    /// `greedy_split`.
    GreedySplit,
    /// `decompose` (for callers that build it on [`MSpace::split_into`], see
    /// [`MachineError::with_primitive`]).
    Decompose,
}

impl Primitive {
    /// The Mapple name of the primitive.
    pub fn name(self) -> &'static str {
        match self {
            Primitive::Machine => "Machine",
            Primitive::Index => "index",
            Primitive::Split => "split",
            Primitive::SplitInto => "split_into",
            Primitive::Merge => "merge",
            Primitive::Swap => "swap",
            Primitive::Slice => "slice",
            Primitive::Reverse => "reverse",
            Primitive::BalanceSplit => "balance_split",
            Primitive::AutoSplit => "auto_split",
            Primitive::GreedySplit => "greedy_split",
            Primitive::Decompose => "decompose",
        }
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Formats a shape or point as a Mapple tuple: `(2, 4)`, `(3,)`, `()`.
pub fn fmt_tuple(values: &[i64]) -> String {
    match values {
        [one] => format!("({one},)"),
        _ => {
            let inner: Vec<String> = values.iter().map(i64::to_string).collect();
            format!("({})", inner.join(", "))
        }
    }
}

/// An error of the machine model. Every variant that comes from a primitive names it (`op`),
/// the offending dimension where there is one, and the shape of the space it was applied to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    /// A dimension index that the space does not have.
    #[error("{op}: dimension {dim} out of range for a space of shape {}", fmt_tuple(.shape))]
    BadDim {
        /// The primitive.
        op: Primitive,
        /// The dimension as given.
        dim: i64,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// Two dimensions that must differ are the same (`merge(1, 1)`).
    #[error("{op}: cannot combine dimension {dim} with itself (shape {})", fmt_tuple(.shape))]
    SameDim {
        /// The primitive.
        op: Primitive,
        /// The dimension given twice.
        dim: i64,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A split factor that is not a positive divisor of the dimension's size.
    #[error(
        "{op}: factor {factor} is not a positive divisor of the size of dimension {dim} \
         (shape {})",
        fmt_tuple(.shape)
    )]
    BadFactor {
        /// The primitive.
        op: Primitive,
        /// The dimension being split.
        dim: i64,
        /// The factor as given.
        factor: i64,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// Factors for [`MSpace::split_into`] that are not positive or do not multiply to the size.
    #[error(
        "{op}: factors {} are not positive integers whose product is the size of dimension \
         {dim} (shape {})",
        fmt_tuple(.factors),
        fmt_tuple(.shape)
    )]
    BadFactors {
        /// The primitive.
        op: Primitive,
        /// The dimension being split.
        dim: i64,
        /// The factors as given.
        factors: Vec<i64>,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A slice range that is empty or leaves the dimension.
    #[error(
        "{op}: range {lo}..={hi} is empty or outside dimension {dim} (shape {})",
        fmt_tuple(.shape)
    )]
    SliceOutOfRange {
        /// The primitive.
        op: Primitive,
        /// The dimension being sliced.
        dim: i64,
        /// The first index kept.
        lo: i64,
        /// The last index kept.
        hi: i64,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A number of parts that is not at least 1 (`balance_split(0, 0)`).
    #[error(
        "{op}: cannot split dimension {dim} into {parts} dimensions (shape {})",
        fmt_tuple(.shape)
    )]
    BadParts {
        /// The primitive.
        op: Primitive,
        /// The dimension being split.
        dim: i64,
        /// The number of dimensions asked for.
        parts: i64,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A task shape that is empty or has a non-positive extent.
    #[error(
        "{op}: task shape {} for dimension {dim} must be a non-empty tuple of positive \
         integers (shape {})",
        fmt_tuple(.task_shape),
        fmt_tuple(.shape)
    )]
    BadTaskShape {
        /// The primitive.
        op: Primitive,
        /// The dimension being split.
        dim: i64,
        /// The task shape as given.
        task_shape: Vec<i64>,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// The factorization search would be too large (a huge dimension or too many parts).
    #[error(
        "{op}: too many ways to factor dimension {dim} into {parts} parts (shape {})",
        fmt_tuple(.shape)
    )]
    SearchTooLarge {
        /// The primitive.
        op: Primitive,
        /// The dimension being split.
        dim: i64,
        /// The number of parts asked for.
        parts: usize,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A point with the wrong number of coordinates.
    #[error(
        "index: point {} has {} coordinates but the space has shape {}",
        fmt_tuple(.point),
        .point.len(),
        fmt_tuple(.shape)
    )]
    PointRank {
        /// The point as given.
        point: Vec<i64>,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A point outside the space.
    #[error("index: point {} is outside the space of shape {}", fmt_tuple(.point), fmt_tuple(.shape))]
    PointOutOfBounds {
        /// The point as given.
        point: Vec<i64>,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// `Machine(kind)` on a machine without nodes or without processors of that kind.
    #[error("Machine({kind}): no processors ({nodes} nodes x {per_node} per node)")]
    NoProcessors {
        /// The kind asked for.
        kind: ProcKind,
        /// The number of nodes.
        nodes: usize,
        /// The processors of that kind per node.
        per_node: usize,
    },
    /// `Machine(kind)` whose processor count does not fit in a Mapple integer.
    #[error("Machine({kind}): {nodes} nodes x {per_node} processors is too large")]
    TooLarge {
        /// The kind asked for.
        kind: ProcKind,
        /// The number of nodes.
        nodes: usize,
        /// The processors of that kind per node.
        per_node: usize,
    },
    /// Integer overflow while computing an index (should not happen for valid spaces).
    #[error("{op}: integer overflow (shape {})", fmt_tuple(.shape))]
    Overflow {
        /// The primitive.
        op: Primitive,
        /// The shape of the space.
        shape: Vec<i64>,
    },
    /// A `--machine` argument that is not `NxP` with positive `N` and `P`.
    #[error("bad machine `{0}`: expected NODESxPROCS with positive numbers, e.g. 2x4")]
    BadMachineSpec(String),
}

impl MachineError {
    /// The primitive this error names, if it comes from one.
    pub fn primitive(&self) -> Option<Primitive> {
        match self {
            MachineError::PointRank { .. } | MachineError::PointOutOfBounds { .. } => {
                Some(Primitive::Index)
            }
            MachineError::NoProcessors { .. } | MachineError::TooLarge { .. } => {
                Some(Primitive::Machine)
            }
            MachineError::BadMachineSpec(_) => None,
            other => other.clone().op_slot().map(|op| *op),
        }
    }

    /// The `op` field of the variants that carry one.
    fn op_slot(&mut self) -> Option<&mut Primitive> {
        match self {
            MachineError::BadDim { op, .. }
            | MachineError::SameDim { op, .. }
            | MachineError::BadFactor { op, .. }
            | MachineError::BadFactors { op, .. }
            | MachineError::SliceOutOfRange { op, .. }
            | MachineError::BadParts { op, .. }
            | MachineError::BadTaskShape { op, .. }
            | MachineError::SearchTooLarge { op, .. }
            | MachineError::Overflow { op, .. } => Some(op),
            _ => None,
        }
    }

    /// The same error attributed to primitive `p` (e.g. [`Primitive::Decompose`] for an error
    /// of [`MSpace::split_into`] used to implement `decompose`). Variants without an `op` field
    /// are returned unchanged.
    pub fn with_primitive(mut self, p: Primitive) -> MachineError {
        if let Some(op) = self.op_slot() {
            *op = p;
        }
        self
    }
}

/// One primitive in a space's history, stored as what its inverse index function needs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// `split(dim, factor)`.
    Split { dim: usize, factor: i64 },
    /// `merge(p, q)`; `size_p` is the size of dimension `p` before merging.
    Merge { p: usize, q: usize, size_p: i64 },
    /// `swap(p, q)`.
    Swap { p: usize, q: usize },
    /// `slice(dim, lo, lo + len - 1)`.
    Slice { dim: usize, lo: i64, len: i64 },
    /// `reverse(dim)` of a dimension of size `size`.
    Reverse { dim: usize, size: i64 },
}

impl Step {
    /// Figure 6: maps a point `a` of the space after this step to the point `b` of the space
    /// before it. `None` only on arithmetic overflow or a malformed point.
    fn inverse(&self, mut a: Vec<i64>) -> Option<Vec<i64>> {
        match *self {
            Step::Split { dim, factor } => {
                if dim + 1 >= a.len() {
                    return None;
                }
                let hi = a.remove(dim + 1);
                let v = hi.checked_mul(factor)?.checked_add(a[dim])?;
                a[dim] = v;
                Some(a)
            }
            Step::Merge { p, q, size_p } => {
                let m = merged_position(p, q);
                if m >= a.len() {
                    return None;
                }
                let v = a.remove(m);
                let fast = v.checked_rem_euclid(size_p)?;
                let slow = v.checked_div_euclid(size_p)?;
                let n = a.len() + 2;
                let mut rest = a.into_iter();
                let mut b = Vec::with_capacity(n);
                for t in 0..n {
                    b.push(if t == p {
                        fast
                    } else if t == q {
                        slow
                    } else {
                        rest.next()?
                    });
                }
                Some(b)
            }
            Step::Swap { p, q } => {
                if p >= a.len() || q >= a.len() {
                    return None;
                }
                a.swap(p, q);
                Some(a)
            }
            Step::Slice { dim, lo, .. } => {
                let x = a.get_mut(dim)?;
                *x = x.checked_add(lo)?;
                Some(a)
            }
            Step::Reverse { dim, size } => {
                let x = a.get_mut(dim)?;
                *x = size.checked_sub(1)?.checked_sub(*x)?;
                Some(a)
            }
        }
    }

    /// The forward direction: maps a point `b` of the space before this step to its point in
    /// the space after it; `None` when the point is sliced away (or on overflow).
    fn forward(&self, mut b: Vec<i64>) -> Option<Vec<i64>> {
        match *self {
            Step::Split { dim, factor } => {
                let v = *b.get(dim)?;
                b[dim] = v.checked_rem_euclid(factor)?;
                b.insert(dim + 1, v.checked_div_euclid(factor)?);
                Some(b)
            }
            Step::Merge { p, q, size_p } => {
                let fast = *b.get(p)?;
                let slow = *b.get(q)?;
                let v = slow.checked_mul(size_p)?.checked_add(fast)?;
                let mut a: Vec<i64> = b
                    .iter()
                    .enumerate()
                    .filter(|&(t, _)| t != p && t != q)
                    .map(|(_, &x)| x)
                    .collect();
                a.insert(merged_position(p, q), v);
                Some(a)
            }
            Step::Swap { p, q } => {
                if p >= b.len() || q >= b.len() {
                    return None;
                }
                b.swap(p, q);
                Some(b)
            }
            Step::Slice { dim, lo, len } => {
                let x = b.get_mut(dim)?;
                let v = x.checked_sub(lo)?;
                if v < 0 || v >= len {
                    return None;
                }
                *x = v;
                Some(b)
            }
            Step::Reverse { dim, size } => {
                let x = b.get_mut(dim)?;
                *x = size.checked_sub(1)?.checked_sub(*x)?;
                Some(b)
            }
        }
    }
}

/// Where `merge(p, q)` puts the merged dimension (the manual's `merge_dim`).
fn merged_position(p: usize, q: usize) -> usize {
    if p < q {
        p
    } else {
        p - 1
    }
}

/// A processor space: an n-d shape plus the composed mapping from its points back to the
/// original 2-d `(node, processor)` space of one processor kind.
///
/// Built by [`Machine::space`] (Mapple's `Machine(GPU)`) or [`MSpace::new`], then transformed by
/// the primitives, each of which returns a new space. See the [module docs](self) for the exact
/// semantics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MSpace {
    kind: ProcKind,
    nodes: usize,
    per_node: usize,
    shape: Vec<i64>,
    steps: Vec<Step>,
}

impl MSpace {
    /// The original space `(nodes, per_node)` of processors of `kind`. Errors when either is 0
    /// or their product does not fit in an `i64`.
    pub fn new(kind: ProcKind, nodes: usize, per_node: usize) -> Result<MSpace, MachineError> {
        if nodes == 0 || per_node == 0 {
            return Err(MachineError::NoProcessors {
                kind,
                nodes,
                per_node,
            });
        }
        let too_large = || MachineError::TooLarge {
            kind,
            nodes,
            per_node,
        };
        let n = i64::try_from(nodes).map_err(|_| too_large())?;
        let p = i64::try_from(per_node).map_err(|_| too_large())?;
        n.checked_mul(p).ok_or_else(too_large)?;
        Ok(MSpace {
            kind,
            nodes,
            per_node,
            shape: vec![n, p],
            steps: Vec::new(),
        })
    }

    /// The processor kind of this space.
    pub fn kind(&self) -> ProcKind {
        self.kind
    }

    /// The number of nodes of the original machine.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The number of processors of this kind per node in the original machine.
    pub fn procs_per_node(&self) -> usize {
        self.per_node
    }

    /// The shape of the space (Mapple's `m.size`).
    pub fn size(&self) -> &[i64] {
        &self.shape
    }

    /// The number of dimensions (Mapple's `len(m.size)`).
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of points (the product of the shape; it never exceeds the machine's
    /// processor count, so it cannot overflow).
    pub fn volume(&self) -> i64 {
        self.shape.iter().product()
    }

    /// True when this is the untransformed `(nodes, per_node)` space.
    pub fn is_original(&self) -> bool {
        self.steps.is_empty()
    }

    /// Checks a dimension argument of primitive `op`.
    fn dim(&self, op: Primitive, dim: i64) -> Result<usize, MachineError> {
        usize::try_from(dim)
            .ok()
            .filter(|&d| d < self.shape.len())
            .ok_or_else(|| MachineError::BadDim {
                op,
                dim,
                shape: self.shape.clone(),
            })
    }

    /// This space with one more step and the given new shape.
    fn with_step(&self, step: Step, shape: Vec<i64>) -> MSpace {
        let mut steps = self.steps.clone();
        steps.push(step);
        MSpace {
            kind: self.kind,
            nodes: self.nodes,
            per_node: self.per_node,
            shape,
            steps,
        }
    }

    /// `split(dim, factor)`: dimension `dim` of size `s` becomes dimensions `dim` (size
    /// `factor`, fastest varying) and `dim + 1` (size `s / factor`); point `(…, i, j, …)` is
    /// `(…, i + j * factor, …)` of `self`. `factor` must be a positive divisor of `s`.
    pub fn split(&self, dim: i64, factor: i64) -> Result<MSpace, MachineError> {
        self.split_op(Primitive::Split, dim, factor)
    }

    fn split_op(&self, op: Primitive, dim: i64, factor: i64) -> Result<MSpace, MachineError> {
        let d = self.dim(op, dim)?;
        let s = self.shape[d];
        if factor <= 0 || s % factor != 0 {
            return Err(MachineError::BadFactor {
                op,
                dim,
                factor,
                shape: self.shape.clone(),
            });
        }
        let mut shape = self.shape.clone();
        shape[d] = factor;
        shape.insert(d + 1, s / factor);
        Ok(self.with_step(Step::Split { dim: d, factor }, shape))
    }

    /// Splits dimension `dim` into `factors.len()` dimensions of the given sizes, by
    /// `split(dim, f_1)`, `split(dim + 1, f_2)`, … (so `f_1` varies fastest). The factors must be
    /// positive with product the size of `dim`; one factor (equal to the size) is the identity.
    /// This is what `decompose` does once its factors are chosen (§4.2 of the paper).
    pub fn split_into(&self, dim: i64, factors: &[i64]) -> Result<MSpace, MachineError> {
        self.split_into_op(Primitive::SplitInto, dim, factors)
    }

    fn split_into_op(
        &self,
        op: Primitive,
        dim: i64,
        factors: &[i64],
    ) -> Result<MSpace, MachineError> {
        let d = self.dim(op, dim)?;
        let bad = || MachineError::BadFactors {
            op,
            dim,
            factors: factors.to_vec(),
            shape: self.shape.clone(),
        };
        if factors.is_empty() || factors.iter().any(|&f| f <= 0) {
            return Err(bad());
        }
        let product = factors
            .iter()
            .try_fold(1i64, |acc, &f| acc.checked_mul(f))
            .ok_or_else(bad)?;
        if product != self.shape[d] {
            return Err(bad());
        }
        let mut m = self.clone();
        if let Some((_, init)) = factors.split_last() {
            for (at, &f) in (dim..).zip(init) {
                m = m.split_op(op, at, f)?;
            }
        }
        Ok(m)
    }

    /// `merge(dim1, dim2)`: the two dimensions become one of size `s1 * s2` at position
    /// `merge_dim = dim1 < dim2 ? dim1 : dim1 - 1`; index `i` there is `i mod s1` in `dim1` and
    /// `⌊i / s1⌋` in `dim2` of `self` (Figure 6: `dim1` varies fastest, so merge inverts split;
    /// the older manual had `dim2` fastest). The dimensions must differ.
    pub fn merge(&self, dim1: i64, dim2: i64) -> Result<MSpace, MachineError> {
        let op = Primitive::Merge;
        let p = self.dim(op, dim1)?;
        let q = self.dim(op, dim2)?;
        if p == q {
            return Err(MachineError::SameDim {
                op,
                dim: dim1,
                shape: self.shape.clone(),
            });
        }
        let (sp, sq) = (self.shape[p], self.shape[q]);
        let merged = sp.checked_mul(sq).ok_or_else(|| MachineError::Overflow {
            op,
            shape: self.shape.clone(),
        })?;
        let mut shape: Vec<i64> = self
            .shape
            .iter()
            .enumerate()
            .filter(|&(t, _)| t != p && t != q)
            .map(|(_, &s)| s)
            .collect();
        shape.insert(merged_position(p, q), merged);
        Ok(self.with_step(Step::Merge { p, q, size_p: sp }, shape))
    }

    /// `swap(dim1, dim2)`: exchanges the two dimensions; `swap(d, d)` is the identity.
    pub fn swap(&self, dim1: i64, dim2: i64) -> Result<MSpace, MachineError> {
        let op = Primitive::Swap;
        let p = self.dim(op, dim1)?;
        let q = self.dim(op, dim2)?;
        let mut shape = self.shape.clone();
        shape.swap(p, q);
        Ok(self.with_step(Step::Swap { p, q }, shape))
    }

    /// `slice(dim, lo, hi)`: keeps indices `lo..=hi` (both included) of dimension `dim`, which
    /// then has size `hi - lo + 1`; index `i` is `i + lo` of `self`. Needs
    /// `0 <= lo <= hi < size[dim]`.
    pub fn slice(&self, dim: i64, lo: i64, hi: i64) -> Result<MSpace, MachineError> {
        let op = Primitive::Slice;
        let d = self.dim(op, dim)?;
        if lo < 0 || hi < lo || hi >= self.shape[d] {
            return Err(MachineError::SliceOutOfRange {
                op,
                dim,
                lo,
                hi,
                shape: self.shape.clone(),
            });
        }
        // 0 <= lo <= hi < size, so neither subtraction nor the increment overflows.
        let len = hi - lo + 1;
        let mut shape = self.shape.clone();
        shape[d] = len;
        Ok(self.with_step(Step::Slice { dim: d, lo, len }, shape))
    }

    /// `reverse(dim)`: index `i` of dimension `dim` is `size[dim] - 1 - i` of `self`.
    pub fn reverse(&self, dim: i64) -> Result<MSpace, MachineError> {
        let d = self.dim(Primitive::Reverse, dim)?;
        let size = self.shape[d];
        Ok(self.with_step(Step::Reverse { dim: d, size }, self.shape.clone()))
    }

    /// `balance_split(dim, parts)`: splits dimension `dim` into `parts` dimensions whose sizes
    /// are as close to each other as possible (the factorization with the least sum), in
    /// non-increasing order: 6 into 2 gives `(3, 2)`, 8 into 3 gives `(2, 2, 2)`. The manual
    /// only promises `parts` of 2 or 3; 1 to 16 parts are accepted (1 is the identity); more
    /// parts or searches of more than 2^20 candidates give
    /// [`MachineError::SearchTooLarge`]. The search is [`decompose`](crate::decompose::decompose)
    /// over equal task extents.
    pub fn balance_split(&self, dim: i64, parts: i64) -> Result<MSpace, MachineError> {
        let op = Primitive::BalanceSplit;
        let d = self.dim(op, dim)?;
        let k = usize::try_from(parts)
            .ok()
            .filter(|&k| k >= 1)
            .ok_or_else(|| MachineError::BadParts {
                op,
                dim,
                parts,
                shape: self.shape.clone(),
            })?;
        if k > MAX_PARTS {
            return Err(MachineError::SearchTooLarge {
                op,
                dim,
                parts: k,
                shape: self.shape.clone(),
            });
        }
        // Equal task extents: minimising Σ d_m / l is minimising the sum of the factors.
        let weights = vec![1i64; k];
        let factors = self.search(op, dim, d, k, &weights)?;
        self.split_into_op(op, dim, &factors)
    }

    /// The index of dimension `dim` for `op`, a split by a task shape, which must be
    /// non-empty with positive extents.
    fn task_shape_dim(
        &self,
        op: Primitive,
        dim: i64,
        task_shape: &[i64],
    ) -> Result<usize, MachineError> {
        let d = self.dim(op, dim)?;
        if task_shape.is_empty() || task_shape.iter().any(|&l| l <= 0) {
            return Err(MachineError::BadTaskShape {
                op,
                dim,
                task_shape: task_shape.to_vec(),
                shape: self.shape.clone(),
            });
        }
        Ok(d)
    }

    /// `auto_split(dim, task_shape)`: splits dimension `dim` into `task_shape.len()` dimensions
    /// whose sizes `d_m` (product the size of `dim`) minimise `Σ d_m / l_m` for
    /// `task_shape = (l_1, …, l_k)`: the inter-processor communication volume of a block
    /// mapping of that task space (§4.2 of the paper; the manual's `Σ_{i≠j} W_i W_j` for
    /// `k = 3`). Ties go to the lexicographically largest factor tuple. The manual's example:
    /// 4 processors and `(4, 2, 4)` give `(2, 1, 2)`. Same search limits as
    /// [`MSpace::balance_split`]; task extents whose common multiple overflows 128 bits give
    /// [`MachineError::Overflow`].
    pub fn auto_split(&self, dim: i64, task_shape: &[i64]) -> Result<MSpace, MachineError> {
        let op = Primitive::AutoSplit;
        let d = self.task_shape_dim(op, dim, task_shape)?;
        if task_shape.len() > MAX_PARTS {
            return Err(MachineError::SearchTooLarge {
                op,
                dim,
                parts: task_shape.len(),
                shape: self.shape.clone(),
            });
        }
        let factors = self.search(op, dim, d, task_shape.len(), task_shape)?;
        self.split_into_op(op, dim, &factors)
    }

    /// `greedy_split(dim, task_shape)`: like [`MSpace::auto_split`], with the factors Legion's
    /// default mapper picks: the size's prime factors from the largest down, each to the
    /// part whose remaining task extent (its extent divided by what it already got) is
    /// largest, the first such part on ties.
    pub fn greedy_split(&self, dim: i64, task_shape: &[i64]) -> Result<MSpace, MachineError> {
        let op = Primitive::GreedySplit;
        let d = self.task_shape_dim(op, dim, task_shape)?;
        let mut factors = vec![1i64; task_shape.len()];
        let mut remaining: Vec<f64> = task_shape.iter().map(|&l| l as f64).collect();
        for p in prime_factors(self.shape[d]).into_iter().rev() {
            let mut at = 0;
            for (k, &r) in remaining.iter().enumerate() {
                if r > remaining[at] {
                    at = k;
                }
            }
            factors[at] *= p;
            remaining[at] /= p as f64;
        }
        self.split_into_op(op, dim, &factors)
    }

    /// Whether processor `index` (of this space's kind, on a node) can use memory of `kind`:
    /// GPUs their framebuffer and zero-copy memory; other processors system, socket, zero-copy
    /// and RDMA memory; nothing has `VIRTUAL` memory. False for an index outside the node.
    pub fn has_memory(&self, index: i64, kind: crate::ast::MemKind) -> bool {
        use crate::ast::MemKind;
        let inside = usize::try_from(index).is_ok_and(|i| i < self.procs_per_node());
        inside
            && match (self.kind(), kind) {
                (_, MemKind::Virtual) => false,
                (ProcKind::Gpu, m) => matches!(m, MemKind::FbMem | MemKind::ZcMem),
                (_, m) => !matches!(m, MemKind::FbMem),
            }
    }

    /// `decompose(dim, task_shape)` of the Mapple paper (§4): the same factorization as
    /// [`MSpace::auto_split`] (minimal `Σ d_m / l_m`, i.e. minimal communication volume of a
    /// block mapping), with errors attributed to `decompose`.
    pub fn decompose(&self, dim: i64, task_shape: &[i64]) -> Result<MSpace, MachineError> {
        self.auto_split(dim, task_shape)
            .map_err(|e| e.with_primitive(Primitive::Decompose))
    }

    /// Runs the factorization search for `balance_split`/`auto_split`: [`decompose`] of the
    /// size of dimension `d` over a task space of extents `weights`.
    ///
    /// [`decompose`]: crate::decompose::decompose
    fn search(
        &self,
        op: Primitive,
        dim: i64,
        d: usize,
        parts: usize,
        weights: &[i64],
    ) -> Result<Vec<i64>, MachineError> {
        let too_large = || MachineError::SearchTooLarge {
            op,
            dim,
            parts,
            shape: self.shape.clone(),
        };
        let overflow = || MachineError::Overflow {
            op,
            shape: self.shape.clone(),
        };
        let size = u64::try_from(self.shape[d]).map_err(|_| too_large())?;
        let extents: Vec<u64> = weights
            .iter()
            .map(|&l| u64::try_from(l).map_err(|_| overflow()))
            .collect::<Result<_, _>>()?;
        let factors = crate::decompose::decompose(size, &extents).map_err(|e| match e {
            DecomposeError::Overflow { .. } => overflow(),
            _ => too_large(),
        })?;
        factors
            .into_iter()
            .map(|f| i64::try_from(f).map_err(|_| overflow()))
            .collect()
    }

    /// The processor that point `point` of this space denotes (Mapple's `m[a, b, …]`): the
    /// inverse index functions of the primitives are applied from the last back to the first.
    /// Errors when the point has the wrong number of coordinates or lies outside the space.
    pub fn to_processor(&self, point: &[i64]) -> Result<Processor, MachineError> {
        if point.len() != self.shape.len() {
            return Err(MachineError::PointRank {
                point: point.to_vec(),
                shape: self.shape.clone(),
            });
        }
        if point
            .iter()
            .zip(&self.shape)
            .any(|(&x, &s)| x < 0 || x >= s)
        {
            return Err(MachineError::PointOutOfBounds {
                point: point.to_vec(),
                shape: self.shape.clone(),
            });
        }
        let overflow = || MachineError::Overflow {
            op: Primitive::Index,
            shape: self.shape.clone(),
        };
        let mut cur = point.to_vec();
        for step in self.steps.iter().rev() {
            cur = step.inverse(cur).ok_or_else(overflow)?;
        }
        match cur.as_slice() {
            &[node, index] => {
                let node = usize::try_from(node).ok().filter(|&n| n < self.nodes);
                let index = usize::try_from(index).ok().filter(|&i| i < self.per_node);
                match (node, index) {
                    (Some(node), Some(index)) => Ok(Processor {
                        kind: self.kind,
                        node,
                        index,
                    }),
                    _ => Err(overflow()),
                }
            }
            _ => Err(overflow()),
        }
    }

    /// The point of this space that denotes processor `proc` (Mapple's
    /// `task.parent.processor(m)`), or `None` when `proc` is of another kind, outside the
    /// machine, or sliced away.
    pub fn point_of(&self, proc: &Processor) -> Option<Vec<i64>> {
        if proc.kind != self.kind || proc.node >= self.nodes || proc.index >= self.per_node {
            return None;
        }
        let mut cur = vec![
            i64::try_from(proc.node).ok()?,
            i64::try_from(proc.index).ok()?,
        ];
        for step in &self.steps {
            cur = step.forward(cur)?;
        }
        Some(cur)
    }
}

impl fmt::Display for MSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MSpace({}, {})", self.kind, fmt_tuple(&self.shape))
    }
}
