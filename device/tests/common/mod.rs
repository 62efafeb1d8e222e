//! Checks every device must pass, against plain host computations: copies round trip, and
//! pitched copies move exactly the rows and bytes they name.

use diffuse_device::{Copy2d, Device, Place};

/// A byte pattern that differs from position to position and from seed to seed.
pub fn pattern(bytes: usize, seed: u8) -> Vec<u8> {
    (0..bytes)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Upload, device-to-device copy and download give back what was uploaded, and an event
/// recorded after the download is complete once waited for.
pub fn round_trip(device: &dyn Device) {
    let bytes = 1000;
    let data = pattern(bytes, 7);
    let a = device.alloc(bytes).expect("alloc a");
    let b = device.alloc(bytes).expect("alloc b");
    let mut back = vec![0u8; bytes];
    // SAFETY: `data` and `back` outlive the wait below; `a` and `b` hold `bytes` bytes.
    unsafe {
        device.upload(a, data.as_ptr(), bytes).expect("upload");
        device.copy(b, a, bytes).expect("copy");
        device
            .download(back.as_mut_ptr(), b, bytes)
            .expect("download");
    }
    let event = device.record().expect("record");
    device.wait(event).expect("wait");
    assert!(device.query(event).expect("query"));
    assert_eq!(back, data);
    device.free(a);
    device.free(b);
    device.synchronize().expect("synchronize");
}

/// Host-to-device, device-to-device and device-to-host pitched copies of a sub-rectangle
/// match the same rows copied on the host.
pub fn pitched_copies(device: &dyn Device) {
    let (rows, width) = (5, 24);
    let (host_pitch, dev_pitch) = (40, 64);
    let src = pattern(rows * host_pitch, 3);
    let a = device.alloc(rows * dev_pitch).expect("alloc a");
    let b = device.alloc(rows * dev_pitch).expect("alloc b");
    let mut back = vec![0u8; rows * host_pitch];
    let zeros = vec![0u8; rows * dev_pitch];
    let pitched = |src, src_pitch, dst, dst_pitch| Copy2d {
        src,
        src_pitch,
        dst,
        dst_pitch,
        width,
        rows,
    };
    // SAFETY: every row of every side lies in `src`, `back`, `a` or `b`, all alive until the
    // synchronize below (`zeros` too).
    unsafe {
        // Everything of `b` is defined, so the untouched bytes of the pitch are known.
        device
            .upload(b, zeros.as_ptr(), zeros.len())
            .expect("zero b");
        let host_src = Place::Host(src.as_ptr().add(4).cast_mut());
        device
            .copy_2d(&pitched(host_src, host_pitch, Place::Device(a), dev_pitch))
            .expect("host to device");
        device
            .copy_2d(&pitched(
                Place::Device(a),
                dev_pitch,
                Place::Device(b + 8),
                dev_pitch,
            ))
            .expect("device to device");
        device
            .copy_2d(&pitched(
                Place::Device(b + 8),
                dev_pitch,
                Place::Host(back.as_mut_ptr()),
                host_pitch,
            ))
            .expect("device to host");
    }
    device.synchronize().expect("synchronize");
    let mut expected = vec![0u8; rows * host_pitch];
    for row in 0..rows {
        let from = row * host_pitch + 4;
        expected[row * host_pitch..row * host_pitch + width]
            .copy_from_slice(&src[from..from + width]);
    }
    assert_eq!(back, expected);
    let mut whole_b = vec![0u8; rows * dev_pitch];
    // SAFETY: `whole_b` outlives the synchronize.
    unsafe { device.download(whole_b.as_mut_ptr(), b, rows * dev_pitch) }.expect("download b");
    device.synchronize().expect("synchronize");
    for row in 0..rows {
        let line = &whole_b[row * dev_pitch..(row + 1) * dev_pitch];
        assert!(
            line[..8].iter().chain(&line[8 + width..]).all(|&x| x == 0),
            "row {row} of b outside the copy: {line:?}"
        );
    }
    let host_host = pitched(
        Place::Host(back.as_mut_ptr()),
        host_pitch,
        Place::Host(back.as_mut_ptr()),
        host_pitch,
    );
    // SAFETY: rejected before anything is enqueued.
    assert!(unsafe { device.copy_2d(&host_host) }.is_err());
    device.free(a);
    device.free(b);
    device.synchronize().expect("synchronize");
}
