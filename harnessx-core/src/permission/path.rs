//! Lexical path normalisation for permission rules: the path a file tool is given, as a
//! rule compares it. Nothing touches the filesystem (a rule is decided before the call
//! runs, and the file tools' own containment still applies when it does).

use std::borrow::Cow;
use std::path::Path;

/// `path` as a rule sees it, relative to `base` when it is inside: repeated `/`
/// collapsed, `.` dropped, `..` resolved lexically, an absolute path inside `base` made
/// relative; the base itself is `.`. A path that leaves `base` is absolute (joined to
/// `base`, normalised), so a relative rule (`src/**`) never matches it; without a base,
/// a leading `..` stays.
///
/// Returns the input borrowed when it is already in that form (the common case: no
/// allocation).
pub fn normalize<'a>(path: &'a str, base: Option<&Path>) -> Cow<'a, str> {
    if is_plain_relative(path) {
        return Cow::Borrowed(path);
    }
    let base_text = base.and_then(Path::to_str).filter(|b| b.starts_with('/'));
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    // A relative path with a base is resolved against it; an absolute one stands alone.
    let rooted = absolute || base_text.is_some();
    let joined_base = if absolute { None } else { base_text };
    for part in joined_base.into_iter().flat_map(|b| b.split('/')).chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if matches!(parts.last(), Some(&last) if last != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    if !rooted {
        return Cow::Owned(if parts.is_empty() { ".".to_owned() } else { parts.join("/") });
    }
    if let Some(base) = base_text {
        let base_parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        if parts.len() >= base_parts.len() && parts[..base_parts.len()] == base_parts[..] {
            let rest = &parts[base_parts.len()..];
            return Cow::Owned(if rest.is_empty() { ".".to_owned() } else { rest.join("/") });
        }
    }
    Cow::Owned(format!("/{}", parts.join("/")))
}

/// A relative path with no `.`, `..` or empty component: already normal.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && path.split('/').all(|p| !matches!(p, "" | "." | ".."))
}

/// Whether writing to `file` (as a shell redirection names it, relative to the working
/// directory `workspace`) stays inside `workspace`. Without a workspace, only relative
/// paths that never climb out count as inside.
pub fn stays_inside(file: &str, workspace: Option<&Path>) -> bool {
    let normal = normalize(file, workspace);
    !(normal.starts_with('/') || normal == ".." || normal.starts_with("../"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tricks_normalise_to_the_same_path() {
        let base = Some(Path::new("/work/p"));
        for (input, want) in [
            ("src/a.rs", "src/a.rs"),
            ("./src/a.rs", "src/a.rs"),
            ("src//a.rs", "src/a.rs"),
            ("src/x/../a.rs", "src/a.rs"),
            ("/work/p/src/a.rs", "src/a.rs"),
            ("/work/p//src/./a.rs", "src/a.rs"),
            (".", "."),
            ("/work/p", "."),
            ("../secret", "/work/secret"),
            ("src/../../secret", "/work/secret"),
            ("/etc/passwd", "/etc/passwd"),
            ("/../../etc", "/etc"),
        ] {
            assert_eq!(normalize(input, base), want, "{input}");
        }
        assert_eq!(normalize("../x", None), "../x");
        assert_eq!(normalize("a/../../x", None), "../x");
        assert!(matches!(normalize("src/a.rs", base), Cow::Borrowed(_)));
    }

    #[test]
    fn inside_or_not() {
        let base = Some(Path::new("/work/p"));
        assert!(stays_inside("out.txt", base));
        assert!(stays_inside("/work/p/x", base));
        assert!(!stays_inside("../x", base));
        assert!(!stays_inside("/tmp/x", base));
        assert!(!stays_inside("../x", None));
        assert!(!stays_inside("/tmp/x", None));
    }
}
