//! The containment layer: every filesystem tool reaches files through a [`Scope`].
//!
//! With a root (`base_path`), a path the model gives is normalized lexically (`.` dropped,
//! `..` may not climb above the root, an absolute path is accepted only when it names a
//! place under the root), and then resolved **relative to the root's descriptor** with no
//! symbolic link followed anywhere: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where
//! the kernel has it, else a component-by-component `openat(O_NOFOLLOW | O_DIRECTORY)`
//! walk. A target is then acted on as `*at(parent_fd, name)`, so no path is looked up
//! twice. Directories are walked the same way (child by child, relative to the parent's
//! descriptor, never following a link), so swapping a directory for a symlink mid-walk
//! makes that one entry fail instead of leading outside.
//!
//! Without a root, the scope is the host filesystem under the process's permissions: paths
//! are host paths, intermediate symlinks are followed, reads follow a final symlink;
//! mutations still act on the final name itself and never through a final symlink.
//!
//! This is an application boundary, not an OS sandbox: hard links to outside files, mount
//! points under the root, and other processes relocating directories need stronger
//! isolation (a container, a VM, a separate user).
//!
//! Error messages name only the path as the model wrote it (normalized, relative to the
//! root), never a host path.

use std::ffi::{CStr, CString};
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, Stat};
use rustix::io::Errno;

use crate::fs::text::escape_path;

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

/// Set once `openat2` answered `ENOSYS`, so `Auto` stops trying it.
static OPENAT2_MISSING: AtomicBool = AtomicBool::new(false);

/// A refused or failed filesystem operation, worded for the model. It never holds a host
/// path outside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FsError(String);

impl FsError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// An OS error on `display`, worded by errno (never with a path from the OS).
    pub(crate) fn os(display: &str, what: &str, errno: Errno) -> Self {
        let why = match errno {
            Errno::NOENT => "it does not exist".to_owned(),
            Errno::ACCESS | Errno::PERM => "permission denied".to_owned(),
            Errno::NOTDIR => "a component of the path is not a directory".to_owned(),
            Errno::ISDIR => "it is a directory".to_owned(),
            Errno::LOOP => "it is a symbolic link, and symlinks are not followed".to_owned(),
            Errno::XDEV => "it would leave the root".to_owned(),
            Errno::EXIST => "it already exists".to_owned(),
            Errno::NOTEMPTY => "the directory is not empty".to_owned(),
            Errno::NAMETOOLONG => "a name in the path is too long".to_owned(),
            Errno::NOSPC => "no space left on the device".to_owned(),
            Errno::ROFS => "the filesystem is read-only".to_owned(),
            Errno::BUSY => "it is in use".to_owned(),
            Errno::MFILE | Errno::NFILE => "too many open files; try again with a narrower path".to_owned(),
            other => format!("OS error {}", other.raw_os_error()),
        };
        Self(format!("cannot {what} {}: {why}", quoted(display)))
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FsError {}

impl From<FsError> for harnessx_core::ToolError {
    fn from(e: FsError) -> Self {
        harnessx_core::ToolError::new(e.0)
    }
}

/// `path` as it appears in messages: backquoted, control characters escaped.
pub(crate) fn quoted(display: &str) -> String {
    format!("`{}`", escape_path(display.as_bytes()))
}

/// A directory descriptor shared between a target and its children.
pub(crate) type DirFd = Arc<OwnedFd>;

/// Where the tools act: under a root, or on the host.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    inner: Arc<ScopeInner>,
}

#[derive(Debug)]
enum ScopeInner {
    Contained { root: DirFd, root_path: PathBuf, resolver: Resolver },
    Host,
}

/// A resolved target: the descriptor of its parent directory and its final name, or the
/// root itself.
#[derive(Debug)]
pub(crate) struct Target {
    /// The directory that holds the target (the root itself when `name` is `None`).
    pub(crate) parent: DirFd,
    /// The final name; `None` for the root (or, on the host, a path with no final name).
    pub(crate) name: Option<CString>,
    /// The path as shown to the model: normalized and relative to the root.
    pub(crate) display: String,
    /// Whether this target lies under a root (no symlink is followed at all).
    pub(crate) contained: bool,
}

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

