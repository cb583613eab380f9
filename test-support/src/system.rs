//! What the sandbox tests need from the machine: Debian packages installed on demand, and
//! a look at which processes are still alive.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of `program`, installing the Debian `package` that ships it with `apt-get`
/// when it is missing (once per test process). `None`, with the reason printed, only when
/// there is no `apt-get` to install it with (under `CI` that panics: [`skip_or_fail`]); any
/// other failure panics, since the tests were promised the package.
///
/// [`skip_or_fail`]: crate::skip_or_fail
pub fn ensure_debian_package(package: &str, program: &str) -> Option<PathBuf> {
    static INSTALLS: OnceLock<std::sync::Mutex<()>> = OnceLock::new();
    let _one_at_a_time = INSTALLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = find(program) {
        return Some(found);
    }
    let Some(apt) = find("apt-get") else {
        crate::skip_or_fail(format_args!(
            "`{program}` is missing and there is no apt-get to install `{package}` with"
        ));
        return None;
    };
    let install = |args: &[&str]| {
        std::process::Command::new(&apt)
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap_or_else(|e| panic!("running apt-get: {e}"))
    };
    let mut out = install(&["install", "-y", "--no-install-recommends", package]);
    if !out.status.success() {
        // A fresh machine may have no package lists yet.
        let _ = install(&["update"]);
        out = install(&["install", "-y", "--no-install-recommends", package]);
    }
    assert!(
        out.status.success(),
        "apt-get install {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(find(program).unwrap_or_else(|| panic!("`{package}` is installed but `{program}` is not on PATH")))
}

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The pids of live (not zombie) processes whose command line contains `marker`: how a
/// test names the processes a command started (`exec -a MARKER ...`) and checks they are
/// gone, from outside any PID namespace.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().chars().next()))
                .flatten()
                .is_some_and(|state| !matches!(state, 'Z' | 'X'));
            alive && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// A pids cgroup a test puts a harness in, as an operator would (`pids.max`, systemd's
/// `TasksMax=`): a child of this process's own pids cgroup (cgroup v1's `pids` hierarchy,
/// else cgroup v2 when its `pids` controller is enabled for children), so a fork bomb
/// inside it can never take more than the cap. Dropping it kills whatever is still in it
/// (never this process, which it moves back out first) and removes it.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
    /// The `cgroup.procs` this process moves back to.
    home: PathBuf,
}

impl PidsCgroup {
    /// A new pids cgroup with `pids.max` set to `max`. `None`, with the reason printed,
    /// when this machine has no writable pids controller (not root, no such controller);
    /// under `CI` that panics instead ([`skip_or_fail`]), since CI runs as root on a
    /// machine that has one.
    ///
    /// [`skip_or_fail`]: crate::skip_or_fail
    pub fn new(max: u64) -> Option<Self> {
        match Self::create(max) {
            Ok(cgroup) => Some(cgroup),
            Err(why) => {
                crate::skip_or_fail(format_args!("no writable pids cgroup here ({why})"));
                None
            }
        }
    }

    fn create(max: u64) -> Result<Self, String> {
        let home = own_pids_cgroup().ok_or("no pids controller in /proc/self/cgroup and the mounts")?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = home.join(format!("hx-test-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let cgroup = Self { dir, home: home.join("cgroup.procs") };
        cgroup.set_max(max);
        Ok(cgroup)
    }

    /// The cgroup's folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Sets `pids.max`.
    pub fn set_max(&self, max: u64) {
        let file = self.dir.join("pids.max");
        std::fs::write(&file, max.to_string()).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    }

    /// `pids.current`: the tasks (processes and threads) in it now.
    pub fn current(&self) -> u64 {
        let file = self.dir.join("pids.current");
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("reading {}", file.display()))
    }

    /// Moves this whole process (every thread) into the cgroup; dropping the cgroup moves
    /// it back.
    pub fn enter(&self) {
        let file = self.dir.join("cgroup.procs");
        std::fs::write(&file, std::process::id().to_string())
            .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    }

    /// A command that runs `program` with `args` inside the cgroup (`sh` joins it, then
    /// `exec`s the program, so the program's pid is the child's).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.dir)
            .arg(program.as_ref());
        command
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let me = std::process::id().to_string();
        let _ = std::fs::write(&self.home, &me);
        // Whatever is left (a bomb the code under test failed to stop) is killed until the
        // cgroup is empty, so that it can never keep loading the machine.
        for _ in 0..5000 {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<&str> = procs.split_whitespace().filter(|p| *p != me).collect();
            if pids.is_empty() && std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            for pid in pids {
                let _ = std::process::Command::new("kill").args(["-KILL", pid]).status();
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        eprintln!("could not empty and remove the test cgroup {}", self.dir.display());
    }
}

/// This process's own pids cgroup folder: in cgroup v1's `pids` hierarchy, else in
/// cgroup v2 when the `pids` controller is enabled there for children.
fn own_pids_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mount = |fstype: &str, option: Option<&str>| {
        mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let ok = f.len() > 3 && f[2] == fstype && option.is_none_or(|o| f[3].split(',').any(|x| x == o));
            ok.then(|| PathBuf::from(f[1]))
        })
    };
    let path_of = |controllers: &str| {
        cgroups.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, c, p) = (f.next()?, f.next()?, f.next()?);
            (c.split(',').any(|x| x == controllers) || (controllers.is_empty() && c.is_empty()))
                .then(|| p.trim_start_matches('/').to_owned())
        })
    };
    if let (Some(root), Some(path)) = (mount("cgroup", Some("pids")), path_of("pids")) {
        return Some(root.join(path));
    }
    let dir = mount("cgroup2", None)?.join(path_of("")?);
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    enabled.split_whitespace().any(|c| c == "pids").then_some(dir)
}
