//! The placement API: a loaded Mapple program plus a machine answers, for each point task,
//! which processor runs it, and, per task and region, the processor kind, memory kinds,
//! layout, collection and backpressure decisions.
//!
//! # Which function places a task
//!
//! [`Mapper::place`] places point `point` of a launch over the domain `launch` (the extent of
//! every dimension; both empty for a single, non-index task):
//!
//! 1. An index launch uses the `IndexTaskMap` naming the task, a single task the
//!    `SingleTaskMap` naming it. A statement naming the task wins over one for `*`; among
//!    equally specific statements the last one in the file wins.
//! 2. The mapping function is called with the task (`def f(Task task)`), or, when it takes
//!    two parameters, with the point and the launch domain as tuples (`def block2d(Tuple
//!    point, Tuple space)`, the paper's Figure 1). It must return a processor (`m[...]`).
//! 3. With no such statement the **default block mapping** applies: the points of the launch,
//!    linearised row-major (last dimension fastest) as `i` in `0..N`, go in contiguous blocks
//!    over the `P` processors of the task's kind ([`Mapper::processor_kind`]), linearised
//!    node-major: point `i` runs on processor `⌊i * P / N⌋`, i.e. node `⌊that / per_node⌋`,
//!    index `that mod per_node`. Every processor gets `⌊N / P⌋` or `⌈N / P⌉` points. A single
//!    task runs on processor 0 of node 0.
//!
//! The parent of the task being mapped (`task.parent.processor(m)`) runs where the caller
//! says ([`Mapper::place_with_parent`]); [`Mapper::place`] assumes the top-level task, on
//! processor 0 of node 0 (of the kind of the space asked about).
//!
//! # Fused tasks
//!
//! [`Mapper::place_fused`]: a fused task is placed by an explicit `IndexTaskMap` (or
//! `SingleTaskMap`) naming the fused task if there is one, else exactly like its first
//! constituent (its map, a `*` map, or the default).
//!
//! # Data decisions
//!
//! `Region`, `Layout`, `GarbageCollect`/`CollectMemory` and `Backpressure`/`InstanceLimit` are
//! read from the syntax tree. A statement matches when each of its task, region and processor
//! selectors is `*` or equal to the query; the most specific match wins (a named task counts
//! more than a named/indexed region, which counts more than a processor kind), and among equally
//! specific matches the last one in the file wins. `Region * * GPU FBMEM;` followed by
//! `Region * rp_shared GPU ZCMEM;` therefore gives `ZCMEM` for `rp_shared` and `FBMEM` for the
//! rest.

use std::sync::{Mutex, PoisonError};

use crate::ast::{
    Ident, LayoutConstraint, MemKind, ProcSel, Program, RegionSel, StealScope, Stmt, StmtKind,
    TaskFuncMap, TaskSel,
};
use crate::error::MappleError;
use crate::eval::{Env, EvalError, EvalErrorKind, TaskValue, Value};
use crate::machine::{fmt_tuple, Machine, ProcKind, Processor};
use crate::parse::parse;

/// A placement query that does not fit its launch domain or the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// The point and the launch domain have different numbers of dimensions.
    #[error(
        "point {} has {} coordinates but the launch domain {} has {}",
        fmt_tuple(.point), .point.len(), fmt_tuple(.launch), .launch.len()
    )]
    PointRank {
        /// The point.
        point: Vec<i64>,
        /// The launch domain.
        launch: Vec<i64>,
    },
    /// A launch domain with an extent that is not positive.
    #[error("launch domain {} has an extent that is not positive", fmt_tuple(.launch))]
    EmptyLaunch {
        /// The launch domain.
        launch: Vec<i64>,
    },
    /// A point outside its launch domain.
    #[error("point {} is outside the launch domain {}", fmt_tuple(.point), fmt_tuple(.launch))]
    PointOutside {
        /// The point.
        point: Vec<i64>,
        /// The launch domain.
        launch: Vec<i64>,
    },
    /// A launch domain with more than 2^64 points.
    #[error("launch domain {} has too many points", fmt_tuple(.launch))]
    LaunchTooLarge {
        /// The launch domain.
        launch: Vec<i64>,
    },
    /// The default mapping found no processor of any kind on the machine.
    #[error("no processors on the machine for task `{task}`")]
    NoProcessors {
        /// The task.
        task: String,
    },
}

