//! The Legion task diffuse registers for the points of its launches, and its CPU variant: it
//! runs one point of a launch plan with the same point executor as the embedded backend
//! ([`diffuse_backend::point`]), on the instances Legion mapped, and folds its reduction
//! contributions into Legion's reduction instances (into the store's own instance in a launch
//! of one point, whose reductions read and write the store). The GPU variant is
//! [`crate::gpu_point`]. A failing or panicking point becomes an error reported at the next
//! flush; it never unwinds into Legion.

use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use diffuse_backend::point::{self, PointRunner, PointStores};
use diffuse_ir::{KernelError, Point, Privilege, Tuple};

use crate::ffi;
use crate::geometry::point_of;
use crate::gpu_point;
use crate::launch::{LaunchEntry, Role};
use crate::library;
use crate::mapped_point::MappedPoint;
use crate::partials;

/// Legion's task id of diffuse's point task (its variants run every launch plan's points).
pub(crate) const POINT_TASK_ID: ffi::legion_task_id_t = 7_310;

/// Registers the point task's variants (before Legion starts): one for CPU processors, and
/// one for GPU processors that runs the JIT's GPU kernels ([`crate::gpu_point`]); Legion
/// picks the variant of the processor a point was mapped to.
pub(crate) fn register(api: &ffi::LegionApi) -> Result<(), String> {
    let name = CString::new("diffuse_point").map_err(|e| e.to_string())?;
    type Body = unsafe extern "C" fn(*const c_void, usize, *const c_void, usize, ffi::realm_id_t);
    let variants: [(&str, ffi::realm_processor_kind_t, Body); 2] = [
        ("cpu", ffi::realm_processor_kind_t_LOC_PROC, cpu_point_task),
        ("gpu", ffi::realm_processor_kind_t_TOC_PROC, gpu_point_task),
    ];
    for (variant, kind, body) in variants {
        let variant = CString::new(variant).map_err(|e| e.to_string())?;
        // SAFETY: called once, before `legion_runtime_start`; the constraint sets are
        // copied by Legion and destroyed here.
        unsafe {
            let execution = api.legion_execution_constraint_set_create();
            api.legion_execution_constraint_set_add_processor_constraint(execution, kind);
            let layout = api.legion_task_layout_constraint_set_create();
            let options = ffi::legion_task_config_options_t {
                leaf: true,
                inner: false,
                idempotent: false,
                replicable: false,
            };
            api.legion_runtime_preregister_task_variant_fnptr(
                POINT_TASK_ID,
                u32::MAX,
                name.as_ptr(),
                variant.as_ptr(),
                execution,
                layout,
                options,
                Some(body),
                std::ptr::null(),
                0,
            );
            api.legion_execution_constraint_set_destroy(execution);
            api.legion_task_layout_constraint_set_destroy(layout);
        }
    }
    Ok(())
}

/// How one variant runs a point of a launch on the regions Legion mapped for it.
type RunPoint = fn(&MappedPoint) -> Result<(), KernelError>;

/// Legion's entry point of the CPU variant.
unsafe extern "C" fn cpu_point_task(
    data: *const c_void,
    datalen: usize,
    _userdata: *const c_void,
    _userlen: usize,
    proc_id: ffi::realm_id_t,
) {
    serve(data, datalen, proc_id, run);
}

/// Legion's entry point of the GPU variant.
unsafe extern "C" fn gpu_point_task(
    data: *const c_void,
    datalen: usize,
    _userdata: *const c_void,
    _userlen: usize,
    proc_id: ffi::realm_id_t,
) {
    serve(data, datalen, proc_id, gpu_point::run);
}

