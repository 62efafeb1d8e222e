//! Host copies that wait only for the work they depend on (`element`, `set_element`,
//! `read_into`, `read_strided`, `take_host`): random streams of tasks on two arrays
//! (assignments into boxes, in-place updates, products with the other array) interleaved
//! with host reads and writes of single elements and boxes and hand-overs of a whole array,
//! on every processor count and on the simulated GPU, against a sequential model;
//! and on a runtime of its own, that a host copy of one store leaves the buffered work on
//! another store buffered, and waits for work that writes its own.

use diffuse_array::{s, Array, ArrayContext, SliceArg};
use diffuse_ir::PendingUse;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{cx, fresh_cx, ok, PROCS, R};

/// Rows and columns of both arrays.
const ROWS: usize = 4;
const COLS: usize = 5;

/// A box `[r0, r1) x [c0, c1)` (never empty).
#[derive(Clone, Copy, Debug)]
struct Rect {
    rows: (usize, usize),
    cols: (usize, usize),
}

impl Rect {
    fn spec(&self) -> [SliceArg; 2] {
        s![
            self.rows.0 as i64..self.rows.1 as i64,
            self.cols.0 as i64..self.cols.1 as i64
        ]
    }

    fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        (self.rows.0..self.rows.1)
            .flat_map(move |r| (self.cols.0..self.cols.1).map(move |c| r * COLS + c))
    }
}

/// One step of a stream; `on` picks the array (0 or 1).
#[derive(Clone, Debug)]
enum Step {
    /// `a[box] = value` (a fill task).
    Fill { on: usize, at: Rect, value: i64 },
    /// `a[box] = a[box] * 3 + other[box]` (a task reading both arrays, writing one).
    Update { on: usize, at: Rect },
    /// `a[r, c] = value` from the host.
    SetElement {
        on: usize,
        at: (usize, usize),
        value: i64,
    },
    /// `a[r, c]` read on the host, checked against the model.
    Element { on: usize, at: (usize, usize) },
    /// `a[box]` read into a host buffer, checked against the model.
    ReadInto { on: usize, at: Rect },
    /// `a` handed over in its host buffer (`take_host`), checked against the model, then
    /// overwritten there (nothing else may see that) and replaced by a new array of the
    /// buffer's values; a box of it is never handed over.
    Take { on: usize, at: Rect },
}

fn rect() -> impl Strategy<Value = Rect> {
    (0..ROWS, 0..ROWS, 0..COLS, 0..COLS).prop_map(|(a, b, c, d)| Rect {
        rows: (a.min(b), a.max(b) + 1),
        cols: (c.min(d), c.max(d) + 1),
    })
}

fn step() -> impl Strategy<Value = Step> {
    let at = (0..ROWS, 0..COLS);
    prop_oneof![
        (0..2usize, rect(), -9i64..9).prop_map(|(on, at, value)| Step::Fill { on, at, value }),
        (0..2usize, rect()).prop_map(|(on, at)| Step::Update { on, at }),
        (0..2usize, at.clone(), -9i64..9).prop_map(|(on, at, value)| Step::SetElement {
            on,
            at,
            value
        }),
        (0..2usize, at).prop_map(|(on, at)| Step::Element { on, at }),
        (0..2usize, rect()).prop_map(|(on, at)| Step::ReadInto { on, at }),
        (0..2usize, rect()).prop_map(|(on, at)| Step::Take { on, at }),
    ]
}

