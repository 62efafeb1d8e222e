//! The mappers of the two sources place tasks as the sources say.

use std::collections::BTreeMap;

use crate::common::{cpu, fixture, gpu, machine, mapper, place};
use diffuse_mapper::machine::Processor;
use diffuse_mapper::placement::Mapper;

/// The manual's logged sharding decision: `node <- (p) (p) ...` for every node, in order.
fn sharding_log(m: &Mapper, task: &str, points: i64) -> Vec<String> {
    let mut by_node: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for p in 0..points {
        let proc = place(m, task, &[p], &[points]);
        by_node.entry(proc.node).or_default().push(format!("({p})"));
    }
    by_node
        .into_iter()
        .map(|(node, pts)| format!("{node} <- {}", pts.join(" ")))
        .collect()
}

#[test]
fn figure3_block2d_places_2_3_on_node0_gpu1() {
    let m = mapper(&fixture("reconstructed_fig3_block2D.mapple"), machine(2, 2));
    assert_eq!(place(&m, "tiles", &[2, 3], &[6, 6]), gpu(0, 1));
    // The whole grid: rows 0..3 on node 0, columns 0..3 on GPU 0.
    for i in 0..6 {
        for j in 0..6 {
            let want = gpu(usize::from(i >= 3), usize::from(j >= 3));
            assert_eq!(place(&m, "tiles", &[i, j], &[6, 6]), want, "({i}, {j})");
        }
    }
}

#[test]
fn figure1a_block2d_with_tuple_parameters() {
    // `def block2d(Tuple point, Tuple space)`: a two-parameter mapping function gets the point
    // and the launch domain.
    let m = mapper(&fixture("paper_fig1a_block2d.mapple"), machine(2, 2));
    assert_eq!(place(&m, "tiles", &[2, 3], &[6, 6]), gpu(0, 1));
    assert_eq!(place(&m, "tiles", &[5, 0], &[6, 6]), gpu(1, 0));
}

#[test]
fn circuit_reproduces_the_manuals_sharding_log() {
    let m = mapper(&fixture("manual_circuit.mapple"), machine(2, 4));
    for task in [
        "calculate_new_currents",
        "distribute_charge",
        "update_voltages",
    ] {
        assert_eq!(
            sharding_log(&m, task, 8),
            ["0 <- (0) (1) (2) (3)", "1 <- (4) (5) (6) (7)"],
            "{task}"
        );
        // SLICE_TASK: within the node, point p runs on GPU p % 4.
        for p in 0..8 {
            assert_eq!(
                place(&m, task, &[p], &[8]),
                gpu(p as usize / 4, p as usize % 4)
            );
        }
    }
    // block_shard_cpu: one CPU per node.
    for p in 0..8 {
        assert_eq!(place(&m, "init_piece", &[p], &[8]), cpu(p as usize / 4, 0));
    }
}

/// The manual's 1-D snippets use `mgpu` from the circuit mapper; define it as there.
fn manual_1d(name: &str) -> Mapper {
    let src = format!("mgpu = Machine(GPU);\n{}", fixture(name));
    mapper(&src, machine(2, 4))
}

#[test]
fn block1d_one_point_per_gpu() {
    let m = manual_1d("manual_block1d.mapple");
    for p in 0..8i64 {
        let got = m.place_by_function("block1d", &[p], &[8]).unwrap();
        assert_eq!(got, gpu(p as usize / 4, p as usize % 4));
    }
}

#[test]
fn hierarchicalblock1d_blocks_over_nodes_then_gpus() {
    let m = manual_1d("manual_hierarchicalblock1d.mapple");
    // 8 points: one per GPU, node-major.
    for p in 0..8i64 {
        let got = m
            .place_by_function("hierarchicalblock1d", &[p], &[8])
            .unwrap();
        assert_eq!(got, gpu(p as usize / 4, p as usize % 4), "{p} of 8");
    }
    // 16 points: blocks of 8 per node, blocks of 2 per GPU within the node.
    for p in 0..16i64 {
        let got = m
            .place_by_function("hierarchicalblock1d", &[p], &[16])
            .unwrap();
        let (node, within) = (p as usize / 8, p as usize % 8);
        assert_eq!(got, gpu(node, within / 2), "{p} of 16");
    }
}

#[test]
fn cyclic1d_cycles_over_nodes_then_gpus() {
    let m = manual_1d("manual_cyclic1d.mapple");
    for p in 0..16i64 {
        let got = m.place_by_function("cyclic1d", &[p], &[16]).unwrap();
        let p = p as usize;
        assert_eq!(got, gpu(p % 2, (p / 2) % 4), "{p}");
    }
}

