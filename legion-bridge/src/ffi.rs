//! Legion's C API and diffuse's C++ shim, as bindgen generates them from
//! `legion/bindings/c_bindings.h` and `shim/diffuse_legion_shim.h`: one struct of function
//! pointers ([`LegionApi`]) loaded at run time from the shim library.
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unused_imports,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/legion_bindings.rs"));
