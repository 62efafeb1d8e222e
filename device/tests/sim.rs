//! The simulated GPU against plain host models: copies, poison, pitched copies, memory
//! exhaustion and reuse in stream order, fault injection, errors of launches, and random
//! operation sequences against a map of byte vectors.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use diffuse_device::sim::{SimConfig, SimDevice, SimFault};
use diffuse_device::{open, Device, DeviceChoice, DeviceError, DeviceKind, Event, LaunchWork};
use proptest::prelude::*;

fn device(memory_bytes: usize) -> SimDevice {
    SimDevice::new(SimConfig {
        memory_bytes,
        ..SimConfig::default()
    })
    .expect("the simulated GPU starts")
}

/// A small simulated GPU with `faults` injected.
fn with_faults(faults: Vec<SimFault>) -> SimDevice {
    SimDevice::new(SimConfig {
        memory_bytes: 1 << 16,
        faults,
        ..SimConfig::default()
    })
    .expect("the simulated GPU starts")
}

/// Downloads `bytes` bytes at `ptr` and waits for them.
fn read(device: &SimDevice, ptr: u64, bytes: usize) -> Vec<u8> {
    let mut back = vec![0u8; bytes];
    // SAFETY: `back` outlives the synchronize.
    unsafe { device.download(back.as_mut_ptr(), ptr, bytes) }.expect("download");
    device.synchronize().expect("synchronize");
    back
}

#[test]
fn open_picks_the_simulated_gpu_or_none() {
    let device = open(&DeviceChoice::Simulated)
        .expect("opens")
        .expect("a device");
    assert_eq!(device.info().kind, DeviceKind::Simulated);
    assert!(open(&DeviceChoice::None).expect("opens").is_none());
}

#[test]
fn describes_itself() {
    let d = device(1 << 20);
    assert_eq!(d.info().kind, DeviceKind::Simulated);
    assert_eq!(d.info().name, "simulated GPU");
    assert_eq!(d.info().memory_bytes, 1 << 20);
    assert_eq!(d.info().chip, None);
}

#[test]
fn copies_round_trip() {
    common::round_trip(&device(1 << 20));
}

#[test]
fn pitched_copies_move_exactly_their_rows() {
    common::pitched_copies(&device(1 << 20));
}

#[test]
fn new_allocations_are_poisoned() {
    let d = device(1 << 20);
    let a = d.alloc(100).expect("alloc");
    assert!(read(&d, a, 100).iter().all(|&b| b == 0xFF));
    let as_f64 = f64::from_ne_bytes(read(&d, a, 8).try_into().expect("8 bytes"));
    assert!(as_f64.is_nan());
}

#[test]
fn allocations_are_aligned_and_counted() {
    let d = device(1 << 20);
    let a = d.alloc(3).expect("alloc");
    let b = d.alloc(700).expect("alloc");
    assert_eq!(a % 256, 0);
    assert_eq!(b % 256, 0);
    assert!(b >= a + 256, "{a:#x} {b:#x}");
    let data = [1u8; 700];
    // SAFETY: `data` outlives the synchronize.
    unsafe { d.upload(b, data.as_ptr(), 700) }.expect("upload");
    assert_eq!(read(&d, b, 700), data);
    let counters = d.counters();
    assert_eq!(counters.allocations, 2);
    assert_eq!(counters.allocated_bytes, 703);
    assert_eq!(counters.h2d_bytes, 700);
    assert_eq!(counters.d2h_bytes, 700);
    d.free(a);
    assert_eq!(d.counters().allocated_bytes, 700);
}

#[test]
fn exhausted_memory_is_out_of_memory_and_freed_memory_is_reused_in_stream_order() {
    let d = device(4096);
    let a = d.alloc(4096).expect("all of it");
    match d.alloc(1) {
        Err(DeviceError::OutOfMemory { bytes: 1, reason }) => {
            assert!(reason.contains("0 of 4096 bytes free"), "{reason}")
        }
        other => panic!("expected out of memory, got {other:?}"),
    }
    let data = vec![7u8; 4096];
    // SAFETY: `data` outlives the synchronize in `read`.
    unsafe { d.upload(a, data.as_ptr(), 4096) }.expect("upload");
    d.free(a);
    // The free is still queued behind the upload: the allocation waits for it and gets the
    // same block, poisoned after the old data was written.
    let b = d.alloc(4096).expect("reuse after the free");
    assert_eq!(b, a);
    assert!(read(&d, b, 4096).iter().all(|&x| x == 0xFF));
}

