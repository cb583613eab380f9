//! Resolution under the root: which of the two descriptor-relative, no-follow ways opens a
//! directory beneath the root's descriptor.

use std::os::fd::OwnedFd;

use super::component_walk::walk_beneath;
use super::error::FsError;
use super::openat2::openat2_beneath;

/// How paths under a root are resolved. Both are descriptor-relative and follow no
/// symlink; they differ only in the system calls used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, falling back to the walk
    /// when the kernel does not have `openat2` (Linux before 5.6, or a seccomp filter).
    #[default]
    Auto,
    /// Only `openat2`; fails when the kernel does not have it.
    Openat2,
    /// Only the component-by-component `O_NOFOLLOW` walk.
    Walk,
}

/// Opens the directory `comps` under `root` without following any symlink.
pub(super) fn open_beneath(
    root: &OwnedFd,
    comps: &[&str],
    resolver: Resolver,
    create: bool,
) -> Result<OwnedFd, FsError> {
    if let Some(fd) = openat2_beneath(root, comps, resolver)? {
        return Ok(fd);
    }
    walk_beneath(root, comps, create)
}
