//! Errors of the sparse library.

use thiserror::Error;

/// What went wrong building or reading a sparse matrix, or solving with one.
#[derive(Debug, Error)]
pub enum SparseError {
    /// A Matrix Market file is malformed: `file:line: reason`.
    #[error("{file}:{line}: {reason}")]
    MatrixMarket {
        /// The file's name (or the name given for in-memory text).
        file: String,
        /// The 1-based line of the problem (for a truncated file, the line after the last).
        line: usize,
        /// What is wrong there.
        reason: String,
    },
    /// A file could not be read.
    #[error("cannot read {file}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An entry lies outside the matrix.
    #[error("entry ({row}, {col}) is outside a {rows} x {cols} matrix")]
    EntryOutOfBounds {
        /// Its row.
        row: i64,
        /// Its column.
        col: i64,
        /// The matrix's rows.
        rows: i64,
        /// The matrix's columns.
        cols: i64,
    },
    /// The array library refused something (a vector operation, a context).
    #[error(transparent)]
    Array(#[from] diffuse_array::ArrayError),
    /// The IR refused something (a store, a task); boxed, as IR errors carry shapes inline.
    #[error(transparent)]
    Ir(Box<diffuse_ir::IrError>),
    /// The memory for part of a matrix could not be allocated.
    #[error("out of memory: {bytes} bytes for {what}")]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// How many bytes it needed.
        bytes: usize,
    },
    /// CSR arrays given by a caller that do not describe a matrix (lengths, offsets).
    #[error("bad CSR arrays: {reason}")]
    BadCsr {
        /// What is wrong.
        reason: String,
    },
    /// A solver's vector (`b`, `x0`) whose shape is not the matrix's rows.
    #[error("{what} has shape {shape}, but the matrix has {rows} rows")]
    BadVector {
        /// Which vector.
        what: &'static str,
        /// Its shape.
        shape: String,
        /// The matrix's rows.
        rows: i64,
    },
    /// A solver option out of its range (`rtol`, `atol`, `check_every`).
    #[error("bad solver option: {reason}")]
    BadOption {
        /// What is wrong.
        reason: String,
    },
    /// The multigrid V-cycle's matrix is not the Poisson matrix of a `2^k - 1` grid.
    #[error(
        "gmg needs the 2-D Poisson matrix of an n x n grid with n = 2^k - 1 (3, 7, 15, 31, \
         ...); this matrix is {rows} x {cols}"
    )]
    NotAGrid {
        /// The matrix's rows.
        rows: i64,
        /// The matrix's columns.
        cols: i64,
    },
    /// A preconditioner or callback given by a caller failed.
    #[error("{what} failed: {reason}")]
    Caller {
        /// Which one (`M`, `callback`).
        what: &'static str,
        /// Its error.
        reason: String,
    },
    /// A shape or size that cannot be built (negative, or too large for the index width).
    #[error("bad matrix shape: {reason}")]
    BadShape {
        /// What is wrong.
        reason: String,
    },
}

impl From<diffuse_ir::IrError> for SparseError {
    fn from(e: diffuse_ir::IrError) -> Self {
        SparseError::Ir(Box::new(e))
    }
}
