//! Values, operators, indexing, comprehensions and `print`.

use crate::common::{gpu, machine};
use diffuse_mapper::eval::{Env, Value};
use diffuse_mapper::machine::Machine;
use diffuse_mapper::parse::parse;

fn load_on(src: &str, m: &Machine) -> Env {
    let prog = parse("s.mapple", src).unwrap_or_else(|e| panic!("{e}"));
    Env::load("s.mapple", &prog, m).unwrap_or_else(|e| panic!("{e}"))
}

fn load(src: &str) -> Env {
    load_on(src, &machine(2, 4))
}

/// The value of `x = <expr>;`.
fn value(expr: &str) -> Value {
    let env = load(&format!("m = Machine(GPU);\nx = {expr};"));
    env.global("x").cloned().expect("x is bound")
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

fn ints(v: &[i64]) -> Value {
    Value::ints(v)
}

#[test]
fn integer_arithmetic_uses_floor_division() {
    assert_eq!(value("1 + 2 * 3 - 4"), int(3));
    assert_eq!(value("7 / 2"), int(3));
    assert_eq!(value("7 % 3"), int(1));
    assert_eq!(value("-7 / 2"), int(-4));
    assert_eq!(value("-7 % 2"), int(1));
    assert_eq!(value("7 % -2"), int(-1));
    assert_eq!(value("-(3)"), int(-3));
}

#[test]
fn tuple_arithmetic_is_elementwise_and_broadcasts_scalars() {
    assert_eq!(value("(1, 2) + (10, 20)"), ints(&[11, 22]));
    assert_eq!(value("(2, 3) * (2, 2) / (6, 6)"), ints(&[0, 1]));
    assert_eq!(value("(4, 9) / 2"), ints(&[2, 4]));
    assert_eq!(value("12 / (4, 3)"), ints(&[3, 4]));
    assert_eq!(value("(5, 7) % 4"), ints(&[1, 3]));
    assert_eq!(value("-(1, -2)"), ints(&[-1, 2]));
    assert_eq!(value("m.size * 2"), ints(&[4, 8]));
}

#[test]
fn comparisons_and_boolean_operators() {
    assert_eq!(
        value("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 4 - 1"),
        Value::Bool(true)
    );
    assert_eq!(value("1 == 2 || (1, 2) == (1, 2)"), Value::Bool(true));
    assert_eq!(value("(1, 2) != (1, 3)"), Value::Bool(true));
    assert_eq!(value("(1, 2) < (1, 3)"), Value::Bool(true));
    assert_eq!(value("!(1 < 2)"), Value::Bool(false));
    // Short-circuit: the right operand (a division by zero) is never evaluated.
    assert_eq!(value("1 < 0 && 1 / 0 == 0"), Value::Bool(false));
    assert_eq!(value("1 > 0 || 1 / 0 == 0"), Value::Bool(true));
}

#[test]
fn ternary_evaluates_only_the_chosen_branch() {
    // The manual's merge_dim formula.
    let env = load("dim1 = 3; dim2 = 1; merge_dim = dim1 < dim2 ? dim1 : (dim1 - 1);");
    assert_eq!(env.global("merge_dim"), Some(&int(2)));
    assert_eq!(value("1 ? 5 : 1 / 0"), int(5));
}

#[test]
fn tuple_indexing_and_slicing() {
    assert_eq!(value("(4, 5, 6)[0]"), int(4));
    assert_eq!(value("(4, 5, 6)[-1]"), int(6));
    assert_eq!(value("(4, 5, 6)[1:]"), ints(&[5, 6]));
    assert_eq!(value("(4, 5, 6)[:-1]"), ints(&[4, 5]));
    assert_eq!(value("(4, 5, 6)[-2:10]"), ints(&[5, 6]));
    assert_eq!(value("(4, 5, 6)[2:1]"), ints(&[]));
    assert_eq!(value("len((4, 5, 6))"), int(3));
}

#[test]
fn space_indexing_sizes_and_processors() {
    assert_eq!(value("m[1, 2]"), Value::Proc(gpu(1, 2)));
    assert_eq!(value("m[*(1, 2)]"), Value::Proc(gpu(1, 2)));
    assert_eq!(value("m[-1 + 2, 3]"), Value::Proc(gpu(1, 3)));
    // One index on a multi-dimensional space is a size (Figure A1's `m4d[0]`); a slice gives
    // sizes (`m[:-1]`).
    assert_eq!(value("m.split(1, 2)[1]"), int(2));
    assert_eq!(value("m.split(1, 2)[:-1]"), ints(&[2, 2]));
    assert_eq!(value("m.size"), ints(&[2, 4]));
    assert_eq!(value("len(m.merge(0, 1))"), int(1));
    // A 1-D space indexed once is a processor (merge: dimension 0 fastest).
    assert_eq!(value("m.merge(0, 1)[3]"), Value::Proc(gpu(1, 1)));
}

#[test]
fn every_transformation_method_is_available() {
    assert_eq!(value("m.split(1, 2).size"), ints(&[2, 2, 2]));
    assert_eq!(value("m.swap(0, 1)[3, 1]"), Value::Proc(gpu(1, 3)));
    assert_eq!(value("m.slice(1, 2, 3)[0, 0]"), Value::Proc(gpu(0, 2)));
    assert_eq!(value("m.reverse(1)[0, 0]"), Value::Proc(gpu(0, 3)));
    assert_eq!(value("m.balance_split(1, 2).size"), ints(&[2, 2, 2]));
    assert_eq!(
        value("m.auto_split(1, (4, 2, 4)).size"),
        ints(&[2, 2, 1, 2])
    );
    assert_eq!(value("m.decompose(0, (4, 4)).size"), ints(&[2, 1, 4]));
}

#[test]
fn unpacking_comprehensions_and_functions() {
    let env = load(
        "def twice(int x) { return 2 * x; }\n\
         def add(int a, int b) { return a + b; }\n\
         t = (1, 2, 3);\n\
         u = tuple(twice(i) for i in t);\n\
         v = (0, *t, 4);\n\
         w = add(*(5, 6));\n\
         i = 9;\n\
         y = tuple(i + 1 for i in (1, 2));\n\
         z = i;",
    );
    assert_eq!(env.global("u"), Some(&ints(&[2, 4, 6])));
    assert_eq!(env.global("v"), Some(&ints(&[0, 1, 2, 3, 4])));
    assert_eq!(env.global("w"), Some(&int(11)));
    assert_eq!(env.global("y"), Some(&ints(&[2, 3])));
    // The comprehension variable does not leak.
    assert_eq!(env.global("z"), Some(&int(9)));
}

#[test]
fn recursion_within_the_limit_works() {
    let env = load(
        "def fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n\
         x = fact(20);",
    );
    assert_eq!(env.global("x"), Some(&int(2_432_902_008_176_640_000)));
}

#[test]
fn functions_are_hoisted_and_see_globals_at_call_time() {
    // A function may be called above its `def`.
    let env = load("x = f();\ndef f() { return 1; }");
    assert_eq!(env.global("x"), Some(&int(1)));
    // It sees the globals bound when it runs: `g` is not yet bound here.
    let prog = parse("s.mapple", "x = f();\ndef f() { return g; }\ng = 1;").unwrap();
    let err = Env::load("s.mapple", &prog, &machine(1, 1)).unwrap_err();
    assert_eq!(err.to_string(), "s.mapple:2:18: unknown name `g`");
}

#[test]
fn print_collects_formatted_lines() {
    let env = load(
        "m = Machine(GPU);\n\
         print(\"{}, {}, {}\", 1, (2, 3), m);\n\
         print(\"{{}} {}\", m[1, 2]);\n\
         print(\"plain\");",
    );
    assert_eq!(
        env.output(),
        ["1, (2, 3), MSpace(GPU, (2, 4))", "{} node 1 GPU 2", "plain"]
    );
}

#[test]
fn print_in_mapping_functions_goes_to_the_mapper_log() {
    let src = "m = Machine(GPU);\nprint(\"loaded\");\n\
               def f(Task t) { print(\"{} of {}\", t.ipoint, t.ispace); return m[0, 0]; }\n\
               IndexTaskMap foo f;";
    let mapper = crate::common::mapper(src, machine(2, 4));
    mapper.place("foo", &[3], &[8]).unwrap();
    assert_eq!(mapper.output(), ["loaded", "(3,) of (8,)"]);
    assert_eq!(mapper.take_output().len(), 2);
    assert!(mapper.output().is_empty());
}

#[test]
fn machine_builds_the_space_of_the_given_machine() {
    let m = Machine::new(3).with_procs(diffuse_mapper::machine::ProcKind::Gpu, 2);
    let env = load_on("g = Machine(GPU).size;", &m);
    assert_eq!(env.global("g"), Some(&ints(&[3, 2])));
}
