//! Store memory accounting of the embedded backend: allocation on first touch, release when the
//! last application handle and task reference are gone, and a high-water mark.

use std::sync::Arc;

use diffuse::{Backend, EmbeddedBackend, EmbeddedConfig};
use diffuse_ir::{Context, DType, IndexTask, IrError, Privilege, Tuple};

use crate::common::embedded_backend;
use crate::common::submit_blocked;
use crate::common::view_at;
use crate::common::{add_kind, submit_sum_all, unfused};

fn backend(procs: usize) -> (Arc<EmbeddedBackend>, Context) {
    let b = embedded_backend(procs);
    let c = unfused(b.clone());
    (b, c)
}

/// Current and peak store bytes.
fn levels(b: &EmbeddedBackend) -> (usize, usize) {
    let s = b.stats();
    (s.store_bytes as usize, s.peak_store_bytes as usize)
}

#[test]
fn memory_rises_on_first_touch_and_falls_when_the_last_handle_goes() {
    let (b, c) = backend(2);
    let m = &*b;
    assert_eq!(levels(m), (0, 0));

    // Creating a store allocates nothing; the first host write does.
    let x = c.create_store(&[10], DType::F64).unwrap();
    assert_eq!(levels(m), (0, 0));
    c.write(&x.view(), vec![1.0; 10]).unwrap();
    assert_eq!(levels(m), (80, 80));
    // Touching it again does not allocate again.
    c.write(&x.view(), vec![2.0; 10]).unwrap();
    let _ = c.read::<f64>(&x.view()).unwrap();
    assert_eq!(levels(m), (80, 80));

    // A first read allocates too (a 3x4 f64 store: 96 bytes); i32 elements count 4 bytes.
    let y = c.create_store(&[3, 4], DType::F64).unwrap();
    assert_eq!(c.read::<f64>(&y.view()).unwrap(), vec![0.0; 12]);
    assert_eq!(levels(m), (176, 176));
    let z = c.store_from_vec(&[5], vec![1i32; 5]).unwrap();
    assert_eq!(levels(m), (196, 196));

    // Dropping the only handle frees the store; the peak stays.
    drop(x);
    assert_eq!(levels(m), (116, 196));

    // Clones and views are handles too: the store lives until the last of them.
    let y2 = y.clone();
    let yv = y.view();
    drop(y);
    assert_eq!(m.stats().store_bytes, 116);
    drop(y2);
    assert_eq!(m.stats().store_bytes, 116);
    assert_eq!(
        c.read::<f64>(&yv).unwrap(),
        vec![0.0; 12],
        "view keeps data alive"
    );
    drop(yv);
    assert_eq!(levels(m), (20, 196));

    m.reset_peak_memory();
    assert_eq!(levels(m), (20, 20));
    drop(z);
    assert_eq!(levels(m), (0, 20));
}

#[test]
fn task_references_keep_store_memory_alive() {
    let (b, c) = backend(2);
    let m = &*b;
    let x = c.store_from_vec(&[4], vec![1.0; 4]).unwrap();
    let y = c.store_from_vec(&[4], vec![2.0; 4]).unwrap();
    let out = c.create_store(&[4], DType::F64).unwrap();
    assert_eq!(m.stats().store_bytes, 64);
    let launch = Tuple::shape(&[2]).unwrap();
    let task = IndexTask::new(&add_kind(), launch)
        .arg(&out, out.view().blocked(launch).unwrap(), Privilege::Write)
        .arg(&x, x.view().blocked(launch).unwrap(), Privilege::Read)
        .arg(&y, y.view().blocked(launch).unwrap(), Privilege::Read);
    // The application lets go of x; the unsubmitted task still references it.
    drop(x);
    assert_eq!(
        m.stats().store_bytes,
        64,
        "x is still referenced by the task"
    );
    let kept = task.clone();
    // Submitting a task naming a store without application handles is refused...
    let err = c.submit(task).unwrap_err();
    assert!(matches!(err, IrError::DeadStore { .. }), "{err}");
    // ...and the refused task's references are gone, but the clone still holds x.
    assert_eq!(m.stats().store_bytes, 64);
    drop(kept);
    assert_eq!(levels(m), (32, 64), "x freed with its last task reference");

    // A task's output is allocated when the task first touches it, and stays with its handle.
    let x = c.store_from_vec(&[4], vec![3.0; 4]).unwrap();
    assert_eq!(m.stats().store_bytes, 64);
    submit_blocked(&c, &add_kind(), launch, &out, &x, &y).unwrap();
    assert_eq!(levels(m), (96, 96));
    assert_eq!(c.read::<f64>(&out.view()).unwrap(), vec![5.0; 4]);
    drop((x, y, out));
    assert_eq!(levels(m), (0, 96));
}

