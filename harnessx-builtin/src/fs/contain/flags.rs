//! The open flags every directory descriptor under a root is opened with.

use rustix::fs::OFlags;

/// A directory, never through a symlink, not inherited by child processes.
pub(super) const DIR_FLAGS: OFlags = OFlags::DIRECTORY.union(OFlags::CLOEXEC).union(OFlags::NOFOLLOW);
