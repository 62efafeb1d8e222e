//! The CUDA device. Without a GPU: opening it says why there is none, and `open` picks no
//! device. With one: the checks every device passes, memory exhaustion, events, and the
//! errors of launches.

mod common;

use diffuse_device::cuda::{self, CudaDevice};
use diffuse_device::{open, Device, DeviceChoice, DeviceError, DeviceKind, LaunchWork};

/// The GPU, or `None` (after checking how its absence is reported) on a machine without one.
fn gpu() -> Option<CudaDevice> {
    match CudaDevice::open() {
        Ok(device) => Some(device),
        Err(DeviceError::Unavailable(reason)) => {
            assert!(!reason.is_empty());
            assert!(
                matches!(open(&DeviceChoice::Cuda), Ok(None)),
                "no GPU ({reason}), yet `open` found one"
            );
            assert_eq!(cuda::chip(), None);
            eprintln!("no GPU on this machine: {reason}");
            None
        }
        Err(other) => panic!("opening the GPU failed without saying it is unavailable: {other}"),
    }
}

#[test]
fn opening_says_what_the_device_is_or_why_there_is_none() {
    let Some(device) = gpu() else { return };
    let info = device.info();
    assert_eq!(info.kind, DeviceKind::Cuda);
    assert!(info.memory_bytes > 0);
    let chip = info.chip.clone().expect("a GPU has a chip");
    assert!(chip.starts_with("sm_"), "{chip}");
    assert_eq!(cuda::chip(), Some(chip));
    let chosen = open(&DeviceChoice::Cuda).expect("opens").expect("a GPU");
    assert_eq!(chosen.info().kind, DeviceKind::Cuda);
}

#[test]
fn copies_round_trip() {
    if let Some(device) = gpu() {
        common::round_trip(&device);
    }
}

#[test]
fn pitched_copies_move_exactly_their_rows() {
    if let Some(device) = gpu() {
        common::pitched_copies(&device);
    }
}

#[test]
fn more_memory_than_the_device_has_is_out_of_memory() {
    let Some(device) = gpu() else { return };
    let too_much = device.info().memory_bytes * 2;
    match device.alloc(too_much) {
        Err(DeviceError::OutOfMemory { bytes, reason }) => {
            assert_eq!(bytes, too_much);
            assert!(reason.contains("bytes free"), "{reason}");
        }
        other => panic!("expected out of memory, got {other:?}"),
    }
    let a = device
        .alloc(1 << 20)
        .expect("a small allocation still works");
    device.free(a);
    device.synchronize().expect("synchronize");
    let counters = device.counters();
    assert_eq!(counters.allocations, 1);
    assert_eq!(counters.allocated_bytes, 0);
}

#[test]
fn events_complete_in_order() {
    let Some(device) = gpu() else { return };
    let bytes = 64 << 20;
    let a = device.alloc(bytes).expect("alloc");
    let b = device.alloc(bytes).expect("alloc");
    let mut events = Vec::new();
    for _ in 0..4 {
        // SAFETY: both allocations hold `bytes` bytes until freed after the synchronize.
        unsafe { device.copy(b, a, bytes) }.expect("copy");
        events.push(device.record().expect("record"));
    }
    device.wait(events[2]).expect("wait");
    assert!(device.query(events[0]).expect("query"));
    assert!(device.query(events[2]).expect("query"));
    device.synchronize().expect("synchronize");
    assert!(device.query(events[3]).expect("query"));
    assert!(device.wait(diffuse_device::Event(1000)).is_err());
    device.free(a);
    device.free(b);
    assert_eq!(device.counters().d2d_bytes, 4 * bytes as u64);
}

#[test]
fn launch_errors_are_returned_by_the_launch() {
    let Some(device) = gpu() else { return };
    // SAFETY: the work touches no memory.
    let failed = unsafe { device.launch(Box::new(|| Err("no kernel".into()))) };
    assert_eq!(failed, Err(DeviceError::Kernel("no kernel".into())));
    let asks_for_the_stream: LaunchWork = Box::new(|| {
        let create = cuda::mlir_runtime().stream_create;
        // SAFETY: takes no arguments.
        if unsafe { create() }.is_null() {
            return Err("the launch's stream is the device's, not null".into());
        }
        Ok(())
    });
    // SAFETY: the work only asks the runtime functions for the launch's stream.
    let scoped = unsafe { device.launch(asks_for_the_stream) };
    assert_eq!(scoped, Ok(()));
    device.synchronize().expect("nothing ran on the device");
    assert_eq!(device.counters().launches, 2);
}

#[test]
fn pinned_host_memory_round_trips() {
    let Some(device) = gpu() else { return };
    let bytes = 1 << 20;
    let mut host = common::pattern(bytes, 9);
    let expected = host.clone();
    // SAFETY: `host` stays allocated until unregistered below.
    unsafe { device.register_host(host.as_mut_ptr(), bytes) }.expect("register");
    let a = device.alloc(bytes).expect("alloc");
    // SAFETY: `host` outlives the synchronizes; `a` holds `bytes` bytes.
    unsafe {
        device.upload(a, host.as_ptr(), bytes).expect("upload");
        device.synchronize().expect("synchronize");
        host.fill(0);
        device
            .download(host.as_mut_ptr(), a, bytes)
            .expect("download");
    }
    device.synchronize().expect("synchronize");
    assert_eq!(host, expected);
    // SAFETY: registered above, no copy in flight.
    unsafe { device.unregister_host(host.as_mut_ptr()) };
    device.free(a);
}
