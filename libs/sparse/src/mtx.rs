//! Reading Matrix Market (`.mtx`) files into [`Triplets`].
//!
//! Supported: the `matrix` object in `coordinate` or `array` format, with field `real`,
//! `integer` or `pattern` (pattern only for `coordinate`) and symmetry `general`, `symmetric`
//! or `skew-symmetric`. The banner's keywords are case-insensitive. `complex` and `hermitian`
//! matrices, and the `vector` object, are rejected with a clear error.
//!
//! After the banner, comment lines (first non-blank character `%`) and blank lines may appear
//! anywhere: before the size line and between entries. Lines may end in `\n` or `\r\n`.
//!
//! What comes out:
//!
//! - `coordinate`: one triplet per entry line, in file order, with 0-based indices. Pattern
//!   entries have value `1.0`; integer values are read exactly (as `i64`) and converted to
//!   `f64`. Duplicates are kept (they add up when compressed). For `symmetric` files every
//!   off-diagonal entry `(i, j, v)` also gives `(j, i, v)`, for `skew-symmetric` files
//!   `(j, i, -v)`; these mirrored entries follow all the entries of the file, in file order.
//!   This is the order `scipy.io.mmread` (SciPy 1.17) returns.
//! - `array`: one triplet per stored value, zeros included (a dense matrix stays dense),
//!   column-major as in the file, followed by the mirrored entries for `symmetric` and
//!   `skew-symmetric` files (which store only the lower triangle, the latter without the
//!   diagonal).
//!
//! # Where we follow SciPy and where we differ
//!
//! The Matrix Market specification asks symmetric files to store only the lower triangle. We
//! follow `scipy.io.mmread`, which does not check this: an upper-triangle entry `(i, j)`,
//! `i < j`, of a symmetric or skew-symmetric `coordinate` file is accepted and mirrored like
//! any other, so a file giving both `(i, j)` and `(j, i)` yields each position twice (and the
//! values add up when compressed), exactly as SciPy's `coo_matrix` has them.
//!
//! We are stricter than SciPy where it silently reads something other than what the file
//! says: a diagonal entry in a skew-symmetric file (whose diagonal is zero by definition), a
//! symmetric or skew-symmetric file that is not square, an entry line with extra fields (SciPy
//! ignores them, including a value on a `pattern` line) and a fractional value in an `integer`
//! file (SciPy truncates it) are errors here.
//!
//! We are more lenient in two places: comments and blank lines between entries (SciPy
//! rejects them), and the case of the banner's first word (SciPy rejects `%%MATRIXMARKET`; we
//! compare every banner word case-insensitively, as SciPy does for the other four).

use std::path::Path;

use crate::error::SparseError;
use crate::triplets::Triplets;

/// Reads the Matrix Market file at `path`.
///
/// The path as displayed is the `file` of any error. A file that cannot be read (or is not
/// UTF-8) gives [`SparseError::Io`]; malformed contents give [`SparseError::MatrixMarket`]
/// (see [`parse_matrix_market`]).
pub fn read_matrix_market(path: &Path) -> Result<Triplets, SparseError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SparseError::Io {
        file: file.clone(),
        source,
    })?;
    parse_matrix_market(&file, &text)
}

/// What a Matrix Market file declares in its banner and size line: enough to tell how much
/// memory reading it, and what is built from it, will take, before any of it is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixMarketSize {
    /// Rows of the matrix.
    pub rows: i64,
    /// Columns of the matrix.
    pub cols: i64,
    /// The most triplets reading the file yields: the stored entries (`nnz` of a
    /// `coordinate` file, every stored value of an `array` one), twice that for symmetric
    /// and skew-symmetric files (whose off-diagonal entries are mirrored).
    pub entries: u128,
}

