//! The fallback resolution: one `openat(O_NOFOLLOW | O_DIRECTORY)` per component, each
//! relative to the previous one's descriptor. Slower than `openat2` but as strict: a
//! symlink anywhere on the path stops the walk, and so does anything that is not a
//! directory. With `create`, a missing component is made with `mkdirat` under its parent's
//! descriptor.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode};
use rustix::io::Errno;

use super::entries::{Kind, kind_of};
use super::error::{FsError, quoted, refused_symlink};
use super::flags::{DIR_FLAGS, LOOKUP_ONLY};
use super::lexical::{cstring, join};

/// Opens the directory `comps` under `root`, component by component.
pub(super) fn walk_beneath(root: &OwnedFd, comps: &[&str], create: bool) -> Result<OwnedFd, FsError> {
    let mut cur: Option<OwnedFd> = None;
    for (i, comp) in comps.iter().enumerate() {
        let shown = join(&comps[..=i]);
        let dir = cur.as_ref().map_or(root.as_fd(), |f| f.as_fd());
        let name = cstring(comp, &shown)?;
        let next = match open_child_dir_path(dir, &name) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(dir, name.as_c_str(), Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(FsError::os(&shown, "create directory", e)),
                }
                open_child_dir_path(dir, &name)
            }
            other => other,
        };
        match next {
            Ok(fd) => cur = Some(fd),
            Err(e) => return Err(explain_component(dir, &name, &shown, e)),
        }
    }
    match cur {
        Some(fd) => Ok(fd),
        None => rustix::io::dup(root).map_err(|e| FsError::os(".", "open", e)),
    }
}

fn open_child_dir_path(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(dir, name, DIR_FLAGS | LOOKUP_ONLY, Mode::empty())
}

/// Says why `name` under `dir` could not be opened as a directory.
pub(super) fn explain_component(dir: BorrowedFd<'_>, name: &CStr, shown: &str, e: Errno) -> FsError {
    if matches!(e, Errno::LOOP | Errno::NOTDIR) {
        match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|s| kind_of(&s)) {
            Ok(Kind::Symlink) => return refused_symlink(shown),
            Ok(Kind::Special(what)) => {
                return FsError::new(format!("refused: {} is {what}, not a directory", quoted(shown)));
            }
            Ok(Kind::File) => return FsError::new(format!("{} is a file, not a directory", quoted(shown))),
            _ => {}
        }
    }
    FsError::os(shown, "open directory", e)
}
