//! What the model is told when an operation is refused or fails: one line, naming only the
//! path as the model wrote it (normalized, relative to the root), never a host path, and
//! worded by errno rather than by the OS's own message (which could hold a host path).

use std::fmt;

use rustix::io::Errno;

use crate::fs::text::escape_path;

/// A refused or failed filesystem operation, worded for the model. It never holds a host
/// path outside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FsError(String);

impl FsError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// An OS error on `display`, worded by errno (never with a path from the OS).
    pub(crate) fn os(display: &str, what: &str, errno: Errno) -> Self {
        let why = match errno {
            Errno::NOENT => "it does not exist".to_owned(),
            Errno::ACCESS | Errno::PERM => "permission denied".to_owned(),
            Errno::NOTDIR => "a component of the path is not a directory".to_owned(),
            Errno::ISDIR => "it is a directory".to_owned(),
            Errno::LOOP => "it is a symbolic link, and symlinks are not followed".to_owned(),
            Errno::XDEV => "it would leave the root".to_owned(),
            Errno::EXIST => "it already exists".to_owned(),
            Errno::NOTEMPTY => "the directory is not empty".to_owned(),
            Errno::NAMETOOLONG => "a name in the path is too long".to_owned(),
            Errno::NOSPC => "no space left on the device".to_owned(),
            Errno::ROFS => "the filesystem is read-only".to_owned(),
            Errno::BUSY => "it is in use".to_owned(),
            Errno::MFILE | Errno::NFILE => "too many open files; try again with a narrower path".to_owned(),
            other => format!("OS error {}", other.raw_os_error()),
        };
        Self(format!("cannot {what} {}: {why}", quoted(display)))
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FsError {}

impl From<FsError> for harnessx_core::ToolError {
    fn from(e: FsError) -> Self {
        harnessx_core::ToolError::new(e.0)
    }
}

/// `path` (or a pattern) as it appears in messages: backquoted, control characters
/// escaped, and at most [`QUOTED_MAX`] bytes of it: a longer one (a model's megabyte
/// pattern) is cut at a character boundary and says how long it was, so an error never
/// hands the model back the whole of what it sent.
pub(crate) fn quoted(display: &str) -> String {
    let shown = escape_path(display.as_bytes());
    if shown.len() <= QUOTED_MAX {
        return format!("`{shown}`");
    }
    let mut cut = QUOTED_MAX - 40;
    while !shown.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("`{}…` ({} bytes)", &shown[..cut], display.len())
}

/// The longest text [`quoted`] shows whole.
pub(crate) const QUOTED_MAX: usize = 240;

/// A symlink met under the root, where none is followed.
pub(super) fn refused_symlink(shown: &str) -> FsError {
    FsError::new(format!(
        "refused: {} is a symbolic link; symlinks are not followed under the root",
        quoted(shown)
    ))
}

/// A write that would replace a file without `overwrite`.
pub(super) fn exists_error(display: &str) -> FsError {
    FsError::new(format!("{} already exists; pass overwrite=true to replace it", quoted(display)))
}
