//! Reading a resolved [`Target`]: its kind, and opening it as a file or a directory at
//! the parent's descriptor, with `O_NOFOLLOW` under a root.

use std::ffi::CStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::component_walk::explain_component;
use super::entries::{Kind, kind_of};
use super::error::{FsError, quoted, refused_symlink};
use super::scope::Target;

impl Target {
    /// The final name, or a refusal naming `what` cannot be done to the root.
    pub(crate) fn name_for(&self, what: &str) -> Result<&CStr, FsError> {
        self.name.as_deref().ok_or_else(|| {
            FsError::new(format!(
                "refused: cannot {what} {}: it is the root directory",
                quoted(&self.display)
            ))
        })
    }

    /// The kind of the target without following a final symlink; `None` if absent.
    pub(crate) fn lstat(&self) -> Result<Option<(Kind, Stat)>, FsError> {
        let stat = match &self.name {
            Some(n) => rustix::fs::statat(&*self.parent, n.as_c_str(), AtFlags::SYMLINK_NOFOLLOW),
            None => rustix::fs::fstat(&*self.parent),
        };
        match stat {
            Ok(s) => Ok(Some((kind_of(&s), s))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(FsError::os(&self.display, "inspect", e)),
        }
    }

    /// The kind of the target as reads see it: under a root, `lstat`; on the host, `stat`
    /// (following a final symlink, as ordinary programs do).
    pub(crate) fn read_stat(&self) -> Result<(Kind, Stat), FsError> {
        let stat = match (&self.name, self.contained) {
            (Some(n), true) => rustix::fs::statat(&*self.parent, n.as_c_str(), AtFlags::SYMLINK_NOFOLLOW),
            (Some(n), false) => rustix::fs::statat(&*self.parent, n.as_c_str(), AtFlags::empty()),
            (None, _) => rustix::fs::fstat(&*self.parent),
        };
        let stat = stat.map_err(|e| FsError::os(&self.display, "read", e))?;
        Ok((kind_of(&stat), stat))
    }

    /// Opens the target as a regular file for reading. FIFOs, sockets and devices are
    /// refused before they are opened, and again after (`O_NONBLOCK` + `fstat`), so a
    /// swap in between cannot make the call block.
    pub(crate) fn open_file(&self) -> Result<(File, Stat), FsError> {
        let (kind, _) = self.read_stat()?;
        check_file_kind(kind, &self.display)?;
        let name = self.name_for("read")?;
        let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        if self.contained {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = rustix::fs::openat(&*self.parent, name, flags, Mode::empty()).map_err(|e| match e {
            Errno::LOOP if self.contained => refused_symlink(&self.display),
            e => FsError::os(&self.display, "read", e),
        })?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| FsError::os(&self.display, "read", e))?;
        check_file_kind(kind_of(&stat), &self.display)?;
        Ok((File::from(fd), stat))
    }

    /// Opens the target as a directory for listing; the root when `name` is `None`.
    pub(crate) fn open_dir(&self) -> Result<OwnedFd, FsError> {
        let (kind, _) = self.read_stat()?;
        match kind {
            Kind::Dir => {}
            Kind::Symlink => return Err(refused_symlink(&self.display)),
            Kind::File => {
                return Err(FsError::new(format!("{} is a file, not a directory", quoted(&self.display))));
            }
            Kind::Special(what) => {
                return Err(FsError::new(format!(
                    "refused: {} is {what}, not a directory",
                    quoted(&self.display)
                )));
            }
        }
        let name: &CStr = self.name.as_deref().unwrap_or(c".");
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if self.contained {
            flags |= OFlags::NOFOLLOW;
        }
        rustix::fs::openat(&*self.parent, name, flags, Mode::empty()).map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => explain_component(self.parent.as_fd(), name, &self.display, e),
            e => FsError::os(&self.display, "open directory", e),
        })
    }

    /// The refusal for a final symlink where a write would replace it.
    pub(super) fn symlink_refusal(&self) -> FsError {
        if self.contained {
            refused_symlink(&self.display)
        } else {
            FsError::new(format!(
                "refused: {} is a symbolic link; write to the file it points to instead",
                quoted(&self.display)
            ))
        }
    }
}

fn check_file_kind(kind: Kind, display: &str) -> Result<(), FsError> {
    match kind {
        Kind::File => Ok(()),
        Kind::Dir => Err(FsError::new(format!(
            "{} is a directory; use list_directory to see what it holds",
            quoted(display)
        ))),
        Kind::Symlink => Err(refused_symlink(display)),
        Kind::Special(what) => {
            Err(FsError::new(format!("refused: {} is {what}, not a regular file", quoted(display))))
        }
    }
}
