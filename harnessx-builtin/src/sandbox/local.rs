//! [`LocalSandbox`]: commands on the host, under this process's user.
//!
//! Each sandbox keeps one `bash` running (started on the first command, restarted if it
//! dies): the *shell*, in PID and mount namespaces of its own where they can be made
//! ([`super::isolate`]). It leads its own session and is a child subreaper, and it runs
//! every command in a fresh subshell it forks, with the command's stdout and stderr on
//! two FIFOs this process reads. A daemon a command leaves behind (`setsid`, double fork)
//! is re-parented to the shell, so the sweep after each command finds it there. Forking a
//! subshell from a running shell is much cheaper than starting `bash` for every command.
//!
//! The protocol on the shell's stdin (a socket): this process writes
//! `R ID DIR_LEN ENV_LEN SCRIPT_LEN\n` and then the three byte strings; the shell opens
//! `ID.out` and `ID.err` in its FIFO folder, forks the subshell, answers `S ID\n` (the
//! subshell holds the FIFOs now), waits for it and answers `E ID STATUS\n`.

use std::fmt::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Instant;

use harnessx_core::{BoxFuture, CommandEnd, CommandOutput, Sandbox, SandboxCommand, SandboxError};
use rustix::fs::{CWD, FileType, Mode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;
use tokio::sync::Mutex;

use super::capture::Capture;
use super::cgroup::{CgroupLimits, CommandCgroup};
use super::dumpable::Undumpable;
use super::env::base_env;
use super::find_program;
use super::isolate::{self, Isolation, Report, Started};
use super::run::{Outcome, TreeGuard, drain, drive, output, prepare};
use super::spawn::{ProcessLimits, prepare_child};
use super::sweep::{Epoch, children, kill_tree, kill_under};

/// The shell's loop (see the module documentation). `$1` is the FIFO folder. Its own
/// variables are unset before the script runs, and `set --` leaves the script no
/// positional parameters, as under `bash -c`. It runs with `--norc`: Debian's bash
/// otherwise reads `~/.bashrc` when its stdin is a socket (taking itself to be started by
/// sshd). It ends when its stdin does, that is when this process closes the socket or
/// dies.
const SHELL: &str = r#"
while IFS=' ' read -r hx_r hx_id hx_nd hx_ne hx_ns; do
  IFS= LC_ALL=C read -r -N "$hx_nd" hx_dir
  IFS= LC_ALL=C read -r -N "$hx_ne" hx_env
  IFS= LC_ALL=C read -r -N "$hx_ns" hx_script
  exec 3>"$1/$hx_id.out" 4>"$1/$hx_id.err"
  ( exec 1>&3 2>&4 3>&- 4>&- </dev/null
    cd -- "$hx_dir" || exit 1
    eval "$hx_env"
    eval "unset hx_r hx_id hx_nd hx_ne hx_ns hx_dir hx_env hx_script; set --; $hx_script" ) &
  exec 3>&- 4>&-
  printf 'S %s\n' "$hx_id" >&0
  wait "$!"
  printf 'E %s %s\n' "$hx_id" "$?" >&0
done
"#;

/// Commands run on the host as this process's user, in a working directory of your choice;
/// the file tools stay on the host, under their own `base_path`.
///
/// What it stops: a command outliving its call. On exit, timeout, output limit or a
/// dropped call, every process the command started (including `setsid` and double-fork
/// daemons) is found under the sandbox's shell, frozen and killed. What it does not stop:
/// anything the user could do — it reads and writes what this process can, and reaches
/// the network. Use [`BubblewrapSandbox`](super::BubblewrapSandbox) to confine commands.
///
/// Each command runs in a cgroup of its own where it can ([`LocalSandbox::cgroup`]).
///
/// The harness's environment (`/proc/$PPID/environ`, with the provider keys) is kept from
/// commands two ways. Where the kernel allows it (root with `CAP_SYS_ADMIN`, or user
/// namespaces), the shell runs in PID and mount namespaces of its own with a fresh `/proc`:
/// commands see only their own processes, and neither the harness nor any other host
/// process, for root too. And while any local sandbox exists, this process is non-dumpable
/// (`PR_SET_DUMPABLE` 0), so a command of the same user cannot read its `/proc` files;
/// where no namespace can be made, that is all there is, and root's commands can read
/// them. Core dumps and debuggers of the harness are off meanwhile. See
/// `docs/builtin-bash.md` for exactly what remains visible in each case.
///
/// Clones share one shell; commands on one sandbox run one at a time.
///
/// ```no_run
/// use harnessx_builtin::sandbox::LocalSandbox;
///
/// let sandbox = LocalSandbox::new().working_dir("/srv/project");
/// ```
#[derive(Debug, Clone)]
pub struct LocalSandbox {
    /// `None` when no `bash` was found: each command then fails, saying so.
    bash: Option<PathBuf>,
    working_dir: Option<PathBuf>,
    limits: ProcessLimits,
    cgroup: Option<CgroupLimits>,
    shell: Arc<Mutex<Option<Shell>>>,
    _undumpable: Arc<Undumpable>,
}

impl LocalSandbox {
    /// A local sandbox running `bash` from `PATH` in this process's working directory.
    /// Without a `bash`, building still works (so that loading every bundle does) and each
    /// command fails, saying so. The shell starts with the first command.
    pub fn new() -> Self {
        Self {
            bash: find_program("bash"),
            working_dir: None,
            limits: ProcessLimits::default(),
            cgroup: Some(CgroupLimits::default()),
            shell: Arc::new(Mutex::new(None)),
            _undumpable: Undumpable::hold(),
        }
    }

    /// Runs commands in `dir` instead of this process's working directory.
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets resource limits on every command (see [`ProcessLimits`] for what the kernel
    /// counts). This sandbox gets a shell of its own, apart from its clones'.
    pub fn limits(mut self, limits: ProcessLimits) -> Self {
        self.limits = limits;
        self.shell = Arc::new(Mutex::new(None));
        self
    }

    /// The cgroup each command runs in ([`CgroupLimits`]; default
    /// `Some(CgroupLimits::default())`); `None`: no cgroup of its own.
    pub fn cgroup(mut self, limits: Option<CgroupLimits>) -> Self {
        self.cgroup = limits;
        self
    }

    /// The working directory, if one was set.
    pub fn working_directory(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }
}

impl Default for LocalSandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox for LocalSandbox {
    fn name(&self) -> &str {
        "local"
    }

    fn run(&self, request: SandboxCommand) -> BoxFuture<Result<CommandOutput, SandboxError>> {
        let sandbox = self.clone();
        Box::pin(async move {
            let Some(bash) = sandbox.bash.clone() else {
                return Err(SandboxError(
                    "the local sandbox needs `bash`, which is not on PATH or in /usr/bin or /bin; install bash".into(),
                ));
            };
            let dir = match &sandbox.working_dir {
                Some(dir) => dir.clone(),
                None => std::env::current_dir().map_err(|e| {
                    SandboxError(format!("this process's working directory cannot be used: {e}"))
                })?,
            };
            let mut slot = sandbox.shell.lock().await;
            let shell = match slot.take() {
                Some(shell) => shell.or_restart(&bash, sandbox.limits)?,
                None => Shell::start(&bash, sandbox.limits)?,
            };
            let shell = slot.insert(shell);
            let result = shell.run(&dir, sandbox.cgroup.as_ref(), &request).await;
            if result.is_err() {
                // Whatever went wrong, the next command gets a new shell.
                slot.take();
            }
            result
        })
    }
}

/// The running shell of a [`LocalSandbox`].
#[derive(Debug)]
struct Shell {
    /// The process spawned: the shell itself, or, in namespaces of its own, the process
    /// that waits for it outside them (see [`super::isolate`]).
    child: Child,
    /// The shell's pid, in this process's PID namespace.
    pid: i32,
    in_namespaces: bool,
    /// The shell's stdin: requests go in, `S`/`E` lines come out.
    control: StdUnixStream,
    fifos: tempfile::TempDir,
    next_id: u64,
}

impl Shell {
    /// A new shell: in PID and mount namespaces of its own where they may be made, else on
    /// the host's processes.
    fn start(bash: &Path, limits: ProcessLimits) -> Result<Self, SandboxError> {
        if isolate::wanted() {
            if let Some(shell) = Self::spawn(bash, limits, true)? {
                return Ok(shell);
            }
            isolate::give_up();
            tracing::warn!(
                "the local sandbox's namespaces were made but a fresh /proc in them was refused: its shells now run on the host's processes"
            );
        }
        Self::spawn(bash, limits, false)?
            .ok_or_else(|| SandboxError("could not start the local shell (a bug: it reported half-made namespaces without being asked for any)".into()))
    }

    /// `None` when `isolate` and the namespaces were made but not finished (the spawned
    /// process has exited, and nothing ran).
    fn spawn(bash: &Path, limits: ProcessLimits, isolate: bool) -> Result<Option<Self>, SandboxError> {
        let io = |what: &'static str| {
            move |e: std::io::Error| SandboxError(format!("could not start the local shell ({what}): {e}"))
        };
        let fifos =
            tempfile::Builder::new().prefix("harnessx-local-").tempdir().map_err(io("FIFO folder"))?;
        let (ours, theirs) = StdUnixStream::pair().map_err(io("socket"))?;
        ours.set_nonblocking(true).map_err(io("socket"))?;
        let (isolation, report) = if isolate {
            let (isolation, report) = Isolation::new().map_err(io("pipe"))?;
            (Some(isolation), Some(report))
        } else {
            (None, None)
        };
        let mut command = std::process::Command::new(bash);
        command
            .args(["--norc", "--noprofile", "-c", SHELL, "bash"])
            .arg(fifos.path())
            .env_clear()
            .envs(base_env())
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // No parent-death signal: the shell ends by itself when this process's end of the
        // socket closes, whichever thread started it.
        prepare_child(&mut command, limits, false, Vec::new(), isolation);
        let epoch = Epoch::now();
        let mut child = command.spawn().map_err(io("spawn"))?;
        // With it goes the hook, which holds the report's write end.
        drop(command);
        let spawned = i32::try_from(child.id()).expect("pids fit in i32");
        let started = report.map_or(Started::OnTheHost, Report::read);
        let pid = match started {
            Started::OnTheHost => spawned,
            Started::InNamespaces => {
                if let [shell] = children(spawned, epoch)[..] {
                    shell
                } else {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(SandboxError("the local shell exited as it started".into()));
                }
            }
            Started::HalfMade => {
                let status = child.wait();
                tracing::debug!(?status, "the local shell's namespaces were half made");
                return Ok(None);
            }
        };
        if isolate && started == Started::OnTheHost {
            on_the_host();
        }
        Ok(Some(Self {
            child,
            pid,
            in_namespaces: started == Started::InNamespaces,
            control: ours,
            fifos,
            next_id: 0,
        }))
    }

    /// This shell if it still runs, else a new one.
    fn or_restart(mut self, bash: &Path, limits: ProcessLimits) -> Result<Self, SandboxError> {
        if self.alive() { Ok(self) } else { Self::start(bash, limits) }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    async fn run(
        &mut self,
        dir: &Path,
        cgroup: Option<&CgroupLimits>,
        request: &SandboxCommand,
    ) -> Result<CommandOutput, SandboxError> {
        let (helper, cgroup) = prepare(cgroup)?;
        let started = Instant::now();
        let failed =
            |what: &str, e: std::io::Error| SandboxError(format!("the local shell failed ({what}): {e}"));
        self.next_id += 1;
        let id = self.next_id;
        let epoch = Epoch::now();
        let (out_path, err_path) =
            (self.fifos.path().join(format!("{id}.out")), self.fifos.path().join(format!("{id}.err")));
        let _cleanup = Unlink([out_path.clone(), err_path.clone()]);
        let mut open = pipe::OpenOptions::new();
        open.unchecked(true);
        let mut ours = Vec::with_capacity(2);
        let mut readers = Vec::with_capacity(2);
        for path in [&out_path, &err_path] {
            rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0)
                .map_err(|e| failed("FIFO", e.into()))?;
            readers.push(open.open_receiver(path).map_err(|e| failed("FIFO", e))?);
            // Our own write end, until the subshell holds its own: a reader with no writer
            // reads end-of-file.
            let writer = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(path)
                .map_err(|e| failed("FIFO", e))?;
            ours.push(writer);
        }
        let stderr = readers.pop().expect("two");
        let stdout = readers.pop().expect("two");
        let mut capture = Capture::new(Box::new(stdout), Box::new(stderr), request.output_limit);

        let mut control = UnixStream::from_std(self.control.try_clone().map_err(|e| failed("socket", e))?)
            .map_err(|e| failed("socket", e))?;
        let message = request_bytes(id, dir, cgroup.as_ref(), &request.env, &request.script);
        let guard = TreeGuard { pid: self.pid, epoch, kill: kill_under, armed: true, cgroup };
        control.write_all(&message).await.map_err(|e| failed("request", e))?;
        // The shell answers `S` once the subshell holds the FIFOs; then only the command's
        // processes keep them open, and their end-of-file means the command's are gone.
        let ended = async {
            read_answer(&mut control, 'S', id).await?;
            drop(ours);
            read_answer(&mut control, 'E', id).await
        };
        let outcome = drive(&mut capture, ended, request.timeout).await.map_err(|e| failed("answer", e))?;
        let outcome = match outcome {
            Outcome::Finished(status) => Outcome::Finished(CommandEnd::Exited { code: status }),
            Outcome::TimedOut => Outcome::TimedOut,
            Outcome::Limit => Outcome::Limit,
        };
        guard.finish(helper).await?;
        drain(&mut capture).await;
        Ok(output(outcome, capture, started))
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        if self.alive() {
            if self.in_namespaces {
                // The namespace goes with its pid 1 (the kernel kills the rest); the spawned
                // process then exits. The pid is the shell's until that process is reaped.
                if let Some(pid) = rustix::process::Pid::from_raw(self.pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            } else {
                kill_tree(self.pid, Epoch::now());
            }
        }
        let _ = self.child.wait();
    }
}

/// Says once per process that local shells run on the host's processes: a warning as
/// root, whose commands can then read the harness's environment.
fn on_the_host() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        if rustix::process::geteuid().is_root() {
            tracing::warn!(
                "no PID and mount namespace could be made for the local sandbox (root without CAP_SYS_ADMIN, and no user namespace): its commands, run as root, can read the harness's environment in /proc; use the bubblewrap sandbox"
            );
        } else {
            tracing::info!(
                "no user namespace could be made for the local sandbox: its commands see the host's processes (the harness's /proc files stay closed to them: it is non-dumpable)"
            );
        }
    });
}

