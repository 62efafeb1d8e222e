//! Point placement by a Mapple mapper: every point runs on the processor the mapper picks
//! (recorded in the DSL manual's log format), results do not change, and a mapper that
//! places a point outside the machine fails loudly.

use std::sync::Arc;

use diffuse::backend::{ProcKind, Processor};
use diffuse::{
    BackendConfig, EmbeddedConfig, FusionConfig, MapplePlacement, Placement, RuntimeConfig,
};
use diffuse_ir::{Context, IndexTask, IrError, Privilege, Tuple};
use diffuse_mapper::machine::Machine;

use crate::common::run_writer;
use crate::common::{add_kind, kind_once, name};

/// Two nodes of two processors; `source` maps the tasks.
fn rig(source: &str, fusion: FusionConfig) -> (Context, Arc<MapplePlacement>) {
    let backend = BackendConfig::Embedded(EmbeddedConfig {
        procs: Some(4),
        nodes: 2,
        ..Default::default()
    });
    let machine = diffuse::start_backend(&backend).unwrap().machine();
    let placement = Arc::new(MapplePlacement::new("test.mapple", source, machine, true).unwrap());
    let runtime = diffuse::start(
        &backend,
        RuntimeConfig {
            fusion,
            placement: Some(placement.clone() as Arc<dyn Placement>),
            ..Default::default()
        },
    )
    .unwrap();
    let ctx = Context::new(runtime);
    (ctx, placement)
}

/// `c = a + b` over 8 launch points on 1-d stores of 40 elements; returns `c`.
fn add_over_eight(ctx: &Context) -> Result<Vec<f64>, IrError> {
    let n = 40;
    let a = ctx.store_from_vec(&[n], (0..n).map(|i| i as f64).collect())?;
    let b = ctx.store_from_vec(&[n], (0..n).map(|i| (i * i) as f64).collect())?;
    let c = ctx.create_store(&[n], diffuse_ir::DType::F64)?;
    let launch = Tuple::shape(&[8])?;
    ctx.submit(
        IndexTask::new(&add_kind(), launch)
            .arg(&c, c.view().blocked(launch)?, Privilege::Write)
            .arg(&a, a.view().blocked(launch)?, Privilege::Read)
            .arg(&b, b.view().blocked(launch)?, Privilege::Read),
    )?;
    ctx.read::<f64>(&c.view())
}

/// The kind name of `add_kind()` as a Mapple identifier.
fn add_task() -> String {
    diffuse::placement::mapple_name(&name("add"))
}

#[test]
fn a_cyclic_mapper_places_points_and_logs_its_decisions() {
    let source = format!(
        "m = Machine(CPU);\n\
         def cyclic(Task task) {{\n\
             i = task.ipoint[0];\n\
             return m[i % m.size[0], (i / m.size[0]) % m.size[1]];\n\
         }}\n\
         IndexTaskMap {} cyclic;\n",
        add_task()
    );
    let (ctx, placement) = rig(&source, FusionConfig::off());
    let got = add_over_eight(&ctx).unwrap();
    let want: Vec<f64> = (0..40).map(|i| (i + i * i) as f64).collect();
    assert_eq!(got, want);
    let log = placement.take_log();
    let task = add_task();
    assert_eq!(log[0], format!("SELECT_SHARDING_FUNCTOR for {task}"));
    assert_eq!(log[1], "0 <- (0) (2) (4) (6)");
    assert_eq!(log[2], "1 <- (1) (3) (5) (7)");
    assert_eq!(log[3], format!("SLICE_TASK for {task}"));
    assert_eq!(log[4], "<0>..<0> -> node 0 processor 0");
    assert_eq!(log[5], "<1>..<1> -> node 1 processor 0");
    assert_eq!(log[6], "<2>..<2> -> node 0 processor 1");
    assert_eq!(log[7], "<3>..<3> -> node 1 processor 1");
    assert_eq!(log[8], "<4>..<4> -> node 0 processor 0");
}

#[test]
fn the_default_mapping_blocks_points() {
    // No IndexTaskMap: the default block mapping (2 points per processor).
    let (ctx, placement) = rig("m = Machine(CPU);\n", FusionConfig::default());
    add_over_eight(&ctx).unwrap();
    let log = placement.take_log();
    assert_eq!(log[1], "0 <- (0) (1) (2) (3)");
    assert_eq!(log[2], "1 <- (4) (5) (6) (7)");
}

#[test]
fn a_point_placed_outside_the_machine_is_an_error() {
    let source = format!(
        "m = Machine(CPU);\n\
         def nowhere(Task task) {{ return m[task.ipoint[0], 0]; }}\n\
         IndexTaskMap {} nowhere;\n",
        add_task()
    );
    let (ctx, _) = rig(&source, FusionConfig::off());
    let err = add_over_eight(&ctx).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("test.mapple"), "{message}");
}