/// Reads only the banner and size line of the Matrix Market file at `path` (the entries are
/// not read), with the errors of [`read_matrix_market`] for them.
pub fn read_matrix_market_size(path: &Path) -> Result<MatrixMarketSize, SparseError> {
    use std::io::BufRead as _;
    let file = path.display().to_string();
    let io = |source| SparseError::Io {
        file: file.clone(),
        source,
    };
    let mut reader = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
    // The banner, then comment and blank lines (kept empty, so that line numbers hold), up
    // to the first data line: the size line.
    let mut head = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            break;
        }
        let data = !head.is_empty() && !line.trim().is_empty() && !line.trim().starts_with('%');
        head.push_str(if head.is_empty() || data { &line } else { "\n" });
        if data {
            break;
        }
    }
    Parser::new(&file, &head).parse_size()
}

/// Parses the text of a Matrix Market file; `file` is the name used in errors.
///
/// Every problem is a [`SparseError::MatrixMarket`] naming the 1-based line where it was
/// found. A file that ends before all promised entries were read is reported at the line
/// after its last line. See the [module documentation](self) for what is supported and how
/// symmetric files are expanded.
pub fn parse_matrix_market(file: &str, text: &str) -> Result<Triplets, SparseError> {
    Parser::new(file, text).parse()
}

/// The storage format named in the banner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Coordinate,
    Array,
}

/// The field named in the banner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// The symmetry named in the banner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
}

/// The banner's format words and what they mean.
const FORMATS: [(&str, Format); 2] = [("coordinate", Format::Coordinate), ("array", Format::Array)];

/// The banner's supported field words and what they mean.
const FIELDS: [(&str, Field); 3] = [
    ("real", Field::Real),
    ("integer", Field::Integer),
    ("pattern", Field::Pattern),
];

/// The banner's supported symmetry words and what they mean.
const SYMMETRIES: [(&str, Symmetry); 3] = [
    ("general", Symmetry::General),
    ("symmetric", Symmetry::Symmetric),
    ("skew-symmetric", Symmetry::SkewSymmetric),
];

/// The parsed banner line.
#[derive(Clone, Copy, Debug)]
struct Header {
    format: Format,
    field: Field,
    symmetry: Symmetry,
}

/// A line-by-line reader over the text, keeping track of line numbers.
struct Parser<'a> {
    file: &'a str,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    /// The number of lines read so far (so the next line is `consumed + 1`).
    consumed: usize,
}

impl<'a> Parser<'a> {
    fn new(file: &'a str, text: &'a str) -> Self {
        Parser {
            file,
            lines: text.lines().enumerate(),
            consumed: 0,
        }
    }

    fn error(&self, line: usize, reason: impl Into<String>) -> SparseError {
        SparseError::MatrixMarket {
            file: self.file.to_string(),
            line,
            reason: reason.into(),
        }
    }

    /// The value `choices` pairs with the banner's `what` word `token` (case-insensitive).
    /// Any other word is refused on line 1: `known` is a word Matrix Market defines that this
    /// reader does not support, every other word is unknown.
    fn header_word<T: Copy>(
        &self,
        what: &str,
        token: &str,
        choices: &[(&str, T)],
        known: Option<&str>,
    ) -> Result<T, SparseError> {
        let word = token.to_ascii_lowercase();
        if let Some(&(_, value)) = choices.iter().find(|(name, _)| *name == word) {
            return Ok(value);
        }
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let (last, rest) = names.split_last().expect("a header word has choices");
        let reason = if known == Some(word.as_str()) {
            format!(
                "unsupported {what} `{word}`: only {} and {last} matrices are supported",
                rest.join(", ")
            )
        } else {
            let quoted: Vec<String> = rest.iter().map(|name| format!("`{name}`")).collect();
            format!(
                "unsupported {what} `{token}`: expected {} or `{last}`",
                quoted.join(", ")
            )
        };
        Err(self.error(1, reason))
    }

    /// The next line that is neither blank nor a comment, with its 1-based number.
    fn next_data_line(&mut self) -> Option<(usize, &'a str)> {
        for (index, line) in self.lines.by_ref() {
            self.consumed = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('%') {
                continue;
            }
            return Some((index + 1, line));
        }
        None
    }

