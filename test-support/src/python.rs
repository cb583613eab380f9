//! Python packages the tests need (the official MCP client, `mcp` on PyPI), installed on
//! demand into a virtual environment in a cache folder (never by hand), beside the npm
//! cache.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A driver of the official MCP client (`mcp` 2.3): give it the server and a JSON list
/// of steps on standard input; it prints one JSON line per step (see its docstring).
pub const MCP_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/python/mcp_client.py");

/// The pinned official MCP client, for [`ensure_venv`].
pub const MCP_PACKAGES: [&str; 1] = ["mcp==2.3.0"];

/// Where virtual environments are made: `$HX_PYTHON_CACHE`, else
/// `~/.cache/harnessx/python`, else a folder under the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HX_PYTHON_CACHE") {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/harnessx/python"),
        None => std::env::temp_dir().join("harnessx-python-cache"),
    }
}

/// The virtual environment `name` with `packages` (pinned: `mcp==2.3.0`) installed by
/// `pip`, made when missing or when it was made with other packages. Several test
/// processes may ask at once: a lock file makes the others wait for the first install.
/// `None`, with the reason printed, only when there is no `python3` or it lacks its
/// `venv` module (under `CI` that panics: [`skip_or_fail`]); a failed install panics with
/// pip's output.
///
/// [`skip_or_fail`]: crate::skip_or_fail
pub fn ensure_venv(name: &str, packages: &[&str]) -> Option<PathBuf> {
    let Some(python) = find("python3") else {
        crate::skip_or_fail(format_args!(
            "`python3` is missing, so {packages:?} cannot be installed from PyPI"
        ));
        return None;
    };
    let has_venv = Command::new(&python)
        .args(["-c", "import venv, ensurepip"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !has_venv {
        crate::skip_or_fail(format_args!(
            "{} has no `venv`/`ensurepip` module (Debian: python3-venv), so {packages:?} cannot be installed",
            python.display()
        ));
        return None;
    }
    let dir = cache_dir().join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let lock = std::fs::File::create(dir.join(".install.lock"))
        .unwrap_or_else(|e| panic!("creating the install lock in {}: {e}", dir.display()));
    lock.lock().unwrap_or_else(|e| panic!("locking {}: {e}", dir.display()));
    let done = dir.join(".installed");
    let wanted = packages.join("\n");
    if std::fs::read_to_string(&done).ok().as_deref() != Some(wanted.as_str()) {
        let _ = std::fs::remove_file(&done);
        let venv = dir.join("venv");
        run(Command::new(&python).args(["-m", "venv", "--clear"]).arg(&venv), "python3 -m venv");
        run(
            Command::new(venv_python(&dir))
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(packages),
            &format!("pip install {}", packages.join(" ")),
        );
        std::fs::write(&done, wanted).unwrap_or_else(|e| panic!("marking {} installed: {e}", dir.display()));
    }
    Some(dir)
}

/// The interpreter of a virtual environment [`ensure_venv`] made.
pub fn venv_python(dir: &Path) -> PathBuf {
    dir.join("venv/bin/python")
}

fn run(command: &mut Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("running {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// The time the official client (the [`MCP_CLIENT`] driver in the venv at `venv`) took
/// for `calls` calls of `tool` with `arguments` on one session, after `warmup` untimed
/// ones, by the script's own clock (the interpreter's start and the handshake left out).
/// `server` is the driver's server flags: `["--http", URL]` or `["--stdio", CMD, ARGS..]`.
pub fn time_calls(
    venv: &Path,
    server: &[&str],
    tool: &str,
    arguments: &serde_json::Value,
    calls: u64,
    warmup: u64,
) -> std::time::Duration {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(venv_python(venv))
        .arg(MCP_CLIENT)
        .args(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the Python client");
    let steps = serde_json::json!([{"bench": tool, "arguments": arguments, "n": calls, "warmup": warmup}]);
    child.stdin.take().unwrap().write_all(steps.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the Python client failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let first = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_owned();
    let report: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    std::time::Duration::from_secs_f64(report["seconds"].as_f64().expect("seconds"))
}