#[test]
fn reduction_accumulators_are_not_store_memory() {
    let (b, c) = backend(4);
    let m = &*b;
    let a = c.store_from_vec(&[8, 8], vec![1.0; 64]).unwrap();
    let s = c.store_from_vec(&[], vec![0.0]).unwrap();
    assert_eq!(levels(m), (520, 520));
    let launch = Tuple::shape(&[4, 2]).unwrap();
    submit_sum_all(&c, &a, &s, launch).unwrap();
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), 64.0);
    assert_eq!(levels(m), (520, 520));
}

#[test]
fn peak_tracks_the_maximum_of_a_random_walk() {
    let (b, c) = backend(1);
    let m = &*b;
    let mut live = Vec::new();
    let (mut current, mut peak) = (0usize, 0usize);
    // A deterministic pseudo-random sequence of allocations and drops.
    let mut state = 12345u64;
    for step in 0..60 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (state >> 33) as usize;
        if live.is_empty() || !r.is_multiple_of(3) {
            let len = 1 + r % 17;
            let s = c.store_from_vec(&[len as i64], vec![0.5f64; len]).unwrap();
            live.push((s, len * 8));
            current += len * 8;
        } else {
            let (s, bytes) = live.swap_remove(r % live.len());
            drop(s);
            current -= bytes;
        }
        peak = peak.max(current);
        assert_eq!(levels(m), (current, peak), "step {step}");
    }
    drop(live);
    assert_eq!(levels(m), (0, peak));
}

#[test]
fn backends_account_separately() {
    let (b1, c1) = backend(1);
    let (b2, c2) = backend(1);
    let _x = c1.store_from_vec(&[3], vec![1.0f64; 3]).unwrap();
    let _y = c2.store_from_vec(&[5], vec![1.0f64; 5]).unwrap();
    assert_eq!(b1.stats().store_bytes, 24);
    assert_eq!(b2.stats().store_bytes, 40);
}

#[test]
fn empty_stores_count_no_bytes() {
    let (b, c) = backend(1);
    let e = c.create_store(&[0, 5], DType::F64).unwrap();
    assert_eq!(c.read::<f64>(&e.view()).unwrap(), Vec::<f64>::new());
    assert_eq!(levels(&b), (0, 0));
}

/// Fills `view` with `v` through a Write task over `launch`.
fn fill(c: &Context, view: &diffuse_ir::View, launch: &[i64], v: f64) {
    let launch = Tuple::shape(launch).unwrap();
    c.submit(
        IndexTask::new(&crate::common::fill_kind(), launch)
            .arg(
                view.store(),
                view.blocked(launch).unwrap(),
                Privilege::Write,
            )
            .scalar(v),
    )
    .unwrap();
}

/// How many of `values` are `v`.
fn count(values: &[f64], v: f64) -> usize {
    values.iter().filter(|&&x| x == v).count()
}

