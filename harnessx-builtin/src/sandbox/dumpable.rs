//! This process made non-dumpable (`PR_SET_DUMPABLE` 0) while any [`LocalSandbox`]
//! exists: its `/proc/PID` files (`environ`, `mem`, `maps`, the `fd` folder) then belong
//! to root, and `ptrace` by a process of the same user is refused, so a local command
//! (same user, no namespace) cannot read the harness's environment and its provider keys
//! through `/proc/$PPID/environ`. It does not stop root: that is what the shell's own
//! namespaces are for ([`super::isolate`]), and where none can be made a harness run as
//! root is open to its commands. It turns off core dumps and debugger attachment of the
//! harness meanwhile. The kernel resets the flag on `execve`, so the sandbox's shell and commands
//! are dumpable as usual.
//!
//! [`LocalSandbox`]: super::LocalSandbox

use std::sync::{Arc, Mutex};

use rustix::process::{DumpableBehavior, dumpable_behavior, set_dumpable_behavior};

/// Live holders, and the setting to restore when the last goes.
static HOLDERS: Mutex<(usize, Option<DumpableBehavior>)> = Mutex::new((0, None));

/// Held by every [`LocalSandbox`](super::LocalSandbox) (clones share one).
#[derive(Debug)]
pub(crate) struct Undumpable(());

impl Undumpable {
    /// This process is non-dumpable while the returned value (or a clone of it) lives.
    pub(crate) fn hold() -> Arc<Self> {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        if holders.0 == 0 {
            let before = dumpable_behavior().ok();
            match set_dumpable_behavior(DumpableBehavior::NotDumpable) {
                Ok(()) => holders.1 = before,
                Err(e) => tracing::warn!(
                    error = %e,
                    "could not make the harness non-dumpable: local commands of the same user can read its /proc files, its environment included"
                ),
            }
        }
        holders.0 += 1;
        Arc::new(Self(()))
    }
}

impl Drop for Undumpable {
    fn drop(&mut self) {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        holders.0 = holders.0.saturating_sub(1);
        if holders.0 == 0
            && let Some(before) = holders.1.take()
            && let Err(e) = set_dumpable_behavior(before)
        {
            tracing::warn!(error = %e, "could not make the harness dumpable again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_is_non_dumpable_while_held_and_as_before_after() {
        // Other unit tests may hold sandboxes concurrently, so "after" is checked (under
        // the lock) only when no holder is left.
        let held = Undumpable::hold();
        assert_eq!(dumpable_behavior().unwrap(), DumpableBehavior::NotDumpable);
        let clone = held.clone();
        drop(held);
        assert_eq!(dumpable_behavior().unwrap(), DumpableBehavior::NotDumpable, "a clone still holds it");
        drop(clone);
        let holders = HOLDERS.lock().unwrap();
        if holders.0 == 0 {
            assert_eq!(dumpable_behavior().unwrap(), DumpableBehavior::Dumpable);
        }
    }
}