#[test]
fn cannon_places_every_tile_of_4x4_on_2x4() {
    // Derivation: Machine(GPU) is (2, 4). decompose(0, (4, 4)) splits the 2 nodes into (2, 1)
    // (ties go to the lexicographically largest factors), so m3d = (2, 1, 4) and
    // is / m3d[:-1] = (2, 4); decompose(2, (2, 4)) splits the 4 GPUs into (2, 2), so
    // m4d = (2, 1, 2, 2). Tile (i, j) goes to m4d[i / 2, 0, i % 2, j % 2]: node i / 2, GPU
    // i % 2 + 2 * (j % 2). Each of the 8 GPUs gets 2 tiles.
    for name in [
        "paper_fig_a1b_cannon.mapple",
        "paper_fig_a1b_cannon_reindented.mapple",
    ] {
        let m = mapper(&fixture(name), machine(2, 4));
        let mut count: BTreeMap<Processor, usize> = BTreeMap::new();
        for i in 0..4i64 {
            for j in 0..4i64 {
                let p = place(&m, "tiles", &[i, j], &[4, 4]);
                assert!(p.node < 2 && p.index < 4, "{name}: {p}");
                let (i, j) = (i as usize, j as usize);
                assert_eq!(p, gpu(i / 2, i % 2 + 2 * (j % 2)), "{name}: ({i}, {j})");
                *count.entry(p).or_default() += 1;
            }
        }
        assert_eq!(count.len(), 8, "{name}");
        assert!(count.values().all(|&c| c == 2), "{name}: {count:?}");
    }
}

#[test]
fn cannon_on_other_machines_stays_valid() {
    let m_src = fixture("paper_fig_a1b_cannon.mapple");
    for (nodes, per) in [(1, 1), (1, 4), (4, 2), (3, 2), (2, 6)] {
        let m = mapper(&m_src, machine(nodes, per));
        for i in 0..6i64 {
            for j in 0..6i64 {
                let p = place(&m, "tiles", &[i, j], &[6, 6]);
                assert!(p.node < nodes && p.index < per, "{nodes}x{per}: {p}");
            }
        }
    }
}

#[test]
fn solomonik_merge_uses_figure6_order() {
    // m_1d = m_2d.merge(0, 1): index i is node i mod 2, GPU i / 2 (dimension 0 fastest, the
    // paper's Figure 6; the older manual would give node i / 4, GPU i mod 4).
    let m = mapper(&fixture("manual_merge_solomonik.mapple"), machine(2, 4));
    for p in 0..8i64 {
        let got = place(&m, "init_cublas", &[p], &[8]);
        assert_eq!(got, gpu(p as usize % 2, p as usize / 2), "{p}");
    }
}

#[test]
fn solomonik_auto3d_blocks_x_over_nodes_and_yz_over_gpus() {
    // auto_split(0, (2, 2, 2)) gives nodes (2, 1, 1); the per-node subspace (1, 2, 2) splits
    // the 4 GPUs into (1, 2, 2). Point (i, j, k) runs on node i, GPU j + 2 k.
    let m = mapper(
        &fixture("manual_auto_split_solomonik.mapple"),
        machine(2, 4),
    );
    for i in 0..2i64 {
        for j in 0..2i64 {
            for k in 0..2i64 {
                let got = place(&m, "task_5", &[i, j, k], &[2, 2, 2]);
                let want = gpu(i as usize, (j + 2 * k) as usize);
                assert_eq!(got, want, "({i}, {j}, {k})");
            }
        }
    }
}

#[test]
fn same_point_follows_the_parent() {
    let m = mapper(&fixture("manual_same_point.mapple"), machine(2, 4));
    // Default parent: the top-level task on processor 0 of node 0.
    assert_eq!(place(&m, "task_4", &[], &[]), gpu(0, 0));
    let got = m.place_with_parent("task_4", &[], &[], gpu(1, 2)).unwrap();
    assert_eq!(got, gpu(1, 2));
}

#[test]
fn same_node_wildcard_round_robins_within_the_parents_node() {
    let src = format!(
        "m_2d = Machine(GPU);\n{}\nIndexTaskMap t same_node;",
        fixture("manual_same_node.mapple")
    );
    let m = mapper(&src, machine(2, 4));
    for p in 0..8i64 {
        let got = m.place_with_parent("t", &[p], &[8], gpu(1, 3)).unwrap();
        assert_eq!(got, gpu(1, p as usize % 4), "{p}");
    }
}