const DIR_FLAGS: OFlags = OFlags::DIRECTORY.union(OFlags::CLOEXEC).union(OFlags::NOFOLLOW);
const BENEATH: ResolveFlags =
    ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

impl Scope {
    /// A scope rooted at `base_path`, which must exist and be a directory. The root itself
    /// may be reached through symlinks (it is the operator's choice); nothing under it is.
    pub(crate) fn contained(base_path: impl AsRef<Path>, resolver: Resolver) -> Result<Self, String> {
        let base = base_path.as_ref();
        let root_path = std::fs::canonicalize(base)
            .map_err(|e| format!("base_path {} cannot be used as a root: {e}", base.display()))?;
        let fd =
            rustix::fs::open(&root_path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| format!("base_path {} cannot be opened as a directory: {e}", base.display()))?;
        Ok(Self { inner: Arc::new(ScopeInner::Contained { root: Arc::new(fd), root_path, resolver }) })
    }

    /// The host filesystem under the process's permissions.
    pub(crate) fn host() -> Self {
        Self { inner: Arc::new(ScopeInner::Host) }
    }

    /// Whether paths are confined to a root.
    pub(crate) fn is_contained(&self) -> bool {
        matches!(*self.inner, ScopeInner::Contained { .. })
    }

    /// Resolves `path` to its parent directory and final name. The parent must exist.
    pub(crate) fn locate(&self, path: &str) -> Result<Target, FsError> {
        self.locate_inner(path, false)
    }

    /// Like [`locate`](Self::locate), creating missing parent directories (each one with
    /// `mkdirat` under the previous one's descriptor, never through a symlink).
    pub(crate) fn locate_creating(&self, path: &str) -> Result<Target, FsError> {
        self.locate_inner(path, true)
    }

    fn locate_inner(&self, path: &str, create: bool) -> Result<Target, FsError> {
        match &*self.inner {
            ScopeInner::Contained { root, root_path, resolver } => {
                let comps = normalize(path, root_path)?;
                let display = if comps.is_empty() { ".".to_owned() } else { join(&comps) };
                let Some((last, parents)) = comps.split_last() else {
                    return Ok(Target { parent: root.clone(), name: None, display, contained: true });
                };
                let parent = if parents.is_empty() {
                    root.clone()
                } else {
                    Arc::new(open_beneath(root, parents, *resolver, create)?)
                };
                let name = cstring(last, &display)?;
                Ok(Target { parent, name: Some(name), display, contained: true })
            }
            ScopeInner::Host => locate_host(path, create),
        }
    }
}

/// Normalizes a model-given path to components under the root.
fn normalize<'a>(path: &'a str, root_path: &Path) -> Result<Vec<&'a str>, FsError> {
    if path.contains('\0') {
        return Err(FsError::new("refused: the path contains a NUL byte"));
    }
    let mut rel = path;
    if path.starts_with('/') {
        // An absolute path is accepted only when it names the root or a place under it,
        // compared component by component (so `/data-evil` is not under `/data`).
        let stripped = Path::new(path).strip_prefix(root_path).ok().and_then(|p| p.to_str());
        match stripped {
            Some(p) => rel = p,
            None => {
                // The path is not echoed: it names a host place outside the root.
                return Err(FsError::new(
                    "refused: the path is an absolute path outside the root; use a path relative to the root",
                ));
            }
        }
    }
    let mut comps: Vec<&str> = Vec::new();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.pop().is_none() {
                    return Err(FsError::new(format!(
                        "refused: {} leads outside the root (`..` may not climb above it)",
                        quoted(path)
                    )));
                }
            }
            c => comps.push(c),
        }
    }
    Ok(comps)
}

fn join(comps: &[&str]) -> String {
    comps.join("/")
}

fn cstring(name: &str, display: &str) -> Result<CString, FsError> {
    CString::new(name).map_err(|_| FsError::new(format!("refused: {} contains a NUL byte", quoted(display))))
}

