//! Recording the index tasks a piece of application code submits, and replaying them over
//! other stores of the same shapes: a loop body that builds the same tasks every iteration
//! (a Python function of arrays, say) is run once for real while it is recorded, and later
//! iterations submit the recorded tasks directly, without running the code that built them.
//!
//! A recording names every store its tasks touch by role: one of the *inputs* it was started
//! with (replaced by the replay's inputs), a store *created* while recording (a fresh store of
//! the same shape and dtype on each replay), or a store that existed before and is not an
//! input (*held*: the same store on every replay). Tasks are a function of their kind,
//! launch domain, partitions, privileges, scalars and their stores' shapes, dtypes and
//! aliasing, so a replay whose inputs match the recorded ones in all of these submits tasks
//! that validation would accept exactly as it accepted the recorded ones.
//!
//! Code whose tasks depend on anything else cannot be replayed, and the recording says why:
//! a value read back to the application (it may steer what the code does next), data written
//! from the host (the next run's data would differ), or a library's own declaration
//! ([`crate::Context::refuse_replay`]).

use std::sync::Arc;

use hashbrown::HashMap;

use crate::dtype::{DType, Scalar};
use crate::error::IrError;
use crate::kind::TaskKind;
use crate::partition::Partition;
use crate::privilege::Privilege;
use crate::store::{Store, StoreId, StoreRef, View};
use crate::task::IndexTask;
use crate::tuple::{Point, Shape};

/// Where a recorded task's store comes from on replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The replay's input at this position.
    Input(usize),
    /// A fresh store per replay, the recording's `created[i]`.
    Created(usize),
    /// The same store on every replay, the recording's `held[i]`.
    Held(usize),
}

/// One recorded input: the box it was and which earlier input, if any, shared its store.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InputSignature {
    store_shape: Shape,
    dtype: DType,
    offset: Point,
    shape: Shape,
    /// The first input with the same store (itself when none before it had).
    same_store_as: usize,
}

impl InputSignature {
    fn of(views: &[View]) -> Vec<InputSignature> {
        views
            .iter()
            .enumerate()
            .map(|(i, view)| InputSignature {
                store_shape: view.store().shape(),
                dtype: view.store().dtype(),
                offset: view.offset(),
                shape: view.shape(),
                same_store_as: views[..i]
                    .iter()
                    .position(|earlier| earlier.store().id() == view.store().id())
                    .unwrap_or(i),
            })
            .collect()
    }
}

/// A recorded task with its stores replaced by roles.
#[derive(Clone, Debug)]
struct TaskTemplate {
    kind: Arc<TaskKind>,
    launch: Shape,
    args: Vec<(Role, Partition, Privilege)>,
    scalars: Vec<Scalar>,
    /// Created stores nothing uses after this task (outputs excepted): their handles are
    /// dropped once it is submitted, so fusion may treat them as temporaries exactly where
    /// the recorded code let it.
    release: Vec<usize>,
}

/// A store created while recording, and whether a replay needs it (a task or an output
/// uses it).
#[derive(Clone, Debug)]
struct CreatedStore {
    shape: Shape,
    dtype: DType,
    used: bool,
}

/// The tasks submitted between [`crate::Context::start_recording`] and
/// [`crate::Context::finish_recording`], replayable with [`crate::Context::replay`].
#[derive(Debug)]
pub struct Recording {
    inputs: Vec<InputSignature>,
    created: Vec<CreatedStore>,
    held: Vec<Store>,
    tasks: Vec<TaskTemplate>,
    outputs: Vec<(Role, Point, Shape)>,
}

