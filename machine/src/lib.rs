//! `diffuse-machine`: the words a mapper and a backend share about the machine. Processor
//! kinds and processors ([`ProcKind`], [`Processor`]), memory kinds and instance layouts
//! ([`MemKind`], [`LayoutConstraint`]), where stolen points may go ([`StealScope`]), the shape
//! of a backend's machine ([`MachineShape`]), the one numbering of launch points
//! ([`row_major_index`]), and what each backend can act on
//! ([`Capabilities`]). It sits below both `diffuse-mapper` (Mapple, which decides) and
//! `diffuse-backend` (which carries decisions out), so neither borrows the other's types.
#![warn(missing_docs)]

mod capabilities;
mod memory;
mod points;
mod processor;
mod shape;

pub use capabilities::{Capabilities, Directive, Effect, Placing};
pub use memory::{AlignOp, LayoutConstraint, MemKind};
pub use points::row_major_index;
pub use processor::{ProcKind, Processor, StealScope, UnknownProcKind};
pub use shape::MachineShape;
