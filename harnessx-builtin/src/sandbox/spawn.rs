//! What a command's first process does between `fork` and `exec`: one of the two places
//! this crate uses `unsafe` (the other, [`super::isolate`], is called from here).

use rustix::process::{Resource, Rlimit, Signal};
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::Command;

use super::isolate::Isolation;

/// Resource limits set on a command's first process (and so inherited by every process it
/// starts), as `setrlimit` between `fork` and `exec`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessLimits {
    /// `RLIMIT_AS`: most bytes of address space per process.
    pub max_memory_bytes: Option<u64>,
    /// `RLIMIT_NPROC`: most processes of the user. The kernel counts every process of the
    /// same user (not only the command's) and does not apply it to root.
    pub max_processes: Option<u64>,
}

/// Makes the child that `command` spawns:
///
/// - the leader of a new session (`setsid`): no controlling terminal, and its own process
///   group, so a terminal's signals do not reach it and it can be frozen as a group;
/// - a child subreaper: a process its descendants leave behind (a `setsid`/double-fork
///   daemon) is re-parented to it instead of to init, so [`super::sweep`] still finds it
///   under the child while the child lives;
/// - with `die_with_parent`, killed when the thread that spawned it dies
///   (`PR_SET_PDEATHSIG`);
/// - under `limits`;
/// - in the cgroups whose `cgroup.procs` files `cgroups` names (it writes `0`, "this
///   process", into each), first, so that everything it does is counted there;
/// - with `isolation`, in PID and mount namespaces of its own where they may be made (see
///   [`super::isolate`]): the spawned process then waits outside them, and the process
///   that runs the program is its child. It reports which happened last, once every step
///   above has succeeded.
pub(crate) fn prepare_child(
    command: &mut Command,
    limits: ProcessLimits,
    die_with_parent: bool,
    cgroups: Vec<CString>,
    isolation: Option<Isolation>,
) {
    let hook = move || -> std::io::Result<()> {
        for procs in &cgroups {
            let file = rustix::fs::open(
                procs.as_c_str(),
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            rustix::io::write(&file, b"0")?;
        }
        rustix::process::setsid()?;
        let in_namespaces = isolation.as_ref().is_some_and(Isolation::enter);
        if in_namespaces {
            // The namespace's pid 1, a child of the process that led the session: it
            // leads its own, to be frozen as a group.
            rustix::process::setsid()?;
        }
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
        if die_with_parent {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        }
        if let Some(bytes) = limits.max_memory_bytes {
            rustix::process::setrlimit(Resource::As, Rlimit { current: Some(bytes), maximum: Some(bytes) })?;
        }
        if let Some(count) = limits.max_processes {
            rustix::process::setrlimit(
                Resource::Nproc,
                Rlimit { current: Some(count), maximum: Some(count) },
            )?;
        }
        if let Some(isolation) = &isolation {
            isolation.report(in_namespaces);
        }
        Ok(())
    };
    // SAFETY: the hook runs in the child between `fork` and `exec`, where only
    // async-signal-safe operations are allowed. It makes plain system calls through rustix
    // (`open`, `write` and `close` on paths made before the fork, `setsid`, `prctl`,
    // `getpid`, `setrlimit`; with `isolation`, `unshare`, `mount`, `fork`, `waitid` and
    // `_exit`, see `Isolation::enter`): no allocation, no lock, no access to state another
    // thread of the parent could have left inconsistent. Errors are returned as
    // `io::Error` values built from an errno, which does not allocate.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(hook);
    }
}
