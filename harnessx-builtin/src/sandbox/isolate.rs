//! The local sandbox's shell in PID and mount namespaces of its own, with a fresh `/proc`,
//! so that no command sees the harness or any other host process: `/proc/$PPID/environ`
//! (the provider keys) is not there to read, even for root, whom non-dumpable
//! ([`super::dumpable`]) does not stop.
//!
//! Done between `fork` and `exec` of the shell's first process ([`Isolation::enter`], from
//! [`super::spawn::prepare_child`]'s hook): `unshare` a PID and a mount namespace (as root;
//! otherwise, or when root is refused, with a user namespace that maps only this process's
//! uid and gid to themselves), then `fork` once more, since only the children of the
//! process that unshared are in the new PID namespace. The child is its pid 1: it makes
//! every mount private (nothing propagates back to the host), detaches the host's `/proc`
//! where it may (root; in a user namespace the host's stays locked under the new one),
//! mounts a new `proc`, and goes on to `exec` the shell. The parent closes every descriptor
//! it inherited and waits outside the namespace until the shell exits, then exits with it:
//! it is the process the harness spawned and waits for.
//!
//! Nothing here ever fails the command. Where no namespace may be made (root without
//! `CAP_SYS_ADMIN` and user namespaces refused, or an ordinary user where unprivileged user
//! namespaces are off), the shell starts as before, on the host's processes. Where the
//! namespaces were made but the new `/proc` was refused, the half-made shell exits and the
//! harness starts one without namespaces, and does not try again ([`give_up`]). Which of
//! these happened comes back on a pipe ([`Report`]).
//!
//! Why `libc`: the second `fork` and the `_exit` of the waiting parent have no public
//! rustix function (its `runtime` module is hidden and experimental); everything else goes
//! through rustix.

// `unshare`, `fork`, `close` and `_exit` between a fork and an exec, each with its SAFETY.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io::{PipeReader, PipeWriter, Read as _};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{CWD, Mode, OFlags, RawDir};
use rustix::io::{Errno, Result};
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use rustix::process::{Pid, WaitId, WaitIdOptions};
use rustix::thread::UnshareFlags;

/// Set once the namespaces were made but the new `/proc` was refused: later shells start
/// without namespaces rather than failing the same way again.
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// The exit status of a first process (or of its waiting parent) whose namespaces could
/// not be finished: it never runs the shell.
const HALF_MADE: i32 = 125;

/// The report bytes: the shell runs in its own namespaces, or on the host's processes.
const IN_NAMESPACES: u8 = b'N';
const ON_THE_HOST: u8 = b'H';

/// Whether the next shell should try namespaces.
pub(crate) fn wanted() -> bool {
    !GAVE_UP.load(Ordering::Relaxed)
}

/// Later shells start without namespaces (see the module documentation).
pub(crate) fn give_up() {
    GAVE_UP.store(true, Ordering::Relaxed);
}

/// What the hook needs, made before the spawn (the hook may not allocate).
#[derive(Debug)]
pub(crate) struct Isolation {
    /// `/proc/self/uid_map` and `gid_map` in a user namespace: this process's ids mapped
    /// to themselves.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Where the shell's first process says how it starts (the write end; close-on-exec).
    report: PipeWriter,
}

/// The harness's end of an [`Isolation`]'s pipe.
#[derive(Debug)]
pub(crate) struct Report(PipeReader);

/// How a shell started, from its [`Report`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Started {
    /// In its own PID and mount namespaces: the spawned process waits outside, and the
    /// shell is its only child.
    InNamespaces,
    /// On the host's processes: the spawned process is the shell.
    OnTheHost,
    /// The namespaces were made but not finished: the spawned process exits
    /// ([`HALF_MADE`]) without running the shell.
    HalfMade,
}