/// Opens the directory `comps` under `root` without following any symlink.
fn open_beneath(
    root: &OwnedFd,
    comps: &[&str],
    resolver: Resolver,
    create: bool,
) -> Result<OwnedFd, FsError> {
    let use_openat2 = match resolver {
        Resolver::Walk => false,
        Resolver::Openat2 => true,
        Resolver::Auto => !OPENAT2_MISSING.load(Ordering::Relaxed),
    };
    if use_openat2 {
        let rel = join(comps);
        for _ in 0..4 {
            match rustix::fs::openat2(root, rel.as_str(), DIR_FLAGS | OFlags::PATH, Mode::empty(), BENEATH) {
                Ok(fd) => return Ok(fd),
                // A concurrent rename somewhere on the system: the kernel asks to retry.
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) if resolver == Resolver::Auto => {
                    OPENAT2_MISSING.store(true, Ordering::Relaxed);
                    break;
                }
                Err(Errno::NOSYS) => {
                    return Err(FsError::new("openat2 is not available on this kernel"));
                }
                // Any refusal: the walk below says which component and why (and, should
                // the tree have changed since, it is just as safe).
                Err(_) => break,
            }
        }
    }
    walk_beneath(root, comps, create)
}

/// The component-by-component fallback: `openat(O_NOFOLLOW | O_DIRECTORY)` per component.
fn walk_beneath(root: &OwnedFd, comps: &[&str], create: bool) -> Result<OwnedFd, FsError> {
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
    rustix::fs::openat(dir, name, DIR_FLAGS | OFlags::PATH, Mode::empty())
}

/// Says why `name` under `dir` could not be opened as a directory.
fn explain_component(dir: BorrowedFd<'_>, name: &CStr, shown: &str, e: Errno) -> FsError {
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

pub(crate) fn refused_symlink(shown: &str) -> FsError {
    FsError::new(format!(
        "refused: {} is a symbolic link; symlinks are not followed under the root",
        quoted(shown)
    ))
}

fn locate_host(path: &str, create: bool) -> Result<Target, FsError> {
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
        rustix::fs::open(&parent_path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| FsError::os(&display, "open the parent directory of", e))?;
    let name = name
        .map(|n| CString::new(n.into_vec()))
        .transpose()
        .map_err(|_| FsError::new("refused: NUL byte"))?;
    Ok(Target { parent: Arc::new(parent), name, display, contained: false })
}

// ---------------------------------------------------------------------------------------
// Operations on a target.

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

    fn symlink_refusal(&self) -> FsError {
        if self.contained {
            refused_symlink(&self.display)
        } else {
            FsError::new(format!(
                "refused: {} is a symbolic link; write to the file it points to instead",
                quoted(&self.display)
            ))
        }
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

fn exists_error(display: &str) -> FsError {
    FsError::new(format!("{} already exists; pass overwrite=true to replace it", quoted(display)))
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

/// What a delete removed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DeleteStats {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
}

/// Deepest directory nesting a recursive delete descends (one descriptor per level).
const MAX_DEPTH: usize = 256;

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

pub(crate) fn child_display(parent: &str, name: &CStr) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_paths_under_the_root() {
        let root = Path::new("/data");
        assert_eq!(normalize("a/./b//c", root).unwrap(), ["a", "b", "c"]);
        assert_eq!(normalize("a/../b", root).unwrap(), ["b"]);
        assert_eq!(normalize("", root).unwrap(), Vec::<&str>::new());
        assert_eq!(normalize("/data/x", root).unwrap(), ["x"]);
        assert_eq!(normalize("/data", root).unwrap(), Vec::<&str>::new());
        assert!(normalize("..", root).unwrap_err().to_string().contains("outside the root"));
        assert!(normalize("a/../../b", root).is_err());
        assert!(normalize("/data-evil/x", root).unwrap_err().to_string().contains("absolute path outside"));
        assert!(normalize("/etc/passwd", root).is_err());
        assert!(normalize("a\0b", root).unwrap_err().to_string().contains("NUL"));
    }
}