/// A region argument of a task, as `Region`, `Layout` and `GarbageCollect` select it: by its
/// 0-based index among the task's regions, and by its semantic name if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionRef<'a> {
    /// The 0-based index of the region among the task's region arguments.
    pub index: usize,
    /// The region's semantic name, if any.
    pub name: Option<&'a str>,
}

/// A loaded Mapple program and the machine it maps onto.
///
/// `Mapper` is `Send + Sync`; lines printed by mapping functions are collected in a shared
/// log ([`Mapper::output`]).
#[derive(Debug)]
pub struct Mapper {
    program: Program,
    env: Env,
    log: Mutex<Vec<String>>,
}

fn task_score(sel: &TaskSel, task: &str) -> Option<u8> {
    match sel {
        TaskSel::Any => Some(0),
        TaskSel::Named(id) if id.name == task => Some(1),
        TaskSel::Named(_) => None,
        // Only `IndexTaskMap`/`SingleTaskMap` select tasks by processor kind (see `map_for`).
        TaskSel::Kind(_) => None,
    }
}

fn region_score(sel: &RegionSel, region: RegionRef<'_>) -> Option<u8> {
    match sel {
        RegionSel::Any => Some(0),
        RegionSel::Index(i) if usize::try_from(*i).ok() == Some(region.index) => Some(1),
        RegionSel::Named(id) if region.name == Some(id.name.as_str()) => Some(1),
        _ => None,
    }
}

fn proc_score(sel: &ProcSel, kind: ProcKind) -> Option<u8> {
    match sel {
        ProcSel::Any => Some(0),
        ProcSel::Kind(k) if *k == kind => Some(1),
        ProcSel::Kind(_) => None,
    }
}

/// The last of the best-scoring items (`None` scores do not match).
fn best<'p, T>(items: impl Iterator<Item = (Option<u8>, &'p T)>) -> Option<&'p T> {
    let mut found: Option<(u8, &T)> = None;
    for (score, item) in items {
        if let Some(s) = score {
            if found.is_none_or(|(b, _)| s >= b) {
                found = Some((s, item));
            }
        }
    }
    found.map(|(_, t)| t)
}

/// Checks the query and returns the row-major linear index of `point` and the number of
/// points of `launch`.
fn linearise(point: &[i64], launch: &[i64]) -> Result<(u64, u64), PlacementError> {
    if point.len() != launch.len() {
        return Err(PlacementError::PointRank {
            point: point.to_vec(),
            launch: launch.to_vec(),
        });
    }
    if launch.iter().any(|&e| e <= 0) {
        return Err(PlacementError::EmptyLaunch {
            launch: launch.to_vec(),
        });
    }
    if point.iter().zip(launch).any(|(&x, &e)| x < 0 || x >= e) {
        return Err(PlacementError::PointOutside {
            point: point.to_vec(),
            launch: launch.to_vec(),
        });
    }
    let too_large = || PlacementError::LaunchTooLarge {
        launch: launch.to_vec(),
    };
    // Extents are positive here; a point inside a launch whose volume fits has a number.
    let volume = launch
        .iter()
        .try_fold(1u64, |v, &e| v.checked_mul(e.unsigned_abs()))
        .ok_or_else(too_large)?;
    let index = diffuse_machine::row_major_index(point, launch).ok_or_else(too_large)?;
    Ok((index, volume))
}

impl Mapper {
    /// Parses and loads `source` (named `file` in errors) for `machine`: the top-level
    /// statements run once here.
    ///
    /// ```
    /// use diffuse_mapper::{machine::{Machine, ProcKind, Processor}, placement::Mapper};
    /// let src = "m = Machine(GPU);\n\
    ///            def block2D(Task task) {\n\
    ///                idx = task.ipoint * m.size / task.ispace;\n\
    ///                return m[*idx];\n\
    ///            }\n\
    ///            IndexTaskMap tiles block2D;";
    /// let mapper = Mapper::from_source("fig3.mapple", src, Machine::uniform(2, 2)).unwrap();
    /// let p = mapper.place("tiles", &[2, 3], &[6, 6]).unwrap();
    /// assert_eq!(p, Processor { kind: ProcKind::Gpu, node: 0, index: 1 });
    /// ```
    pub fn from_source(file: &str, source: &str, machine: Machine) -> Result<Mapper, MappleError> {
        let program = parse(file, source)?;
        Mapper::from_program(file, program, machine)
    }

