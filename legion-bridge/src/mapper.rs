//! The Rust half of diffuse's Legion mapper: the C++ `DefaultMapper` subclass in
//! `shim/diffuse_legion_shim.cc` asks these functions, for every diffuse launch, where each
//! point runs and which memory and layout each region requirement gets, and the shim's
//! sharding functors ask which number a launch point has. The answers are the runtime's
//! placement decisions (Mapple's, or the default blocks) carried in the launch plan, and
//! its numbering of launch points, so the embedded and the Legion backend place points
//! identically.

use std::collections::HashSet;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use diffuse_backend::{AlignOp, LayoutConstraint, MemKind, ProcKind, StealScope};

use crate::ffi;
use crate::geometry::{domain_point_index, launch_point_index};
use crate::gpu_point::{gpu_kernel, GpuRefusal};
use crate::launch::{LaunchEntry, Role};
use crate::machine::realm_cpus_per_node;
use crate::point_task::POINT_TASK_ID;

/// Installs the diffuse mapper on every processor (before Legion starts).
pub(crate) fn register(api: &ffi::LegionApi) {
    let callbacks = ffi::diffuse_mapper_callbacks_t {
        point_processor: Some(point_processor),
        region_choice: Some(region_choice),
        notice: Some(notice),
        steal_scope: Some(steal_scope),
        point_index: Some(point_index),
    };
    // SAFETY: called once before `legion_runtime_start`; the shim copies the callbacks.
    unsafe { api.diffuse_legion_register_mapper(&callbacks, POINT_TASK_ID) };
}

/// The launch a mapper call is about, from the task's global arguments.
unsafe fn entry(args: *const c_void, arglen: usize) -> Option<std::sync::Arc<LaunchEntry>> {
    if args.is_null() {
        return None;
    }
    LaunchEntry::find(std::slice::from_raw_parts(args as *const u8, arglen))
}

unsafe extern "C" fn point_processor(
    args: *const c_void,
    arglen: usize,
    point: *const i64,
    dims: i32,
    out: *mut ffi::diffuse_proc_choice_t,
) -> i32 {
    let answer = std::panic::catch_unwind(|| {
        let entry = entry(args, arglen)?;
        let t = entry.plan.template();
        let coords = std::slice::from_raw_parts(point, dims.max(0) as usize);
        let folding = matches!(entry.role, Role::Fold(_));
        // A fold runs on a CPU of the node of the plan's first point.
        let index = if folding {
            0
        } else {
            launch_point_index(coords, &t.launch_domain())?
        };
        let proc = t.placement().processors.get(index)?;
        let on_gpu = !folding && proc.kind == ProcKind::Gpu && {
            let point = diffuse_ir::Tuple::new(coords).ok()?;
            match gpu_kernel(&entry.plan, &|a| entry.writes_partials(a), &point) {
                Ok(_) => true,
                Err(GpuRefusal::Compiling) => false,
                Err(why) => {
                    notice_once(&format!(
                        "{} was placed on a GPU, but {why}: its points run on CPUs",
                        t.name()
                    ));
                    false
                }
            }
        };
        let (kind, index) = if on_gpu {
            (ffi::diffuse_proc_kind_t_DIFFUSE_PROC_GPU, proc.index)
        } else {
            // More CPU processors than Realm runs share them (see `LegionConfig::cpus`).
            (
                ffi::diffuse_proc_kind_t_DIFFUSE_PROC_CPU,
                proc.index % realm_cpus_per_node(),
            )
        };
        Some(ffi::diffuse_proc_choice_t {
            kind: kind as i32,
            node: proc.node as u32,
            index: index as u32,
        })
    });
    match answer {
        Ok(Some(choice)) => {
            *out = choice;
            0
        }
        _ => 1,
    }
}

unsafe extern "C" fn point_index(
    point: *const i64,
    lo: *const i64,
    hi: *const i64,
    dims: i32,
    out: *mut u64,
) -> i32 {
    let dims = dims.max(0) as usize;
    let index = std::panic::catch_unwind(|| {
        domain_point_index(
            std::slice::from_raw_parts(point, dims),
            std::slice::from_raw_parts(lo, dims),
            std::slice::from_raw_parts(hi, dims),
        )
    });
    match index {
        Ok(Some(index)) => {
            *out = index;
            0
        }
        _ => 1,
    }
}

