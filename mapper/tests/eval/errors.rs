//! Runtime errors: typed, with the exact `file:line:col` of the expression that failed.

use crate::common::machine;
use diffuse_mapper::error::MappleError;
use diffuse_mapper::eval::{EvalError, EvalErrorKind, MAX_CALL_DEPTH, MAX_EVAL_DEPTH};
use diffuse_mapper::machine::{MachineError, Primitive};
use diffuse_mapper::placement::{Mapper, PlacementError};

fn eval_err(e: MappleError) -> EvalError {
    match e {
        MappleError::Eval(e) => e,
        other => panic!("expected an evaluation error, got {other}"),
    }
}

/// The error of loading `src` on a 2 x 4 machine.
fn load_err(src: &str) -> EvalError {
    match Mapper::from_source("e.mapple", src, machine(2, 4)) {
        Ok(_) => panic!("loading succeeded:\n{src}"),
        Err(e) => eval_err(e),
    }
}

/// The error of placing point 0 of a launch of 4 of task `t`.
fn place_err(src: &str) -> EvalError {
    let m = Mapper::from_source("e.mapple", src, machine(2, 4)).unwrap_or_else(|e| panic!("{e}"));
    match m.place("t", &[0], &[4]) {
        Ok(p) => panic!("placing succeeded: {p}"),
        Err(e) => eval_err(e),
    }
}

fn at(e: &EvalError) -> (usize, usize) {
    (e.span.line, e.span.col)
}

#[test]
fn unknown_name() {
    let e = load_err("x = 1;\ny = x + z;");
    assert_eq!(e.to_string(), "e.mapple:2:9: unknown name `z`");
    assert_eq!(e.kind, EvalErrorKind::UnknownName("z".to_string()));
}

#[test]
fn wrong_arity() {
    let e = load_err("def f(int a) { return a; }\nx = f(1, 2);");
    assert_eq!(at(&e), (2, 5));
    assert_eq!(
        e.to_string(),
        "e.mapple:2:5: `f` takes 1 argument(s), got 2"
    );
}

#[test]
fn wrong_argument_type() {
    let e = load_err("def f(int a) { return a; }\nx = f((1, 2));");
    assert_eq!(
        e.to_string(),
        "e.mapple:2:5: argument `a` of `f`: expected int, found tuple"
    );
}

#[test]
fn type_mismatch_names_both_types() {
    let e = load_err("m = Machine(GPU);\nx = 1 + (m - 1);");
    // A parenthesised expression starts at its `(`.
    assert_eq!(at(&e), (2, 9));
    assert_eq!(
        e.kind,
        EvalErrorKind::TypeMismatch {
            op: "-",
            left: "MSpace",
            right: "int"
        }
    );
    assert_eq!(
        e.to_string(),
        "e.mapple:2:9: cannot apply `-` to MSpace and int"
    );
}

#[test]
fn tuples_of_different_lengths() {
    let e = load_err("x = (1, 2) * (1, 2, 3);");
    assert_eq!(
        e.to_string(),
        "e.mapple:1:5: `*` on tuples of different lengths 2 and 3"
    );
}

#[test]
fn index_out_of_range() {
    let e = load_err("t = (1, 2);\nx = 0; y = t[2];");
    assert_eq!(at(&e), (2, 12));
    assert_eq!(e.kind, EvalErrorKind::IndexOutOfRange { index: 2, len: 2 });
    let e = load_err("t = (1, 2);\nx = t[-3];");
    assert_eq!(
        e.to_string(),
        "e.mapple:2:5: index -3 out of range for a tuple of length 2"
    );
}

#[test]
fn division_and_modulo_by_zero() {
    let e = load_err("x = 4;\ny = (x + 1) / (x - 4);");
    assert_eq!(e.to_string(), "e.mapple:2:5: `/` by zero");
    let e = load_err("x = (1, 2) % 0;");
    assert_eq!(e.kind, EvalErrorKind::DivisionByZero { op: "%" });
}

#[test]
fn overflow_is_an_error() {
    let e = load_err("x = 9223372036854775807 + 1;");
    assert_eq!(e.to_string(), "e.mapple:1:5: integer overflow in `+`");
    let e = load_err("x = -9223372036854775807 - 1;\ny = x / -1;");
    assert_eq!(at(&e), (2, 5));
}

#[test]
fn machine_errors_are_wrapped_at_the_method() {
    let e = load_err("m = Machine(GPU);\nm2 = m.split(1, 3);");
    assert_eq!(at(&e), (2, 8));
    assert!(matches!(
        e.kind,
        EvalErrorKind::Machine(MachineError::BadFactor {
            op: Primitive::Split,
            factor: 3,
            ..
        })
    ));
    assert_eq!(
        e.to_string(),
        "e.mapple:2:8: split: factor 3 is not a positive divisor of the size of dimension 1 \
         (shape (2, 4))"
    );
    // A point outside the space.
    let e = load_err("m = Machine(GPU);\np = m[2, 0];");
    assert_eq!(at(&e), (2, 5));
    assert!(matches!(
        e.kind,
        EvalErrorKind::Machine(MachineError::PointOutOfBounds { .. })
    ));
    // A kind the machine does not have.
    let no_gpu = diffuse_mapper::machine::Machine::new(2)
        .with_procs(diffuse_mapper::machine::ProcKind::Cpu, 4);
    let e = eval_err(
        Mapper::from_source("e.mapple", "\nm = 1; m = Machine(GPU);", no_gpu).unwrap_err(),
    );
    assert_eq!(
        e.to_string(),
        "e.mapple:2:12: Machine(GPU): no processors (2 nodes x 0 per node)"
    );
}

