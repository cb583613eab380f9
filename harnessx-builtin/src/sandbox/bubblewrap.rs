//! [`BubblewrapSandbox`]: commands in Linux namespaces through `bwrap`, with a workspace
//! of their own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use harnessx_core::{BoxFuture, CommandOutput, Sandbox, SandboxCommand, SandboxError, SandboxFilesystem};
use tokio::process::Command;

use super::cgroup::CgroupLimits;
use super::env::{base_env, merged};
use super::find_program;
use super::run::run_child;
use super::spawn::ProcessLimits;

/// Where commands see the workspace unless [`BubblewrapBuilder::mount`] says otherwise.
pub const DEFAULT_MOUNT: &str = "/workspace";

/// What to tell a user whose machine has no `bwrap`.
const INSTALL_HINT: &str = "install the `bubblewrap` package (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)";

/// System directories bound read-only when the host has them.
const SYSTEM_DIRS: [&str; 8] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/// Files under `/etc` hidden behind `/dev/null` when the host has them: password hashes
/// are readable to a command running as root.
const MASKED: [&str; 4] = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"];

/// Commands run by `bwrap` (Debian's `bubblewrap`) in new namespaces: the system
/// directories read-only, one writable workspace that belongs to the sandbox, a fresh
/// PID namespace and session, a private `/tmp` per command, no network unless enabled,
/// and `--die-with-parent`.
///
/// It owns its filesystem: bound to a registry, the file tools act on its workspace (with
/// the same containment), whatever their `base_path`. Every process of a command lives in
/// the command's PID namespace, so when the command ends, times out or is cut off, they
/// are all gone.
///
/// Building fails, naming the package, when `bwrap` is missing or cannot create its
/// namespaces (user namespaces disabled): never a silent fallback to the host.
///
/// ```no_run
/// use harnessx_builtin::sandbox::BubblewrapSandbox;
///
/// let sandbox = BubblewrapSandbox::builder().workspace("/srv/project").build().unwrap();
/// assert_eq!(sandbox.mount(), std::path::Path::new("/workspace"));
/// ```
#[derive(Debug, Clone)]
pub struct BubblewrapSandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bwrap: PathBuf,
    /// Everything before `--`.
    args: Vec<OsString>,
    workspace: PathBuf,
    mount: PathBuf,
    limits: ProcessLimits,
    cgroup: Option<CgroupLimits>,
    env: Vec<(String, String)>,
    /// The workspace when the sandbox made it; removed when the last clone is dropped.
    _temporary: Option<tempfile::TempDir>,
}

/// How to build a [`BubblewrapSandbox`].
#[derive(Debug, Clone)]
#[must_use]
pub struct BubblewrapBuilder {
    workspace: Option<PathBuf>,
    mount: PathBuf,
    network: bool,
    limits: ProcessLimits,
    cgroup: Option<CgroupLimits>,
    bwrap: Option<PathBuf>,
}

impl BubblewrapSandbox {
    /// A sandbox over a new temporary workspace, with no network.
    pub fn new() -> Result<Self, SandboxError> {
        Self::builder().build()
    }

    /// Starts building a sandbox.
    pub fn builder() -> BubblewrapBuilder {
        BubblewrapBuilder {
            workspace: None,
            mount: PathBuf::from(DEFAULT_MOUNT),
            network: false,
            limits: ProcessLimits::default(),
            cgroup: Some(CgroupLimits::default()),
            bwrap: None,
        }
    }

    /// The workspace on the host.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// Where commands see the workspace (their working directory).
    pub fn mount(&self) -> &Path {
        &self.inner.mount
    }
}

impl BubblewrapBuilder {
    /// The host directory commands may write, which the file tools act on. It must exist.
    /// Default: a new temporary directory, removed with the sandbox.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Where commands see the workspace. Default: [`DEFAULT_MOUNT`].
    pub fn mount(mut self, path: impl Into<PathBuf>) -> Self {
        self.mount = path.into();
        self
    }

    /// Lets commands use the host's network (default: none, not even DNS).
    pub fn network(mut self, enabled: bool) -> Self {
        self.network = enabled;
        self
    }