#[test]
fn freed_blocks_coalesce() {
    let d = device(4096);
    let blocks: Vec<_> = (0..4).map(|_| d.alloc(1024).expect("alloc")).collect();
    d.free(blocks[1]);
    d.free(blocks[2]);
    d.free(blocks[0]);
    let big = d.alloc(3072).expect("three freed neighbours are one block");
    assert_eq!(big, blocks[0]);
}

#[test]
fn copies_outside_allocations_are_refused() {
    let d = device(1 << 16);
    let a = d.alloc(256).expect("alloc");
    let data = [0u8; 512];
    // SAFETY: refused before anything is enqueued.
    let refused = unsafe { d.upload(a, data.as_ptr(), 512) };
    assert!(
        matches!(&refused, Err(DeviceError::Failed { reason, .. }) if reason.contains("do not lie")),
        "{refused:?}"
    );
    d.free(a);
    // SAFETY: as above.
    assert!(unsafe { d.upload(a, data.as_ptr(), 16) }.is_err());
}

#[test]
fn freeing_what_is_no_allocation_is_reported_at_synchronize() {
    let d = device(1 << 16);
    let a = d.alloc(256).expect("alloc");
    d.free(a);
    d.free(a);
    let error = d.synchronize();
    assert!(
        matches!(&error, Err(DeviceError::Failed { reason, .. }) if reason.contains("not an allocation")),
        "{error:?}"
    );
    d.synchronize().expect("reported once");
}

#[test]
fn launches_run_in_order_on_device_memory() {
    let d = device(1 << 16);
    let n = 64;
    let a = d.alloc(n * 8).expect("alloc");
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let double: LaunchWork = Box::new(move || {
        let p = a as usize as *mut f64;
        for i in 0..n {
            // SAFETY: `a` holds `n` f64 values, alive until freed after the launch.
            unsafe { *p.add(i) = 2.0 * *p.add(i) + 1.0 };
        }
        Ok(())
    });
    // SAFETY: `values` outlives the synchronize; the launch touches `a` only.
    unsafe {
        d.upload(a, values.as_ptr().cast(), n * 8).expect("upload");
        d.launch(double).expect("launch");
    }
    let back = read(&d, a, n * 8);
    let doubled: Vec<f64> = back
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let expected: Vec<f64> = values.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(doubled, expected);
    assert_eq!(d.counters().launches, 1);
}

#[test]
fn errors_of_launches_arrive_at_the_next_wait_and_synchronize() {
    let d = device(1 << 16);
    // SAFETY: the work touches no memory.
    unsafe {
        d.launch(Box::new(|| Err("the kernel failed".into())))
            .expect("enqueued");
        d.launch(Box::new(|| Err("a later failure".into())))
            .expect("enqueued");
    }
    let event = d.record().expect("record");
    assert_eq!(
        d.wait(event),
        Err(DeviceError::Kernel("the kernel failed".into()))
    );
    assert_eq!(
        d.synchronize(),
        Err(DeviceError::Kernel("the kernel failed".into()))
    );
    d.synchronize().expect("reported and cleared");
    d.wait(event).expect("cleared");
}

#[test]
fn a_panicking_launch_is_an_error_and_work_after_it_still_runs() {
    let d = device(1 << 16);
    let a = d.alloc(8).expect("alloc");
    let one = 1.0f64.to_ne_bytes();
    // SAFETY: the work touches no memory; `one` outlives the synchronize.
    unsafe {
        d.launch(Box::new(|| panic!("simulated fault")))
            .expect("enqueued");
        d.upload(a, one.as_ptr(), 8).expect("upload");
    }
    let error = d.synchronize();
    assert!(
        matches!(&error, Err(DeviceError::Kernel(m)) if m.contains("simulated fault")),
        "{error:?}"
    );
    assert_eq!(read(&d, a, 8), one);
}

#[test]
fn download_data_is_there_after_waiting_for_an_event() {
    let d = device(1 << 20);
    let bytes = 64 << 10;
    let data = common::pattern(bytes, 11);
    let a = d.alloc(bytes).expect("alloc");
    let mut back = vec![0u8; bytes];
    // SAFETY: both buffers outlive the wait.
    unsafe {
        d.upload(a, data.as_ptr(), bytes).expect("upload");
        d.download(back.as_mut_ptr(), a, bytes).expect("download");
    }
    let event = d.record().expect("record");
    d.wait(event).expect("wait");
    assert_eq!(back, data);
    assert!(d.counters().syncs <= 1);
}

#[test]
fn events_never_recorded_are_errors() {
    let d = device(1 << 16);
    assert!(d.query(Event(0)).expect("nothing enqueued"));
    d.wait(Event(0)).expect("nothing to wait for");
    assert!(d.wait(Event(99)).is_err());
}

