//! Killing a command's whole process tree: every process under its first process, which is
//! a child subreaper (see [`super::spawn`]), so that daemons which left the session or
//! the process group are still found under it.
//!
//! The tree is read from `/proc` (each process's parent), frozen with `SIGSTOP` until a
//! read finds nothing new (a stopped process cannot fork, so even a fork bomb stops
//! growing; each new process's whole group is stopped in one call, which catches most of
//! a bomb at once), then killed with `SIGKILL`, first process last.
//!
//! A command in its own PID namespace ([`kill_namespace`]) is simpler: killing the
//! namespace's init makes the kernel kill everything in it.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// Rounds of "read the tree, stop what is new" before killing regardless.
const MAX_FREEZE_ROUNDS: usize = 10_000;

/// How long to wait for killed processes to be gone from `/proc`.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// Kills `root` and every process under it. `root` must be a live (not yet reaped) child
/// of this process, so that its pid cannot have been reused.
pub(crate) fn kill_tree(root: i32, epoch: Epoch) {
    sweep(root, epoch, false);
}

/// Kills every process under `root` and leaves `root` running (stopped for the sweep,
/// then continued): the local sandbox's shell, which outlives its commands.
pub(crate) fn kill_under(root: i32, epoch: Epoch) {
    sweep(root, epoch, true);
}