    /// Resource limits for every command (see [`ProcessLimits`]).
    pub fn limits(mut self, limits: ProcessLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The cgroup each command runs in ([`CgroupLimits`]; default
    /// `Some(CgroupLimits::default())`); `None`: no cgroup of its own.
    pub fn cgroup(mut self, limits: Option<CgroupLimits>) -> Self {
        self.cgroup = limits;
        self
    }

    /// The `bwrap` program to use. Default: `bwrap` from `PATH`.
    pub fn bwrap(mut self, program: impl Into<PathBuf>) -> Self {
        self.bwrap = Some(program.into());
        self
    }

    /// Checks that `bwrap` exists and can build the sandbox here (by running `bash -c true`
    /// in it), and returns the sandbox.
    pub fn build(self) -> Result<BubblewrapSandbox, SandboxError> {
        let bwrap = match self.bwrap {
            Some(p) => p,
            None => find_program("bwrap").ok_or_else(|| {
                SandboxError(format!(
                    "the bubblewrap sandbox needs `bwrap`, which is not on PATH; {INSTALL_HINT}"
                ))
            })?,
        };
        if !self.mount.is_absolute() || self.mount == Path::new("/") {
            return Err(SandboxError(format!(
                "the workspace mount must be an absolute path other than /, not {}",
                self.mount.display()
            )));
        }
        let (workspace, temporary) = match self.workspace {
            Some(dir) => {
                let dir = std::fs::canonicalize(&dir).map_err(|e| {
                    SandboxError(format!("the sandbox workspace {} cannot be used: {e}", dir.display()))
                })?;
                if !dir.is_dir() {
                    return Err(SandboxError(format!(
                        "the sandbox workspace {} is not a directory",
                        dir.display()
                    )));
                }
                (dir, None)
            }
            None => {
                let temp = tempfile::Builder::new().prefix("harnessx-sandbox-").tempdir().map_err(|e| {
                    SandboxError(format!("could not create a temporary workspace for the sandbox: {e}"))
                })?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let args = arguments(&workspace, &self.mount, self.network);
        probe(&bwrap, &args)?;
        Ok(BubblewrapSandbox {
            inner: Arc::new(Inner {
                bwrap,
                args,
                workspace,
                mount: self.mount,
                limits: self.limits,
                cgroup: self.cgroup,
                env: base_env(),
                _temporary: temporary,
            }),
        })
    }
}

/// The `bwrap` arguments before `--`.
fn arguments(workspace: &Path, mount: &Path, network: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push =
        |items: &[&dyn AsRef<std::ffi::OsStr>]| args.extend(items.iter().map(|i| i.as_ref().to_owned()));
    push(&[&"--die-with-parent", &"--new-session", &"--unshare-all"]);
    if network {
        push(&[&"--share-net"]);
    }
    for dir in SYSTEM_DIRS {
        push(&[&"--ro-bind-try", &dir, &dir]);
    }
    for file in MASKED {
        if Path::new(file).exists() {
            push(&[&"--ro-bind", &"/dev/null", &file]);
        }
    }
    if network && Path::new("/run/systemd/resolve").is_dir() {
        // Where /etc/resolv.conf points on systemd-resolved hosts.
        push(&[&"--ro-bind", &"/run/systemd/resolve", &"/run/systemd/resolve"]);
    }
    push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);
    push(&[&"--bind", &workspace, &mount, &"--chdir", &mount]);
    // Last, once everything is mounted: nothing else under / is writable.
    push(&[&"--remount-ro", &"/"]);
    args
}

/// Runs `bash -c true` in the sandbox, to fail at build time rather than on the first call.
fn probe(bwrap: &Path, args: &[OsString]) -> Result<(), SandboxError> {
    let output = std::process::Command::new(bwrap)
        .args(args)
        .args(["--", "bash", "-c", "true"])
        .env_clear()
        .env("PATH", base_env().into_iter().find(|(k, _)| k == "PATH").map(|(_, v)| v).unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| SandboxError(format!("could not run {}: {e}; {INSTALL_HINT}", bwrap.display())))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(SandboxError(format!(
        "bubblewrap cannot create its sandbox on this machine ({}): it needs user namespaces \
         (`sysctl kernel.unprivileged_userns_clone=1`, `user.max_user_namespaces` above 0, and no \
         AppArmor rule against them) or to run as root, and `bash` under /usr; {INSTALL_HINT}",
        stderr.trim().lines().next().unwrap_or("no message")
    )))
}

impl Sandbox for BubblewrapSandbox {
    fn name(&self) -> &str {
        "bubblewrap"
    }

    fn run(&self, request: SandboxCommand) -> BoxFuture<Result<CommandOutput, SandboxError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let mut command = Command::new(&inner.bwrap);
            command
                .args(&inner.args)
                .args(["--", "bash", "-c"])
                .arg(&request.script)
                .env_clear()
                .envs(merged(&inner.env, &request.env))
                .stdin(Stdio::null());
            run_child(command, inner.limits, inner.cgroup.as_ref(), &request).await
        })
    }

    fn filesystem(&self) -> Option<SandboxFilesystem> {
        Some(SandboxFilesystem { root: self.inner.workspace.clone(), mount: self.inner.mount.clone() })
    }
}
