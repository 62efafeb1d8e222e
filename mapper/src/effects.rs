//! What each Mapple statement does on a backend, derived from what the backend declares it
//! can act on ([`Capabilities`]): what `diffuse mapple check --explain` prints, and the
//! notices a runtime logs for statements its backend cannot act on (a mapper written for
//! Legion's DSL mapper must load everywhere, and its author must learn which statements had
//! no effect).

use diffuse_machine::{Capabilities, Directive, Effect, LayoutConstraint, Placing};

use crate::ast::{Program, StmtKind};

/// The mapping decision `stmt` expresses, or `None` for the statements every backend acts on
/// alike because the mapper itself evaluates them (definitions, assignments, expressions).
pub fn directive(stmt: &StmtKind) -> Option<Directive> {
    Some(match stmt {
        StmtKind::Task(_) => Directive::Placement(Placing::ProcessorKind),
        StmtKind::IndexTaskMap(_) => Directive::Placement(Placing::IndexPoints),
        StmtKind::SingleTaskMap(_) => Directive::Placement(Placing::SingleTask),
        StmtKind::Region(_) => Directive::RegionMemory,
        StmtKind::Layout(l) => Directive::Layout {
            column_major: l.constraints.contains(&LayoutConstraint::FOrder),
        },
        StmtKind::GarbageCollect(_) => Directive::GarbageCollect,
        StmtKind::Backpressure(_) => Directive::Backpressure,
        StmtKind::ControlReplicate(_) => Directive::ControlReplicate,
        StmtKind::TaskSteal(t) => Directive::TaskSteal(t.scope),
        StmtKind::FuncDef(_) => return None,
        StmtKind::Assign { .. } | StmtKind::Expr(_) => return None,
    })
}

/// The effect of `stmt` on the backend that declared `backend`.
pub fn effect(stmt: &StmtKind, backend: &Capabilities) -> Effect {
    match (directive(stmt), stmt) {
        (Some(d), _) => backend.effect(d),
        (None, StmtKind::FuncDef(_)) => Effect::acts("defines a mapping function"),
        (None, _) => Effect::acts("evaluated when the mapper loads"),
    }
}

/// One line per statement of `program` (from `file`): where it is, what it says, and its
/// effect on each of `backends`.
pub fn explain(file: &str, program: &Program, backends: &[Capabilities]) -> Vec<String> {
    program
        .stmts
        .iter()
        .map(|s| {
            let text = s.kind_text();
            let effects: Vec<String> = backends
                .iter()
                .map(|b| {
                    let e = effect(&s.kind, b);
                    let mark = if e.acts { "acts" } else { "no effect" };
                    format!("{}: {mark} ({})", b.backend(), e.what)
                })
                .collect();
            format!("{file}:{}: {text}  [{}]", s.span, effects.join("; "))
        })
        .collect()
}

/// The notices for the statements of `program` (from `file`) that `backend` cannot act on:
/// `file:line:col: `statement` has no effect on the <backend> backend: why`.
pub fn notices(file: &str, program: &Program, backend: &Capabilities) -> Vec<String> {
    program
        .stmts
        .iter()
        .filter_map(|s| {
            let e = effect(&s.kind, backend);
            (!e.acts).then(|| {
                format!(
                    "{file}:{}: `{}` has no effect on the {} backend: {}",
                    s.span,
                    s.kind_text(),
                    backend.backend(),
                    e.what
                )
            })
        })
        .collect()
}
