//! Standard output and error of diffuse's command-line programs (`diffuse`,
//! `diffuse-examples`), written as Unix tools write them: a write that fails is an error the
//! program reports, never a panic (`println!` panics on a full disk or a closed stdout).
//!
//! - [`print`] writes results to stdout and flushes them, returning the failure.
//! - [`fail`] ends a run that failed: a reader that went away (a broken pipe, `| head -1`)
//!   ends it quietly with status [`BROKEN_PIPE_STATUS`], as the shell reports for tools that
//!   `SIGPIPE` ends; any other error is one `error: ...` line on stderr and status 1.
//! - [`eprint_line`] writes a notice or warning to stderr, and drops it if stderr is gone.

use std::io::Write as _;
use std::process::ExitCode;

/// The exit status of a run whose stdout reader went away: 128 + `SIGPIPE`, what a shell
/// reports for a tool the signal ended (Rust programs ignore the signal, so the write fails
/// with `BrokenPipe` instead).
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// Writes `text` to stdout and flushes it: results reach the file or pipe before the
/// program reports success.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes one line to stderr; a failure to write it (stderr closed or full) is ignored, as
/// there is nowhere left to report it.
pub fn eprint_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Whether `error`, or any of its causes, is a write to a pipe whose reader went away.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The end of a failed run: quietly [`BROKEN_PIPE_STATUS`] for a broken pipe, else
/// `error: ` and the error with its causes on one line of stderr, and status 1.
pub fn fail(error: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(error) {
        return ExitCode::from(BROKEN_PIPE_STATUS);
    }
    eprint_line(&format!("error: {error:#}"));
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_found_among_the_causes() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let wrapped = anyhow::Error::new(pipe).context("writing the record");
        assert!(is_broken_pipe(&wrapped));
        let full = std::io::Error::from_raw_os_error(28); // ENOSPC
        assert!(!is_broken_pipe(
            &anyhow::Error::new(full).context("writing the record")
        ));
        assert!(!is_broken_pipe(&anyhow::anyhow!("--n must be at least 1")));
    }
}