#[test]
fn injected_allocation_faults_hit_the_nth_allocation() {
    let d = with_faults(vec![SimFault::Alloc(2)]);
    d.alloc(8).expect("first");
    let second = d.alloc(8);
    assert!(
        matches!(&second, Err(DeviceError::OutOfMemory { reason, .. }) if reason.contains("injected")),
        "{second:?}"
    );
    d.alloc(8).expect("third");
    d.inject(SimFault::Alloc(1));
    assert!(d.alloc(8).is_err());
    d.alloc(8).expect("after the injected fault");
    assert_eq!(d.counters().allocations, 3);
}

#[test]
fn injected_sync_faults_hit_the_nth_synchronize() {
    let d = with_faults(vec![SimFault::Sync(2)]);
    d.synchronize().expect("first");
    let second = d.synchronize();
    assert!(
        matches!(&second, Err(DeviceError::Failed { reason, .. }) if reason.contains("injected")),
        "{second:?}"
    );
    d.synchronize().expect("third");
    assert_eq!(d.counters().syncs, 3);
}

#[test]
fn configuration_from_variable_values() {
    let config = SimConfig::from_values(Some("4096"), Some("alloc@3, sync@2")).expect("valid");
    assert_eq!(config.memory_bytes, 4096);
    assert_eq!(config.faults, [SimFault::Alloc(3), SimFault::Sync(2)]);
    assert_eq!(
        SimConfig::from_values(None, None).expect("defaults"),
        SimConfig::default()
    );
    for (memory, faults, names) in [
        (Some("lots"), None, "DIFFUSE_SIM_MEMORY=\"lots\""),
        (None, Some("alloc@0"), "DIFFUSE_SIM_FAULTS=\"alloc@0\""),
        (None, Some("sync@2,crash@1"), "\"crash@1\""),
        (None, Some("alloc3"), "DIFFUSE_SIM_FAULTS=\"alloc3\""),
    ] {
        match SimConfig::from_values(memory, faults) {
            Err(e) => assert!(e.to_string().contains(names), "{e}"),
            Ok(c) => panic!("{memory:?} {faults:?} accepted as {c:?}"),
        }
    }
}

#[test]
fn dropping_the_device_runs_what_was_enqueued() {
    let mut back = vec![0u8; 256];
    let data = common::pattern(256, 5);
    {
        let d = SimDevice::new(SimConfig {
            memory_bytes: 1 << 16,
            lag: Duration::from_millis(1),
            ..SimConfig::default()
        })
        .expect("starts");
        let a = d.alloc(256).expect("alloc");
        // SAFETY: both buffers outlive the device, whose drop drains its queue.
        unsafe {
            d.upload(a, data.as_ptr(), 256).expect("upload");
            d.download(back.as_mut_ptr(), a, 256).expect("download");
        }
    }
    assert_eq!(back, data);
}

/// One step of a random operation sequence (indices pick among the live allocations).
#[derive(Clone, Debug)]
enum Op {
    Alloc(usize),
    Free(usize),
    Upload {
        to: usize,
        at: usize,
        len: usize,
        seed: u8,
    },
    Download {
        from: usize,
        at: usize,
        len: usize,
    },
    Copy {
        from: usize,
        to: usize,
        at: usize,
        len: usize,
    },
    /// A kernel adds `add` to every byte of the range.
    Launch {
        on: usize,
        at: usize,
        len: usize,
        add: u8,
    },
    Synchronize,
}

fn op() -> impl Strategy<Value = Op> {
    let pick = 0..8usize;
    prop_oneof![
        3 => (1..3000usize).prop_map(Op::Alloc),
        2 => pick.clone().prop_map(Op::Free),
        4 => (pick.clone(), 0..3000usize, 0..600usize, any::<u8>())
            .prop_map(|(to, at, len, seed)| Op::Upload { to, at, len, seed }),
        4 => (pick.clone(), 0..3000usize, 0..600usize)
            .prop_map(|(from, at, len)| Op::Download { from, at, len }),
        3 => (pick.clone(), pick, 0..3000usize, 0..600usize)
            .prop_map(|(from, to, at, len)| Op::Copy { from, to, at, len }),
        2 => (0..8usize, 0..3000usize, 0..600usize, any::<u8>())
            .prop_map(|(on, at, len, add)| Op::Launch { on, at, len, add }),
        1 => Just(Op::Synchronize),
    ]
}

/// A download in flight: where it lands and what the model says it must read.
struct Pending {
    back: Vec<u8>,
    expected: Vec<u8>,
}

