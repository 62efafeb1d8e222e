//! The reference compiler's statement forms (besides the manual's), evaluated: task lists,
//! `IndexTaskMap KIND f`, `Layout ... MEMORY ...`, `Align` with `<`/`>` and `No_Align`,
//! `greedy_split`, `volume`, `has`, `ControlReplicate`, `TaskSteal`. Placements are checked
//! point by point against hand-worked values of the paper's Figure 6 semantics.

use diffuse_machine::{Capabilities, Directive, Effect};
use diffuse_mapper::ast::{AlignOp, LayoutConstraint, MemKind, StealScope, StmtKind};
use diffuse_mapper::effects::{effect, notices};
use diffuse_mapper::machine::ProcKind;
use diffuse_mapper::placement::RegionRef;

use crate::common::{cpu, gpu, machine, mapper, place};

const REGION0: RegionRef<'static> = RegionRef {
    index: 0,
    name: None,
};

#[test]
fn task_lists_choose_kinds_for_every_named_task() {
    let m = mapper("Task a,b GPU,CPU;\nTask c OMP;\n", machine(1, 2));
    assert_eq!(m.task_kinds("a"), vec![ProcKind::Gpu, ProcKind::Cpu]);
    assert_eq!(m.task_kinds("b"), vec![ProcKind::Gpu, ProcKind::Cpu]);
    assert_eq!(m.task_kinds("c"), vec![ProcKind::Omp]);
    assert!(m.task_kinds("d").is_empty());
}

#[test]
fn index_task_maps_by_processor_kind_place_the_tasks_of_that_kind() {
    // On a 2 x 2 machine: GPU tasks go cyclically over the flattened GPUs; `pinned` keeps its
    // own named map, which wins; CPU tasks get the default block mapping.
    let src = "\
Task * GPU;
Task host CPU;
m = Machine(GPU);
def cyclic(Task task) {
    f = m.merge(0, 1);
    return f[task.ipoint[0] % f.size[0]];
}
def first(Task task) {
    return m[0, 0];
}
IndexTaskMap GPU cyclic;
IndexTaskMap pinned first;
";
    let m = mapper(src, machine(2, 2));
    // merge(0, 1) of (2 nodes, 2 GPUs), dimension 0 fastest (Figure 6): point k is node
    // k % 2, GPU k / 2.
    let want = [gpu(0, 0), gpu(1, 0), gpu(0, 1), gpu(1, 1), gpu(0, 0)];
    for (i, &p) in want.iter().enumerate() {
        assert_eq!(place(&m, "stencil", &[i as i64], &[5]), p, "point {i}");
    }
    for i in 0..5 {
        assert_eq!(place(&m, "pinned", &[i], &[5]), gpu(0, 0));
    }
    // Block mapping of 4 points over 2 nodes x 2 CPUs.
    let blocks = [cpu(0, 0), cpu(0, 1), cpu(1, 0), cpu(1, 1)];
    for (i, &p) in blocks.iter().enumerate() {
        assert_eq!(place(&m, "host", &[i as i64], &[4]), p, "host point {i}");
    }
}

#[test]
fn layouts_by_memory_apply_to_instances_in_that_memory() {
    let src = "\
Layout * * SYSMEM AOS Align < 64;
Layout * * FBMEM SOA No_Align;
Layout calc 0 GPU C_order Align > 16;
";
    let m = mapper(src, machine(1, 1));
    assert_eq!(
        m.layout("x", REGION0, ProcKind::Cpu, MemKind::SysMem),
        Some(
            &[
                LayoutConstraint::Aos,
                LayoutConstraint::Align {
                    op: AlignOp::Lt,
                    bytes: 64
                }
            ][..]
        )
    );
    assert_eq!(
        m.layout("x", REGION0, ProcKind::Gpu, MemKind::FbMem),
        Some(&[LayoutConstraint::Soa, LayoutConstraint::NoAlign][..])
    );
    assert_eq!(m.layout("x", REGION0, ProcKind::Cpu, MemKind::ZcMem), None);
    // A statement naming the task beats one naming only the memory.
    assert_eq!(
        m.layout("calc", REGION0, ProcKind::Gpu, MemKind::FbMem),
        Some(
            &[
                LayoutConstraint::COrder,
                LayoutConstraint::Align {
                    op: AlignOp::Gt,
                    bytes: 16
                }
            ][..]
        )
    );
}

