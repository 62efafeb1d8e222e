//! The compiled-kernel ABI: the canonical description of a fused kernel ([`KernelSignature`]:
//! what it computes, independent of which stores it runs on; the JIT's cache key) and how one
//! point's sub-stores are passed to it ([`MemRef`]). The runtime builds signatures, the JIT
//! compiles them, and backends call the result; all three meet here.
//!
//! Parameters are numbered by first use and stores renamed by first occurrence (the
//! De Bruijn-like renaming of the fusion memoization), and the key also carries what a
//! compiled kernel depends on beyond the fusion key: element types, ranks, privileges and the
//! dimensions broadcast with extent 1.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::{DType, Privilege, TaskKind};

/// Where one parameter's sub-store lives for one call: the address of its first element
/// (null for a temporary, which the kernel never touches in memory), its extent and its
/// strides in elements (the innermost stride must be 1 unless that extent is at most 1).
#[derive(Clone, Copy, Debug)]
pub struct MemRef<'a> {
    /// Address of element (0, .., 0) of the sub-store.
    pub ptr: *mut u8,
    /// Extent per dimension.
    pub sizes: &'a [i64],
    /// Stride per dimension, in elements.
    pub strides: &'a [i64],
}

/// The one loop nest a fused kernel runs, when it is one: what each point's sub-stores must
/// look like for it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct IterationSpace {
    /// The parameter whose extent the nest iterates over: at each point every mutated
    /// parameter must have that extent, and every parameter read element by element must
    /// broadcast to it (extent equal, or 1 in a dimension the signature marks as unit).
    pub param: usize,
    /// The parameters only ever read whole (a sparse row's entries, the vector it
    /// multiplies), of any extent.
    pub whole: Vec<usize>,
}

/// One memref parameter of a fused kernel: a distinct (store, partition) pair the fused task
/// touches, or a temporary.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct KernelParam {
    /// Element type.
    pub dtype: DType,
    /// Rank of the store.
    pub rank: usize,
    /// The union of the constituents' privileges on it.
    pub privilege: Privilege,
    /// True for a temporary: produced and consumed inside the fused task, never in memory.
    pub temporary: bool,
    /// The store, renamed by first occurrence (two parameters with the same number are two
    /// partitions of one store).
    pub store: usize,
    /// Bit `d` set: dimension `d` has extent 1 at every point the kernel runs.
    pub unit_dims: u8,
}

/// One constituent of the fused kernel, in program order.
#[derive(Clone, Debug)]
pub struct KernelStep {
    /// The constituent's task kind.
    pub kind: Arc<TaskKind>,
    /// For each of the kind's store arguments: the parameter it is bound to and the
    /// constituent's privilege on it.
    pub bindings: Vec<(usize, Privilege)>,
}

/// The cache key and composition recipe of a fused kernel.
#[derive(Clone, Debug)]
pub struct KernelSignature {
    /// The fused task's name, for messages (not part of the key).
    pub name: String,
    /// Constituents in program order.
    pub steps: Vec<KernelStep>,
    /// Memref parameters in order.
    pub params: Vec<KernelParam>,
}

impl KernelSignature {
    /// The scalar types the kernel takes after its memrefs: every constituent's declared
    /// scalars, constituents in order.
    pub fn scalar_types(&self) -> impl Iterator<Item = DType> + '_ {
        self.steps
            .iter()
            .flat_map(|s| s.kind.scalars().iter().copied())
    }
}

impl PartialEq for KernelSignature {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
            && self.steps.len() == other.steps.len()
            && self
                .steps
                .iter()
                .zip(&other.steps)
                .all(|(a, b)| a.kind.id() == b.kind.id() && a.bindings == b.bindings)
    }
}

impl Eq for KernelSignature {}

impl Hash for KernelSignature {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.params.hash(state);
        for step in &self.steps {
            step.kind.id().hash(state);
            step.bindings.hash(state);
        }
    }
}