impl Recording {
    /// How many tasks a replay submits.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The roles of the stores the recorded tasks change (write or reduce into).
    fn mutated(&self) -> impl Iterator<Item = Role> + '_ {
        self.tasks.iter().flat_map(|t| {
            t.args
                .iter()
                .filter(|(_, _, privilege)| privilege.mutates())
                .map(|&(role, _, _)| role)
        })
    }

    /// The positions of the inputs whose stores a replay changes, ascending.
    pub fn changed_inputs(&self) -> Vec<usize> {
        let mut changed: Vec<usize> = self
            .mutated()
            .filter_map(|role| match role {
                Role::Input(i) => Some(i),
                _ => None,
            })
            .collect();
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// The held stores (neither inputs nor created) a replay changes: stores the recorded
    /// code reached other than through its inputs.
    pub fn changed_held(&self) -> Vec<StoreId> {
        let mut changed: Vec<StoreId> = self
            .mutated()
            .filter_map(|role| match role {
                Role::Held(h) => Some(self.held[h].id()),
                _ => None,
            })
            .collect();
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// Checks that `inputs` can stand for the recorded ones: the same boxes of stores of
    /// the same shapes and dtypes, sharing stores exactly where the recorded inputs did, and
    /// none of them a store the recording holds.
    fn check_inputs(&self, inputs: &[View]) -> Result<(), IrError> {
        let mismatch = |reason: String| Err(IrError::ReplayMismatch { reason });
        if inputs.len() != self.inputs.len() {
            return mismatch(format!(
                "{} inputs given, {} recorded",
                inputs.len(),
                self.inputs.len()
            ));
        }
        for (i, (given, recorded)) in InputSignature::of(inputs)
            .iter()
            .zip(&self.inputs)
            .enumerate()
        {
            if given != recorded {
                return mismatch(format!(
                    "input {i} is a {} view at {} of shape {} in a store of shape {} (input {} \
                     shares its store); recorded: a {} view at {} of shape {} in a store of \
                     shape {} (input {} shares its store)",
                    given.dtype,
                    given.offset,
                    given.shape,
                    given.store_shape,
                    given.same_store_as,
                    recorded.dtype,
                    recorded.offset,
                    recorded.shape,
                    recorded.store_shape,
                    recorded.same_store_as,
                ));
            }
        }
        if let Some(i) = inputs
            .iter()
            .position(|view| self.held.iter().any(|h| h.id() == view.store().id()))
        {
            return mismatch(format!(
                "input {i} is a store the recorded tasks use as a store of their own"
            ));
        }
        Ok(())
    }
}

/// What a recording collects while it is open.
pub(crate) struct Recorder {
    inputs: Vec<View>,
    /// Stores created while recording, in order, by id (no handle: holding one would make
    /// every temporary look observable to fusion).
    created: Vec<(StoreId, Shape, DType)>,
    tasks: Vec<IndexTask>,
    refused: Option<String>,
}

impl Recorder {
    pub(crate) fn new(inputs: &[View]) -> Self {
        Recorder {
            inputs: inputs.to_vec(),
            created: Vec::new(),
            tasks: Vec::new(),
            refused: None,
        }
    }

    pub(crate) fn created(&mut self, store: &Store) {
        self.created
            .push((store.id(), store.shape(), store.dtype()));
    }

    pub(crate) fn submitted(&mut self, task: &IndexTask) {
        if self.refused.is_none() {
            self.tasks.push(task.clone());
        }
    }

    /// Marks the recording unreplayable (the first reason is kept).
    pub(crate) fn refuse(&mut self, reason: impl FnOnce() -> String) {
        if self.refused.is_none() {
            self.refused = Some(reason());
            self.tasks.clear();
        }
    }

    /// The recording, with `outputs` (views the recorded code produced) to be rebuilt on each
    /// replay; or why it cannot be replayed.
    pub(crate) fn finish(self, outputs: &[View]) -> Result<Recording, IrError> {
        if let Some(reason) = self.refused {
            return Err(IrError::NotReplayable { reason });
        }
        let mut roles = RoleTable {
            inputs: &self.inputs,
            created: self
                .created
                .iter()
                .enumerate()
                .map(|(c, &(id, _, _))| (id, c))
                .collect(),
            held: Vec::new(),
        };
        let mut is_output = vec![false; self.created.len()];
        let outputs = outputs
            .iter()
            .map(|view| {
                let role = roles.of(&view.store().task_ref());
                if let Role::Created(c) = role {
                    is_output[c] = true;
                }
                (role, view.offset(), view.shape())
            })
            .collect();
        // The last task using each created store.
        let mut last_task: Vec<Option<usize>> = vec![None; self.created.len()];
        let mut tasks = Vec::with_capacity(self.tasks.len());
        for (t, task) in self.tasks.iter().enumerate() {
            let mut args = Vec::with_capacity(task.args().len());
            for arg in task.args() {
                let role = roles.of(&arg.store);
                if let Role::Created(c) = role {
                    // Still held but not an output: the recorded code kept it beyond itself
                    // (a global, an attribute), where a replay's fresh store would not reach.
                    if !is_output[c] && arg.store.app_handles() > 0 {
                        return Err(IrError::NotReplayable {
                            reason: "an array it made outlives it without being returned \
                                     (kept in a global or an attribute)"
                                .into(),
                        });
                    }
                    last_task[c] = Some(t);
                }
                args.push((role, arg.partition.clone(), arg.privilege));
            }
            tasks.push(TaskTemplate {
                kind: Arc::clone(task.kind()),
                launch: task.launch_domain(),
                args,
                scalars: task.scalars().to_vec(),
                release: Vec::new(),
            });
        }
        for (c, last) in last_task.iter().enumerate() {
            if let (Some(t), false) = (*last, is_output[c]) {
                tasks[t].release.push(c);
            }
        }
        let created = self
            .created
            .iter()
            .enumerate()
            .map(|(c, &(_, shape, dtype))| CreatedStore {
                shape,
                dtype,
                used: last_task[c].is_some() || is_output[c],
            })
            .collect();
        Ok(Recording {
            inputs: InputSignature::of(&self.inputs),
            created,
            held: roles.held,
            tasks,
            outputs,
        })
    }
}

/// Assigns roles to the stores of a recording, collecting the held ones.
struct RoleTable<'a> {
    inputs: &'a [View],
    created: HashMap<StoreId, usize>,
    held: Vec<Store>,
}

