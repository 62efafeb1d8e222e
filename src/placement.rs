//! Which processor runs each point task: the default block placement, or a Mapple mapper.
//!
//! The embedded backend's machine is `nodes x procs_per_node` processors (worker threads),
//! processor `node * procs_per_node + index`. Without a mapper, a launch's points are cut
//! into contiguous blocks, one per processor. With a [`MapplePlacement`], every point goes
//! where the mapper's `IndexTaskMap` (or default mapping) puts it. A fused task is placed by
//! an `IndexTaskMap` naming the fused task (its constituents' kind names joined by `+`) if
//! the mapper has one, else by its first constituent's mapping; every backend applies the
//! same policy.
//!
//! Mapple task names are identifiers, so a task kind is named in a mapper by its kind name
//! with every character other than a letter, digit or `_` replaced by `_`: the array
//! library's `array.add.f64.aa` is `array_add_f64_aa`, and the fused task
//! `array.add.f64.aa+array.copy.f64.a` is `array_add_f64_aa_array_copy_f64_a`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use diffuse_ir::{IrError, Point, Shape};
use diffuse_mapper::machine::Machine;
use diffuse_mapper::placement::Mapper;

/// Decides the processor of each point task of a launch.
pub trait Placement: Send + Sync + fmt::Debug {
    /// The processor (`0..processors`) that runs point `point` of a launch over `launch` of
    /// the task named `task`, whose constituents are `constituents` (one name for a plain
    /// task).
    fn processor(
        &self,
        task: &str,
        constituents: &[&str],
        point: &Point,
        launch: Shape,
    ) -> Result<usize, IrError>;

    /// Records the decisions for one launch (for a logging mode); the default does nothing.
    fn record(&self, _task: &str, _points: &[Point], _processors: &[usize]) {}
}

/// Places points by a Mapple mapper on a `nodes x procs_per_node` machine.
pub struct MapplePlacement {
    mapper: Mapper,
    nodes: usize,
    procs_per_node: usize,
    logging: AtomicBool,
    log: Mutex<Vec<String>>,
}

impl MapplePlacement {
    /// Loads the mapper `source` (named `file` in errors) for a machine of `nodes` nodes with
    /// `procs_per_node` processors of every kind. With `log`, every launch's decisions are
    /// recorded in the DSL manual's format (see [`MapplePlacement::take_log`]).
    pub fn new(
        file: &str,
        source: &str,
        nodes: usize,
        procs_per_node: usize,
        log: bool,
    ) -> Result<Self, diffuse_mapper::error::MappleError> {
        let mapper = Mapper::from_source(file, source, Machine::uniform(nodes, procs_per_node))?;
        Ok(MapplePlacement {
            mapper,
            nodes,
            procs_per_node,
            logging: AtomicBool::new(log),
            log: Mutex::new(Vec::new()),
        })
    }

    /// Starts or stops recording decisions.
    pub fn set_logging(&self, on: bool) {
        self.logging.store(on, Ordering::Relaxed);
    }

    /// The log lines recorded since the last call: per launch, `SELECT_SHARDING_FUNCTOR for
    /// TASK` with a `node <- (point) ...` line per node, then `SLICE_TASK for TASK` with a
    /// `<point>..<point> -> processor` line per point.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl fmt::Debug for MapplePlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MapplePlacement({} nodes x {} processors)",
            self.nodes, self.procs_per_node
        )
    }
}

/// A task or kind name as a Mapple identifier (see the module documentation).
pub fn mapple_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn point_text(p: &Point) -> String {
    let coords: Vec<String> = p.as_slice().iter().map(|c| c.to_string()).collect();
    coords.join(",")
}

impl Placement for MapplePlacement {
    fn processor(
        &self,
        task: &str,
        constituents: &[&str],
        point: &Point,
        launch: Shape,
    ) -> Result<usize, IrError> {
        let name = mapple_name(task);
        let placed = if constituents.len() > 1 {
            let parts: Vec<String> = constituents.iter().map(|c| mapple_name(c)).collect();
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            self.mapper
                .place_fused(&name, &parts, point.as_slice(), launch.as_slice())
        } else {
            self.mapper
                .place(&name, point.as_slice(), launch.as_slice())
        };
        let processor = placed.map_err(|e| IrError::Backend {
            backend: "embedded".into(),
            message: format!("mapping point {point} of {task}: {e}"),
        })?;
        if processor.node >= self.nodes || processor.index >= self.procs_per_node {
            return Err(IrError::Backend {
                backend: "embedded".into(),
                message: format!(
                    "the mapper put point {point} of {task} on {processor}, outside the {}x{} machine",
                    self.nodes, self.procs_per_node
                ),
            });
        }
        Ok(processor.node * self.procs_per_node + processor.index)
    }

    fn record(&self, task: &str, points: &[Point], processors: &[usize]) {
        if !self.logging.load(Ordering::Relaxed) {
            return;
        }
        let task = mapple_name(task);
        let mut lines = vec![format!("SELECT_SHARDING_FUNCTOR for {task}")];
        for node in 0..self.nodes {
            let on_node: Vec<String> = points
                .iter()
                .zip(processors)
                .filter(|(_, &p)| p / self.procs_per_node == node)
                .map(|(pt, _)| format!("({})", point_text(pt)))
                .collect();
            if !on_node.is_empty() {
                lines.push(format!("{node} <- {}", on_node.join(" ")));
            }
        }
        lines.push(format!("SLICE_TASK for {task}"));
        for (pt, &p) in points.iter().zip(processors) {
            let t = point_text(pt);
            lines.push(format!(
                "<{t}>..<{t}> -> node {} processor {}",
                p / self.procs_per_node,
                p % self.procs_per_node
            ));
        }
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(lines);
    }
}
