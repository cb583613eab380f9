//! The cgroup each command runs in: a child of this process's own cgroup, made before the
//! command starts and removed after it, so that a command (a fork bomb) exhausts its own
//! `pids.max`, never the harness's.
//!
//! - **cgroup v2**, where this process's cgroup is writable: a child with `pids.max` and
//!   `memory.max` when the `pids` and `memory` controllers are enabled for children (the
//!   cgroup's `cgroup.subtree_control` lists them), and ended with `cgroup.kill`, which
//!   kills every process in it at once, a fork bomb included. A cgroup with processes of
//!   its own cannot enable controllers for children (the kernel's "no internal processes"
//!   rule), so when the controllers are delegated (`cgroup.controllers` lists them) but not
//!   enabled, this process first moves itself into a leaf child (`harnessx-PID`) and
//!   enables them, as systemd documents for `Delegate=yes` services; if that fails, it
//!   moves back and uses the cgroup for `cgroup.kill` only.
//! - **cgroup v1's `pids` hierarchy**, when v2 gives no `pids.max` (hybrid machines, where
//!   the `pids` controller is bound to v1): a child there with `pids.max`. v1 has no
//!   `cgroup.kill`; the sandbox's own kill (the process-tree sweep or the PID namespace)
//!   ends the command, and the cap keeps the bomb small enough for it.
//!
//! Either `pids.max` is the configured one, lowered so that every cgroup above keeps room
//! for the harness ([`HEADROOM`]). A command joins its cgroups as its first act (the local
//! sandbox's subshell writes itself in, bubblewrap's first process does it between `fork`
//! and `exec`); a command that cannot join fails rather than run uncapped. Everything here
//! is best effort before the command (no writable cgroup: no child cgroup, said once in
//! the log) and never panics.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use harnessx_core::Backoff;

/// Tasks (processes and threads) kept free for the harness in every cgroup above a
/// command's, when there is room (else half of what is free).
pub const HEADROOM: u64 = 64;

/// The default [`CgroupLimits::pids_max`].
pub const DEFAULT_PIDS_MAX: u64 = 4096;

/// How long to wait for a killed cgroup to empty, and for its folder to go.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The pauses between tries to remove a cgroup's folder: 100 µs, doubling up to 20 ms.
const REMOVE_PAUSE: Backoff = Backoff::doubling(Duration::from_micros(100), Duration::from_millis(20));

/// Limits on the cgroup each command runs in (see `docs/builtin-bash.md`). `None` in a
/// field: that limit is not set (the command still gets its own cgroup, for the kill).
///
/// ```
/// use harnessx_builtin::sandbox::{CgroupLimits, LocalSandbox};
///
/// let limits = CgroupLimits { pids_max: Some(256), memory_max_bytes: Some(2 << 30) };
/// let sandbox = LocalSandbox::new().cgroup(Some(limits));
/// let uncapped = LocalSandbox::new().cgroup(None); // no cgroup of its own
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLimits {
    /// `pids.max`: most tasks (processes and threads) of the command at once. Lowered when
    /// the cgroups above have less room (keeping [`HEADROOM`] for the harness). Default
    /// [`DEFAULT_PIDS_MAX`]. cgroup v2 with the `pids` controller, else cgroup v1's `pids`.
    pub pids_max: Option<u64>,
    /// `memory.max`: most bytes of memory (page cache included) the command's processes
    /// use together; past it the kernel reclaims, then kills inside the cgroup. Default:
    /// half of the machine's memory (`MemTotal`). cgroup v2 with the `memory` controller
    /// only.
    pub memory_max_bytes: Option<u64>,
}

impl Default for CgroupLimits {
    fn default() -> Self {
        Self { pids_max: Some(DEFAULT_PIDS_MAX), memory_max_bytes: mem_total().map(|b| b / 2) }
    }
}

/// One command's cgroups, v2 and/or v1 `pids`. Removed by [`CommandCgroup::remove`].
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    dirs: Vec<PathBuf>,
    /// The `cgroup.procs` file of each, for the command to write itself into.
    procs: Vec<CString>,
    /// The v2 cgroup's folder, when it has `cgroup.kill`.
    killable: Option<PathBuf>,
}