/// A kernel that writes, for every element of its block, the index of the worker thread
/// (the embedded backend's processor) that ran it.
fn whoami_kind() -> Arc<diffuse_ir::TaskKind> {
    kind_once(
        "whoami",
        |b| b.arg("out", diffuse_ir::DType::F64, Privilege::Write),
        |t| {
            let me = rayon::current_thread_index().map_or(-1.0, |i| i as f64);
            let mut out = t.write::<f64>(0)?;
            for r in 0..out.rows() {
                out.row_mut(r).fill(me);
            }
            Ok(())
        },
    )
}

#[test]
fn each_point_runs_on_the_processor_the_mapper_picks() {
    // Point i on processor (3 - i % 4): node (3 - i % 4) / 2, index (3 - i % 4) % 2.
    let task = diffuse::placement::mapple_name(&name("whoami"));
    let source = format!(
        "m = Machine(CPU);\n\
         def backwards(Task task) {{\n\
             p = 3 - task.ipoint[0] % 4;\n\
             return m[p / 2, p % 2];\n\
         }}\n\
         IndexTaskMap {task} backwards;\n"
    );
    let (ctx, _) = rig(&source, FusionConfig::off());
    let ran_on = run_writer(&ctx, &whoami_kind(), 8);
    let want: Vec<f64> = (0..8).map(|i| (3 - i % 4) as f64).collect();
    assert_eq!(ran_on, want);
}

// ---------------------------------------------------------------------------------------------
// The same mappers written as Rust placements: a differential check of the Mapple evaluator
// and the lines-of-code comparison of the issue (counted between the markers).
// ---------------------------------------------------------------------------------------------

// rust-mappers: begin
/// A Rust placement on GPUs, `per_node` on each of `nodes` nodes: `place` picks the node and
/// the GPU on it for a point of a launch.
#[derive(Debug)]
struct GpuMapper {
    nodes: i64,
    per_node: i64,
    place: GpuPlace,
}

/// The node and GPU a [`GpuMapper`] places a point of a launch on.
type GpuPlace = fn(&GpuMapper, &diffuse_ir::Point, diffuse_ir::Shape) -> (i64, i64);

impl Placement for GpuMapper {
    fn processor(
        &self,
        _task: &str,
        _constituents: &[&str],
        _kind: ProcKind,
        point: &diffuse_ir::Point,
        launch: diffuse_ir::Shape,
    ) -> Result<Processor, IrError> {
        let (node, index) = (self.place)(self, point, launch);
        Ok(Processor {
            kind: ProcKind::Gpu,
            node: node as usize,
            index: index as usize,
        })
    }
}

/// Figure 3's `block2D`.
fn block_2d(m: &GpuMapper, point: &diffuse_ir::Point, launch: diffuse_ir::Shape) -> (i64, i64) {
    let node = point[0] * m.nodes / launch[0];
    let gpu = point[1] * m.per_node / launch[1];
    (node, gpu)
}

/// The manual's `hierarchicalblock1d`: block over nodes, then block over each node's GPUs.
fn hierarchical_block_1d(
    m: &GpuMapper,
    point: &diffuse_ir::Point,
    launch: diffuse_ir::Shape,
) -> (i64, i64) {
    let node = point[0] * m.nodes / launch[0];
    let block = launch[0] / m.nodes;
    let gpu = (point[0] % block) * m.per_node / block;
    (node, gpu)
}

/// The manual's `cyclic1d`: cyclic over nodes, then cyclic over GPUs.
fn cyclic_1d(m: &GpuMapper, point: &diffuse_ir::Point, _launch: diffuse_ir::Shape) -> (i64, i64) {
    let node = point[0] % m.nodes;
    let gpu = point[0] / m.nodes % m.per_node;
    (node, gpu)
}
// rust-mappers: end

/// The Mapple texts of the same three mappers (as in the sources).
const MAPPLE_MAPPERS: &str = "\
mgpu = Machine(GPU);
def block2D(Task task) {
    ip = task.ipoint;
    is = task.ispace;
    return mgpu[ip[0] * mgpu.size[0] / is[0], ip[1] * mgpu.size[1] / is[1]];
}
def hierarchicalblock1d(Task task) {
    ip = task.ipoint;
    is = task.ispace;
    node_idx = ip[0] * mgpu.size[0] / is[0];
    blk_size = is[0] / mgpu.size[0];
    gpu_idx = ip[0] % blk_size * mgpu.size[1] / blk_size;
    return mgpu[node_idx, gpu_idx];
}
def cyclic1d(Task task) {
    ip = task.ipoint;
    return mgpu[ip[0] % mgpu.size[0], ip[0] / mgpu.size[0] % mgpu.size[1]];
}
IndexTaskMap tiles block2D;
IndexTaskMap hblocks hierarchicalblock1d;
IndexTaskMap cycles cyclic1d;
";