/// Freed store buffers are recycled, and a recycled buffer never shows its previous store's
/// data: whatever is not overwritten by the new store's first use reads as zero.
#[test]
fn recycled_buffers_never_leak_stale_data() {
    let (b, c) = backend(2);
    let dirty = |c: &Context| {
        let s = c.create_store(&[6, 8], DType::F64).unwrap();
        fill(c, &s.view(), &[2, 2], 7.0);
        drop(s);
    };

    // First use: a host read.
    dirty(&c);
    assert_eq!(
        b.stats().cached_bytes,
        6 * 8 * 8,
        "the freed buffer is cached"
    );
    let s = c.create_store(&[6, 8], DType::F64).unwrap();
    assert_eq!(c.read::<f64>(&s.view()).unwrap(), vec![0.0; 48]);
    assert_eq!(b.stats().cached_bytes, 0, "the cached buffer was reused");
    drop(s);

    // First use: a partial host write.
    dirty(&c);
    let s = c.create_store(&[6, 8], DType::F64).unwrap();
    let corner = view_at(&s, &[0, 0], &[2, 2]);
    c.write(&corner, vec![1.0; 4]).unwrap();
    let all = c.read::<f64>(&s.view()).unwrap();
    assert_eq!((count(&all, 1.0), count(&all, 0.0)), (4, 44));
    drop((s, corner));

    // First use: a Write task through a tiling of a view that does not cover the store.
    dirty(&c);
    let s = c.create_store(&[6, 8], DType::F64).unwrap();
    let inner = view_at(&s, &[1, 1], &[4, 6]);
    fill(&c, &inner, &[2, 2], 3.0);
    let all = c.read::<f64>(&s.view()).unwrap();
    assert_eq!((count(&all, 3.0), count(&all, 0.0)), (24, 24));
    drop((s, inner));

    // First use: a covering Write task defines everything.
    dirty(&c);
    let s = c.create_store(&[6, 8], DType::F64).unwrap();
    fill(&c, &s.view(), &[3, 2], 5.0);
    assert_eq!(c.read::<f64>(&s.view()).unwrap(), vec![5.0; 48]);
}

#[test]
fn the_buffer_cache_respects_its_limit() {
    let b = Arc::new(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(1),
            buffer_cache_bytes: 100,
            ..Default::default()
        })
        .unwrap(),
    );
    let c = unfused(b.clone());
    let small = c.store_from_vec(&[10], vec![1.0f64; 10]).unwrap();
    let large = c.store_from_vec(&[20], vec![1.0f64; 20]).unwrap();
    drop(small);
    assert_eq!(b.stats().cached_bytes, 80);
    drop(large);
    assert_eq!(
        b.stats().cached_bytes,
        80,
        "a 160-byte buffer does not fit a 100-byte cache"
    );
}

/// One operation of a random stream: `c = a + b` into a new store, or `a += b` in place.
#[derive(Clone, Debug)]
enum MemOp {
    /// A new store, the sum of two existing ones.
    AddNew(usize, usize),
    /// An existing store plus another one, in place.
    AddInPlace(usize, usize),
}

