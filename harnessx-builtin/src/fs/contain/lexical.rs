//! The lexical half of containment: a model-given path becomes components under the root
//! before any system call sees it. Nothing here touches the filesystem, so nothing here
//! can be raced; the descriptor-relative resolution that follows does the rest.

use std::ffi::CString;
use std::path::Path;

use super::error::{FsError, quoted};

/// Normalizes a model-given path to components under the root: `.` and empty components
/// dropped, `..` may not climb above the root, an absolute path accepted only when it names
/// the root or a place under it, a NUL byte refused. `roots` are the root's absolute
/// names: where it is on the host and, for a sandbox's workspace, where the sandbox's
/// commands see it.
pub(super) fn normalize<'a>(path: &'a str, roots: &[&Path]) -> Result<Vec<&'a str>, FsError> {
    if path.contains('\0') {
        return Err(FsError::new("refused: the path contains a NUL byte"));
    }
    let mut rel = path;
    if path.starts_with('/') {
        // An absolute path is accepted only when it names the root or a place under it,
        // compared component by component (so `/data-evil` is not under `/data`).
        let stripped =
            roots.iter().find_map(|root| Path::new(path).strip_prefix(root).ok()).and_then(|p| p.to_str());
        match stripped {
            Some(p) => rel = p,
            None => {
                // The path is not echoed: it names a host place outside the root.
                return Err(FsError::new(
                    "refused: the path is an absolute path outside the root; use a path relative to the root",
                ));
            }
        }
    }
    let mut comps: Vec<&str> = Vec::new();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.pop().is_none() {
                    return Err(FsError::new(format!(
                        "refused: {} leads outside the root (`..` may not climb above it)",
                        quoted(path)
                    )));
                }
            }
            c => comps.push(c),
        }
    }
    Ok(comps)
}

/// Components joined back into the path shown to the model (and handed to `openat2`).
pub(super) fn join(comps: &[&str]) -> String {
    comps.join("/")
}

/// One component as a C string for the `*at` calls.
pub(super) fn cstring(name: &str, display: &str) -> Result<CString, FsError> {
    CString::new(name).map_err(|_| FsError::new(format!("refused: {} contains a NUL byte", quoted(display))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_paths_under_the_root() {
        let root = &[Path::new("/data")][..];
        assert_eq!(normalize("a/./b//c", root).unwrap(), ["a", "b", "c"]);
        assert_eq!(normalize("a/../b", root).unwrap(), ["b"]);
        assert_eq!(normalize("", root).unwrap(), Vec::<&str>::new());
        assert_eq!(normalize("/data/x", root).unwrap(), ["x"]);
        assert_eq!(normalize("/data", root).unwrap(), Vec::<&str>::new());
        assert!(normalize("..", root).unwrap_err().to_string().contains("outside the root"));
        assert!(normalize("a/../../b", root).is_err());
        assert!(normalize("/data-evil/x", root).unwrap_err().to_string().contains("absolute path outside"));
        assert!(normalize("/etc/passwd", root).is_err());
        assert!(normalize("a\0b", root).unwrap_err().to_string().contains("NUL"));
    }

    #[test]
    fn a_sandbox_workspace_answers_to_both_of_its_names() {
        let roots = &[Path::new("/tmp/ws"), Path::new("/workspace")][..];
        assert_eq!(normalize("/workspace/a/b", roots).unwrap(), ["a", "b"]);
        assert_eq!(normalize("/tmp/ws/a", roots).unwrap(), ["a"]);
        assert_eq!(normalize("a", roots).unwrap(), ["a"]);
        assert!(normalize("/workspace-x/a", roots).is_err());
        assert!(normalize("/workspace/../etc", roots).unwrap_err().to_string().contains("outside the root"));
    }
}
