//! Sandboxes for the `bash` bundle: [`LocalSandbox`] (host processes) and
//! [`BubblewrapSandbox`] (Linux namespaces, a workspace of its own). Both implement
//! [`harnessx_core::Sandbox`]; see `docs/builtin-bash.md` for what each one stops.
//!
//! Shared by both: the environment is an allow-list (`PATH`, `HOME`, `LANG`, `TERM=dumb`,
//! plus what the caller adds), stdin is empty, there is no controlling terminal, output
//! is read in arrival order up to a byte limit, and when a command ends (exit, timeout,
//! output limit, or its call dropped) no process it started is left.

mod bubblewrap;
mod capture;
mod env;
mod local;
mod run;
mod spawn;
mod sweep;

use std::path::PathBuf;

pub use bubblewrap::{BubblewrapBuilder, BubblewrapSandbox, DEFAULT_MOUNT};
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