    fn parse(mut self) -> Result<Triplets, SparseError> {
        let header = self.parse_banner()?;
        match header.format {
            Format::Coordinate => self.parse_coordinate(header),
            Format::Array => self.parse_array(header),
        }
    }

    /// The banner and size line, as [`MatrixMarketSize`].
    fn parse_size(mut self) -> Result<MatrixMarketSize, SparseError> {
        let header = self.parse_banner()?;
        let (size_line, rows, cols, stored) = match header.format {
            Format::Coordinate => {
                let (line, [rows, cols, nnz]) = self.parse_size_line(["rows", "cols", "nnz"])?;
                (line, rows, cols, nnz as u128)
            }
            Format::Array => {
                let (line, [rows, cols]) = self.parse_size_line(["rows", "cols"])?;
                (line, rows, cols, array_count(header.symmetry, rows, cols))
            }
        };
        self.check_square(header, size_line, rows, cols)?;
        let mirrored = match header.symmetry {
            Symmetry::General => 1,
            Symmetry::Symmetric | Symmetry::SkewSymmetric => 2,
        };
        Ok(MatrixMarketSize {
            rows,
            cols,
            entries: stored.saturating_mul(mirrored),
        })
    }

    fn parse_banner(&mut self) -> Result<Header, SparseError> {
        let Some((_, line)) = self.lines.next() else {
            return Err(self.error(
                1,
                "empty file: expected the banner `%%MatrixMarket matrix <format> <field> <symmetry>`",
            ));
        };
        self.consumed = 1;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let is_banner = tokens
            .first()
            .is_some_and(|t| t.eq_ignore_ascii_case("%%MatrixMarket"));
        if !is_banner {
            return Err(self.error(
                1,
                format!(
                    "missing banner: expected `%%MatrixMarket matrix <format> <field> <symmetry>`, found `{}`",
                    shorten(line)
                ),
            ));
        }
        if tokens.len() != 5 {
            return Err(self.error(
                1,
                format!(
                    "garbled banner: expected 5 words `%%MatrixMarket matrix <format> <field> <symmetry>`, found {}",
                    tokens.len()
                ),
            ));
        }
        let lower: Vec<String> = tokens.iter().map(|t| t.to_ascii_lowercase()).collect();
        if lower[1] != "matrix" {
            return Err(self.error(
                1,
                format!(
                    "unsupported object `{}`: only `matrix` is supported",
                    tokens[1]
                ),
            ));
        }
        let format = self.header_word("format", tokens[2], &FORMATS, None)?;
        let field = self.header_word("field", tokens[3], &FIELDS, Some("complex"))?;
        let symmetry = self.header_word("symmetry", tokens[4], &SYMMETRIES, Some("hermitian"))?;
        if format == Format::Array && field == Field::Pattern {
            return Err(self.error(
                1,
                "unsupported combination: the `pattern` field is only valid with the `coordinate` format",
            ));
        }
        Ok(Header {
            format,
            field,
            symmetry,
        })
    }

    /// Reads the size line: `N` non-negative integers, named by `names` in messages; returns
    /// its line number too.
    fn parse_size_line<const N: usize>(
        &mut self,
        names: [&str; N],
    ) -> Result<(usize, [i64; N]), SparseError> {
        let usage = names.join(" ");
        let Some((number, line)) = self.next_data_line() else {
            return Err(self.error(
                self.consumed + 1,
                format!("missing size line `{usage}`: the file ends after the header"),
            ));
        };
        let tokens = self.fields(number, line, N, |found| {
            format!("bad size line: expected {N} numbers `{usage}`, found {found} fields")
        })?;
        let mut values = [0i64; N];
        for ((value, token), name) in values.iter_mut().zip(&tokens).zip(names) {
            let parsed: i64 = token.parse().map_err(|_| {
                self.error(
                    number,
                    format!(
                        "bad size line: {name} `{}` is not a non-negative integer",
                        shorten(token)
                    ),
                )
            })?;
            if parsed < 0 {
                return Err(self.error(
                    number,
                    format!("bad size line: {name} {parsed} is negative"),
                ));
            }
            *value = parsed;
        }
        Ok((number, values))
    }

