//! The Legion task diffuse registers for the points of its launches, and its CPU variant: it
//! runs one point of a launch plan with the same point executor as the embedded backend
//! ([`diffuse_backend::point`]), on the instances Legion mapped, and folds its reduction
//! contributions into Legion's reduction instances (into the store's own instance in a launch
//! of one point, whose reductions read and write the store). The GPU variant is
//! [`crate::gpu_point`]. A failing or panicking point becomes an error reported at the next
//! flush; it never unwinds into Legion.

use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use diffuse_backend::memory::for_each_rect_row;
use diffuse_backend::point::{self, PointRunner, PointStores};
use diffuse_backend::{LaunchPlan, Slot};
use diffuse_ir::{DType, KernelError, Point, Privilege, Rect, StoreRef, Tuple};

use crate::ffi;
use crate::geometry::{element_strides, point_of, raw_rect_ptr, FIELD};
use crate::launch::{LaunchEntry, Role};
use crate::library;

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
type RunPoint = fn(
    &ffi::LegionApi,
    &LaunchEntry,
    &Point,
    &[ffi::legion_physical_region_t],
) -> Result<(), KernelError>;

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
    serve(data, datalen, proc_id, crate::gpu_point::run);
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
                Role::Fold(_) => (Tuple::splat(dims, 0), crate::partials::fold),
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| body(api, &entry, &p, regions)))
                .unwrap_or_else(|panic| {
                    Err(KernelError {
                        kind: entry.plan.template().name().to_string(),
                        point: p,
                        reason: format!("panicked: {}", point::panic_message(&*panic)),
                    })
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

/// Where one store argument's sub-store is in its mapped instance.
pub(crate) struct Located {
    /// The sub-store at this point.
    pub(crate) rect: Rect,
    /// Address of `rect.lo`.
    pub(crate) ptr: *mut u8,
    /// Element strides of the instance.
    pub(crate) strides: Tuple,
    /// Element size in bytes.
    pub(crate) size: usize,
}

/// The store arguments of one point, located in Legion's instances (addresses in the
/// instances' memory: device addresses for a GPU's framebuffer).
pub(crate) struct Instances {
    args: Vec<Option<Located>>,
}

// SAFETY: the instances are mapped for the point task's whole duration and accessed only
// by it (and Legion's guarantees on requirements exclude conflicting writers).
unsafe impl Sync for Instances {}

impl Located {
    /// The address of element `p`.
    ///
    /// # Safety
    /// `p` must lie inside `self.rect`, so that the address is inside the instance.
    pub(crate) unsafe fn address(&self, p: &Point) -> *mut u8 {
        let offset: i64 = (0..p.dims())
            .map(|d| (p[d] - self.rect.lo[d]) * self.strides[d])
            .sum();
        // SAFETY: the caller's contract.
        unsafe { self.ptr.offset(offset as isize * self.size as isize) }
    }
}

impl PointStores for Instances {
    fn locate(&self, arg: usize, rect: &Rect) -> Result<(*mut u8, Tuple), String> {
        let Some(Some(at)) = self.args.get(arg) else {
            return Err(format!("argument {arg} has no mapped instance"));
        };
        // SAFETY: `rect` lies inside the located sub-store (the executor's contract).
        Ok((unsafe { at.address(&rect.lo) }, at.strides))
    }
}

/// The error of point `p` of `plan` failing for a reason.
pub(crate) fn point_failure<'a>(
    plan: &'a LaunchPlan,
    p: &'a Point,
) -> impl Fn(String) -> KernelError + Copy + 'a {
    move |reason| KernelError {
        kind: plan.template().name().to_string(),
        point: *p,
        reason,
    }
}

/// The rows of every region the point zeroes before it runs ([`Requirement::zeroed`]):
/// each row's address (in the instance's memory) and length in bytes.
///
/// [`Requirement::zeroed`]: crate::launch::Requirement::zeroed
pub(crate) fn rows_to_zero(
    api: &ffi::LegionApi,
    entry: &LaunchEntry,
    p: &Point,
    regions: &[ffi::legion_physical_region_t],
) -> Result<Vec<(*mut u8, usize)>, KernelError> {
    let plan = &entry.plan;
    let fail = point_failure(plan, p);
    let mut rows = Vec::new();
    for (r, req) in entry.requirements.iter().enumerate() {
        let store = plan.store(req.slot);
        // From the origin: the rows' offsets below are the instance's own.
        let whole = Rect::from_shape(store.shape());
        if !req.zeroed || whole.is_empty() {
            continue;
        }
        let at = locate(api, regions, r, &whole_of(store), whole, fail)?;
        for_each_rect_row(&at.rect, &at.strides, |start, _, len| {
            // SAFETY: every row of the whole store lies inside its mapped instance.
            let row = unsafe { at.ptr.add(start * at.size) };
            rows.push((row, len * at.size));
        });
    }
    Ok(rows)
}

