//! What a backend can act on: each backend declares, per kind of mapping decision a mapper
//! can express, whether it carries the decision out and what that means on it. Mapple's
//! `--explain` and the notices a runtime logs for statements without effect are derived from
//! these declarations.

use crate::processor::StealScope;

/// A kind of mapping decision, as Mapple's statements express them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Directive {
    /// Where a task's points run.
    Placement(Placing),
    /// `Region`: the memory of a region's instance.
    RegionMemory,
    /// `Layout`: the layout of a region's instance; `column_major` when it asks for
    /// `F_order`.
    Layout {
        /// The layout asks for column-major order.
        column_major: bool,
    },
    /// `GarbageCollect`: collect a region's instance right after the task.
    GarbageCollect,
    /// `Backpressure`/`InstanceLimit`: a bound on the launches of a task in flight.
    Backpressure,
    /// `ControlReplicate`: run the program issuing the tasks once per process.
    ControlReplicate,
    /// `TaskSteal`: idle processors may take a task's points, from this scope.
    TaskSteal(StealScope),
}

/// What a placement directive decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placing {
    /// `Task`: the processor kind of a task's points.
    ProcessorKind,
    /// `IndexTaskMap`: the processor of every point of an index launch.
    IndexPoints,
    /// `SingleTaskMap`: the processor of a single task.
    SingleTask,
}

/// What one directive does on one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// True when the backend acts on the directive.
    pub acts: bool,
    /// What it does, or why it cannot.
    pub what: &'static str,
}

impl Effect {
    /// The backend carries the directive out, as `what` says.
    pub const fn acts(what: &'static str) -> Effect {
        Effect { acts: true, what }
    }

    /// The backend cannot act on the directive, for the reason `why`.
    pub const fn inert(why: &'static str) -> Effect {
        Effect {
            acts: false,
            what: why,
        }
    }

    /// What a placement directive does on a backend that runs every point where the
    /// runtime's placement puts it.
    pub const fn placed(placing: Placing) -> Effect {
        match placing {
            Placing::ProcessorKind => {
                Effect::acts("chooses the processor kind of the task's points")
            }
            Placing::IndexPoints => Effect::acts("places each point of the index launch"),
            Placing::SingleTask => Effect::acts("places the single task"),
        }
    }
}

/// A backend's declaration of what it can act on.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    backend: &'static str,
    effect: fn(Directive) -> Effect,
}

impl Capabilities {
    /// The declaration of the backend named `backend` (as `--backend` spells it), whose
    /// effect of each directive is `effect`.
    pub const fn new(backend: &'static str, effect: fn(Directive) -> Effect) -> Self {
        Capabilities { backend, effect }
    }

    /// The backend's name.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// What `directive` does on the backend.
    pub fn effect(&self, directive: Directive) -> Effect {
        (self.effect)(directive)
    }
}
