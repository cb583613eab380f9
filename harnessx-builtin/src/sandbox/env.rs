//! The environment a command gets: an allow-list, never the host process's whole
//! environment (which holds provider keys and other secrets).

/// `PATH` when the host has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The variables a command starts with: `PATH`, `HOME` and `LANG` as the host has them
/// (`LANG` defaults to `C.UTF-8`), and `TERM=dumb`. Callers add their own on top.
pub(crate) fn base_env() -> Vec<(String, String)> {
    let host = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    let mut env = vec![("PATH".to_owned(), host("PATH").unwrap_or_else(|| DEFAULT_PATH.to_owned()))];
    if let Some(home) = host("HOME") {
        env.push(("HOME".to_owned(), home));
    }
    env.push(("LANG".to_owned(), host("LANG").unwrap_or_else(|| "C.UTF-8".to_owned())));
    env.push(("TERM".to_owned(), "dumb".to_owned()));
    env
}

/// `base` with `added` on top (an added key replaces a base one).
pub(crate) fn merged(base: &[(String, String)], added: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        base.iter().filter(|(k, _)| !added.iter().any(|(a, _)| a == k)).cloned().collect();
    env.extend(added.iter().cloned());
    env
}
