//! Every fixture loads (its top-level statements evaluate) on a 2 x 4 machine, except the
//! prose snippets that use names the sources never define.

use crate::common::{fixtures, machine};
use diffuse_mapper::error::MappleError;
use diffuse_mapper::eval::EvalErrorKind;
use diffuse_mapper::placement::Mapper;

/// Fixtures that cannot load, the position of the failure and the unknown name. Each is a
/// snippet quoted out of context: the sources show these lines to explain syntax, with
/// placeholder names (`dim1`, `model_old`, `a`, `i`) that no mapper defines. Reporting the
/// unknown name with its position is the correct behaviour.
const EXPECTED_FAILURES: &[(&str, usize, usize, &str)] = &[
    // `merge_dim = dim1 < dim2 ? dim1 : (dim1 - 1)`: the manual's formula for merge.
    ("manual_merge_dim.mapple", 1, 13, "dim1"),
    // `print("{}, {}, {}", a, b, c);`: the manual's print syntax.
    ("manual_print.mapple", 1, 21, "a"),
    // `model_new = model_old.merge(dim1, dim2);` ...: the manual's primitive signatures.
    ("manual_transformations.mapple", 1, 13, "model_old"),
    // `m_split = m.split(i, d)`: the paper's inline notation (line 6 of the fixture).
    ("paper_inline_snippets.mapple", 6, 19, "i"),
];

#[test]
fn every_fixture_loads_or_fails_with_a_clear_error() {
    let all = fixtures();
    assert!(all.len() >= 20, "fixtures found: {}", all.len());
    for (name, text) in &all {
        let result = Mapper::from_source(name, text, machine(2, 4));
        match EXPECTED_FAILURES.iter().find(|(n, ..)| n == name) {
            None => {
                if let Err(e) = result {
                    panic!("{name} does not load: {e}");
                }
            }
            Some(&(_, line, col, unknown)) => match result {
                Err(MappleError::Eval(e)) => {
                    assert_eq!((e.span.line, e.span.col), (line, col), "{name}: {e}");
                    assert_eq!(e.kind, EvalErrorKind::UnknownName(unknown.to_string()));
                    assert_eq!(
                        e.to_string(),
                        format!("{name}:{line}:{col}: unknown name `{unknown}`")
                    );
                }
                other => panic!("{name}: expected an unknown-name error, got {other:?}"),
            },
        }
    }
}

#[test]
fn inline_snippets_index_as_the_paper_says() {
    // `a = m[*(1,2)]` and `b = m[1,2]` (§3.3): unpacking gives the same processor. The
    // snippet fails later (line 6, see above), so evaluate its first lines alone.
    let src = "m = Machine(GPU)\na = m[*(1,2)]\nb = m[1,2]\n";
    let m = Mapper::from_source("s.mapple", src, machine(2, 4)).unwrap();
    assert_eq!(m.env().global("a"), m.env().global("b"));
}

#[test]
fn fixtures_that_map_tasks_place_every_point_of_a_small_launch() {
    // Every loading fixture with an IndexTaskMap places all points of a launch of the rank its
    // function expects, on a valid processor. Snippets whose functions need names defined
    // elsewhere (`mgpu`, `m_2d`) are covered in `sources`.
    let cases: &[(&str, &str, &[i64])] = &[
        ("manual_circuit.mapple", "distribute_charge", &[8]),
        ("manual_circuit.mapple", "print_summary", &[8]),
        ("manual_merge_solomonik.mapple", "init_cublas", &[5]),
        ("manual_auto_split_solomonik.mapple", "task_5", &[4, 4, 2]),
        ("paper_fig1a_block2d.mapple", "tiles", &[4, 6]),
        ("paper_fig_a1b_cannon.mapple", "tiles", &[4, 4]),
        ("reconstructed_fig3_block2D.mapple", "tiles", &[3, 5]),
    ];
    for &(name, task, launch) in cases {
        let text = crate::common::fixture(name);
        let m = Mapper::from_source(name, &text, machine(2, 4)).unwrap();
        let mut point = vec![0i64; launch.len()];
        loop {
            let p = m
                .place(task, &point, launch)
                .unwrap_or_else(|e| panic!("{name} {point:?}: {e}"));
            assert!(p.node < 2 && p.index < 4, "{name} {point:?}: {p}");
            // Next point, row-major.
            let mut d = launch.len();
            loop {
                if d == 0 {
                    break;
                }
                d -= 1;
                point[d] += 1;
                if point[d] < launch[d] {
                    break;
                }
                point[d] = 0;
            }
            if point.iter().all(|&x| x == 0) {
                break;
            }
        }
    }
}