    fn check_square(
        &self,
        header: Header,
        size_line: usize,
        rows: i64,
        cols: i64,
    ) -> Result<(), SparseError> {
        if header.symmetry != Symmetry::General && rows != cols {
            let kind = symmetry_name(header.symmetry);
            return Err(self.error(
                size_line,
                format!("a {kind} matrix must be square, but the size line gives {rows} x {cols}"),
            ));
        }
        Ok(())
    }

    fn parse_coordinate(&mut self, header: Header) -> Result<Triplets, SparseError> {
        let (size_line, [rows, cols, nnz]) = self.parse_size_line(["rows", "cols", "nnz"])?;
        self.check_square(header, size_line, rows, cols)?;
        let mut triplets =
            Triplets::new(rows, cols).map_err(|e| self.error(size_line, e.to_string()))?;
        let fields = match header.field {
            Field::Pattern => 2,
            Field::Real | Field::Integer => 3,
        };
        let usage = if fields == 2 { "i j" } else { "i j value" };
        let nnz = nnz as u64;
        let mut mirrored: Vec<(i64, i64, f64)> = Vec::new();
        let mut found: u64 = 0;
        while let Some((number, line)) = self.next_data_line() {
            if found == nnz {
                return Err(self.error(
                    number,
                    format!("more entries than the {nnz} promised by the size line"),
                ));
            }
            found += 1;
            let tokens = self.fields(number, line, fields, |found| {
                format!("entry has {found} fields, expected {fields} (`{usage}`)")
            })?;
            let row = self.parse_index(number, "row", tokens[0], rows)?;
            let col = self.parse_index(number, "column", tokens[1], cols)?;
            let value = match header.field {
                Field::Pattern => 1.0,
                field => self.parse_value(number, field, tokens[2])?,
            };
            match header.symmetry {
                Symmetry::General => {}
                Symmetry::Symmetric => {
                    if row != col {
                        mirrored.push((col, row, value));
                    }
                }
                Symmetry::SkewSymmetric => {
                    if row == col {
                        return Err(self.error(
                            number,
                            format!(
                                "diagonal entry ({}, {}) in a skew-symmetric matrix, whose diagonal is zero",
                                row + 1,
                                col + 1
                            ),
                        ));
                    }
                    mirrored.push((col, row, -value));
                }
            }
            triplets
                .push(row, col, value)
                .map_err(|e| self.error(number, e.to_string()))?;
        }
        if found < nnz {
            return Err(self.error(
                self.consumed + 1,
                format!("truncated file: found {found} entries, but the size line promised {nnz}"),
            ));
        }
        self.with_mirrored(triplets, mirrored, size_line)
    }

    fn parse_array(&mut self, header: Header) -> Result<Triplets, SparseError> {
        let (size_line, [rows, cols]) = self.parse_size_line(["rows", "cols"])?;
        self.check_square(header, size_line, rows, cols)?;
        let mut triplets =
            Triplets::new(rows, cols).map_err(|e| self.error(size_line, e.to_string()))?;
        // Positions in column-major order, only the stored triangle for symmetric files.
        let stored = |col: i64| -> std::ops::Range<i64> {
            match header.symmetry {
                Symmetry::General => 0..rows,
                Symmetry::Symmetric => col..rows,
                Symmetry::SkewSymmetric => col.saturating_add(1)..rows,
            }
        };
        let total = array_count(header.symmetry, rows, cols);
        // An array with no values (e.g. 0 x 10^18) must not loop over its columns.
        let columns = if total == 0 { 0 } else { cols };
        let mut mirrored: Vec<(i64, i64, f64)> = Vec::new();
        let mut found: u128 = 0;
        for col in 0..columns {
            for row in stored(col) {
                let Some((number, line)) = self.next_data_line() else {
                    return Err(self.error(
                        self.consumed + 1,
                        format!(
                            "truncated file: found {found} values, but the size line promised {total}"
                        ),
                    ));
                };
                found += 1;
                let tokens = self.fields(number, line, 1, |found| {
                    format!("array value line has {found} fields, expected 1 (`value`)")
                })?;
                let value = self.parse_value(number, header.field, tokens[0])?;
                triplets
                    .push(row, col, value)
                    .map_err(|e| self.error(number, e.to_string()))?;
                match header.symmetry {
                    Symmetry::General => {}
                    Symmetry::Symmetric => {
                        if row != col {
                            mirrored.push((col, row, value));
                        }
                    }
                    Symmetry::SkewSymmetric => mirrored.push((col, row, -value)),
                }
            }
        }
        if let Some((number, _)) = self.next_data_line() {
            return Err(self.error(
                number,
                format!("more values than the {total} promised by the size line"),
            ));
        }
        self.with_mirrored(triplets, mirrored, size_line)
    }

