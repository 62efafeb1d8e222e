//! Tests of the machine model (`diffuse_mapper::machine`): the sources' examples and guarantees,
//! property tests of the primitives, and error handling.

#[path = "machine/errors.rs"]
mod errors;
#[path = "machine/props.rs"]
mod props;
#[path = "machine/sources.rs"]
mod sources;

use diffuse_mapper::machine::{MSpace, Processor};

/// Every point of a space of shape `shape`, dimension 0 fastest (test-side enumeration only).
pub fn points(shape: &[i64]) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    if shape.iter().any(|&s| s <= 0) {
        return out;
    }
    let mut p = vec![0i64; shape.len()];
    loop {
        out.push(p.clone());
        let mut i = 0;
        loop {
            if i == shape.len() {
                return out;
            }
            p[i] += 1;
            if p[i] < shape[i] {
                break;
            }
            p[i] = 0;
            i += 1;
        }
    }
}

/// `m[point]`, panicking with the error in the message (tests only).
pub fn at(m: &MSpace, point: &[i64]) -> Processor {
    match m.to_processor(point) {
        Ok(p) => p,
        Err(e) => panic!("{m}: {e}"),
    }
}

/// `(node, index)` of `m[point]`.
pub fn ni(m: &MSpace, point: &[i64]) -> (usize, usize) {
    let p = at(m, point);
    (p.node, p.index)
}
