//! Directory entries and single-child opens, shared by the tools and by the directory walk
//! (`fs::walk`): every child is reached relative to its parent's descriptor and never
//! through a symlink.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::flags::DIR_FLAGS;

/// The kind of an existing target, from `lstat` (or `stat` for host reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device: refused by every tool.
    Special(&'static str),
}

pub(crate) fn kind_of(stat: &Stat) -> Kind {
    kind_of_type(FileType::from_raw_mode(stat.st_mode))
}

pub(crate) fn kind_of_type(t: FileType) -> Kind {
    match t {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        FileType::Fifo => Kind::Special("a FIFO (named pipe)"),
        FileType::Socket => Kind::Special("a socket"),
        FileType::CharacterDevice => Kind::Special("a character device"),
        FileType::BlockDevice => Kind::Special("a block device"),
        FileType::Unknown => Kind::Special("of an unknown file type"),
    }
}

/// `parent/name` as shown to the model (`name` alone under the root).
pub(super) fn child_display(parent: &str, name: &CStr) -> String {
    let name = String::from_utf8_lossy(name.to_bytes());
    if parent == "." { name.into_owned() } else { format!("{parent}/{name}") }
}

/// The entries of an open directory, without `.` and `..`, with their `d_type`.
pub(crate) fn read_entries(dir: &OwnedFd) -> Result<Vec<(CString, FileType)>, Errno> {
    let mut out = Vec::new();
    for_each_entry(dir, |name, ftype| out.push((name.to_owned(), ftype)))?;
    Ok(out)
}

/// Calls `f` for every entry of an open directory but `.` and `..`, holding none of them.
pub(crate) fn for_each_entry(dir: &OwnedFd, mut f: impl FnMut(&CStr, FileType)) -> Result<(), Errno> {
    let mut d = rustix::fs::Dir::read_from(dir)?;
    while let Some(entry) = d.read() {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            f(name, entry.file_type());
        }
    }
    Ok(())
}

/// Opens the child directory `name` of `dir` for reading, never following a symlink.
pub(crate) fn open_child_dir(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(dir, name, OFlags::RDONLY | DIR_FLAGS, Mode::empty())
}

/// Opens the child `name` of `dir` as a regular file for reading, never following a
/// symlink and never blocking on a FIFO or device; `Ok(None)` when it is not a regular
/// file.
pub(crate) fn open_child_file(dir: BorrowedFd<'_>, name: &CStr) -> Result<Option<File>, Errno> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let fd = match fd {
        Ok(fd) => fd,
        Err(Errno::LOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if kind_of(&stat) != Kind::File {
        return Ok(None);
    }
    Ok(Some(File::from(fd)))
}

/// Reads a small file (an ignore file) under `dir` without following links, up to `max`.
pub(crate) fn read_small_file(dir: BorrowedFd<'_>, name: &CStr, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = open_child_file(dir, name).ok()??;
    let mut buf = Vec::new();
    file.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}