impl Isolation {
    /// The pipe and the id maps, for one spawn.
    pub(crate) fn new() -> std::io::Result<(Self, Report)> {
        let (read, write) = std::io::pipe()?;
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        let isolation = Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            report: write,
        };
        Ok((isolation, Report(read)))
    }

    /// Between `fork` and `exec`: moves the process that will run the shell into new PID
    /// and mount namespaces with a fresh `/proc`, and returns `true` there (the process is
    /// then the namespace's pid 1, a fresh child); returns `false`, having changed nothing,
    /// where no namespace may be made. A failure after the namespaces were made ends the
    /// process with [`HALF_MADE`]. Async-signal-safe: system calls on what [`Self::new`]
    /// prepared, no allocation (errors are errno values).
    pub(crate) fn enter(&self) -> bool {
        let own = UnshareFlags::NEWPID | UnshareFlags::NEWNS;
        // SAFETY (both): no `UnshareFlags::FILES`, the flag `unshare_unsafe` is unsafe for.
        let as_root =
            rustix::process::geteuid().is_root() && unsafe { rustix::thread::unshare_unsafe(own) }.is_ok();
        if !as_root {
            if unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | own) }.is_err() {
                return false;
            }
            // The new user namespace has no ids until mapped: this process's own, only.
            self.map_ids().unwrap_or_else(|_| exit(HALF_MADE));
        }
        // From here, this process's children are in the new PID namespace: the shell must
        // be one of them, or nothing runs.
        let fds = rustix::fs::openat(
            CWD,
            c"/proc/self/fd",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap_or_else(|_| exit(HALF_MADE));
        // SAFETY: this process has one thread (the child of `Command::spawn`'s fork), so
        // no lock is held by a thread the fork would not copy; the child goes on with the
        // hook's async-signal-safe calls, the parent only closes, waits and `_exit`s.
        match unsafe { libc::fork() } {
            -1 => exit(HALF_MADE),
            0 => {
                drop(fds);
                fresh_proc().unwrap_or_else(|_| exit(HALF_MADE));
                true
            }
            shell => wait_for(shell, fds),
        }
    }

    /// The last step of the hook: says how the shell starts. The pipe's write end closes
    /// at `exec`.
    pub(crate) fn report(&self, in_namespaces: bool) {
        let byte = if in_namespaces { IN_NAMESPACES } else { ON_THE_HOST };
        // Unread, the harness takes the shell for half made and starts another.
        let _ = rustix::io::write(&self.report, &[byte]);
    }

    /// Maps this process's ids in its new user namespace. It is non-dumpable, as the harness
    /// is ([`super::dumpable`]), so its `/proc/self` files belong to root: dumpable only
    /// while it writes them, so that the process left waiting outside is not.
    fn map_ids(&self) -> Result<()> {
        use rustix::process::{DumpableBehavior, set_dumpable_behavior};
        set_dumpable_behavior(DumpableBehavior::Dumpable)?;
        let mapped = (|| {
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            // An unprivileged process may map its group only once `setgroups` is denied.
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/gid_map", &self.gid_map)
        })();
        set_dumpable_behavior(DumpableBehavior::NotDumpable)?;
        mapped
    }
}

impl Report {
    /// How the shell started. Call it once the spawn returned and the hook that holds the
    /// write end was dropped with its `Command`: every other holder closes it by `exec` or
    /// at once, so the read does not wait long.
    pub(crate) fn read(mut self) -> Started {
        let mut byte = [0u8; 1];
        match self.0.read(&mut byte) {
            Ok(1) if byte[0] == IN_NAMESPACES => Started::InNamespaces,
            Ok(1) if byte[0] == ON_THE_HOST => Started::OnTheHost,
            _ => Started::HalfMade,
        }
    }
}

/// In the new namespaces' pid 1: mounts private, the host's `/proc` detached where this
/// process may (root), a new `proc` of this PID namespace on `/proc`.
fn fresh_proc() -> Result<()> {
    rustix::mount::mount_change(c"/", MountPropagationFlags::PRIVATE | MountPropagationFlags::REC)?;
    // In a user namespace the host's `/proc` is locked and stays, covered by the new one.
    let _ = rustix::mount::unmount(c"/proc", UnmountFlags::DETACH);
    rustix::mount::mount(
        c"proc",
        c"/proc",
        c"proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None::<&CStr>,
    )?;
    Ok(())
}

/// The parent outside the namespaces: closes every descriptor it inherited (the harness
/// reads end-of-file on the spawn's error pipe and on the shell's socket only once they
/// are), waits until the shell has exited, and exits with its status. It waits with
/// `WNOWAIT`: the shell stays a zombie, its pid not reused, as long as this process lives
/// and the harness has not reaped it.
fn wait_for(shell: i32, fds: OwnedFd) -> ! {
    close_all_but(&fds);
    drop(fds);
    let Some(pid) = Pid::from_raw(shell) else { exit(HALF_MADE) };
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
            Ok(Some(status)) => {
                let code = status
                    .exit_status()
                    .or_else(|| status.terminating_signal().map(|s| 128 + s))
                    .unwrap_or(HALF_MADE);
                exit(code)
            }
            Err(e) if e == Errno::INTR => continue,
            _ => exit(HALF_MADE),
        }
    }
}

/// Closes every descriptor listed in `dir` (an open `/proc/self/fd`) but `dir` itself,
/// reading it into a buffer on the stack.
fn close_all_but(dir: &OwnedFd) {
    let keep = dir.as_raw_fd();
    let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
    let mut entries = RawDir::new(dir, &mut buf);
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.file_name().to_bytes();
        if name.is_empty() || !name.iter().all(u8::is_ascii_digit) {
            continue;
        }
        let fd = name.iter().fold(0i32, |n, d| n.saturating_mul(10).saturating_add(i32::from(d - b'0')));
        if fd != keep {
            // SAFETY: this process only waits and exits from here; no code uses a
            // descriptor after this loop closed it.
            unsafe { rustix::io::close(fd) };
        }
    }
}

/// Writes all of `bytes` to the file at `path` in one `write`, as `/proc` id maps need.
fn write_file(path: &CStr, bytes: &[u8]) -> Result<()> {
    let file = rustix::fs::openat(CWD, path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    if rustix::io::write(&file, bytes)? == bytes.len() { Ok(()) } else { Err(Errno::IO) }
}

/// `_exit`: no destructor or `atexit` handler runs, as between `fork` and `exec`.
fn exit(code: i32) -> ! {
    // SAFETY: `_exit` is async-signal-safe and ends the process.
    unsafe { libc::_exit(code) }
}
