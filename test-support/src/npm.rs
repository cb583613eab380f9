//! Servers the tests need, from the npm registry, installed on demand into a cache folder
//! (never by hand): `@restatedev/restate-server` now, the MCP reference servers later.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where npm packages are installed: `$HX_NPM_CACHE`, else `~/.cache/harnessx/npm`, else a
/// folder under the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HX_NPM_CACHE") {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/harnessx/npm"),
        None => std::env::temp_dir().join("harnessx-npm-cache"),
    }
}

/// The folder `package@version` is installed in (its own prefix, so versions never mix),
/// installing it with `npm install` when missing. Several test processes may ask at once:
/// a lock file makes the others wait for the first install. `None`, with the reason
/// printed, only when there is no `npm` (under `CI` that panics: [`skip_or_fail`]); a
/// failed install panics with npm's output.
///
/// [`skip_or_fail`]: crate::skip_or_fail
pub fn ensure_npm_package(package: &str, version: &str) -> Option<PathBuf> {
    let Some(npm) = find("npm") else {
        crate::skip_or_fail(format_args!(
            "`npm` is missing, so {package}@{version} cannot be installed from the npm registry"
        ));
        return None;
    };
    let prefix = cache_dir().join(format!("{}@{version}", package.replace('/', "+")));
    std::fs::create_dir_all(&prefix).unwrap_or_else(|e| panic!("creating {}: {e}", prefix.display()));
    let lock = std::fs::File::create(prefix.join(".install.lock"))
        .unwrap_or_else(|e| panic!("creating the install lock in {}: {e}", prefix.display()));
    lock.lock().unwrap_or_else(|e| panic!("locking {}: {e}", prefix.display()));
    let done = prefix.join(".installed");
    if !done.exists() {
        let out = Command::new(npm)
            .args(["install", "--no-audit", "--no-fund", "--no-save", "--prefix"])
            .arg(&prefix)
            .arg(format!("{package}@{version}"))
            .output()
            .unwrap_or_else(|e| panic!("running npm: {e}"));
        assert!(
            out.status.success(),
            "npm install {package}@{version} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&done, b"").unwrap_or_else(|e| panic!("marking {} installed: {e}", prefix.display()));
    }
    Some(prefix)
}

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// `prefix/node_modules/<rel>` when it is a file.
pub fn installed_file(prefix: &Path, rel: &str) -> Option<PathBuf> {
    let path = prefix.join("node_modules").join(rel);
    path.is_file().then_some(path)
}