#[test]
fn greedy_split_volume_and_has() {
    let src = "\
m = Machine(GPU);
c = Machine(CPU);
print(\"{}\", m.greedy_split(1, (6, 4)).size);
big = m.merge(0, 1);
print(\"{}\", big.greedy_split(0, (10, 3)).size);
print(\"{} {}\", m.volume, (2, 3, 4).volume);
print(\"{} {} {} {}\", m.has(0, FBMEM), m.has(0, SYSMEM), c.has(1, SYSMEM), m.has(4, FBMEM));
def g(Task task) {
    s = big.greedy_split(0, (10, 3));
    return s[task.ipoint[0] % 4, task.ipoint[0] / 4];
}
IndexTaskMap spread g;
";
    let m = mapper(src, machine(2, 4));
    // (2 nodes, 4 GPUs): 4 = 2 x 2 goes to the larger remaining extents: 6 first (6 -> 3),
    // then 4 (4 > 3): the GPU dimension splits into (2, 2).
    // The 8 merged GPUs over (10, 3): 2 to 10 (-> 5), 2 to 5 (-> 2.5), 2 to 3: (4, 2).
    assert_eq!(
        m.take_output(),
        vec![
            "(2, 2, 2)".to_string(),
            "(4, 2)".to_string(),
            "8 24".to_string(),
            "true false true false".to_string(),
        ]
    );
    // s[a, b] of the split merged space is merged index a + 4 b (the first part fastest),
    // here i itself; merged index k is node k % 2, GPU k / 2.
    for i in 0..8i64 {
        let k = (i % 4 + 4 * (i / 4)) as usize;
        assert_eq!(
            place(&m, "spread", &[i], &[8]),
            gpu(k % 2, k / 2),
            "point {i}"
        );
    }
}

/// A backend that acts on everything.
const ALL: Capabilities = Capabilities::new("all", |_| Effect::acts("acts"));

/// A backend with one driver and no stealing, like the embedded one.
const SINGLE: Capabilities = Capabilities::new("single", |d| match d {
    Directive::ControlReplicate | Directive::TaskSteal(_) => Effect::inert("cannot"),
    _ => Effect::acts("acts"),
});

#[test]
fn statements_a_backend_cannot_act_on_get_a_notice_naming_them_and_the_backend() {
    let src = "ControlReplicate main,top;\nTaskSteal * CPU SAME_NODE;\nTask * CPU;\n";
    let m = mapper(src, machine(1, 2));
    let stmts = &m.program().stmts;
    assert!(matches!(&stmts[0].kind, StmtKind::ControlReplicate(t) if t.len() == 2));
    for stmt in stmts {
        assert!(effect(&stmt.kind, &ALL).acts);
    }
    assert!(notices("t.mapple", m.program(), &ALL).is_empty());
    assert!(!effect(&stmts[0].kind, &SINGLE).acts);
    assert!(!effect(&stmts[1].kind, &SINGLE).acts);
    assert!(effect(&stmts[2].kind, &SINGLE).acts);
    let said = notices("t.mapple", m.program(), &SINGLE);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].starts_with(
        "t.mapple:1:1: `ControlReplicate main,top;` has no effect on the single backend: cannot"
    ));
    assert!(said[1].starts_with("t.mapple:2:1: `TaskSteal * CPU SAME_NODE;` has no effect"));
}

#[test]
fn task_steal_names_the_thieves_and_their_scope_per_task() {
    let src = "TaskSteal * CPU SAME_NODE;\nTaskSteal a,b GPU ANY_NODE;\n";
    let m = mapper(src, machine(2, 2));
    assert_eq!(m.steal("a"), Some((ProcKind::Gpu, StealScope::AnyNode)));
    assert_eq!(m.steal("b"), Some((ProcKind::Gpu, StealScope::AnyNode)));
    assert_eq!(m.steal("c"), Some((ProcKind::Cpu, StealScope::SameNode)));
    let none = mapper("Task * CPU;\n", machine(1, 2));
    assert_eq!(none.steal("a"), None);
}
