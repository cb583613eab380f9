//! The root handle: a [`Scope`] holds the root's descriptor (opened once, at registration)
//! and turns a model-given path into a [`Target`], a parent directory descriptor plus a
//! final name, so that no path is looked up twice.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use super::error::FsError;
use super::host::locate_host;
use super::lexical::{cstring, join, normalize};
use super::resolve::{Resolver, open_beneath};

/// A directory descriptor shared between a target and its children.
pub(crate) type DirFd = Arc<OwnedFd>;

/// Where the tools act: under a root, or on the host.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    inner: Arc<ScopeInner>,
}

#[derive(Debug)]
enum ScopeInner {
    /// `alias`: where a sandbox's commands see the root, also accepted as its name.
    Contained {
        root: DirFd,
        root_path: PathBuf,
        alias: Option<PathBuf>,
        resolver: Resolver,
    },
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

impl Scope {
    /// A scope rooted at `base_path`, which must exist and be a directory. The root itself
    /// may be reached through symlinks (it is the operator's choice); nothing under it is.
    pub(crate) fn contained(base_path: impl AsRef<Path>, resolver: Resolver) -> Result<Self, String> {
        Self::contained_as(base_path, None, resolver)
    }

    /// Like [`contained`](Self::contained), with a second absolute name for the root: the
    /// path under which a sandbox's commands see it.
    pub(crate) fn contained_as(
        base_path: impl AsRef<Path>,
        alias: Option<PathBuf>,
        resolver: Resolver,
    ) -> Result<Self, String> {
        let base = base_path.as_ref();
        let root_path = std::fs::canonicalize(base)
            .map_err(|e| format!("base_path {} cannot be used as a root: {e}", base.display()))?;
        let fd =
            rustix::fs::open(&root_path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| format!("base_path {} cannot be opened as a directory: {e}", base.display()))?;
        Ok(Self { inner: Arc::new(ScopeInner::Contained { root: Arc::new(fd), root_path, alias, resolver }) })
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
            ScopeInner::Contained { root, root_path, alias, resolver } => {
                let comps = match alias {
                    Some(alias) => normalize(path, &[root_path, alias])?,
                    None => normalize(path, &[root_path])?,
                };
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