/// What a requirement's region holds, for locating it: its name in messages and its element
/// type.
pub(crate) struct Held {
    /// "store 12", or "the partials of store 12".
    pub(crate) name: String,
    /// The element type.
    pub(crate) dtype: DType,
}

/// What the region of a requirement on `store` itself holds.
pub(crate) fn whole_of(store: &StoreRef) -> Held {
    Held {
        name: format!("store {}", store.id()),
        dtype: store.dtype(),
    }
}

/// Zeroes the regions a point on a CPU zeroes before it runs ([`rows_to_zero`]).
pub(crate) fn zero_on_host(
    api: &ffi::LegionApi,
    entry: &LaunchEntry,
    p: &Point,
    regions: &[ffi::legion_physical_region_t],
) -> Result<(), KernelError> {
    for (row, bytes) in rows_to_zero(api, entry, p, regions)? {
        // SAFETY: a row of a region this point holds with write privilege, in host memory
        // (a CPU point's instances are in memory its processor addresses).
        unsafe { std::ptr::write_bytes(row, 0, bytes) };
    }
    Ok(())
}

/// Where `rect` of what `held` describes lies in the region mapped for requirement `r`; an
/// error unless the instance holds it in C order (diffuse's kernels need the last dimension
/// contiguous).
pub(crate) fn locate(
    api: &ffi::LegionApi,
    regions: &[ffi::legion_physical_region_t],
    r: usize,
    held: &Held,
    rect: Rect,
    fail: impl Fn(String) -> KernelError,
) -> Result<Located, KernelError> {
    let region = *regions
        .get(r)
        .ok_or_else(|| fail(format!("Legion mapped no region for requirement {r}")))?;
    // SAFETY: requirement `r` names the region with field FIELD, and `rect` is inside the
    // region it maps (the point's sub-store or row, or the whole region of a whole-region
    // requirement).
    let (ptr, bytes) = unsafe { raw_rect_ptr(api, region, FIELD, &rect) }
        .map_err(|m| fail(format!("{}: {m}", held.name)))?;
    let size = held.dtype.size_bytes();
    let strides = element_strides(&bytes, rect.dims(), size);
    if rect.dims() > 0 && strides[rect.dims() - 1] != 1 && rect.extent()[rect.dims() - 1] > 1 {
        return Err(fail(format!(
            "the instance of {} is not in C order (strides {strides}); diffuse's \
             kernels need the last dimension contiguous",
            held.name
        )));
    }
    Ok(Located {
        rect,
        ptr,
        strides,
        size,
    })
}

/// Where each store argument of point `p` of `entry`'s plan lies in the mapped `regions`
/// (`None` for temporaries and empty sub-stores).
pub(crate) fn locate_instances(
    api: &ffi::LegionApi,
    entry: &LaunchEntry,
    p: &Point,
    regions: &[ffi::legion_physical_region_t],
) -> Result<Instances, KernelError> {
    let plan = &entry.plan;
    let t = plan.template();
    let fail = point_failure(plan, p);
    let mut args = Vec::with_capacity(t.args().len());
    for (i, layout) in t.args().iter().enumerate() {
        // An argument whose requirement is on its partials is located by the point's own
        // row there when the point has run (`crate::partials::write_rows`).
        let (Slot::Store(_), Some(r)) = (layout.slot, entry.arg_requirement[i]) else {
            args.push(None);
            continue;
        };
        if entry.writes_partials(i) {
            args.push(None);
            continue;
        }
        let arg = plan.arg(i);
        let rect = arg.partition.sub_store(arg.store.shape(), p);
        if rect.is_empty() {
            args.push(None);
            continue;
        }
        args.push(Some(locate(
            api,
            regions,
            r,
            &whole_of(&arg.store),
            rect,
            fail,
        )?));
    }
    Ok(Instances { args })
}

/// Runs point `p` of `entry`'s plan on the CPU, on the mapped `regions`.
fn run(
    api: &ffi::LegionApi,
    entry: &LaunchEntry,
    p: &Point,
    regions: &[ffi::legion_physical_region_t],
) -> Result<(), KernelError> {
    let plan = &entry.plan;
    let t = plan.template();
    let fail = point_failure(plan, p);
    zero_on_host(api, entry, p, regions)?;
    let instances = locate_instances(api, entry, p, regions)?;
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
    let done = runner.run(p)?;
    shared.counters.point(done.path);
    crate::partials::write_rows(api, entry, p, regions, &done.contributions)?;
    for (a, place) in &done.contributions {
        let (Privilege::Reduce(op), Some(acc)) = (t.args()[*a].privilege, &place.accumulator)
        else {
            continue;
        };
        if place.rect.is_empty() || entry.writes_partials(*a) {
            continue;
        }
        let (dst, strides) = instances.locate(*a, &place.rect).map_err(fail)?;
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