#[test]
fn unknown_method_attribute_and_function() {
    let e = load_err("m = Machine(GPU);\nx = m.rotate(1);");
    assert_eq!(e.to_string(), "e.mapple:2:7: MSpace has no method `rotate`");
    let e = load_err("m = Machine(GPU);\nx = m.shape;");
    assert_eq!(
        e.to_string(),
        "e.mapple:2:7: MSpace has no attribute `shape`"
    );
    let e = load_err("x = blocks(1);");
    assert_eq!(e.to_string(), "e.mapple:1:5: unknown function `blocks`");
}

#[test]
fn bad_space_index_count() {
    let e = load_err("m = Machine(GPU);\nx = m.split(1, 2)[0, 1];");
    assert_eq!(at(&e), (2, 5));
    assert!(matches!(e.kind, EvalErrorKind::BadIndex(_)), "{e}");
}

#[test]
fn print_format_mismatch() {
    let e = load_err("print(\"{} {}\", 1);");
    assert_eq!(
        e.to_string(),
        "e.mapple:1:1: format string has 2 `{}` but 1 argument(s) were given"
    );
}

#[test]
fn unbounded_recursion_is_an_error_not_a_stack_overflow() {
    let e = load_err("def f(int n) { return f(n + 1); }\nx = f(0);");
    assert_eq!(at(&e), (1, 23));
    assert_eq!(e.kind, EvalErrorKind::TooDeep(MAX_CALL_DEPTH));
}

#[test]
fn deep_expressions_inside_recursion_hit_the_depth_limit() {
    // Each call nests ~40 expression levels before recursing; the total is capped.
    let mut body = String::from("f(n + 1)");
    for _ in 0..40 {
        body = format!("({body} + 1)");
    }
    let src = format!("def f(int n) {{ return {body}; }}\nx = f(0);");
    let e = load_err(&src);
    assert_eq!(e.kind, EvalErrorKind::TooDeep(MAX_EVAL_DEPTH));
}

#[test]
fn mapping_function_errors_point_into_the_function() {
    let e = place_err(
        "m = Machine(GPU);\n\
         def f(Task task) {\n\
         \x20   n = task.ispace[0] - 4;\n\
         \x20   return m[task.ipoint[0] / n, 0];\n\
         }\n\
         IndexTaskMap t f;",
    );
    assert_eq!(e.to_string(), "e.mapple:4:14: `/` by zero");
}

#[test]
fn mapping_function_must_return_a_processor() {
    let e = place_err("def f(Task t) { return t.ipoint; }\nIndexTaskMap t f;");
    assert_eq!(
        e.to_string(),
        "e.mapple:2:16: mapping function `f` returned tuple, expected a processor"
    );
}

#[test]
fn map_naming_an_unknown_function() {
    let e = place_err("IndexTaskMap t nosuch;");
    assert_eq!(e.to_string(), "e.mapple:1:16: unknown function `nosuch`");
}

#[test]
fn the_mapped_task_has_no_processor_yet() {
    let e = place_err("def f(Task t) { return t.processor(Machine(GPU)); }\nIndexTaskMap t f;");
    assert_eq!(at(&e), (1, 26));
    assert_eq!(e.kind, EvalErrorKind::Unmapped);
}

#[test]
fn placement_queries_outside_the_launch() {
    let m = Mapper::from_source("e.mapple", "", machine(2, 4)).unwrap();
    assert!(matches!(
        m.place("t", &[4], &[4]),
        Err(MappleError::Placement(PlacementError::PointOutside { .. }))
    ));
    assert!(matches!(
        m.place("t", &[0, 0], &[4]),
        Err(MappleError::Placement(PlacementError::PointRank { .. }))
    ));
    assert!(matches!(
        m.place("t", &[0], &[0]),
        Err(MappleError::Placement(PlacementError::EmptyLaunch { .. }))
    ));
    let empty = diffuse_mapper::machine::Machine::new(2);
    let m = Mapper::from_source("e.mapple", "", empty).unwrap();
    assert_eq!(
        m.place("t", &[0], &[4]).unwrap_err().to_string(),
        "no processors on the machine for task `t`"
    );
}

#[test]
fn parse_errors_come_through() {
    let e = Mapper::from_source("e.mapple", "m = Machine(GPU) x", machine(1, 1)).unwrap_err();
    assert!(matches!(e, MappleError::Parse(_)));
    assert_eq!(
        e.to_string(),
        "e.mapple:1:18: expected `;` or end of line, found `x`"
    );
}

#[test]
fn work_and_size_limits() {
    // Exponential recursion runs out of steps.
    let e = load_err("def f(int n) { return n == 0 ? 0 : f(n - 1) + f(n - 1); }\nx = f(40);");
    assert_eq!(
        e.kind,
        EvalErrorKind::TooManySteps(diffuse_mapper::eval::MAX_STEPS)
    );
    // Tuples of tuples grow past the size limit...
    let e = load_err(
        "a = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);\n\
         b = tuple(a for i in a);\n\
         c = tuple(b for i in a);\n\
         d = tuple(c for i in a);",
    );
    assert_eq!(at(&e), (4, 5));
    assert!(matches!(e.kind, EvalErrorKind::TupleTooLarge { .. }), "{e}");
    // ... or the depth limit.
    let mut src = String::from("t = (1,);\n");
    for _ in 0..40 {
        src.push_str("t = (t,);\n");
    }
    let e = load_err(&src);
    assert_eq!(at(&e), (33, 5));
    assert!(
        matches!(e.kind, EvalErrorKind::TupleTooLarge { depth: 33, .. }),
        "{e}"
    );
}
