//! How an index task accesses each store argument.

use std::fmt;

/// An associative, commutative reduction operator for the `Reduce` privilege.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReductionOp {
    /// Addition (logical `or` for `bool`).
    Sum,
    /// Multiplication (logical `and` for `bool`).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// The access a task argument requests on its sub-stores.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Privilege {
    /// Read only.
    Read,
    /// Write only: each point task overwrites its whole sub-store without reading it first
    /// (the previous contents of those elements may be discarded).
    Write,
    /// Read and write.
    ReadWrite,
    /// Fold contributions into the store with an operator; point tasks see only their own
    /// partial values, which the runtime combines in point order.
    Reduce(ReductionOp),
}

impl Privilege {
    /// True for privileges that observe the store's current values (`Read`, `ReadWrite`).
    pub fn reads(self) -> bool {
        matches!(self, Privilege::Read | Privilege::ReadWrite)
    }

    /// True for privileges that overwrite values (`Write`, `ReadWrite`).
    pub fn writes(self) -> bool {
        matches!(self, Privilege::Write | Privilege::ReadWrite)
    }

    /// True for `Reduce(_)`.
    pub fn is_reduction(self) -> bool {
        matches!(self, Privilege::Reduce(_))
    }

    /// True for privileges that change the store (`Write`, `ReadWrite`, `Reduce`).
    pub fn mutates(self) -> bool {
        !matches!(self, Privilege::Read)
    }

    /// The privilege of one argument that stands for this access followed by `later` (a
    /// fused task's argument for two constituents' accesses): equal accesses stay; a write
    /// first overwrites the whole sub-store, so it stays `Write`; reads followed by reads stay
    /// `Read`; anything else both observes and changes values, `ReadWrite`.
    pub fn then(self, later: Privilege) -> Privilege {
        match (self, later) {
            (a, b) if a == b => a,
            (Privilege::Write, _) => Privilege::Write,
            (Privilege::Read, b) if !b.mutates() => Privilege::Read,
            _ => Privilege::ReadWrite,
        }
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Privilege::Read => f.write_str("R"),
            Privilege::Write => f.write_str("W"),
            Privilege::ReadWrite => f.write_str("RW"),
            Privilege::Reduce(op) => write!(f, "Rd({op:?})"),
        }
    }
}
