//! Sandboxes for the `bash` bundle: [`LocalSandbox`] (host processes) and
//! [`BubblewrapSandbox`] (Linux namespaces, a workspace of its own). Both implement
//! [`harnessx_core::Sandbox`]; see `docs/builtin-bash.md` for what each one stops.
//!
//! Shared by both: the environment is an allow-list (`PATH`, `HOME`, `LANG`, `TERM=dumb`,
//! plus what the caller adds), stdin is empty, there is no controlling terminal, output
//! is read in arrival order up to a byte limit, and when a command ends (exit, timeout,
//! output limit, or its call dropped) no process it started is left. Each command runs in
//! a cgroup of its own where this process's cgroup is writable ([`CgroupLimits`]), and
//! the threads that stop a command are reserved before it starts, so a command that
//! exhausts pids or threads cannot take the harness down with it.

mod bubblewrap;
mod capture;
mod cgroup;
mod dumpable;
mod env;
mod helper;
mod isolate;
mod local;
mod run;
mod spawn;
mod sweep;

use std::path::PathBuf;

pub use bubblewrap::{BubblewrapBuilder, BubblewrapSandbox, DEFAULT_MOUNT};
pub use cgroup::{CgroupLimits, DEFAULT_PIDS_MAX, HEADROOM};
pub use local::LocalSandbox;
pub use spawn::ProcessLimits;

/// `name` found in `PATH`, else in `/usr/bin` or `/bin`.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
