//! Deleting a target: a file, an empty directory, or (with `recursive`) a tree, never the
//! root. A tree is emptied child by child relative to each directory's descriptor, so a
//! directory swapped for a symlink mid-delete is unlinked as a link, never entered.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::component_walk::explain_component;
use super::entries::{Kind, child_display, kind_of, read_entries};
use super::error::{FsError, quoted, refused_symlink};
use super::flags::DIR_FLAGS;
use super::scope::Target;

/// What a delete removed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DeleteStats {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
}

/// Deepest directory nesting a recursive delete descends (one descriptor per level).
const MAX_DEPTH: usize = 256;

impl Target {
    /// Deletes the target: a file, an empty directory, or (with `recursive`) a tree.
    /// Never the root; a symlink named as the target is refused under a root.
    pub(crate) fn delete(&self, recursive: bool) -> Result<DeleteStats, FsError> {
        let name = self.name_for("delete")?;
        let Some((kind, _)) = self.lstat()? else {
            return Err(FsError::os(&self.display, "delete", Errno::NOENT));
        };
        let mut stats = DeleteStats::default();
        match kind {
            Kind::Symlink if self.contained => return Err(refused_symlink(&self.display)),
            Kind::Dir => {
                match rustix::fs::unlinkat(&*self.parent, name, AtFlags::REMOVEDIR) {
                    Ok(()) => {}
                    Err(Errno::NOTEMPTY | Errno::EXIST) if recursive => {
                        let dir = rustix::fs::openat(
                            &*self.parent,
                            name,
                            OFlags::RDONLY | DIR_FLAGS,
                            Mode::empty(),
                        )
                        .map_err(|e| explain_component(self.parent.as_fd(), name, &self.display, e))?;
                        remove_contents(dir, &self.display, 0, &mut stats)?;
                        rustix::fs::unlinkat(&*self.parent, name, AtFlags::REMOVEDIR)
                            .map_err(|e| FsError::os(&self.display, "delete", e))?;
                    }
                    Err(Errno::NOTEMPTY | Errno::EXIST) => {
                        return Err(FsError::new(format!(
                            "cannot delete {}: the directory is not empty; pass recursive=true to delete it and everything in it",
                            quoted(&self.display)
                        )));
                    }
                    Err(e) => return Err(FsError::os(&self.display, "delete", e)),
                }
                stats.dirs += 1;
            }
            _ => {
                rustix::fs::unlinkat(&*self.parent, name, AtFlags::empty())
                    .map_err(|e| FsError::os(&self.display, "delete", e))?;
                stats.files += 1;
            }
        }
        Ok(stats)
    }
}

/// Empties the directory `dir` (already opened no-follow). Every child is reached relative
/// to `dir`'s descriptor; a subdirectory is opened with `O_NOFOLLOW | O_DIRECTORY`, so one
/// swapped for a symlink is unlinked as a link, never entered.
fn remove_contents(
    dir: OwnedFd,
    display: &str,
    depth: usize,
    stats: &mut DeleteStats,
) -> Result<(), FsError> {
    if depth >= MAX_DEPTH {
        return Err(FsError::new(format!(
            "cannot delete {}: it is nested more than {MAX_DEPTH} directories deep",
            quoted(display)
        )));
    }
    let entries = read_entries(&dir).map_err(|e| FsError::os(display, "read directory", e))?;
    for (name, ftype) in entries {
        let is_dir = match ftype {
            FileType::Unknown => rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| kind_of(&s) == Kind::Dir),
            t => t == FileType::Directory,
        };
        if !is_dir {
            match rustix::fs::unlinkat(&dir, name.as_c_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {
                    stats.files += 1;
                    continue;
                }
                // It became a directory since the listing: handle it as one below.
                Err(Errno::ISDIR) => {}
                Err(e) => return Err(FsError::os(&child_display(display, &name), "delete", e)),
            }
        }
        let child_shown = child_display(display, &name);
        match rustix::fs::openat(&dir, name.as_c_str(), OFlags::RDONLY | DIR_FLAGS, Mode::empty()) {
            Ok(child) => {
                remove_contents(child, &child_shown, depth + 1, stats)?;
                match rustix::fs::unlinkat(&dir, name.as_c_str(), AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => stats.dirs += 1,
                    Err(e) => return Err(FsError::os(&child_shown, "delete", e)),
                }
            }
            // Swapped for a symlink or a file since the listing: remove the link itself.
            Err(Errno::LOOP | Errno::NOTDIR) => {
                match rustix::fs::unlinkat(&dir, name.as_c_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => stats.files += 1,
                    Err(e) => return Err(FsError::os(&child_shown, "delete", e)),
                }
            }
            Err(Errno::NOENT) => {}
            Err(e) => return Err(FsError::os(&child_shown, "delete", e)),
        }
    }
    Ok(())
}
