//! Criterion benchmarks and the peer (NumPy and friends) comparison harness for diffuse.
//!
//! Empty until the applications exist to measure (array-library issue #3 onwards); timings so
//! far come from the applications' `--json` records.