#[test]
fn mapple_mappers_agree_with_their_rust_equivalents() {
    let (nodes, per_node) = (2usize, 4usize);
    let mapple = MapplePlacement::new(
        "sources.mapple",
        MAPPLE_MAPPERS,
        Machine::uniform(nodes, per_node),
        false,
    )
    .unwrap();
    let mapper = |place: GpuPlace| GpuMapper {
        nodes: nodes as i64,
        per_node: per_node as i64,
        place,
    };
    let cases = [
        ("tiles", mapper(block_2d), vec![6, 6]),
        ("hblocks", mapper(hierarchical_block_1d), vec![16]),
        ("cycles", mapper(cyclic_1d), vec![16]),
    ];
    for (task, rust, launch) in cases {
        let launch = Tuple::shape(&launch).unwrap();
        for point in diffuse_ir::Rect::from_shape(launch).points() {
            let want = rust
                .processor(task, &[task], ProcKind::Gpu, &point, launch)
                .unwrap();
            let got = mapple
                .processor(task, &[task], ProcKind::Gpu, &point, launch)
                .unwrap();
            assert_eq!(got, want, "{task} at {point}");
        }
    }
    // Figure 3 on 2 nodes x 2 GPUs: point (2, 3) of (6, 6) is on node 0, GPU 1.
    let fig3 =
        MapplePlacement::new("fig3.mapple", MAPPLE_MAPPERS, Machine::uniform(2, 2), false).unwrap();
    let launch = Tuple::shape(&[6, 6]).unwrap();
    let at = fig3
        .processor(
            "tiles",
            &["tiles"],
            ProcKind::Gpu,
            &Tuple::new(&[2, 3]).unwrap(),
            launch,
        )
        .unwrap();
    assert_eq!((at.node, at.index), (0, 1));
}

/// A placement that runs tasks on GPUs makes libraries split launches over the GPUs (one
/// point, one kernel over the whole store, per GPU), not over the CPUs; one that runs them on
/// CPUs leaves the CPU count.
#[test]
fn launches_are_split_over_the_gpus_a_placement_runs_tasks_on() {
    let machine = diffuse::MachineShape {
        nodes: 1,
        cpus_per_node: 4,
        gpus_per_node: 2,
        omps_per_node: 0,
    };
    let gpus = MapplePlacement::prefer_gpus(machine).unwrap();
    assert_eq!(gpus.launch_processors(), Some(2));
    let cpus = MapplePlacement::new("cpus.mapple", "Task * CPU;\n", machine, false).unwrap();
    assert_eq!(cpus.launch_processors(), None);

    // A runtime on four CPUs and the simulated GPU: the libraries see one processor with a
    // GPU placement, four without one.
    let backend = BackendConfig::Embedded(EmbeddedConfig {
        procs: Some(4),
        device: Some(diffuse::device::DeviceChoice::Simulated),
        ..Default::default()
    });
    let shape = diffuse::start_backend(&backend).unwrap().machine();
    assert_eq!((shape.cpus(), shape.gpus_per_node), (4, 1));
    let processors = |placement: Option<Arc<dyn Placement>>| {
        let runtime = diffuse::start(
            &backend,
            RuntimeConfig {
                placement,
                ..Default::default()
            },
        )
        .unwrap();
        Context::new(runtime).processors()
    };
    let on_gpus = Arc::new(MapplePlacement::prefer_gpus(shape).unwrap());
    assert_eq!(processors(Some(on_gpus)), 1);
    assert_eq!(processors(None), 4);
}

/// A runtime fuses scalar work into the launches that consume it (and says so to the
/// libraries, `Context::fuses_scalar_work`) when fusion is on and its placement cannot put
/// tasks on GPUs; not with fusion off, nor with a placement over a machine with GPUs.
#[test]
fn scalar_work_is_fused_with_fusion_on_and_without_gpus() {
    let backend = BackendConfig::Embedded(EmbeddedConfig {
        procs: Some(2),
        device: Some(diffuse::device::DeviceChoice::Simulated),
        ..Default::default()
    });
    let shape = diffuse::start_backend(&backend).unwrap().machine();
    let fuses = |fusion: FusionConfig, placement: Option<Arc<dyn Placement>>| {
        let runtime = diffuse::start(
            &backend,
            RuntimeConfig {
                fusion,
                placement,
                ..Default::default()
            },
        )
        .unwrap();
        Context::new(runtime).fuses_scalar_work()
    };
    let without_gpus = diffuse::MachineShape {
        gpus_per_node: 0,
        ..shape
    };
    let cpus = MapplePlacement::new("cpus.mapple", "Task * CPU;\n", without_gpus, false).unwrap();
    let gpus = MapplePlacement::prefer_gpus(shape).unwrap();
    assert!(fuses(FusionConfig::default(), None));
    assert!(fuses(FusionConfig::default(), Some(Arc::new(cpus))));
    assert!(!fuses(FusionConfig::off(), None));
    assert!(!fuses(FusionConfig::default(), Some(Arc::new(gpus))));
}
