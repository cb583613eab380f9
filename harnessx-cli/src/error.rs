//! [`CliError`]: why a command could not give a result; each kind has its exit status
//! (`main` says it and exits).

/// The exit status of a command whose output could not be written (`EX_IOERR`).
pub(crate) const EX_IOERR: u8 = 74;

/// Why a command could not give a result. Each variant has its exit status; there is no
/// blanket conversion, so every error site says which kind it is.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The command line or the setup it names is wrong (unknown tool, bad flag value,
    /// a `--base-path` that cannot be used): exit status 2.
    Usage(String),
    /// The command was right but could not finish (the runtime could not start, a
    /// journal error): exit status 1.
    Failed(String),
    /// Standard output could not be written (a full disk; a reader that went away is not
    /// an error): exit status 74 (`EX_IOERR`).
    Output(std::io::Error),
}

impl CliError {
    /// A usage error from anything displayable.
    pub(crate) fn usage(e: impl std::fmt::Display) -> Self {
        Self::Usage(e.to_string())
    }

    /// A failure from anything displayable.
    pub(crate) fn failed(e: impl std::fmt::Display) -> Self {
        Self::Failed(e.to_string())
    }
}
