//! The kernel's own beneath-the-root resolution: one `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` call for the whole path. Linux only (5.6
//! and later); elsewhere `Resolver::Auto` goes straight to the component walk and
//! `Resolver::Openat2` fails.

#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) use kernel::openat2_beneath;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) use missing::openat2_beneath;

#[cfg(any(target_os = "linux", target_os = "android"))]
mod kernel {
    use std::os::fd::OwnedFd;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    use super::super::error::FsError;
    use super::super::flags::DIR_FLAGS;
    use super::super::lexical::join;
    use super::super::resolve::Resolver;

    /// Set once `openat2` answered `ENOSYS`, so `Auto` stops trying it.
    static OPENAT2_MISSING: AtomicBool = AtomicBool::new(false);

    const BENEATH: ResolveFlags =
        ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

    /// Opens the directory `comps` under `root` with `openat2`, when `resolver` asks for
    /// it. `Ok(None)`: not tried, not available (under `Auto`), or refused; the component
    /// walk then says which component and why.
    pub(in super::super) fn openat2_beneath(
        root: &OwnedFd,
        comps: &[&str],
        resolver: Resolver,
    ) -> Result<Option<OwnedFd>, FsError> {
        let use_openat2 = match resolver {
            Resolver::Walk => false,
            Resolver::Openat2 => true,
            Resolver::Auto => !OPENAT2_MISSING.load(Ordering::Relaxed),
        };
        if !use_openat2 {
            return Ok(None);
        }
        let rel = join(comps);
        for _ in 0..4 {
            match rustix::fs::openat2(root, rel.as_str(), DIR_FLAGS | OFlags::PATH, Mode::empty(), BENEATH) {
                Ok(fd) => return Ok(Some(fd)),
                // A concurrent rename somewhere on the system: the kernel asks to retry.
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) if resolver == Resolver::Auto => {
                    OPENAT2_MISSING.store(true, Ordering::Relaxed);
                    break;
                }
                Err(Errno::NOSYS) => {
                    return Err(FsError::new("openat2 is not available on this kernel"));
                }
                // Any refusal: the walk says which component and why (and, should the tree
                // have changed since, it is just as safe).
                Err(_) => break,
            }
        }
        Ok(None)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod missing {
    use std::os::fd::OwnedFd;

    use super::super::error::FsError;
    use super::super::resolve::Resolver;

    /// No `openat2` on this platform: `Auto` and `Walk` use the component walk, `Openat2`
    /// fails as it does on a Linux kernel without the call.
    pub(in super::super) fn openat2_beneath(
        _root: &OwnedFd,
        _comps: &[&str],
        resolver: Resolver,
    ) -> Result<Option<OwnedFd>, FsError> {
        match resolver {
            Resolver::Openat2 => Err(FsError::new("openat2 is not available on this platform")),
            Resolver::Auto | Resolver::Walk => Ok(None),
        }
    }
}