impl RoleTable<'_> {
    fn of(&mut self, store: &StoreRef) -> Role {
        let id = store.id();
        if let Some(i) = self.inputs.iter().position(|v| v.store().id() == id) {
            return Role::Input(i);
        }
        if let Some(&c) = self.created.get(&id) {
            return Role::Created(c);
        }
        if let Some(h) = self.held.iter().position(|s| s.id() == id) {
            return Role::Held(h);
        }
        self.held.push(Store::from_task_ref(store));
        Role::Held(self.held.len() - 1)
    }
}

/// The stores a replay runs on, by role.
pub(crate) struct ReplayStores<'a> {
    recording: &'a Recording,
    inputs: &'a [View],
    created: Vec<Option<Store>>,
}

impl<'a> ReplayStores<'a> {
    /// Checks `inputs` against `recording` and creates its fresh stores with `create`.
    pub(crate) fn new(
        recording: &'a Recording,
        inputs: &'a [View],
        mut create: impl FnMut(Shape, DType) -> Result<Store, IrError>,
    ) -> Result<Self, IrError> {
        recording.check_inputs(inputs)?;
        let created = recording
            .created
            .iter()
            .map(|c| c.used.then(|| create(c.shape, c.dtype)).transpose())
            .collect::<Result<_, _>>()?;
        Ok(ReplayStores {
            recording,
            inputs,
            created,
        })
    }

    fn store(&self, role: Role) -> Result<&Store, IrError> {
        match role {
            Role::Input(i) => Ok(self.inputs[i].store()),
            Role::Held(h) => Ok(&self.recording.held[h]),
            Role::Created(c) => self.created[c]
                .as_ref()
                .ok_or_else(|| IrError::ReplayMismatch {
                    reason: format!("created store {c} used where the recording did not use it"),
                }),
        }
    }

    /// The recorded tasks over these stores, each handed to `submit` in order; a created
    /// store's handle is dropped after its last task unless it is an output.
    pub(crate) fn submit_all(
        &mut self,
        mut submit: impl FnMut(IndexTask) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        for template in &self.recording.tasks {
            let mut task = IndexTask::new(&template.kind, template.launch);
            for (role, partition, privilege) in &template.args {
                task = task.arg(self.store(*role)?, partition.clone(), *privilege);
            }
            for scalar in &template.scalars {
                task = task.scalar(*scalar);
            }
            submit(task)?;
            for &c in &template.release {
                self.created[c] = None;
            }
        }
        Ok(())
    }

    /// The recorded outputs as views of this replay's stores.
    pub(crate) fn outputs(&self) -> Result<Vec<View>, IrError> {
        self.recording
            .outputs
            .iter()
            .map(|&(role, offset, shape)| View::new(self.store(role)?, offset, shape))
            .collect()
    }
}
