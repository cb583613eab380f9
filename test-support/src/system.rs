//! What the sandbox tests need from the machine: Debian packages installed on demand, and
//! a look at which processes are still alive.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of `program`, installing the Debian `package` that ships it with `apt-get`
/// when it is missing (once per test process). `None`, with the reason printed, only when
/// there is no `apt-get` to install it with; any other failure panics, since the tests
/// were promised the package.
pub fn ensure_debian_package(package: &str, program: &str) -> Option<PathBuf> {
    static INSTALLS: OnceLock<std::sync::Mutex<()>> = OnceLock::new();
    let _one_at_a_time = INSTALLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = find(program) {
        return Some(found);
    }
    let Some(apt) = find("apt-get") else {
        eprintln!("skipping: `{program}` is missing and there is no apt-get to install `{package}` with");
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