/// Removes a command's FIFOs however its run ends.
struct Unlink([PathBuf; 2]);

impl Drop for Unlink {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `R ID DIR_LEN ENV_LEN SCRIPT_LEN\n`, then the directory, the line the subshell runs
/// before the script (joining `cgroup`, then the `export`s of `env`, single-quoted), and
/// the script. A subshell that cannot join its cgroup exits 125 before the script runs.
fn request_bytes(
    id: u64,
    dir: &Path,
    cgroup: Option<&CommandCgroup>,
    env: &[(String, String)],
    script: &str,
) -> Vec<u8> {
    let dir = dir.as_os_str().as_encoded_bytes();
    let mut exports = String::new();
    for procs in cgroup.map(CommandCgroup::procs_files).unwrap_or_default() {
        let quoted = format!("'{}'", procs.to_string_lossy().replace('\'', r"'\''"));
        let _ = write!(
            exports,
            "{{ echo 0 >{quoted}; }} 2>/dev/null || {{ echo \"harnessx: the command could not join its cgroup\" {quoted} >&2; exit 125; }}; "
        );
    }
    for (key, value) in env {
        let _ = write!(exports, "export '{}'; ", format!("{key}={value}").replace('\'', r"'\''"));
    }
    let mut message = format!("R {id} {} {} {}\n", dir.len(), exports.len(), script.len()).into_bytes();
    message.extend_from_slice(dir);
    message.extend_from_slice(exports.as_bytes());
    message.extend_from_slice(script.as_bytes());
    message
}

/// Reads the shell's lines until `KIND ID ...` for this command (lines of earlier,
/// abandoned commands are skipped); returns the number after the id (the exit status of
/// an `E` line).
async fn read_answer(control: &mut UnixStream, kind: char, id: u64) -> std::io::Result<i32> {
    loop {
        let mut line = Vec::with_capacity(24);
        let mut byte = [0u8; 1];
        loop {
            if control.read(&mut byte).await? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the sandbox's shell exited during the command (was it killed?); the next command starts a new one",
                ));
            }
            if byte[0] == b'\n' {
                break;
            }
            line.push(byte[0]);
        }
        let line = String::from_utf8_lossy(&line);
        let mut fields = line.split(' ');
        let (k, i, rest) = (fields.next(), fields.next(), fields.next());
        if k == Some(&*kind.to_string()) && i.and_then(|i| i.parse::<u64>().ok()) == Some(id) {
            return Ok(rest.and_then(|r| r.parse().ok()).unwrap_or(0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_lengths_in_bytes_and_quote_the_environment() {
        let env = [("A".to_owned(), "it's".to_owned())];
        let bytes = request_bytes(7, Path::new("/tmp/é"), None, &env, "echo é");
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, "R 7 7 20 7\n/tmp/éexport 'A=it'\\''s'; echo é");
    }
}
