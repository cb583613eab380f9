//! Atomic writes: the content goes to a temporary file in the target's directory, which is
//! then renamed over the final name at the parent's descriptor. A reader sees the old file
//! or the new one, never part of one; two writers never produce a torn file. Atomic, not
//! durable: there is no `fsync`.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::entries::Kind;
use super::error::{FsError, exists_error, quoted};
use super::scope::Target;

impl Target {
    /// Writes `content` atomically: a temporary file in the same directory, then a rename
    /// at the parent's descriptor (`RENAME_NOREPLACE` unless `overwrite`). A reader sees
    /// the old file or the new one, never a partial one. Returns whether the file existed.
    pub(crate) fn write_atomic(&self, content: &[u8], overwrite: bool) -> Result<bool, FsError> {
        let name = self.name_for("write")?;
        let existing = self.lstat()?;
        let mut mode = Mode::from_raw_mode(0o666);
        match existing {
            None => {}
            Some((Kind::File, stat)) => {
                if !overwrite {
                    return Err(exists_error(&self.display));
                }
                mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
            }
            Some((Kind::Dir, _)) => {
                return Err(FsError::new(format!(
                    "cannot write {}: it is a directory",
                    quoted(&self.display)
                )));
            }
            Some((Kind::Symlink, _)) => return Err(self.symlink_refusal()),
            Some((Kind::Special(what), _)) => {
                return Err(FsError::new(format!("refused: {} is {what}", quoted(&self.display))));
            }
        }
        let tmp = temp_name();
        let fd = rustix::fs::openat(
            &*self.parent,
            tmp.as_c_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        )
        .map_err(|e| FsError::os(&self.display, "write", e))?;
        let result = (|| {
            if existing.is_some() {
                // Keep the replaced file's permission bits (umask applied to the create).
                let _ = rustix::fs::fchmod(&fd, mode);
            }
            let mut file = File::from(fd);
            file.write_all(content)
                .map_err(|e| FsError::new(format!("cannot write {}: {e}", quoted(&self.display))))?;
            drop(file);
            self.publish(&tmp, name, overwrite)
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&*self.parent, tmp.as_c_str(), AtFlags::empty());
        }
        result.map(|()| existing.is_some())
    }

    fn publish(&self, tmp: &CStr, name: &CStr, overwrite: bool) -> Result<(), FsError> {
        let parent = &*self.parent;
        let published = if overwrite {
            rustix::fs::renameat(parent, tmp, parent, name)
        } else {
            rename_noreplace(parent, tmp, name)
        };
        match published {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) if !overwrite => Err(exists_error(&self.display)),
            Err(e) => Err(FsError::os(&self.display, "write", e)),
        }
    }
}

/// Renames `tmp` to `name` in `parent` unless `name` exists (`EEXIST` then). Where the
/// platform or the filesystem has no exclusive rename, a hard link is just as exclusive:
/// `linkat` the new name, then unlink the temporary one.
fn rename_noreplace(parent: &OwnedFd, tmp: &CStr, name: &CStr) -> Result<(), Errno> {
    if let Some(renamed) = rename_exclusive(parent, tmp, name) {
        return renamed;
    }
    rustix::fs::linkat(parent, tmp, parent, name, AtFlags::empty())?;
    let _ = rustix::fs::unlinkat(parent, tmp, AtFlags::empty());
    Ok(())
}

/// `renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np(RENAME_EXCL)` on Apple systems;
/// `None` when the filesystem does not support it.
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn rename_exclusive(parent: &OwnedFd, tmp: &CStr, name: &CStr) -> Option<Result<(), Errno>> {
    use rustix::fs::RenameFlags;
    match rustix::fs::renameat_with(parent, tmp, parent, name, RenameFlags::NOREPLACE) {
        // `ENOTSUP` and `EOPNOTSUPP` are one value on Linux, two on Apple systems.
        Err(e) if [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP, Errno::NOTSUP].contains(&e) => None,
        renamed => Some(renamed),
    }
}

/// Other Unix systems have no exclusive rename call.
#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn rename_exclusive(_parent: &OwnedFd, _tmp: &CStr, _name: &CStr) -> Option<Result<(), Errno>> {
    None
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file name unique within this process and unlikely across processes.
fn temp_name() -> CString {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    CString::new(format!(".hx-tmp-{}-{n}-{nanos:x}", std::process::id())).expect("no NUL in a formatted name")
}