    /// The white-space separated fields of data line `number`, refused with `reason(found)`
    /// unless there are `expected` of them.
    fn fields<'l>(
        &self,
        number: usize,
        line: &'l str,
        expected: usize,
        reason: impl FnOnce(usize) -> String,
    ) -> Result<Vec<&'l str>, SparseError> {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.len() != expected {
            return Err(self.error(number, reason(tokens.len())));
        }
        Ok(tokens)
    }

    /// `triplets` with the `mirrored` entries of a symmetric or skew-symmetric file added.
    /// Cannot fail for a square matrix whose entries were checked; an error would name the
    /// size line.
    fn with_mirrored(
        &self,
        mut triplets: Triplets,
        mirrored: Vec<(i64, i64, f64)>,
        size_line: usize,
    ) -> Result<Triplets, SparseError> {
        for (row, col, value) in mirrored {
            triplets
                .push(row, col, value)
                .map_err(|e| self.error(size_line, e.to_string()))?;
        }
        Ok(triplets)
    }

    /// A 1-based index in `1..=extent`, returned 0-based.
    fn parse_index(
        &self,
        line: usize,
        name: &str,
        token: &str,
        extent: i64,
    ) -> Result<i64, SparseError> {
        let index: i64 = token.parse().map_err(|_| {
            self.error(
                line,
                format!("{name} index `{}` is not an integer", shorten(token)),
            )
        })?;
        if index < 1 || index > extent {
            let bounds = if extent == 0 {
                format!("the matrix has no {name}s")
            } else {
                format!("{name} indices are 1-based, in 1..={extent}")
            };
            return Err(self.error(
                line,
                format!("{name} index {index} is out of range: {bounds}"),
            ));
        }
        Ok(index - 1)
    }

    fn parse_value(&self, line: usize, field: Field, token: &str) -> Result<f64, SparseError> {
        match field {
            Field::Integer => token.parse::<i64>().map(|v| v as f64).map_err(|_| {
                self.error(
                    line,
                    format!(
                        "value `{}` is not an integer (the file's field is `integer`)",
                        shorten(token)
                    ),
                )
            }),
            Field::Real | Field::Pattern => token.parse::<f64>().map_err(|_| {
                self.error(line, format!("value `{}` is not a number", shorten(token)))
            }),
        }
    }
}

/// How many values an `array` file of this shape and symmetry stores.
fn array_count(symmetry: Symmetry, rows: i64, cols: i64) -> u128 {
    let (rows, cols) = (rows.max(0) as u128, cols.max(0) as u128);
    match symmetry {
        Symmetry::General => rows * cols,
        Symmetry::Symmetric => rows * (rows + 1) / 2,
        Symmetry::SkewSymmetric => rows * rows.saturating_sub(1) / 2,
    }
}

fn symmetry_name(symmetry: Symmetry) -> &'static str {
    match symmetry {
        Symmetry::General => "general",
        Symmetry::Symmetric => "symmetric",
        Symmetry::SkewSymmetric => "skew-symmetric",
    }
}

/// A token or line cut to a readable length for error messages (on a character boundary).
fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}