fn mem_op(stores: usize) -> impl proptest::strategy::Strategy<Value = (MemOp, bool)> {
    use proptest::prelude::*;
    (
        prop_oneof![
            (0..stores, 0..stores).prop_map(|(a, b)| MemOp::AddNew(a, b)),
            (0..stores, 0..stores).prop_map(|(a, b)| MemOp::AddInPlace(a, b)),
        ],
        prop::bool::weighted(0.3),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Allocation failures injected at random points of random task streams (the memory
    /// limit dropped to what is in use, so any new store fails): the failing operation
    /// reports `OutOfMemory` naming the store, no store changes, and every later operation
    /// succeeds and matches the sequential model.
    #[test]
    fn allocation_failures_are_errors_and_lose_nothing(
        ops in proptest::collection::vec(mem_op(3), 1..24),
        procs in 1usize..=3,
    ) {
        let (b, c) = backend(procs);
        let launch = Tuple::shape(&[procs as i64]).unwrap();
        let n = 6usize;
        let mut stores = Vec::new();
        let mut model: Vec<Vec<f64>> = Vec::new();
        for k in 0..3 {
            let data: Vec<f64> = (0..n).map(|i| (i * 3 + k) as f64).collect();
            stores.push(c.store_from_vec(&[n as i64], data.clone()).unwrap());
            model.push(data);
        }
        for (op, starve) in ops {
            let limit_before = usize::MAX;
            if starve {
                b.set_memory_limit(b.stats().store_bytes as usize);
            }
            let pick = |i: usize| i % stores.len();
            let outcome = match op {
                MemOp::AddNew(x, y) => {
                    let (x, y) = (pick(x), pick(y));
                    let out = c.create_store(&[n as i64], DType::F64).unwrap();
                    let task = IndexTask::new(&add_kind(), launch)
                        .arg(&out, out.view().blocked(launch).unwrap(), Privilege::Write)
                        .arg(&stores[x], stores[x].view().blocked(launch).unwrap(), Privilege::Read)
                        .arg(&stores[y], stores[y].view().blocked(launch).unwrap(), Privilege::Read);
                    c.submit(task).map(|()| {
                        let sum = model[x].iter().zip(&model[y]).map(|(a, b)| a + b).collect();
                        stores.push(out);
                        model.push(sum);
                    })
                }
                MemOp::AddInPlace(x, y) => {
                    let (x, y) = (pick(x), pick(y));
                    let src = c.create_store(&[n as i64], DType::F64).unwrap();
                    // `src` is a new store too: a copy of y through the add kind (y + 0).
                    let zero = c.store_from_vec(&[n as i64], vec![0.0; n]);
                    match zero {
                        Err(e) => Err(e),
                        Ok(zero) => {
                            let copy = IndexTask::new(&add_kind(), launch)
                                .arg(&src, src.view().blocked(launch).unwrap(), Privilege::Write)
                                .arg(&stores[y], stores[y].view().blocked(launch).unwrap(), Privilege::Read)
                                .arg(&zero, zero.view().blocked(launch).unwrap(), Privilege::Read);
                            c.submit(copy).and_then(|()| {
                                let add = IndexTask::new(&crate::common::add_assign_kind(), launch)
                                    .arg(&stores[x], stores[x].view().blocked(launch).unwrap(), Privilege::ReadWrite)
                                    .arg(&src, src.view().blocked(launch).unwrap(), Privilege::Read);
                                c.submit(add)
                            }).map(|()| {
                                let ys = model[y].clone();
                                model[x].iter_mut().zip(&ys).for_each(|(a, b)| *a += b);
                            })
                        }
                    }
                }
            };
            match outcome {
                Ok(()) => {}
                Err(IrError::OutOfMemory { backend, bytes, .. }) => {
                    proptest::prop_assert!(starve, "out of memory without a lowered limit");
                    proptest::prop_assert_eq!(backend.as_str(), "embedded");
                    proptest::prop_assert!(bytes > 0);
                }
                Err(e) => proptest::prop_assert!(false, "unexpected error {e}"),
            }
            b.set_memory_limit(limit_before);
            for (store, want) in stores.iter().zip(&model) {
                proptest::prop_assert_eq!(&c.read::<f64>(&store.view()).unwrap(), want);
            }
        }
    }
}

#[test]
fn a_store_past_the_limit_names_itself_and_the_limit() {
    let b = Arc::new(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(1),
            memory_limit: Some(1000),
            ..Default::default()
        })
        .unwrap(),
    );
    let c = unfused(b.clone());
    let small = c.store_from_vec(&[100], vec![1.0f64; 100]).unwrap();
    let big = c.create_store(&[20, 10], DType::F64).unwrap();
    let e = c.read::<f64>(&big.view()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("out of memory")
            && text.contains(&format!("{}", big.id()))
            && text.contains("(20, 10)")
            && text.contains("1600 bytes")
            && text.contains("1000-byte limit"),
        "{text}"
    );
    // The runtime stays usable and the small store keeps its value.
    assert_eq!(c.read::<f64>(&small.view()).unwrap(), vec![1.0; 100]);
    drop(small);
    assert_eq!(
        c.read::<f64>(&big.view()).unwrap_err().to_string(),
        text.replace("800 bytes are in use", "0 bytes are in use")
    );
}
