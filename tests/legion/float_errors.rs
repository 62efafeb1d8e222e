//! Floating-point exceptions raised by point tasks on Legion reach the application through
//! `Backend::take_fp_errors`, compiled and native, as on the embedded backend.

use std::sync::Arc;

use diffuse::backend::point::fp::FpFlags;
use diffuse::{Backend, Runtime, RuntimeConfig};
use diffuse_ir::Context;
use diffuse_jit::Jit;

use crate::common::fp::{chain, union};
use crate::common::legion::legion;

#[test]
fn legion_records_a_division_by_zero_compiled_and_native() {
    let backend = legion(None);
    for jit in [None, Some(Arc::new(Jit::new()))] {
        let compiled = jit.is_some();
        let runtime = Runtime::new(
            backend.clone(),
            RuntimeConfig {
                jit,
                ..Default::default()
            },
        );
        let ctx = Context::new(Arc::new(runtime));
        let before = backend.stats().compiled_points;
        chain(&ctx, 3.0, 2.0);
        if compiled {
            assert!(backend.stats().compiled_points > before, "nothing compiled");
        }
        backend.take_fp_errors();
        let got = chain(&ctx, -1.0, 0.0);
        assert!(got.iter().all(|v| *v == f64::NEG_INFINITY), "{got:?}");
        let raised = backend.take_fp_errors();
        assert_eq!(
            union(&raised),
            FpFlags::DIVIDE,
            "compiled {compiled}: {raised:?}"
        );
        let clean = chain(&ctx, 3.0, 2.0);
        assert!(clean.iter().all(|v| *v == 4.0));
        assert!(backend.take_fp_errors().is_empty(), "compiled {compiled}");
    }
}