impl CommandCgroup {
    /// The cgroups for one command under `limits`, made now; `None` when this process has
    /// no writable cgroup (said once in the log).
    pub(crate) fn create(limits: &CgroupLimits) -> Option<Self> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = format!("harnessx-cmd-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let mut cgroup = Self { dirs: Vec::new(), procs: Vec::new(), killable: None };
        let mut pids_capped = false;
        if let Some(parent) = v2_parent() {
            let dir = parent.dir.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    if let (true, Some(max)) = (parent.pids, limits.pids_max) {
                        let max = max.min(room(&parent.dir, &parent.mount));
                        pids_capped = write_limit(&dir, "pids.max", max);
                    }
                    if let (true, Some(bytes)) = (parent.memory, limits.memory_max_bytes) {
                        write_limit(&dir, "memory.max", bytes);
                    }
                    if dir.join("cgroup.kill").exists() {
                        cgroup.killable = Some(dir.clone());
                    }
                    cgroup.push(dir);
                }
                Err(e) => once("v2", &format!("cannot create {}: {e}", dir.display())),
            }
        }
        if let (false, Some(max)) = (pids_capped, limits.pids_max)
            && let Some((mount, own)) = v1_pids_cgroup()
        {
            let dir = own.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) if write_limit(&dir, "pids.max", max.min(room(&own, &mount))) => cgroup.push(dir),
                Ok(()) => {
                    let _ = std::fs::remove_dir(&dir);
                }
                Err(e) => once("v1", &format!("cannot create {}: {e}", dir.display())),
            }
        }
        (!cgroup.dirs.is_empty()).then_some(cgroup)
    }

    fn push(&mut self, dir: PathBuf) {
        if let Ok(procs) = CString::new(dir.join("cgroup.procs").into_os_string().into_encoded_bytes()) {
            self.procs.push(procs);
            self.dirs.push(dir);
        } else {
            let _ = std::fs::remove_dir(&dir);
        }
    }

    /// The `cgroup.procs` files a command's first process writes `0` into, to join.
    pub(crate) fn procs_files(&self) -> &[CString] {
        &self.procs
    }

    /// Kills every process in the v2 cgroup (`cgroup.kill`) and waits until it is empty;
    /// does nothing without one. Blocking.
    pub(crate) fn kill(&self) {
        let Some(dir) = &self.killable else { return };
        if let Err(e) = std::fs::write(dir.join("cgroup.kill"), "1") {
            tracing::warn!(cgroup = %dir.display(), error = %e, "cgroup.kill failed; the sweep stops the command");
            return;
        }
        let deadline = Instant::now() + GONE_WITHIN;
        while Instant::now() < deadline && populated(dir) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Removes the cgroups, waiting briefly for their last processes to leave. Blocking.
    pub(crate) fn remove(self) {
        for dir in &self.dirs {
            let deadline = Instant::now() + GONE_WITHIN;
            let mut tries = 0;
            loop {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => {
                        tracing::warn!(cgroup = %dir.display(), error = %e, "could not remove a command's cgroup");
                        break;
                    }
                    Err(_) => {
                        std::thread::sleep(REMOVE_PAUSE.delay(tries));
                        tries += 1;
                    }
                }
            }
        }
    }
}

/// Whether a v2 cgroup still has processes (`populated 1` in `cgroup.events`).
fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .map(|events| events.lines().any(|l| l == "populated 1"))
        .unwrap_or(false)
}

/// Writes a limit; says in the log (once per file name) when it cannot.
fn write_limit(dir: &Path, file: &str, value: u64) -> bool {
    match std::fs::write(dir.join(file), value.to_string()) {
        Ok(()) => true,
        Err(e) => {
            once(file, &format!("cannot set {file} in {}: {e}", dir.display()));
            false
        }
    }
}

/// The most `pids.max` a command's cgroup may have so that `own` and every cgroup above
/// it up to `mount` keep room for the harness: the least free (`pids.max - pids.current`)
/// among them, less [`HEADROOM`] (or half of it when less is free); at least 1.
fn room(own: &Path, mount: &Path) -> u64 {
    let read = |dir: &Path, file: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
    };
    let mut least = u64::MAX;
    let mut dir = Some(own);
    while let Some(d) = dir.filter(|d| d.starts_with(mount)) {
        if let (Some(max), Some(current)) = (read(d, "pids.max"), read(d, "pids.current")) {
            least = least.min(max.saturating_sub(current));
        }
        dir = d.parent();
    }
    if least == u64::MAX {
        return u64::MAX;
    }
    least.saturating_sub(HEADROOM.min(least / 2)).max(1)
}

/// Where a command's v2 cgroup goes.
#[derive(Debug)]
struct V2Parent {
    mount: PathBuf,
    dir: PathBuf,
    pids: bool,
    memory: bool,
}