/// Runs `ops` on a small simulated GPU and on the model (a map of byte vectors, poisoned
/// when allocated); every download matches the model once synchronized, live allocations
/// never overlap, and the counters agree.
fn check_against_model(ops: &[Op]) {
    let d = SimDevice::new(SimConfig {
        memory_bytes: 16 << 10,
        lag: Duration::from_micros(5),
        ..SimConfig::default()
    })
    .expect("starts");
    let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut live: Vec<u64> = Vec::new();
    let mut sources: Vec<Vec<u8>> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let settle = |pending: &mut Vec<Pending>, sources: &mut Vec<Vec<u8>>| {
        d.synchronize().expect("synchronize");
        for p in pending.drain(..) {
            assert_eq!(p.back, p.expected);
        }
        sources.clear();
    };
    // The range `[at, at + len)` clipped to an allocation of `size` bytes.
    let clip = |size: usize, at: usize, len: usize| {
        let at = at % size;
        (at, len.min(size - at))
    };
    for op in ops {
        match *op {
            Op::Alloc(bytes) => match d.alloc(bytes) {
                Ok(ptr) => {
                    for (&other, data) in &model {
                        let disjoint =
                            ptr + bytes as u64 <= other || other + data.len() as u64 <= ptr;
                        assert!(disjoint, "{ptr:#x}+{bytes} overlaps {other:#x}");
                    }
                    model.insert(ptr, vec![0xFF; bytes]);
                    live.push(ptr);
                }
                Err(DeviceError::OutOfMemory { .. }) => {}
                Err(e) => panic!("alloc: {e}"),
            },
            Op::Free(i) if !live.is_empty() => {
                let ptr = live.swap_remove(i % live.len());
                model.remove(&ptr);
                d.free(ptr);
            }
            Op::Upload { to, at, len, seed } if !live.is_empty() => {
                let ptr = live[to % live.len()];
                let data = model.get_mut(&ptr).expect("live");
                let (at, len) = clip(data.len(), at, len);
                let src = common::pattern(len, seed);
                data[at..at + len].copy_from_slice(&src);
                // SAFETY: `src` is kept in `sources` until the next synchronize.
                unsafe { d.upload(ptr + at as u64, src.as_ptr(), len) }.expect("upload");
                sources.push(src);
            }
            Op::Download { from, at, len } if !live.is_empty() => {
                let ptr = live[from % live.len()];
                let data = &model[&ptr];
                let (at, len) = clip(data.len(), at, len);
                let mut p = Pending {
                    back: vec![0; len],
                    expected: data[at..at + len].to_vec(),
                };
                // SAFETY: `p.back`'s heap buffer does not move when `p` does, and is kept
                // until the next synchronize.
                unsafe { d.download(p.back.as_mut_ptr(), ptr + at as u64, len) }.expect("download");
                pending.push(p);
            }
            Op::Copy { from, to, at, len }
                if live.len() > 1 && from % live.len() != to % live.len() =>
            {
                let (src, dst) = (live[from % live.len()], live[to % live.len()]);
                let size = model[&src].len().min(model[&dst].len());
                let (at, len) = clip(size, at, len);
                let bytes = model[&src][at..at + len].to_vec();
                model.get_mut(&dst).expect("live")[at..at + len].copy_from_slice(&bytes);
                // SAFETY: both ranges lie in live, distinct allocations.
                unsafe { d.copy(dst + at as u64, src + at as u64, len) }.expect("copy");
            }
            Op::Launch { on, at, len, add } if !live.is_empty() => {
                let ptr = live[on % live.len()];
                let data = model.get_mut(&ptr).expect("live");
                let (at, len) = clip(data.len(), at, len);
                for byte in &mut data[at..at + len] {
                    *byte = byte.wrapping_add(add);
                }
                let start = ptr + at as u64;
                let kernel: LaunchWork = Box::new(move || {
                    let p = start as usize as *mut u8;
                    for i in 0..len {
                        // SAFETY: the range lies in an allocation freed only after the launch.
                        unsafe { *p.add(i) = (*p.add(i)).wrapping_add(add) };
                    }
                    Ok(())
                });
                // SAFETY: as in the kernel.
                unsafe { d.launch(kernel) }.expect("launch");
            }
            Op::Synchronize => settle(&mut pending, &mut sources),
            _ => {}
        }
        let held: usize = model.values().map(Vec::len).sum();
        assert_eq!(d.counters().allocated_bytes, held as u64);
    }
    settle(&mut pending, &mut sources);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_operations_match_a_model_of_the_memory(ops in prop::collection::vec(op(), 1..80)) {
        check_against_model(&ops);
    }
}
