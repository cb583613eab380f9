//! The scope without a root: host paths under the process's permissions. Intermediate
//! symlinks are followed, as ordinary programs follow them; the target is still acted on as
//! `*at(parent_fd, name)`, so mutations never go through a final symlink.

use std::ffi::CString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use super::error::{FsError, quoted};
use super::flags::LOOKUP_ONLY;
use super::scope::Target;

/// Splits a host path into its parent directory (opened) and final name.
pub(super) fn locate_host(path: &str, create: bool) -> Result<Target, FsError> {
    if path.contains('\0') {
        return Err(FsError::new("refused: the path contains a NUL byte"));
    }
    let display = if path.is_empty() { ".".to_owned() } else { path.to_owned() };
    let p = Path::new(if path.is_empty() { "." } else { path });
    let name = match p.components().next_back() {
        Some(Component::Normal(n)) => Some(n.to_owned()),
        _ => None,
    };
    let parent_path: PathBuf = match (&name, p.parent()) {
        (None, _) => p.to_owned(),
        (Some(_), Some(parent)) if !parent.as_os_str().is_empty() => parent.to_owned(),
        (Some(_), _) => PathBuf::from("."),
    };
    if create && name.is_some() {
        std::fs::create_dir_all(&parent_path).map_err(|e| {
            FsError::new(format!("cannot create the parent directories of {}: {e}", quoted(&display)))
        })?;
    }
    let parent =
        rustix::fs::open(&parent_path, LOOKUP_ONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| FsError::os(&display, "open the parent directory of", e))?;
    let name = name
        .map(|n| CString::new(n.into_vec()))
        .transpose()
        .map_err(|_| FsError::new("refused: NUL byte"))?;
    Ok(Target { parent: Arc::new(parent), name, display, contained: false })
}