unsafe extern "C" fn steal_scope(args: *const c_void, arglen: usize) -> i32 {
    let scope = std::panic::catch_unwind(|| {
        let entry = entry(args, arglen)?;
        match entry.role {
            Role::Points => entry.plan.template().placement().steal,
            Role::Fold(_) => None,
        }
    })
    .ok()
    .flatten();
    (match scope {
        None => ffi::diffuse_steal_scope_t_DIFFUSE_STEAL_NONE,
        Some(StealScope::SameNode) => ffi::diffuse_steal_scope_t_DIFFUSE_STEAL_SAME_NODE,
        Some(StealScope::AnyNode) => ffi::diffuse_steal_scope_t_DIFFUSE_STEAL_ANY_NODE,
    }) as i32
}

unsafe extern "C" fn region_choice(
    args: *const c_void,
    arglen: usize,
    req: u32,
    out: *mut ffi::diffuse_region_choice_t,
) -> i32 {
    let answer = std::panic::catch_unwind(|| {
        let entry = entry(args, arglen)?;
        if let Role::Fold(_) = entry.role {
            // The fold's CPU reads and writes its regions in system memory.
            return Some(ffi::diffuse_region_choice_t {
                memory: ffi::diffuse_mem_kind_t_DIFFUSE_MEM_SYSMEM as i32,
                ..Default::default()
            });
        }
        let slot = entry.requirements.get(req as usize)?.slot;
        let memory = entry.plan.template().placement().memories.get(slot)?;
        let mut choice = ffi::diffuse_region_choice_t {
            memory: mem_kind(memory.memory) as i32,
            collect: i32::from(memory.collect),
            ..Default::default()
        };
        for constraint in &memory.layout {
            match constraint {
                LayoutConstraint::FOrder => {
                    notice_once(
                        "Mapple asked for F_order; diffuse's kernels need the last dimension \
                         contiguous, so instances stay in C order",
                    );
                }
                // An alignment of exactly / at least `bytes`, or twice that for more than
                // `bytes`; upper bounds and `!=` hold for the natural alignment Legion uses
                // without a constraint, as does `No_Align`.
                LayoutConstraint::Align { op, bytes } => {
                    choice.alignment = match op {
                        AlignOp::Eq | AlignOp::Ge => u32::try_from(*bytes).unwrap_or(0),
                        AlignOp::Gt => u32::try_from(bytes.saturating_mul(2)).unwrap_or(0),
                        AlignOp::Le | AlignOp::Lt | AlignOp::Ne => 0,
                    };
                }
                LayoutConstraint::NoAlign => choice.alignment = 0,
                // One field per region: SOA and AOS are the same instance; C order is the
                // default; Exact and Compact are what Legion does for these dense regions.
                LayoutConstraint::Soa
                | LayoutConstraint::Aos
                | LayoutConstraint::COrder
                | LayoutConstraint::Exact
                | LayoutConstraint::Compact => {}
            }
        }
        Some(choice)
    });
    match answer {
        Ok(Some(choice)) => {
            *out = choice;
            0
        }
        _ => 1,
    }
}

/// The shim's memory kind for a Mapple memory kind (RDMA and virtual instances have no
/// counterpart here: system memory, with a notice).
fn mem_kind(kind: MemKind) -> ffi::diffuse_mem_kind_t {
    match kind {
        MemKind::SysMem => ffi::diffuse_mem_kind_t_DIFFUSE_MEM_SYSMEM,
        MemKind::FbMem => ffi::diffuse_mem_kind_t_DIFFUSE_MEM_FBMEM,
        MemKind::ZcMem => ffi::diffuse_mem_kind_t_DIFFUSE_MEM_ZCMEM,
        MemKind::SockMem => ffi::diffuse_mem_kind_t_DIFFUSE_MEM_SOCKMEM,
        MemKind::RdMem | MemKind::Virtual => {
            notice_once(&format!(
                "Mapple asked for {kind:?} memory, which diffuse's Legion mapper cannot place \
                 point-task instances in; using SYSMEM"
            ));
            ffi::diffuse_mem_kind_t_DIFFUSE_MEM_SYSMEM
        }
    }
}

/// Logs a mapper fallback once per distinct message.
fn notice_once(message: &str) {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(HashSet::new()));
    if seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(message.to_string())
    {
        tracing::warn!("legion mapper: {message}");
    }
}

unsafe extern "C" fn notice(message: *const c_char) {
    if message.is_null() {
        return;
    }
    let text = CStr::from_ptr(message).to_string_lossy().into_owned();
    let _ = std::panic::catch_unwind(|| notice_once(&text));
}
