//! IEEE 754 floating-point exceptions raised by point tasks, for NumPy's `errstate`.
//!
//! The CPU keeps sticky status flags per thread (MXCSR on x86-64, FPSR on AArch64) that
//! every operation dividing by zero, overflowing, underflowing or producing an invalid result
//! sets. The point executor clears them before a point runs and reads them after ([`clear`], [`raised`]: a few instructions per point, nothing per
//! element), and records what a point raised, under the task's name, in its backend's
//! [`FpRecorder`]; the application takes the record after work has run
//! ([`crate::Backend::take_fp_errors`]) and warns or raises as its error state says. A kernel
//! that meets an error the hardware does not flag (integer division by zero) raises it
//! itself with [`raise`]. Flags of kernels run on a GPU are not observed, nor, on other
//! architectures, any flag ([`SUPPORTED`]).

use std::ops::{BitOr, BitOrAssign};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// A set of floating-point exceptions, in NumPy's `errstate` categories; the bits are
/// NumPy's (`divide` 1, `over` 2, `under` 4, `invalid` 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FpFlags(u8);

impl FpFlags {
    /// No exception.
    pub const NONE: FpFlags = FpFlags(0);
    /// Division by zero (or a pole: `log(0)`).
    pub const DIVIDE: FpFlags = FpFlags(1);
    /// A finite result too large to represent.
    pub const OVERFLOW: FpFlags = FpFlags(2);
    /// A non-zero result too small to represent normally.
    pub const UNDERFLOW: FpFlags = FpFlags(4);
    /// An invalid operation (`0/0`, `inf - inf`, `sqrt(-1)`, NaN to an integer).
    pub const INVALID: FpFlags = FpFlags(8);
    /// Every category, with NumPy's names, in NumPy's order of reporting.
    pub const CATEGORIES: [(FpFlags, &'static str); 4] = [
        (FpFlags::DIVIDE, "divide"),
        (FpFlags::OVERFLOW, "over"),
        (FpFlags::UNDERFLOW, "under"),
        (FpFlags::INVALID, "invalid"),
    ];

    /// The set with these bits (bits outside the four categories are dropped).
    pub const fn from_bits(bits: u8) -> FpFlags {
        FpFlags(bits & 0xf)
    }

    /// The bits of the set.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// True when no exception is in the set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when every exception of `other` is in the set.
    pub const fn contains(self, other: FpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when some exception of `other` is in the set.
    pub const fn intersects(self, other: FpFlags) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for FpFlags {
    type Output = FpFlags;
    fn bitor(self, other: FpFlags) -> FpFlags {
        FpFlags(self.0 | other.0)
    }
}

impl BitOrAssign for FpFlags {
    fn bitor_assign(&mut self, other: FpFlags) {
        self.0 |= other.0;
    }
}

impl std::fmt::Display for FpFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = FpFlags::CATEGORIES
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|&(_, name)| name)
            .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// True when this architecture's flags are read ([`raised`] is always empty elsewhere).
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// The flags whose bits are set in the status register value `status`; `bits` pairs each
/// flag with its bit's index.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn flags_in(status: u64, bits: &[(u32, FpFlags)]) -> FpFlags {
    bits.iter()
        .filter(|(bit, _)| status & (1 << bit) != 0)
        .fold(FpFlags::NONE, |acc, &(_, flag)| acc | flag)
}

/// The status register bits of `flags`; `bits` pairs each flag with its bit's index.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn status_bits(flags: FpFlags, bits: &[(u32, FpFlags)]) -> u64 {
    bits.iter()
        .filter(|(_, flag)| flags.contains(*flag))
        .fold(0u64, |acc, &(bit, _)| acc | (1 << bit))
}

#[cfg(target_arch = "x86_64")]
mod hw {
    //! MXCSR, the status of SSE/AVX arithmetic (what Rust, LLVM and glibc's `double`
    //! functions compute with): flags in bits 0 (invalid), 2 (zero divide), 3 (overflow) and
    //! 4 (underflow). The x87 status word is not read: nothing diffuse runs computes `f64` or
    //! `f32` on the x87 unit, and reading it would double the cost.
    use super::FpFlags;
    use std::arch::asm;

    const MASK: u32 = 0x3f;

    const BITS: [(u32, FpFlags); 4] = [
        (0, FpFlags::INVALID),
        (2, FpFlags::DIVIDE),
        (3, FpFlags::OVERFLOW),
        (4, FpFlags::UNDERFLOW),
    ];

    fn mxcsr() -> u32 {
        let mut csr: u32 = 0;
        // SAFETY: stores MXCSR into a local.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
        csr
    }

    fn set_mxcsr(csr: u32) {
        // SAFETY: loads a value read from MXCSR with only its sticky flag bits changed.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
    }

    // Writing MXCSR costs more than reading it: only set flags are cleared.
    pub(super) fn clear() {
        let csr = mxcsr();
        if csr & MASK != 0 {
            set_mxcsr(csr & !MASK);
        }
    }

    pub(super) fn raised() -> FpFlags {
        super::flags_in(u64::from(mxcsr()), &BITS)
    }