    /// Loads an already parsed program (named `file` in errors) for `machine`.
    pub fn from_program(
        file: &str,
        program: Program,
        machine: Machine,
    ) -> Result<Mapper, MappleError> {
        let env = Env::load(file, &program, &machine)?;
        let log = Mutex::new(env.output().to_vec());
        Ok(Mapper { program, env, log })
    }

    /// The parsed program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The evaluation environment (globals and functions after loading).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        self.env.machine()
    }

    /// Everything printed so far: by the top-level statements, then by mapping functions in
    /// the order they ran.
    pub fn output(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Returns the printed lines and clears the log.
    pub fn take_output(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn stmts(&self) -> impl Iterator<Item = &Stmt> {
        self.program.stmts.iter()
    }

    fn maps(&self, single: bool) -> impl Iterator<Item = &TaskFuncMap> {
        self.stmts().filter_map(move |s| match (&s.kind, single) {
            (StmtKind::IndexTaskMap(m), false) | (StmtKind::SingleTaskMap(m), true) => Some(m),
            _ => None,
        })
    }

    /// The function statement that maps `task`: a statement naming it, else one for `*`.
    /// The mapping function for `task`: a statement naming it wins over one selecting its
    /// processor kind (`IndexTaskMap GPU f;`), which wins over `*`.
    fn map_for(&self, task: &str, single: bool) -> Option<&Ident> {
        let kind = self.processor_kind(task);
        best(self.maps(single).map(|m| {
            let score = m
                .tasks
                .iter()
                .filter_map(|t| match t {
                    TaskSel::Kind(k) => (kind == Some(*k)).then_some(1),
                    _ => task_score(t, task).map(|s| s * 2),
                })
                .max();
            (score, &m.func)
        }))
    }

    /// The function statement that names `task` explicitly (not through `*`).
    fn explicit_map_for(&self, task: &str, single: bool) -> Option<&Ident> {
        self.maps(single)
            .filter(|m| {
                m.tasks
                    .iter()
                    .any(|t| matches!(t, TaskSel::Named(id) if id.name == task))
            })
            .last()
            .map(|m| &m.func)
    }

    /// The name of the function an `IndexTaskMap` gives `task` (by name, else `*`).
    pub fn index_task_map(&self, task: &str) -> Option<&str> {
        self.map_for(task, false).map(|f| f.name.as_str())
    }

    /// The name of the function a `SingleTaskMap` gives `task` (by name, else `*`).
    pub fn single_task_map(&self, task: &str) -> Option<&str> {
        self.map_for(task, true).map(|f| f.name.as_str())
    }

    /// The processor kinds `Task` statements list for `task`, in priority order: the last
    /// statement naming the task, else the last `Task *`, else none.
    pub fn task_kinds(&self, task: &str) -> Vec<ProcKind> {
        best(self.stmts().filter_map(|s| match &s.kind {
            StmtKind::Task(t) => Some((
                t.tasks.iter().filter_map(|sel| task_score(sel, task)).max(),
                &t.procs,
            )),
            _ => None,
        }))
        .cloned()
        .unwrap_or_default()
    }

    /// The processor kind `task` runs on: the first of [`Mapper::task_kinds`] the machine has
    /// processors of; without one, GPU if the machine has GPUs, else CPU, else the first kind
    /// (in [`ProcKind::ALL`] order) it has. `None` when the machine has no processors.
    pub fn processor_kind(&self, task: &str) -> Option<ProcKind> {
        let m = self.machine();
        let has = |k: &ProcKind| m.nodes() > 0 && m.procs_per_node(*k) > 0;
        let listed = self.task_kinds(task);
        listed
            .iter()
            .chain(&[ProcKind::Gpu, ProcKind::Cpu])
            .chain(&ProcKind::ALL)
            .copied()
            .find(has)
    }

    /// The memory kinds (in priority order) of `region` of `task` when it runs on `kind`, from
    /// the most specific matching `Region` statement; `None` when none matches.
    pub fn memories(
        &self,
        task: &str,
        region: RegionRef<'_>,
        kind: ProcKind,
    ) -> Option<&[MemKind]> {
        best(self.stmts().filter_map(|s| match &s.kind {
            StmtKind::Region(r) => {
                let score = (|| {
                    Some(
                        task_score(&r.task, task)? * 4
                            + region_score(&r.region, region)? * 2
                            + proc_score(&r.proc, kind)?,
                    )
                })();
                Some((score, &r.mems))
            }
            _ => None,
        }))
        .map(Vec::as_slice)
    }

    /// The layout constraints of `region` of `task` when it runs on `kind` with its instance
    /// in `memory`, from the most specific matching `Layout` statement (one naming the
    /// memory, the reference compiler's form, counts like one naming the processor kind);
    /// `None` when none matches.
    pub fn layout(
        &self,
        task: &str,
        region: RegionRef<'_>,
        kind: ProcKind,
        memory: MemKind,
    ) -> Option<&[LayoutConstraint]> {
        best(self.stmts().filter_map(|s| match &s.kind {
            StmtKind::Layout(l) => {
                let target = match l.mem {
                    Some(m) => (m == memory).then_some(1),
                    None => proc_score(&l.proc, kind),
                };
                let score = (|| {
                    Some(
                        task_score(&l.task, task)? * 4
                            + region_score(&l.region, region)? * 2
                            + target?,
                    )
                })();
                Some((score, &l.constraints))
            }
            _ => None,
        }))
        .map(Vec::as_slice)
    }

    /// Whether a `GarbageCollect`/`CollectMemory` statement matches `region` of `task` (its
    /// read-only instance may be collected after the task).
    pub fn garbage_collect(&self, task: &str, region: RegionRef<'_>) -> bool {
        self.stmts().any(|s| match &s.kind {
            StmtKind::GarbageCollect(c) => {
                task_score(&c.task, task).is_some() && region_score(&c.region, region).is_some()
            }
            _ => false,
        })
    }

    /// The `TaskSteal` statement for `task` (the one naming it, else one for `*`): which kind
    /// of processor may steal its points, and from where.
    pub fn steal(&self, task: &str) -> Option<(ProcKind, StealScope)> {
        best(self.stmts().filter_map(|s| match &s.kind {
            StmtKind::TaskSteal(t) => Some((
                t.tasks.iter().filter_map(|sel| task_score(sel, task)).max(),
                t,
            )),
            _ => None,
        }))
        .map(|t| (t.proc, t.scope))
    }

    /// The `Backpressure`/`InstanceLimit` of `task` (at most this many instances mapped at a
    /// time per node): the statement naming it, else one for `*`.
    pub fn backpressure(&self, task: &str) -> Option<u64> {
        best(self.stmts().filter_map(|s| match &s.kind {
            StmtKind::Backpressure(b) => Some((task_score(&b.task, task), &b.limit)),
            _ => None,
        }))
        .copied()
    }

    /// The processor of point `point` of a launch of `task` over `launch` (both empty for a
    /// single task); the parent task runs on processor 0 of node 0. See the module docs.
    pub fn place(
        &self,
        task: &str,
        point: &[i64],
        launch: &[i64],
    ) -> Result<Processor, MappleError> {
        self.place_impl(task, point, launch, None)
    }

    /// [`Mapper::place`] with the parent task running on `parent`
    /// (`task.parent.processor(m)`).
    pub fn place_with_parent(
        &self,
        task: &str,
        point: &[i64],
        launch: &[i64],
        parent: Processor,
    ) -> Result<Processor, MappleError> {
        self.place_impl(task, point, launch, Some(parent))
    }

    /// Places a point of the fused task `fused` made of `constituents` (in order): by an
    /// `IndexTaskMap` (`SingleTaskMap` for a single task) that names `fused` itself if there is
    /// one, else as [`Mapper::place`] places the first constituent (`fused` itself when there
    /// are no constituents).
    pub fn place_fused(
        &self,
        fused: &str,
        constituents: &[&str],
        point: &[i64],
        launch: &[i64],
    ) -> Result<Processor, MappleError> {
        let name = self.fused_name(fused, constituents, launch.is_empty());
        self.place(name, point, launch)
    }

    /// The name every decision about the fused task `fused` made of `constituents` is taken
    /// under: `fused` when a map statement (`SingleTaskMap` with `single`, else
    /// `IndexTaskMap`) names it explicitly, else the first constituent (`fused` itself when
    /// there are none). [`Mapper::place_fused`] places by it; processor kinds, memories and
    /// layouts of fused tasks follow it too.
    pub fn fused_name<'a>(
        &self,
        fused: &'a str,
        constituents: &[&'a str],
        single: bool,
    ) -> &'a str {
        match constituents.first() {
            Some(first) if self.explicit_map_for(fused, single).is_none() => first,
            _ => fused,
        }
    }

    /// Calls function `func` as a mapping function for point `point` of `launch`, whatever
    /// the map statements say (e.g. to try a function of a snippet).
    pub fn place_by_function(
        &self,
        func: &str,
        point: &[i64],
        launch: &[i64],
    ) -> Result<Processor, MappleError> {
        let (rr, _) = linearise(point, launch)?;
        let ident = Ident {
            name: func.to_string(),
            span: Default::default(),
        };
        self.run_map(&ident, point, launch, None, rr)
    }

    fn place_impl(
        &self,
        task: &str,
        point: &[i64],
        launch: &[i64],
        parent: Option<Processor>,
    ) -> Result<Processor, MappleError> {
        let (rr, volume) = linearise(point, launch)?;
        match self.map_for(task, launch.is_empty()) {
            Some(func) => self.run_map(func, point, launch, parent, rr),
            None => self.default_block(task, rr, volume),
        }
    }

    fn run_map(
        &self,
        func: &Ident,
        point: &[i64],
        launch: &[i64],
        parent: Option<Processor>,
        rr: u64,
    ) -> Result<Processor, MappleError> {
        let two_params = self
            .env
            .function(&func.name)
            .is_some_and(|d| d.params.len() == 2);
        let args = if two_params {
            vec![Value::ints(point), Value::ints(launch)]
        } else {
            vec![Value::Task(std::sync::Arc::new(TaskValue::mapped(
                point, launch, parent,
            )))]
        };
        let mut out = Vec::new();
        let result = self.env.call(&func.name, args, func.span, rr, &mut out);
        if !out.is_empty() {
            self.log
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(out);
        }
        match result? {
            Value::Proc(p) => Ok(p),
            other => Err(EvalError {
                file: self.env.file().to_string(),
                span: func.span,
                kind: EvalErrorKind::NotAProcessor {
                    func: func.name.clone(),
                    found: other.type_name(),
                },
            }
            .into()),
        }
    }

    /// The default block mapping (see the module docs).
    fn default_block(&self, task: &str, index: u64, volume: u64) -> Result<Processor, MappleError> {
        let no_procs = || PlacementError::NoProcessors {
            task: task.to_string(),
        };
        let kind = self.processor_kind(task).ok_or_else(no_procs)?;
        let m = self.machine();
        let per_node = m.procs_per_node(kind);
        let total = u128::try_from(m.nodes())
            .ok()
            .zip(u128::try_from(per_node).ok())
            .and_then(|(n, p)| n.checked_mul(p))
            .filter(|&t| t > 0)
            .ok_or_else(no_procs)?;
        // Overflow needs a machine of more than 2^64 processors; it is reported, not hidden.
        let linear = u128::from(index)
            .checked_mul(total)
            .map(|x| x / u128::from(volume.max(1)))
            .ok_or_else(no_procs)?;
        let per = u128::try_from(per_node).map_err(|_| no_procs())?;
        let node = usize::try_from(linear / per).map_err(|_| no_procs())?;
        let idx = usize::try_from(linear % per).map_err(|_| no_procs())?;
        Ok(Processor {
            kind,
            node,
            index: idx,
        })
    }
}
