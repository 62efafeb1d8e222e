//! What each Mapple statement does on each of diffuse's backends: what `diffuse mapple check
//! --explain` prints, and the notices a runtime logs for statements its backend cannot act
//! on (a mapper written for Legion's DSL mapper must load everywhere, and its author must
//! learn which statements had no effect).

use std::fmt;

use crate::ast::{LayoutConstraint, Program, StealScope, StmtKind};

/// A backend a mapper can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The in-process embedded backend.
    Embedded,
    /// The Legion backend.
    Legion,
}

impl Target {
    /// Both backends, in the order `--explain` lists them.
    pub const ALL: [Target; 2] = [Target::Embedded, Target::Legion];

    /// The backend's name (as `--backend` spells it).
    pub fn name(self) -> &'static str {
        match self {
            Target::Embedded => "embedded",
            Target::Legion => "legion",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one statement does on one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// True when the backend acts on the statement.
    pub acts: bool,
    /// What it does, or why it cannot.
    pub what: &'static str,
}

const fn acts(what: &'static str) -> Effect {
    Effect { acts: true, what }
}

const fn inert(why: &'static str) -> Effect {
    Effect {
        acts: false,
        what: why,
    }
}

/// The effect of `stmt` on `target`.
pub fn effect(stmt: &StmtKind, target: Target) -> Effect {
    use Target::{Embedded, Legion};
    match (stmt, target) {
        (StmtKind::Task(_), _) => acts("chooses the processor kind of the task's points"),
        (StmtKind::IndexTaskMap(_), _) => acts("places each point of the index launch"),
        (StmtKind::SingleTaskMap(_), _) => acts("places the single task"),
        (StmtKind::Region(_), Legion) => acts("chooses the memory of the region's instance"),
        (StmtKind::Region(_), Embedded) => {
            acts("recorded as the region's memory; data stays in host memory, GPU points copy in")
        }
        (StmtKind::Layout(l), Legion) => {
            if l.constraints.contains(&LayoutConstraint::FOrder) {
                acts("alignment applies; F_order is kept C order (kernels need the last dimension contiguous)")
            } else {
                acts("sets the instance layout (C order, alignment)")
            }
        }
        (StmtKind::Layout(_), Embedded) => {
            inert("host buffers are always C order with 64-byte alignment")
        }
        (StmtKind::GarbageCollect(_), Legion) => {
            acts("collects the region's instance eagerly after the task")
        }
        (StmtKind::GarbageCollect(_), Embedded) => {
            inert("a store's buffer is freed as soon as its last handle goes")
        }
        (StmtKind::Backpressure(_), Legion) => {
            acts("at most this many launches of the task in flight")
        }
        (StmtKind::Backpressure(_), Embedded) => {
            inert("launches run one at a time, so at most one is in flight")
        }
        (StmtKind::ControlReplicate(_), Legion) => acts(
            "the top-level program that issues the tasks runs control replicated: one shard per \
             process of a multi-process run (`diffuse launch`), every launch issued by all \
             shards and run once (a single process is one shard)",
        ),
        (StmtKind::ControlReplicate(_), Embedded) => {
            inert("one process with one driver: there is nothing to replicate")
        }
        (StmtKind::TaskSteal(t), Legion) => match t.scope {
            StealScope::SameNode => acts(
                "the task's points are stealable: each is mapped onto the least loaded \
                 processor of the kind on its node instead of queueing where it was placed, \
                 and idle processors of the point's node may steal unmapped ones",
            ),
            StealScope::AnyNode => acts(
                "the task's points are stealable: each is mapped onto the least loaded \
                 processor of the kind on its node instead of queueing where it was placed, \
                 and idle processors of any node may steal unmapped ones",
            ),
        },
        (StmtKind::TaskSteal(_), Embedded) => inert(
            "every point runs on the worker of the processor its mapping names; the embedded \
             backend does not steal",
        ),
        (StmtKind::FuncDef(_), _) => acts("defines a mapping function"),
        (StmtKind::Assign { .. }, _) => acts("evaluated when the mapper loads"),
        (StmtKind::Expr(_), _) => acts("evaluated when the mapper loads"),
    }
}

/// One line per statement of `program` (from `file`): where it is, what it says, and its
/// effect on every backend.
pub fn explain(file: &str, program: &Program) -> Vec<String> {
    program
        .stmts
        .iter()
        .map(|s| {
            let text = s.kind_text();
            let effects: Vec<String> = Target::ALL
                .iter()
                .map(|&t| {
                    let e = effect(&s.kind, t);
                    let mark = if e.acts { "acts" } else { "no effect" };
                    format!("{t}: {mark} ({})", e.what)
                })
                .collect();
            format!("{file}:{}: {text}  [{}]", s.span, effects.join("; "))
        })
        .collect()
}

/// The notices for the statements of `program` (from `file`) that `target` cannot act on:
/// `file:line:col: `statement` has no effect on the <target> backend: why`.
pub fn notices(file: &str, program: &Program, target: Target) -> Vec<String> {
    program
        .stmts
        .iter()
        .filter_map(|s| {
            let e = effect(&s.kind, target);
            (!e.acts).then(|| {
                format!(
                    "{file}:{}: `{}` has no effect on the {target} backend: {}",
                    s.span,
                    s.kind_text(),
                    e.what
                )
            })
        })
        .collect()
}
