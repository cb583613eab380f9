//! The open flags every directory descriptor under a root is opened with, and the one that
//! differs by platform.

use rustix::fs::OFlags;

/// A directory, never through a symlink, not inherited by child processes.
pub(super) const DIR_FLAGS: OFlags = OFlags::DIRECTORY.union(OFlags::CLOEXEC).union(OFlags::NOFOLLOW);

/// How a directory that is only looked up in (never listed) is opened: `O_PATH` on Linux,
/// which needs search permission on the directory but not read permission.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const LOOKUP_ONLY: OFlags = OFlags::PATH;

/// How a directory that is only looked up in (never listed) is opened: other Unix systems
/// have no `O_PATH` (or not on every release), so a plain read-only open, which needs read
/// permission on the directory as well as search permission.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) const LOOKUP_ONLY: OFlags = OFlags::RDONLY;
