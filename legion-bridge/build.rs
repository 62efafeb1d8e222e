//! Finds Legion (unpacked from the `legate` wheel by `scripts/legion-setup.sh`), generates
//! run-time-loaded bindings for its C API plus diffuse's C++ shim, and builds the shim as a
//! shared library. Without Legion the crate still builds; starting the backend then fails
//! with a message naming what is missing (the `legion` cfg is off).

use std::env;
use std::path::{Path, PathBuf};

/// Where `scripts/legion-setup.sh` puts Legion unless `DIFFUSE_LEGION_DIR` says otherwise.
fn legion_dir() -> Option<PathBuf> {
    env::var_os("DIFFUSE_LEGION_DIR")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| Path::new(&h).join(".cache/diffuse/legion-26.1.0")))
}

fn main() {
    println!("cargo:rustc-check-cfg=cfg(legion)");
    println!("cargo:rerun-if-env-changed=DIFFUSE_LEGION_DIR");
    println!("cargo:rerun-if-env-changed=HOME");
    println!("cargo:rerun-if-changed=shim/diffuse_legion_shim.h");
    println!("cargo:rerun-if-changed=shim/diffuse_legion_shim.cc");
    println!("cargo:rerun-if-changed=bootstrap/diffuse_bootstrap.c");
    let Some(dir) = legion_dir() else {
        println!("cargo:rustc-env=DIFFUSE_LEGION_MISSING=no DIFFUSE_LEGION_DIR and no HOME");
        return;
    };
    let ready = dir.join("ready");
    println!("cargo:rerun-if-changed={}", ready.display());
    let include = dir.join("site/legate/include/legate/deps");
    let lib64 = dir.join("site/legate/lib64");
    if !ready.exists() || !include.join("legion/bindings/c_bindings.h").exists() {
        println!(
            "cargo:rustc-env=DIFFUSE_LEGION_MISSING=Legion is not installed at {} \
             (run scripts/legion-setup.sh, or point DIFFUSE_LEGION_DIR at an installation)",
            dir.display()
        );
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let shim = out.join("libdiffuse_legion_shim.so");
    build_shim(&include, &lib64, &dir, &shim);
    let bootstrap = out.join("libdiffuse_bootstrap.so");
    build_bootstrap(&dir, &bootstrap);
    generate_bindings(&include, &out.join("legion_bindings.rs"));
    println!("cargo:rustc-cfg=legion");
    println!("cargo:rustc-env=DIFFUSE_LEGION_DIR_BUILT={}", dir.display());
    println!("cargo:rustc-env=DIFFUSE_LEGION_SHIM={}", shim.display());
    println!(
        "cargo:rustc-env=DIFFUSE_LEGION_BOOTSTRAP={}",
        bootstrap.display()
    );
}

/// Compiles the TCP bootstrap plugin Realm's UCX network loads to find the other processes
/// (against the plugin interface header shipped in the wheel).
fn build_bootstrap(dir: &Path, plugin: &Path) {
    let header = dir.join("site/legate/share/legate/realm_ucp_bootstrap");
    let compiler = cc::Build::new().get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-std=gnu11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra"])
        .arg("bootstrap/diffuse_bootstrap.c")
        .arg(format!("-I{}", header.display()))
        .arg("-lpthread")
        .arg("-o")
        .arg(plugin);
    let status = cmd.status().expect("the C compiler runs");
    assert!(
        status.success(),
        "building the bootstrap plugin failed: {cmd:?}"
    );
}

/// Compiles the C++ shim into a shared library linked against the wheel's Legion.
fn build_shim(include: &Path, lib64: &Path, dir: &Path, shim: &Path) {
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra"])
        .arg("-Wno-unused-parameter")
        .arg("shim/diffuse_legion_shim.cc")
        .arg(format!("-I{}", include.display()))
        .arg(format!("-L{}", lib64.display()))
        .args(["-llegion-legate", "-lrealm-legate"])
        .arg(format!("-Wl,-rpath,{}", lib64.display()))
        // Realm's own dependencies (libcuda, UCX) are loaded before the shim at run time.
        .arg("-Wl,--allow-shlib-undefined")
        .arg(format!(
            "-Wl,-rpath-link,{}:{}:{}",
            dir.join("stub").display(),
            dir.join("site/libucx/lib").display(),
            dir.join("site/nvidia/libcal/cu12/lib").display()
        ))
        .arg("-o")
        .arg(shim);
    let status = cmd.status().expect("the C++ compiler runs");
    assert!(status.success(), "building the Legion shim failed: {cmd:?}");
}

/// The C API functions the backend calls (the wheel's library does not export every function
/// `c_bindings.h` declares, and every bound function is looked up at load time).
const LEGION_FUNCTIONS: &[&str] = &[
    "legion_argument_map_create",
    "legion_argument_map_destroy",
    "legion_execution_constraint_set_add_processor_constraint",
    "legion_execution_constraint_set_create",
    "legion_execution_constraint_set_destroy",
    "legion_field_allocator_allocate_field",
    "legion_field_allocator_create",
    "legion_field_allocator_destroy",
    "legion_field_space_create",
    "legion_future_destroy",
    "legion_future_get_untyped_pointer",
    "legion_future_get_untyped_size",
    "legion_future_get_void_result",
    "legion_future_map_get_future",
    "legion_future_map_destroy",
    "legion_future_map_wait_all_results",
    "legion_index_launcher_add_field",
    "legion_index_launcher_add_region_requirement_logical_partition",
    "legion_index_launcher_add_region_requirement_logical_partition_reduction",
    "legion_index_launcher_add_region_requirement_logical_region",
    "legion_index_launcher_add_region_requirement_logical_region_reduction",
    "legion_index_launcher_create",
    "legion_index_launcher_destroy",
    "legion_index_launcher_execute",
    "legion_index_launcher_set_projection_args",
    "legion_index_partition_create_by_domain",
    "legion_index_partition_create_by_restriction",
    "legion_index_space_create_domain",
    "legion_index_space_destroy",
    "legion_inline_launcher_add_field",
    "legion_inline_launcher_create_logical_region",
    "legion_inline_launcher_destroy",
    "legion_inline_launcher_execute",
    "legion_logical_partition_create",
    "legion_logical_partition_get_logical_subregion_by_color_domain_point",
    "legion_logical_region_create",
    "legion_logical_region_destroy",
    "legion_physical_region_destroy",
    "legion_physical_region_wait_until_valid",
    "legion_predicate_true",
    "legion_runtime_fill_field",
    "legion_runtime_begin_trace",
    "legion_runtime_end_trace",
    "legion_runtime_generate_library_projection_ids",
    "legion_runtime_get_executing_processor",
    "legion_runtime_get_runtime",
    "legion_runtime_issue_execution_fence",
    "legion_runtime_preregister_task_variant_fnptr",
    "legion_runtime_start",
    "legion_runtime_unmap_region",
    "legion_runtime_wait_for_shutdown",
    "legion_task_get_arglen",
    "legion_task_get_args",
    "legion_task_get_index_point",
    "legion_task_layout_constraint_set_create",
    "legion_task_layout_constraint_set_destroy",
    "legion_task_postamble",
    "legion_task_preamble",
    // Per dimension count (1 to 6): accessors and raw pointers into mapped instances.
    "legion_physical_region_get_field_accessor_array_[1-6]d",
    "legion_accessor_array_[1-6]d_raw_rect_ptr",
    "legion_accessor_array_[1-6]d_destroy",
];

/// Bindings to Legion's C API and the shim, loaded at run time from the shim library (whose
/// dependencies include Legion, so its handle resolves both).
fn generate_bindings(include: &Path, out: &Path) {
    bindgen::Builder::default()
        .header("shim/diffuse_legion_shim.h")
        .clang_arg(format!("-I{}", include.display()))
        .allowlist_function(LEGION_FUNCTIONS.join("|"))
        .allowlist_function("diffuse_legion_.*")
        .allowlist_type("legion_.*|diffuse_.*")
        .allowlist_var("LEGION_.*|DIFFUSE_.*")
        .dynamic_library_name("LegionApi")
        .dynamic_link_require_all(true)
        .layout_tests(false)
        .derive_default(true)
        .generate()
        .expect("bindgen parses Legion's C bindings")
        .write_to_file(out)
        .expect("the bindings can be written to OUT_DIR");
}
