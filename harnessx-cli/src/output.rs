//! Writing for a person or a program: standard output and error. A reader that went away
//! (`harnessx run ... 2>&1 | head`) is not an error: the command goes on (a run is not
//! cut off half-way through a tool call) and the text is dropped, where `println!` would
//! panic. Any other write error (a full disk) ends the command with status 74
//! ([`EX_IOERR`]), after saying so on standard error if it can.

/// `println!` to standard output through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::emit(::std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` to standard error through [`emit`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::emit(::std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

use std::io::Write;

use crate::error::{CliError, EX_IOERR};

/// The line said on standard error when the output cannot be written.
pub(crate) fn write_error_line(e: &std::io::Error) -> String {
    format!("harnessx: cannot write the output: {e}")
}

/// Writes `args` to `out` (standard output or error); on a write error other than a
/// reader that went away, ends the process with [`EX_IOERR`]. For lines written from
/// anywhere (`outln!`, `errln!`); a command that can stop cleanly first uses
/// [`Stdout`] instead.
pub(crate) fn emit(out: impl Write, args: std::fmt::Arguments<'_>) {
    if let Err(e) = write_out(out, args) {
        let _ = writeln!(std::io::stderr(), "{}", write_error_line(&e));
        std::process::exit(i32::from(EX_IOERR));
    }
}

/// Writes `args` to `out`; a reader that went away is not an error (the text is dropped).
pub(crate) fn write_out(mut out: impl Write, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    ignore_broken_pipe(out.write_fmt(args))
}

fn ignore_broken_pipe(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Standard output for a command that writes as it goes (`run`'s answer and events,
/// `tools`' listings): a write error other than a reader that went away is returned as
/// [`CliError::Output`](CliError::Output), so the command can stop what it
/// runs before it exits with [`EX_IOERR`].
#[derive(Debug)]
pub(crate) struct Stdout(std::io::Stdout);

impl Default for Stdout {
    fn default() -> Self {
        Self(std::io::stdout())
    }
}

impl Stdout {
    /// Writes `args`.
    pub(crate) fn write(&mut self, args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
        write_out(&mut self.0, args).map_err(CliError::Output)
    }

    /// Writes `args` and flushes: text shown as it arrives.
    pub(crate) fn write_now(&mut self, args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
        self.write(args)?;
        ignore_broken_pipe(self.0.flush()).map_err(CliError::Output)
    }
}
