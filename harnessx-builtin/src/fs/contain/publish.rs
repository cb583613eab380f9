//! Atomic writes: the content goes to a temporary file in the target's directory, which is
//! then renamed over the final name at the parent's descriptor. A reader sees the old file
//! or the new one, never part of one; two writers never produce a torn file. Atomic, not
//! durable: there is no `fsync`.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
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
        if overwrite {
            return rustix::fs::renameat(parent, tmp, parent, name)
                .map_err(|e| FsError::os(&self.display, "write", e));
        }
        match rustix::fs::renameat_with(parent, tmp, parent, name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(exists_error(&self.display)),
            // The filesystem has no RENAME_NOREPLACE: a hard link is just as exclusive.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                match rustix::fs::linkat(parent, tmp, parent, name, AtFlags::empty()) {
                    Ok(()) => {
                        let _ = rustix::fs::unlinkat(parent, tmp, AtFlags::empty());
                        Ok(())
                    }
                    Err(Errno::EXIST) => Err(exists_error(&self.display)),
                    Err(e) => Err(FsError::os(&self.display, "write", e)),
                }
            }
            Err(e) => Err(FsError::os(&self.display, "write", e)),
        }
    }
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
