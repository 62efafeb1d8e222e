//! The placement API: map selection, the default block mapping, fused tasks, and the data
//! decisions read from `Task`/`Region`/`Layout`/`GarbageCollect`/`Backpressure`.

use crate::common::{cpu, fixture, gpu, machine, mapper, place};
use diffuse_mapper::ast::{AlignOp, LayoutConstraint, MemKind};
use diffuse_mapper::machine::{Machine, ProcKind, Processor};
use diffuse_mapper::placement::{Mapper, RegionRef};

fn region(index: usize, name: Option<&str>) -> RegionRef<'_> {
    RegionRef { index, name }
}

#[test]
fn default_block_mapping_over_the_tasks_kind() {
    // No map names `t`, no Task statement: GPU, 8 points over 8 GPUs node-major.
    let m = mapper("", machine(2, 4));
    for p in 0..8i64 {
        assert_eq!(
            place(&m, "t", &[p], &[8]),
            gpu(p as usize / 4, p as usize % 4)
        );
    }
    // 2-D launches are linearised row-major: (1, 0) of (2, 8) is point 8 of 16.
    assert_eq!(place(&m, "t", &[1, 0], &[2, 8]), gpu(1, 0));
    assert_eq!(place(&m, "t", &[0, 3], &[2, 8]), gpu(0, 1));
    // A single task runs on processor 0 of node 0.
    assert_eq!(place(&m, "t", &[], &[]), gpu(0, 0));
}

#[test]
fn default_mapping_follows_task_statements() {
    let m = mapper(&fixture("manual_task.mapple"), machine(2, 4));
    assert_eq!(m.task_kinds("foo"), [ProcKind::Cpu]);
    assert_eq!(
        m.task_kinds("bar"),
        [ProcKind::Gpu, ProcKind::Omp, ProcKind::Cpu]
    );
    assert_eq!(m.processor_kind("foo"), Some(ProcKind::Cpu));
    assert_eq!(place(&m, "foo", &[5], &[8]), cpu(1, 1));
    assert_eq!(place(&m, "bar", &[5], &[8]), gpu(1, 1));
    // On a machine without GPUs `Task * GPU,OMP,CPU` falls to OMP.
    let no_gpu = Machine::new(1)
        .with_procs(ProcKind::Cpu, 2)
        .with_procs(ProcKind::Omp, 2);
    let m = Mapper::from_source("t.mapple", &fixture("manual_task.mapple"), no_gpu).unwrap();
    assert_eq!(m.processor_kind("bar"), Some(ProcKind::Omp));
    // Without Task statements: GPU if any, else CPU.
    let cpus = Machine::new(1).with_procs(ProcKind::Cpu, 2);
    let m = Mapper::from_source("t.mapple", "", cpus).unwrap();
    assert_eq!(m.processor_kind("x"), Some(ProcKind::Cpu));
}

#[test]
fn named_maps_win_over_wildcards_and_later_statements_win() {
    let src = "m = Machine(GPU);\n\
               def first(Task t) { return m[0, 0]; }\n\
               def last(Task t) { return m[1, 3]; }\n\
               def any(Task t) { return m[0, 2]; }\n\
               IndexTaskMap a,b first;\n\
               IndexTaskMap b last;\n\
               IndexTaskMap * any;\n\
               SingleTaskMap s last;";
    let m = mapper(src, machine(2, 4));
    assert_eq!(m.index_task_map("a"), Some("first"));
    assert_eq!(m.index_task_map("b"), Some("last"));
    assert_eq!(m.index_task_map("zzz"), Some("any"));
    assert_eq!(m.single_task_map("s"), Some("last"));
    assert_eq!(m.single_task_map("a"), None);
    assert_eq!(place(&m, "a", &[0], &[2]), gpu(0, 0));
    assert_eq!(place(&m, "b", &[0], &[2]), gpu(1, 3));
    assert_eq!(place(&m, "zzz", &[1], &[2]), gpu(0, 2));
    assert_eq!(place(&m, "s", &[], &[]), gpu(1, 3));
    // A single task without a SingleTaskMap: the default.
    assert_eq!(place(&m, "a", &[], &[]), gpu(0, 0));
}