    pub(super) fn raise(flags: FpFlags) {
        // The flag bits lie in the low byte: the conversion loses nothing.
        let bits = super::status_bits(flags, &BITS) as u32;
        if bits != 0 {
            set_mxcsr(mxcsr() | bits);
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod hw {
    //! FPSR: bits 0 (invalid), 1 (divide by zero), 2 (overflow), 3 (underflow).
    use super::FpFlags;
    use std::arch::asm;

    fn fpsr() -> u64 {
        let v: u64;
        // SAFETY: reads FPSR.
        unsafe { asm!("mrs {}, fpsr", out(reg) v, options(nostack, nomem, preserves_flags)) };
        v
    }

    fn set_fpsr(v: u64) {
        // SAFETY: writes FPSR with only its cumulative exception bits changed.
        unsafe { asm!("msr fpsr, {}", in(reg) v, options(nostack, nomem, preserves_flags)) };
    }

    const BITS: [(u32, FpFlags); 4] = [
        (0, FpFlags::INVALID),
        (1, FpFlags::DIVIDE),
        (2, FpFlags::OVERFLOW),
        (3, FpFlags::UNDERFLOW),
    ];

    pub(super) fn clear() {
        set_fpsr(fpsr() & !0x9f);
    }

    pub(super) fn raised() -> FpFlags {
        super::flags_in(fpsr(), &BITS)
    }

    pub(super) fn raise(flags: FpFlags) {
        let bits = super::status_bits(flags, &BITS);
        if bits != 0 {
            set_fpsr(fpsr() | bits);
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod hw {
    //! No flags are read on other architectures (see [`super::SUPPORTED`]).
    use super::FpFlags;

    pub(super) fn clear() {}

    pub(super) fn raised() -> FpFlags {
        FpFlags::NONE
    }

    pub(super) fn raise(_: FpFlags) {}
}

/// Clears this thread's floating-point exception flags.
pub fn clear() {
    hw::clear()
}

/// The floating-point exceptions raised on this thread since the last [`clear`].
pub fn raised() -> FpFlags {
    hw::raised()
}

/// Raises `flags` on this thread as if an operation had: for kernels that detect an error
/// the hardware does not flag (NumPy's integer division by zero counts as `divide`).
pub fn raise(flags: FpFlags) {
    hw::raise(flags)
}

/// Floating-point exceptions per task name, in the order first raised.
pub type FpErrors = Vec<(Arc<str>, FpFlags)>;

/// The floating-point exceptions a backend's point tasks raised since the last take, per
/// task name (a fused kernel's joined name when one compiled call ran several constituents).
/// Recording locks only when a call raised something, so error-free work never touches it.
///
/// Which constituent of a fused kernel raised an exception is found by running the point
/// again natively, constituent by constituent: worth it only for the categories the
/// application reports (NumPy's `warn`, `raise`, ...), not for those it ignores
/// ([`FpRecorder::attribute`]).
#[derive(Debug)]
pub struct FpRecorder {
    raised: Mutex<Vec<(Arc<str>, FpFlags)>>,
    attributed: AtomicU8,
}

/// The categories NumPy reports by default (`divide`, `over` and `invalid` warn; `under`
/// is ignored): what [`FpRecorder`] attributes to constituents until told otherwise.
pub const REPORTED_BY_DEFAULT: FpFlags =
    FpFlags(FpFlags::DIVIDE.0 | FpFlags::OVERFLOW.0 | FpFlags::INVALID.0);

impl Default for FpRecorder {
    fn default() -> Self {
        FpRecorder {
            raised: Mutex::new(Vec::new()),
            attributed: AtomicU8::new(REPORTED_BY_DEFAULT.bits()),
        }
    }
}

impl FpRecorder {
    /// Attributes exceptions of `categories` to the constituent that raised them from now on
    /// (fused points raising only other categories are recorded under the fused name).
    pub fn attribute(&self, categories: FpFlags) {
        self.attributed.store(categories.bits(), Ordering::Relaxed);
    }

    /// True when a fused point that raised `flags` must run again to say which constituent
    /// raised them.
    pub fn attributes(&self, flags: FpFlags) -> bool {
        flags.intersects(FpFlags::from_bits(self.attributed.load(Ordering::Relaxed)))
    }

    /// Runs `f`, then records under `task` the exceptions it raised on this thread.
    pub fn watch<R>(&self, task: &str, f: impl FnOnce() -> R) -> R {
        clear();
        let result = f();
        let flags = raised();
        if !flags.is_empty() {
            self.record(task, flags);
        }
        result
    }

    /// Records that `task` raised `flags`.
    pub fn record(&self, task: &str, flags: FpFlags) {
        let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        // Distinct task names are few (one per kind or fused kernel that raised).
        match raised.iter_mut().find(|(name, _)| &**name == task) {
            Some(entry) => entry.1 |= flags,
            None => raised.push((task.into(), flags)),
        }
    }

    /// The exceptions raised since the last call, per task in the order first raised.
    pub fn take(&self) -> FpErrors {
        std::mem::take(&mut *self.raised.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reported_categories_are_attributed() {
        let recorder = FpRecorder::default();
        // NumPy's defaults: everything but underflow warns.
        assert!(recorder.attributes(FpFlags::DIVIDE));
        assert!(recorder.attributes(FpFlags::UNDERFLOW | FpFlags::INVALID));
        assert!(!recorder.attributes(FpFlags::UNDERFLOW));
        assert!(!recorder.attributes(FpFlags::NONE));
        // Inside `errstate(divide="ignore", invalid="ignore")`.
        recorder.attribute(FpFlags::OVERFLOW);
        assert!(!recorder.attributes(FpFlags::DIVIDE | FpFlags::INVALID));
        assert!(recorder.attributes(FpFlags::DIVIDE | FpFlags::OVERFLOW));
        recorder.attribute(FpFlags::NONE);
        assert!(!recorder.attributes(FpFlags::from_bits(0xf)));
    }
}
