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
//!
//! # Platforms
//!
//! - **Linux** (and Android): `openat2` resolves beneath the root (Linux 5.6 and later);
//!   on older kernels, or where a seccomp filter refuses `openat2`, the component walk
//!   takes over. Looked-up directories are opened `O_PATH`; a write that must not replace
//!   publishes with `RENAME_NOREPLACE`, or an exclusive `linkat` where the filesystem
//!   lacks it. Linux is the platform the test suite runs on, under both resolvers;
//!   Android takes the same code paths but is not tested.
//! - **Other Unix systems** (macOS, the BSDs, …): the component walk always
//!   (`Resolver::Openat2` fails with "openat2 is not available on this platform").
//!   Without `O_PATH`, directories are opened read-only, so every directory on a path
//!   must be readable, not only searchable. Exclusive publishing uses
//!   `renameatx_np(RENAME_EXCL)` on Apple systems and `linkat` elsewhere. The Linux-only
//!   calls are behind `cfg`s and the rest is portable `rustix`, but this project builds
//!   and tests on Linux only: these targets are not compiled or tested by its CI.
//! - **Not Unix** (Windows, WASI, …): the crate does not compile. Every operation here is
//!   a descriptor-relative `*at` call, which those platforms lack, so a `compile_error!`
//!   says so rather than a cascade of unresolved imports. Nothing falls back to
//!   unconfined path access.
//!
//! # Layout
//!
//! A path goes through the files in this order:
//!
//! - `scope.rs`: the root handle ([`Scope`]) and what a path resolves to (`Target`);
//! - `lexical.rs`: normalization and validation, before any system call;
//! - `resolve.rs`: the [`Resolver`] choice between `openat2.rs` (the kernel resolves
//!   beneath the root) and `component_walk.rs` (one `O_NOFOLLOW` open per component);
//! - `host.rs`: the scope without a root;
//! - `target.rs`: reading a target (kind, file, directory); `publish.rs`: atomic writes
//!   by rename; `delete.rs`: deletes, recursive ones included;
//! - `entries.rs`: directory entries and single-child opens, shared with `fs::walk`;
//!   `flags.rs`: the open flags;
//! - `error.rs`: what the model is told.

// The module is built on descriptor-relative `*at` calls; refusing the build is the honest
// answer where they do not exist (no path-based fallback that would follow symlinks).
#[cfg(not(unix))]
compile_error!(
    "harnessx-builtin's filesystem tools need a Unix target: their containment under `base_path` \
     is built on descriptor-relative `openat`-family calls (see harnessx-builtin/src/fs/contain/mod.rs, \"Platforms\")"
);

mod component_walk;
mod delete;
mod entries;
mod error;
mod flags;
mod host;
mod lexical;
mod openat2;
mod publish;
mod resolve;
mod scope;
mod target;

pub(crate) use entries::{
    Kind, for_each_entry, kind_of, kind_of_type, open_child_dir, open_child_file, read_entries,
    read_small_file,
};
pub(crate) use error::{FsError, quoted};
pub use resolve::Resolver;
pub(crate) use scope::Scope;