#[test]
fn fused_tasks_use_their_own_map_else_the_first_constituent() {
    let src = "m = Machine(GPU);\n\
               def fixed(Task t) { return m[1, 1]; }\n\
               def other(Task t) { return m[0, 3]; }\n\
               IndexTaskMap fused_ab fixed;\n\
               IndexTaskMap a other;";
    let m = mapper(src, machine(2, 4));
    let p = m.place_fused("fused_ab", &["a", "b"], &[0], &[4]).unwrap();
    assert_eq!(p, gpu(1, 1));
    let p = m.place_fused("fused_xy", &["a", "b"], &[0], &[4]).unwrap();
    assert_eq!(p, gpu(0, 3));
    // First constituent without a map: its default block mapping.
    let p = m.place_fused("fused_ba", &["b", "a"], &[3], &[4]).unwrap();
    assert_eq!(p, gpu(1, 2));
    // No constituents: the fused name itself.
    let p = m.place_fused("zzz", &[], &[3], &[4]).unwrap();
    assert_eq!(p, gpu(1, 2));
}

#[test]
fn region_decisions_most_specific_wins() {
    let m = mapper(&fixture("manual_region_semantic.mapple"), machine(2, 4));
    let gpu_k = ProcKind::Gpu;
    assert_eq!(
        m.memories("t", region(0, Some("rp_shared")), gpu_k),
        Some(&[MemKind::ZcMem][..])
    );
    assert_eq!(
        m.memories("t", region(1, Some("rp_private")), gpu_k),
        Some(&[MemKind::FbMem][..])
    );
    assert_eq!(
        m.memories("t", region(0, None), ProcKind::Cpu),
        Some(&[MemKind::SysMem][..])
    );
    assert_eq!(m.memories("t", region(0, None), ProcKind::Omp), None);
    let m = mapper(&fixture("manual_region_index.mapple"), machine(2, 4));
    assert_eq!(
        m.memories("foo", region(0, None), gpu_k),
        Some(&[MemKind::ZcMem][..])
    );
    assert_eq!(m.memories("foo", region(1, None), gpu_k), None);
    assert_eq!(m.memories("bar", region(0, None), gpu_k), None);
}

#[test]
fn layout_collection_and_backpressure() {
    let m = mapper(
        &fixture("reconstructed_layout_choices.mapple"),
        machine(2, 4),
    );
    assert_eq!(
        m.layout("foo", region(0, None), ProcKind::Cpu, MemKind::SysMem),
        Some(
            &[
                LayoutConstraint::Soa,
                LayoutConstraint::COrder,
                LayoutConstraint::Align {
                    op: AlignOp::Ge,
                    bytes: 16
                }
            ][..]
        )
    );
    assert_eq!(
        m.layout("bar", region(3, None), ProcKind::Gpu, MemKind::SysMem),
        Some(
            &[
                LayoutConstraint::Soa,
                LayoutConstraint::Align {
                    op: AlignOp::Le,
                    bytes: 64
                }
            ][..]
        )
    );
    assert_eq!(
        m.layout(
            "bar",
            region(3, Some("rp_shared")),
            ProcKind::Cpu,
            MemKind::SysMem
        ),
        Some(
            &[
                LayoutConstraint::FOrder,
                LayoutConstraint::Align {
                    op: AlignOp::Ne,
                    bytes: 8
                }
            ][..]
        )
    );

    let m = mapper(&fixture("paper_fig_a1b_cannon.mapple"), machine(2, 4));
    assert!(m.garbage_collect("systolic", region(2, None)));
    assert!(!m.garbage_collect("tiles", region(0, None)));
    assert_eq!(m.backpressure("systolic"), Some(1));
    assert_eq!(m.backpressure("tiles"), None);
    assert_eq!(
        m.memories("tiles", region(0, None), ProcKind::Gpu),
        Some(&[MemKind::FbMem][..])
    );
    assert_eq!(
        m.layout("tiles", region(0, None), ProcKind::Cpu, MemKind::SysMem),
        Some(&[LayoutConstraint::COrder][..])
    );

    let m = mapper(&fixture("manual_instance_limit.mapple"), machine(2, 4));
    assert_eq!(m.backpressure("task_4"), Some(1));
    assert_eq!(m.backpressure("task_6"), Some(1));
    let m = mapper(&fixture("manual_collect_memory.mapple"), machine(2, 4));
    assert!(m.garbage_collect("task_4", region(7, Some("x"))));
    assert!(!m.garbage_collect("task_5", region(0, None)));
}

#[test]
fn mapper_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Mapper>();
    // And usable from several threads at once.
    let m = mapper(&fixture("reconstructed_fig3_block2D.mapple"), machine(2, 2));
    std::thread::scope(|s| {
        for i in 0..4i64 {
            let m = &m;
            s.spawn(move || {
                let p: Processor = m.place("tiles", &[i, 3], &[6, 6]).unwrap();
                assert_eq!(p.index, 1);
            });
        }
    });
}
