//! A parallel directory walk that never leaves the directory it starts in.
//!
//! ripgrep's own walker (`ignore::WalkParallel`) reads directories by path, which would
//! follow a directory swapped for a symlink between listing and reading it. This walk
//! reaches every child relative to its parent's descriptor with `O_NOFOLLOW`, as the
//! containment layer does, and borrows ripgrep's rules: hidden entries are skipped, and
//! `.ignore` and `.gitignore` files (read through the same no-follow descriptors, parsed by
//! `ignore::gitignore`) exclude what they name; a deeper file beats a shallower one, and
//! `.ignore` beats `.gitignore`. Symlinks are never followed; FIFOs, sockets and devices
//! are never opened.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType};

use crate::fs::contain::{open_child_dir, quoted, read_entries, read_small_file};

/// Largest ignore file read.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// What a walk reads and skips.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkConfig {
    /// Visit hidden entries (names starting with `.`).
    pub(crate) hidden: bool,
    /// Apply `.ignore` and `.gitignore` files.
    pub(crate) ignore_files: bool,
    /// Worker threads.
    pub(crate) threads: usize,
}

impl Default for WalkConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        Self { hidden: false, ignore_files: true, threads }
    }
}

/// A regular file found by the walk (by its directory entry; it is not opened).
pub(crate) struct FileEntry<'a> {
    /// The directory that holds it.
    pub(crate) dir: &'a OwnedFd,
    /// Its name in that directory.
    pub(crate) name: &'a CStr,
    /// Its path relative to the scope's root (bytes; may not be UTF-8).
    pub(crate) rel: &'a [u8],
}

/// One level of ignore rules: the files of one directory, and the levels above.
struct IgnoreLevel {
    parent: Option<Arc<IgnoreLevel>>,
    /// Length of the directory's relative path plus its `/` (0 for the start directory
    /// when it is the root), so `rel[prefix..]` is relative to the directory.
    prefix: usize,
    /// `.ignore` first (it takes precedence), then `.gitignore`.
    matchers: Vec<Gitignore>,
}

