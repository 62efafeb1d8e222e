//! Memories and instance layouts, as Mapple's `Region` and `Layout` statements name them.

use std::fmt;

/// A memory kind, as in `Region * * GPU FBMEM;`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// `SYSMEM`: system memory.
    SysMem,
    /// `FBMEM`: GPU framebuffer memory.
    FbMem,
    /// `ZCMEM`: zero-copy memory.
    ZcMem,
    /// `RDMEM`: RDMA memory.
    RdMem,
    /// `SOCKMEM`: socket memory.
    SockMem,
    /// `VIRTUAL`: no allocation (a virtual instance).
    Virtual,
}

impl MemKind {
    /// Every memory kind, in the order the Mapple manual lists them.
    pub const ALL: [MemKind; 6] = [
        MemKind::SysMem,
        MemKind::FbMem,
        MemKind::ZcMem,
        MemKind::RdMem,
        MemKind::SockMem,
        MemKind::Virtual,
    ];

    /// The keyword that spells this kind.
    pub fn keyword(self) -> &'static str {
        match self {
            MemKind::SysMem => "SYSMEM",
            MemKind::FbMem => "FBMEM",
            MemKind::ZcMem => "ZCMEM",
            MemKind::RdMem => "RDMEM",
            MemKind::SockMem => "SOCKMEM",
            MemKind::Virtual => "VIRTUAL",
        }
    }

    /// The kind spelled by `word`, if any.
    pub fn from_keyword(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.keyword() == word)
    }
}

/// The comparison in an `Align` layout constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlignOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `<` (the reference compiler's grammar)
    Lt,
    /// `>` (the reference compiler's grammar)
    Gt,
}

impl AlignOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            AlignOp::Eq => "==",
            AlignOp::Ne => "!=",
            AlignOp::Le => "<=",
            AlignOp::Ge => ">=",
            AlignOp::Lt => "<",
            AlignOp::Gt => ">",
        }
    }
}

/// One constraint on the layout of a store's instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayoutConstraint {
    /// `SOA`: struct of arrays.
    Soa,
    /// `AOS`: array of structs.
    Aos,
    /// `C_order`: row-major.
    COrder,
    /// `F_order`: column-major.
    FOrder,
    /// `Exact`: allocate exactly the region's bounds.
    Exact,
    /// `Compact`: compact specialisation.
    Compact,
    /// `Align op bytes`, e.g. `Align==128`.
    Align {
        /// The comparison.
        op: AlignOp,
        /// The alignment in bytes.
        bytes: u64,
    },
    /// `No_Align`: no alignment requirement.
    NoAlign,
}

impl fmt::Display for LayoutConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutConstraint::Soa => f.write_str("SOA"),
            LayoutConstraint::Aos => f.write_str("AOS"),
            LayoutConstraint::COrder => f.write_str("C_order"),
            LayoutConstraint::FOrder => f.write_str("F_order"),
            LayoutConstraint::Exact => f.write_str("Exact"),
            LayoutConstraint::Compact => f.write_str("Compact"),
            LayoutConstraint::Align { op, bytes } => write!(f, "Align{}{bytes}", op.symbol()),
            LayoutConstraint::NoAlign => f.write_str("No_Align"),
        }
    }
}