/// Runs one point task with `body`: finds its launch, runs the point (a failure or panic
/// becomes the launch's error at the next flush), and returns the processor it ran on.
unsafe fn serve(data: *const c_void, datalen: usize, proc_id: ffi::realm_id_t, body: RunPoint) {
    let api = library::api();
    let mut task = ffi::legion_task_t::default();
    let mut regions: *const ffi::legion_physical_region_t = std::ptr::null();
    let mut num_regions = 0u32;
    let mut ctx = ffi::legion_context_t::default();
    let mut runtime = ffi::legion_runtime_t::default();
    api.legion_task_preamble(
        data,
        datalen,
        proc_id,
        &mut task,
        &mut regions,
        &mut num_regions,
        &mut ctx,
        &mut runtime,
    );
    let args = {
        let ptr = api.legion_task_get_args(task) as *const u8;
        let len = api.legion_task_get_arglen(task);
        if ptr.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(ptr, len)
        }
    };
    let regions = if regions.is_null() {
        &[][..]
    } else {
        std::slice::from_raw_parts(regions, num_regions as usize)
    };
    match LaunchEntry::find(args) {
        Some(entry) => {
            let dims = entry.plan.template().launch_domain().dims();
            // A fold's one point stands for the whole launch it folds (its first point in
            // errors).
            let (p, body): (Point, RunPoint) = match entry.role {
                Role::Points => (point_of(&api.legion_task_get_index_point(task), dims), body),
                Role::Fold(_) => (Tuple::splat(dims, 0), partials::fold),
            };
            let mapped = MappedPoint {
                api,
                entry: &entry,
                p,
                regions,
            };
            let outcome =
                catch_unwind(AssertUnwindSafe(|| body(&mapped))).unwrap_or_else(|panic| {
                    Err(mapped.fail(format!("panicked: {}", point::panic_message(&*panic))))
                });
            if let Err(e) = outcome {
                entry.shared.fail(entry.plan.ticket(), e.into());
            }
            entry.point_finished(args);
        }
        None => eprintln!("diffuse: a Legion point task ran for an unknown launch"),
    }
    // The point's value is the processor it ran on (read back when points are recorded,
    // wherever in a multi-process run the point ran).
    let here = api.legion_runtime_get_executing_processor(runtime, ctx);
    let mut who = ffi::diffuse_proc_choice_t {
        kind: -1,
        ..Default::default()
    };
    if api.diffuse_legion_processor_identity(here, &mut who) != 0 {
        who.kind = -1;
    }
    api.diffuse_legion_point_finished(task);
    api.legion_task_postamble(
        runtime,
        ctx,
        &who as *const ffi::diffuse_proc_choice_t as *const c_void,
        std::mem::size_of::<ffi::diffuse_proc_choice_t>(),
    );
}

/// Runs `mapped`'s point on the CPU.
fn run(mapped: &MappedPoint) -> Result<(), KernelError> {
    let (entry, plan) = (mapped.entry, mapped.plan());
    let t = plan.template();
    mapped.zero_on_host()?;
    let instances = mapped.instances()?;
    let shared = &entry.shared;
    let runner = PointRunner {
        plan,
        stores: &instances,
        scalars: &entry.scalars,
        strip_bytes: shared.strip_bytes,
        scratch: &shared.scratch,
        memory: &shared.memory,
        fp: &shared.fp,
    };
    let done = runner.run(&mapped.p)?;
    shared.counters.point(done.path);
    partials::write_rows(mapped, &done.contributions)?;
    for (a, place) in &done.contributions {
        let (Privilege::Reduce(op), Some(acc)) = (t.args()[*a].privilege, &place.accumulator)
        else {
            continue;
        };
        if place.rect.is_empty() || entry.writes_partials(*a) {
            continue;
        }
        let (dst, strides) = instances
            .locate(*a, &place.rect)
            .map_err(|m| mapped.fail(m))?;
        let kind = plan.tasks()[t.args()[*a].constituent].kind().name();
        // SAFETY: the reduction instance is this point's own (Legion folds instances of
        // different points itself, unobserved), or the store's instance, which this point
        // alone holds (one point, read-write); either holds the sub-store at `dst` with
        // `strides`.
        shared.fp.watch(kind, || unsafe {
            point::fold(dst, &strides, &place.rect, acc, op)
        });
    }
    Ok(())
}