fn is_ignored(mut level: Option<&Arc<IgnoreLevel>>, rel: &[u8], is_dir: bool) -> bool {
    while let Some(l) = level {
        let sub = Path::new(OsStr::from_bytes(rel.get(l.prefix..).unwrap_or(rel)));
        for m in &l.matchers {
            match m.matched(sub, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        level = l.parent.as_ref();
    }
    false
}

/// The ignore files of `dir`; `entries`, when known, saves opening absent ones.
fn load_ignores(dir: &OwnedFd, entries: Option<&[(CString, FileType)]>) -> Vec<Gitignore> {
    let mut out = Vec::new();
    for file in [c".ignore", c".gitignore"] {
        if entries.is_some_and(|e| !e.iter().any(|(n, _)| n.as_c_str() == file)) {
            continue;
        }
        let Some(bytes) = read_small_file(dir.as_fd(), file, MAX_IGNORE_FILE) else { continue };
        let mut builder = GitignoreBuilder::new(".");
        for line in String::from_utf8_lossy(&bytes).lines() {
            // A malformed line is skipped, as ripgrep does.
            let _ = builder.add_line(None, line);
        }
        if let Ok(gi) = builder.build()
            && !gi.is_empty()
        {
            out.push(gi);
        }
    }
    out
}

/// The ignore rules in force where a walk starts: those of the directories above it
/// (up to the root), so searching a subdirectory honours the root's `.gitignore`.
#[derive(Clone, Default)]
pub(crate) struct Ignores(Option<Arc<IgnoreLevel>>);

impl Ignores {
    /// Adds the ignore files of the directory `dir`, whose path relative to the root is
    /// `rel`, as a deeper level than those already held.
    pub(crate) fn push_dir(self, dir: &OwnedFd, rel: &[u8]) -> Self {
        let matchers = load_ignores(dir, None);
        if matchers.is_empty() {
            return self;
        }
        Self(Some(Arc::new(IgnoreLevel { parent: self.0, prefix: prefix_len(rel), matchers })))
    }
}

/// A directory waiting to be read: opened (the start) or named under its parent.
enum Pending {
    Open(OwnedFd),
    Child { parent: Arc<OwnedFd>, name: CString },
}

struct Work {
    dir: Pending,
    rel: Vec<u8>,
    ignore: Option<Arc<IgnoreLevel>>,
}

struct Queue {
    stack: Vec<Work>,
    active: usize,
}

/// What a walk could not read (a directory removed, replaced by a link, or unreadable).
#[derive(Debug, Default)]
pub(crate) struct WalkReport {
    /// Directories skipped because they could not be opened or read.
    pub(crate) unreadable: usize,
    /// Whether a visitor stopped the walk early.
    pub(crate) stopped: bool,
}

/// Walks the directory `start` (whose path relative to the root is `start_rel`, empty for
/// the root; `inherited` holds the ignore rules of the directories above it) on `config.threads` threads. Each thread gets its own state from `init` and
/// calls `visit` for every regular file; `visit` returns `false` to stop the whole walk.
/// Returns every thread's state.
pub(crate) fn walk<S, I, V>(
    start: OwnedFd,
    start_rel: &[u8],
    inherited: Ignores,
    config: WalkConfig,
    init: I,
    visit: V,
) -> (Vec<S>, WalkReport)
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &FileEntry<'_>) -> bool + Sync,
{
    let queue = Mutex::new(Queue {
        stack: vec![Work {
            dir: Pending::Open(start),
            rel: start_rel.to_vec(),
            ignore: if config.ignore_files { inherited.0 } else { None },
        }],
        active: 0,
    });
    let ready = Condvar::new();
    let stop = AtomicBool::new(false);
    let unreadable = AtomicUsize::new(0);
    let threads = config.threads.max(1);
    let states = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut state = init();
                    worker(&queue, &ready, &stop, &unreadable, config, &mut state, &visit);
                    state
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let report = WalkReport { unreadable: unreadable.into_inner(), stopped: stop.into_inner() };
    (states, report)
}

fn lock(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(|e| e.into_inner())
}

fn worker<S, V>(
    queue: &Mutex<Queue>,
    ready: &Condvar,
    stop: &AtomicBool,
    unreadable: &AtomicUsize,
    config: WalkConfig,
    state: &mut S,
    visit: &V,
) where
    V: Fn(&mut S, &FileEntry<'_>) -> bool,
{
    loop {
        let work = {
            let mut q = lock(queue);
            loop {
                if stop.load(Ordering::Relaxed) {
                    ready.notify_all();
                    return;
                }
                if let Some(w) = q.stack.pop() {
                    q.active += 1;
                    break w;
                }
                if q.active == 0 {
                    ready.notify_all();
                    return;
                }
                q = ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let children = read_dir(work, config, unreadable, stop, state, visit);
        let mut q = lock(queue);
        q.active -= 1;
        if !children.is_empty() {
            q.stack.extend(children.into_iter().rev());
            ready.notify_all();
        } else if q.active == 0 && q.stack.is_empty() {
            ready.notify_all();
        }
    }
}

/// Reads one directory: visits its files, returns its subdirectories to walk.
fn read_dir<S, V>(
    work: Work,
    config: WalkConfig,
    unreadable: &AtomicUsize,
    stop: &AtomicBool,
    state: &mut S,
    visit: &V,
) -> Vec<Work>
where
    V: Fn(&mut S, &FileEntry<'_>) -> bool,
{
    let fd = match work.dir {
        Pending::Open(fd) => Ok(fd),
        Pending::Child { parent, name } => open_child_dir(parent.as_fd(), &name),
    };
    // A directory that vanished or was swapped for a link or a file since it was listed is
    // skipped; nothing is ever opened through the link.
    let Ok(fd) = fd else {
        unreadable.fetch_add(1, Ordering::Relaxed);
        return Vec::new();
    };
    let Ok(entries) = read_entries(&fd) else {
        unreadable.fetch_add(1, Ordering::Relaxed);
        return Vec::new();
    };
    let ignore = if config.ignore_files {
        let matchers = load_ignores(&fd, Some(&entries));
        if matchers.is_empty() {
            work.ignore
        } else {
            let prefix = prefix_len(&work.rel);
            Some(Arc::new(IgnoreLevel { parent: work.ignore, prefix, matchers }))
        }
    } else {
        None
    };
    let dir = Arc::new(fd);
    let mut children = Vec::new();
    for (name, ftype) in entries {
        let bytes = name.to_bytes();
        if !config.hidden && bytes.first() == Some(&b'.') {
            continue;
        }
        let ftype = match ftype {
            FileType::Unknown => {
                match rustix::fs::statat(&*dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(s) => FileType::from_raw_mode(s.st_mode),
                    Err(_) => continue,
                }
            }
            t => t,
        };
        let is_dir = match ftype {
            FileType::Directory => true,
            FileType::RegularFile => false,
            // Links are never followed; FIFOs, sockets and devices are never opened.
            _ => continue,
        };
        let mut rel = Vec::with_capacity(work.rel.len() + 1 + bytes.len());
        rel.extend_from_slice(&work.rel);
        if !work.rel.is_empty() && !work.rel.ends_with(b"/") {
            rel.push(b'/');
        }
        rel.extend_from_slice(bytes);
        if ignore.is_some() && is_ignored(ignore.as_ref(), &rel, is_dir) {
            continue;
        }
        if is_dir {
            children.push(Work {
                dir: Pending::Child { parent: dir.clone(), name },
                rel,
                ignore: ignore.clone(),
            });
        } else if !visit(state, &FileEntry { dir: &dir, name: &name, rel: &rel }) {
            stop.store(true, Ordering::Relaxed);
            return Vec::new();
        }
    }
    children
}

/// Length of `rel` plus the `/` that joins it to a child's name (none for an empty path,
/// or one that already ends with `/`), so `child_rel[prefix_len(rel)..]` is the child's
/// path relative to `rel`.
pub(crate) fn prefix_len(rel: &[u8]) -> usize {
    if rel.is_empty() || rel.ends_with(b"/") { rel.len() } else { rel.len() + 1 }
}

/// A path pattern as `glob` and grep's file filter apply it: without a `/` it matches a
/// file's name at any depth (as `rg -g` does); with one, the path relative to the directory
/// searched.
pub(crate) struct PathPattern {
    matcher: globset::GlobMatcher,
    by_name: bool,
}

impl PathPattern {
    /// Compiles `pattern`; the error text is for the model.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = globset::GlobBuilder::new(trimmed)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("invalid glob pattern {}: {}", quoted(pattern), e.kind()))?;
        Ok(Self { matcher: glob.compile_matcher(), by_name: !trimmed.contains('/') })
    }

    /// Whether the file (name, path relative to the searched directory) matches.
    pub(crate) fn is_match(&self, name: &[u8], rel_to_start: &[u8]) -> bool {
        let candidate = if self.by_name { name } else { rel_to_start };
        self.matcher.is_match(Path::new(OsStr::from_bytes(candidate)))
    }
}