/// This process's v2 cgroup, once: delegating `pids` and `memory` to children if it can
/// (see the module documentation). `None` without a writable v2 hierarchy.
fn v2_parent() -> Option<&'static V2Parent> {
    static PARENT: OnceLock<Option<V2Parent>> = OnceLock::new();
    PARENT
        .get_or_init(|| {
            let (mount, dir) = own_cgroup(&hierarchy_mount("cgroup2", "")?, "")?;
            let words = |file: &str| -> Vec<String> {
                std::fs::read_to_string(dir.join(file))
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            };
            let available: Vec<String> =
                words("cgroup.controllers").into_iter().filter(|c| c == "pids" || c == "memory").collect();
            let enabled = words("cgroup.subtree_control");
            let missing: Vec<&String> = available.iter().filter(|c| !enabled.contains(c)).collect();
            if !missing.is_empty() && dir != mount {
                delegate(&dir, &missing);
            }
            let enabled = words("cgroup.subtree_control");
            let parent = V2Parent {
                pids: enabled.iter().any(|c| c == "pids"),
                memory: enabled.iter().any(|c| c == "memory"),
                mount,
                dir,
            };
            tracing::debug!(?parent, "commands get cgroup v2 children");
            Some(parent)
        })
        .as_ref()
}

/// Moves this process into a leaf child of `dir` and enables `controllers` for `dir`'s
/// children; on failure, moves it back.
fn delegate(dir: &Path, controllers: &[&String]) {
    let leaf = dir.join(format!("harnessx-{}", std::process::id()));
    if std::fs::create_dir(&leaf).is_err() && !leaf.is_dir() {
        return;
    }
    if std::fs::write(leaf.join("cgroup.procs"), "0").is_err() {
        let _ = std::fs::remove_dir(&leaf);
        return;
    }
    let enable: Vec<String> = controllers.iter().map(|c| format!("+{c}")).collect();
    if let Err(e) = std::fs::write(dir.join("cgroup.subtree_control"), enable.join(" ")) {
        once(
            "delegate",
            &format!("cannot enable {} for {}'s children: {e}", enable.join(" "), dir.display()),
        );
        let _ = std::fs::write(dir.join("cgroup.procs"), "0");
        let _ = std::fs::remove_dir(&leaf);
    }
}

/// This process's cgroup v1 `pids` folder, and the hierarchy's mount, now (a test may
/// move the process). The mount is read once: a command's start should not parse every
/// mount of the machine.
fn v1_pids_cgroup() -> Option<(PathBuf, PathBuf)> {
    static MOUNT: OnceLock<Option<(String, PathBuf)>> = OnceLock::new();
    own_cgroup(MOUNT.get_or_init(|| hierarchy_mount("cgroup", "pids")).as_ref()?, "pids")
}

/// The mount point and this process's folder in the hierarchy `mounted` (its root and
/// mount point, from [`hierarchy_mount`]) whose `/proc/self/cgroup` line names
/// `controller` (none: the v2 line), from `/proc/self/cgroup`.
fn own_cgroup((root, mount): &(String, PathBuf), controller: &str) -> Option<(PathBuf, PathBuf)> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let ours = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        ours.then(|| path.to_owned())
    })?;
    let relative = Path::new(&path).strip_prefix(root).ok()?;
    let dir = mount.join(relative);
    dir.is_dir().then(|| (mount.clone(), dir))
}

/// The root (within the hierarchy) and mount point of the hierarchy of type `fstype`, from
/// `/proc/self/mountinfo`.
fn hierarchy_mount(fstype: &str, controller: &str) -> Option<(String, PathBuf)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split(' ');
        let (kind, _source, options) = (after.next()?, after.next()?, after.next().unwrap_or(""));
        let fields: Vec<&str> = before.split(' ').collect();
        let ours = kind == fstype && (controller.is_empty() || options.split(',').any(|o| o == controller));
        if !ours {
            return None;
        }
        Some((fields.get(3)?.to_string(), PathBuf::from(fields.get(4)?)))
    })
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn mem_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Logs `message` at info level the first time `key` fails in this process.
fn once(key: &str, message: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|k| k == key) {
        said.push(key.to_owned());
        tracing::info!("commands run without a cgroup of their own here: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_keeps_headroom_and_never_reaches_zero() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("a/b");
        std::fs::create_dir_all(&own).unwrap();
        assert_eq!(room(&own, dir.path()), u64::MAX, "no limits above: no cap");
        std::fs::write(own.join("pids.max"), "1000\n").unwrap();
        std::fs::write(own.join("pids.current"), "100\n").unwrap();
        assert_eq!(room(&own, dir.path()), 900 - HEADROOM);
        // A tighter cgroup above wins; "max" is no limit.
        std::fs::write(dir.path().join("a/pids.max"), "140\n").unwrap();
        std::fs::write(dir.path().join("a/pids.current"), "100\n").unwrap();
        assert_eq!(room(&own, dir.path()), 20);
        std::fs::write(dir.path().join("a/pids.max"), "max\n").unwrap();
        assert_eq!(room(&own, dir.path()), 900 - HEADROOM);
        std::fs::write(own.join("pids.current"), "1000\n").unwrap();
        assert_eq!(room(&own, dir.path()), 1);
    }
}