fn run(cx: &ArrayContext, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut model: [Vec<i64>; 2] = [
        (0..(ROWS * COLS) as i64).collect(),
        (0..(ROWS * COLS) as i64).map(|v| 100 - v).collect(),
    ];
    let shape = [ROWS as i64, COLS as i64];
    let mut arrays = [
        ok(Array::from_vec(cx, &shape, model[0].clone()), "from_vec")?,
        ok(Array::from_vec(cx, &shape, model[1].clone()), "from_vec")?,
    ];
    for step in steps {
        match *step {
            Step::Fill { on, at, value } => {
                let view = ok(arrays[on].slice(&at.spec()), "slice")?;
                ok(view.assign(value), "fill")?;
                for p in at.positions() {
                    model[on][p] = value;
                }
            }
            Step::Update { on, at } => {
                let view = ok(arrays[on].slice(&at.spec()), "slice")?;
                let other = ok(arrays[1 - on].slice(&at.spec()), "slice")?;
                let scaled = ok(&view * 3i64, "multiply")?;
                ok(view.assign(&ok(&scaled + &other, "add")?), "assign")?;
                for p in at.positions() {
                    model[on][p] = model[on][p] * 3 + model[1 - on][p];
                }
            }
            Step::SetElement { on, at, value } => {
                let index = [at.0 as i64, at.1 as i64];
                ok(arrays[on].set_element(&index, value), "set_element")?;
                model[on][at.0 * COLS + at.1] = value;
            }
            Step::Element { on, at } => {
                let index = [at.0 as i64, at.1 as i64];
                let got = ok(arrays[on].element::<i64>(&index), "element")?;
                prop_assert_eq!(got, model[on][at.0 * COLS + at.1], "{:?}", step);
            }
            Step::ReadInto { on, at } => {
                let view = ok(arrays[on].slice(&at.spec()), "slice")?;
                let mut got = vec![0i64; view.size()];
                ok(view.read_into(&mut got), "read_into")?;
                let want: Vec<i64> = at.positions().map(|p| model[on][p]).collect();
                prop_assert_eq!(got, want, "{:?}", step);
            }
            Step::Take { on, at } => {
                let view = ok(arrays[on].slice(&at.spec()), "slice")?;
                if view.size() < ROWS * COLS {
                    prop_assert!(ok(view.take_host(), "take_host")?.is_none());
                }
                drop(view);
                let Some(block) = ok(arrays[on].take_host(), "take_host")? else {
                    return Err(TestCaseError::fail(
                        "the embedded backend hands stores over",
                    ));
                };
                prop_assert_eq!(block.len_bytes(), ROWS * COLS * 8);
                // SAFETY: the block holds ROWS * COLS i64 elements, aligned, ours alone.
                let taken = unsafe {
                    std::slice::from_raw_parts_mut(block.as_ptr().cast::<i64>(), ROWS * COLS)
                };
                prop_assert_eq!(&*taken, &model[on][..], "{:?}", step);
                let values = taken.to_vec();
                taken.fill(-1000);
                arrays[on] = ok(Array::from_vec(cx, &shape, values), "from_vec")?;
            }
        }
    }
    for (array, want) in arrays.iter().zip(&model) {
        prop_assert_eq!(&ok(array.to_vec::<i64>(), "to_vec")?, want);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn host_copies_interleaved_with_tasks_match_the_model(
        steps in prop::collection::vec(step(), 1..24)
    ) {
        for procs in PROCS {
            run(&cx(procs), &steps)?;
        }
        run(simulated_gpu(), &steps)?;
    }
}

/// A context whose tasks all run on the simulated GPU (the store's newest data on the
/// device), shared by the cases: host copies must download, and host writes must reach the
/// device, around the launches.
fn simulated_gpu() -> &'static ArrayContext {
    use diffuse::{BackendConfig, EmbeddedConfig, MapplePlacement, Placement, RuntimeConfig};
    use std::sync::{Arc, OnceLock};
    static CX: OnceLock<ArrayContext> = OnceLock::new();
    CX.get_or_init(|| {
        let backend = diffuse::start_backend(&BackendConfig::Embedded(EmbeddedConfig {
            procs: Some(2),
            device: Some(diffuse::device::DeviceChoice::Simulated),
            ..Default::default()
        }))
        .expect("the embedded backend starts with a simulated GPU");
        let gpus = MapplePlacement::prefer_gpus(backend.machine()).expect("a GPU placement");
        let runtime = diffuse::start_runtime(
            backend,
            RuntimeConfig {
                jit: Some(Arc::new(diffuse_jit::Jit::new())),
                placement: Some(Arc::new(gpus) as Arc<dyn Placement>),
                ..Default::default()
            },
        );
        ArrayContext::new(diffuse_ir::Context::new(runtime))
    })
}

/// On a runtime that buffers a window (3 processors: a window of 5 tasks), a host read of
/// one store leaves a task writing another store buffered; a read of the written store
/// waits for it; a host write waits for buffered tasks that read its store.
#[test]
fn host_copies_wait_only_for_their_stores() -> R {
    let cx = fresh_cx(3);
    let x = Array::from_vec(&cx, &[6], (0..6i64).collect())?;
    let z = Array::from_vec(&cx, &[6], vec![7i64; 6])?;
    assert_eq!(x.pending_use(), PendingUse::Nothing);
    let y = (&x + 1i64)?;
    assert_eq!(x.pending_use(), PendingUse::Reads);
    assert_eq!(y.pending_use(), PendingUse::Writes);
    assert_eq!(z.pending_use(), PendingUse::Nothing);

    // Reads of z and x do not run the buffered task.
    assert_eq!(z.element::<i64>(&[2])?, 7);
    assert_eq!(x.element::<i64>(&[5])?, 5);
    let mut row = [0i64; 6];
    x.read_into(&mut row)?;
    assert_eq!(row, [0, 1, 2, 3, 4, 5]);
    assert_eq!(y.pending_use(), PendingUse::Writes);

    // Writing z needs nothing; writing x must follow the task reading it.
    z.set_element(&[0], -1i64)?;
    assert_eq!(y.pending_use(), PendingUse::Writes);
    x.set_element(&[0], 10i64)?;
    assert_eq!(y.pending_use(), PendingUse::Nothing);
    assert_eq!(y.to_vec::<i64>()?, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(x.element::<i64>(&[0])?, 10);
    assert_eq!(z.to_vec::<i64>()?, vec![-1, 7, 7, 7, 7, 7]);
    Ok(())
}

/// Out-of-range indices, wrong ranks, wrong dtypes and wrong buffer sizes are errors
/// naming the operation, never a panic.
#[test]
fn bad_host_copies_are_errors() -> R {
    let cx = cx(1);
    let a = Array::from_vec(&cx, &[2, 3], (0..6i64).collect())?;
    let outside = a.element::<i64>(&[2, 0]).unwrap_err().to_string();
    assert!(
        outside.contains("element") && outside.contains("(2, 3)"),
        "{outside}"
    );
    let rank = a.set_element::<i64>(&[1], 0).unwrap_err().to_string();
    assert!(rank.contains("set_element"), "{rank}");
    let dtype = a.element::<f64>(&[0, 0]).unwrap_err().to_string();
    assert!(dtype.contains("element"), "{dtype}");
    let mut short = [0i64; 5];
    assert!(a.read_into(&mut short).is_err());
    Ok(())
}