fn sweep(root: i32, epoch: Epoch, keep_root: bool) {
    let Some(root_pid) = Pid::from_raw(root) else { return };
    let finish_root = || signal(root, if keep_root { Signal::CONT } else { Signal::KILL });
    // Stopped, the root cannot fork; if nothing is under it then (a command that exited
    // and left nothing behind), nothing else can, and the sweep is over.
    signal(root, Signal::STOP);
    if descendants(root, epoch).is_empty() {
        finish_root();
        return;
    }
    // The root leads its own session and process group: freeze what is still in the group
    // in one call, before reading the tree.
    let _ = kill_process_group(root_pid, Signal::STOP);
    let mut stopped: HashSet<i32> = HashSet::new();
    let mut groups: HashSet<i32> = HashSet::from([root]);
    for _ in 0..MAX_FREEZE_ROUNDS {
        let live = descendants(root, epoch);
        let new: Vec<(i32, i32)> = live.into_iter().filter(|(p, _)| !stopped.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for (pid, group) in new {
            // Every group here is in the root's session (a process can only join groups
            // of its own session), never this process's.
            if let Some(group) = Pid::from_raw(group).filter(|_| groups.insert(group)) {
                let _ = kill_process_group(group, Signal::STOP);
            }
            signal(pid, Signal::STOP);
            stopped.insert(pid);
        }
    }
    for &pid in &stopped {
        signal(pid, Signal::KILL);
    }
    if !keep_root {
        let _ = kill_process_group(root_pid, Signal::KILL);
    }
    // Anything forked between the last read and the kills (there should be nothing: every
    // process read was stopped) is caught here.
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        let live = descendants(root, epoch);
        if live.is_empty() || Instant::now() >= deadline {
            break;
        }
        for (pid, _) in live {
            signal(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    finish_root();
}

fn signal(pid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = kill_process(pid, sig);
    }
}

/// Kills `root`, the first process of a command whose other processes all live in a PID
/// namespace whose init is `root`'s child and dies with it (bubblewrap's
/// `--die-with-parent`), and waits until the namespace is empty: its init is reaped only
/// after the kernel has killed and reaped everything else in it. `root` must be a live
/// (not yet reaped) child of this process.
pub(crate) fn kill_namespace(root: i32, epoch: Epoch) {
    let inits = children(root, epoch);
    // Killing `root` kills the init too (`--die-with-parent`); killing the init directly
    // as well starts the namespace's teardown without waiting for that.
    signal(root, Signal::KILL);
    for &init in &inits {
        signal(init, Signal::KILL);
    }
    let deadline = Instant::now() + GONE_WITHIN;
    while Instant::now() < deadline && inits.iter().any(|&pid| stat(pid).is_some_and(|s| !is_dead(s.0))) {
        std::thread::sleep(Duration::from_millis(2));
    }
    // Whatever escaped the namespace (nothing should) is under no root any more; the
    // init's children, if any outlived it, are caught here while they still hang from it.
    for pid in inits {
        if stat(pid).is_some_and(|s| !is_dead(s.0)) {
            signal(pid, Signal::KILL);
        }
    }
}

/// The live children of `root` created since `epoch`.
pub(crate) fn children(root: i32, epoch: Epoch) -> Vec<i32> {
    descendants(root, epoch)
        .into_iter()
        .filter(|&(pid, _)| stat(pid).is_some_and(|s| s.1 == root))
        .map(|p| p.0)
        .collect()
}

fn is_dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// Where pid allocation stood just before a command started: the machine's count of
/// created processes (`processes` in `/proc/stat`) and the last pid handed out. A sweep
/// uses it to read only the processes created since, when it can prove pid allocation
/// has not wrapped around in between.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch {
    forks: Option<u64>,
    last_pid: Option<u64>,
}

impl Epoch {
    /// Where allocation stands now; take it before the command starts.
    pub(crate) fn now() -> Self {
        Self { forks: forks_since_boot(), last_pid: read_number("/proc/sys/kernel/ns_last_pid") }
    }

    /// The highest pid no process of the command can have: the last pid handed out before
    /// it started, when allocation has not wrapped since; else 0 (every process must be
    /// read).
    ///
    /// Pids are handed out in increasing order, wrapping from `pid_max` to 300. Every
    /// process of the command was created after the epoch; if the last pid handed out now
    /// is at or above the one then, and fewer than `pid_max - 300` processes were created
    /// in between, allocation cannot have gone all the way round, so all of them have
    /// higher pids. Reading three small files costs far less than reading every process's
    /// `stat`, which is what keeps a command's round trip short.
    fn floor(self) -> i32 {
        let (Some(before), Some(then), Some(now), Some(last), Some(max)) = (
            self.forks,
            self.last_pid,
            forks_since_boot(),
            read_number("/proc/sys/kernel/ns_last_pid"),
            read_number("/proc/sys/kernel/pid_max"),
        ) else {
            return 0;
        };
        if last >= then && now.saturating_sub(before) < max.saturating_sub(300) {
            i32::try_from(then).unwrap_or(0)
        } else {
            0
        }
    }
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Processes created since boot, from `/proc/stat`.
fn forks_since_boot() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines().find_map(|l| l.strip_prefix("processes "))?.trim().parse().ok()
}

/// The live (not zombie) processes under `root`, with their process groups, read from
/// `/proc`: only those with pids above the epoch's floor (see `Epoch::floor`).
fn descendants(root: i32, epoch: Epoch) -> Vec<(i32, i32)> {
    let floor = epoch.floor();
    let mut children: HashMap<i32, Vec<(i32, i32)>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid <= floor {
            continue;
        }
        if let Some((_, ppid, group)) = stat(pid).filter(|s| !is_dead(s.0)) {
            children.entry(ppid).or_default().push((pid, group));
        }
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        if let Some(kids) = children.get(&pid) {
            for &kid in kids {
                out.push(kid);
                queue.push(kid.0);
            }
        }
    }
    out
}

/// A process's state letter, parent pid and process group, from `/proc/PID/stat`:
/// `PID (COMM) S PPID PGRP ..`, where COMM may hold spaces and parentheses, so the fields
/// start after the last `)`.
fn stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, ppid, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_reads_this_process() {
        let (state, ppid, _) = stat(std::process::id() as i32).unwrap();
        assert!(state.is_ascii_alphabetic());
        assert_eq!(ppid, rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()));
    }
}
