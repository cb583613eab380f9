//! Asking on the terminal: approving ASK calls (yes / no / always for this session), and
//! progress lines that never land inside a question.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use harnessx::{ApprovalDecision, ApprovalRequest, PermissionManager};
use tokio::sync::Mutex as AsyncMutex;

/// Held while a question is on the terminal, so progress lines of other calls wait
/// instead of landing in the middle of the prompt.
static TERMINAL: Mutex<()> = Mutex::new(());

fn terminal() -> MutexGuard<'static, ()> {
    TERMINAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Progress lines for stderr that never land inside a question: while one is being asked
/// they are held back (the run goes on), and printed once the terminal is free again.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    held: Vec<String>,
}

impl Progress {
    /// Prints a line now, or holds it while a question is on the terminal.
    pub(crate) fn line(&mut self, line: String) {
        self.held.push(line);
        if let Ok(_free) = TERMINAL.try_lock() {
            for line in self.held.drain(..) {
                errln!("{line}");
            }
        }
    }

    /// Prints whatever is held, waiting for the terminal if needed.
    pub(crate) fn flush(&mut self) {
        let _free = terminal();
        for line in self.held.drain(..) {
            errln!("{line}");
        }
    }
}

/// Whether a person can answer on this terminal.
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Approve every ASK call (`--yes`).
pub(crate) fn approve_all(manager: PermissionManager) -> PermissionManager {
    manager.with_approval_fn(|_| async { ApprovalDecision::Approve })
}

/// Ask on the terminal, one question at a time. "always" grants the tool for the session.
pub(crate) fn prompt_on_terminal(manager: PermissionManager) -> PermissionManager {
    let one_at_a_time = Arc::new(AsyncMutex::new(()));
    manager.with_approval_fn(move |request: ApprovalRequest| {
        let lock = one_at_a_time.clone();
        async move {
            let _turn = lock.lock().await;
            tokio::task::spawn_blocking(move || ask(&request)).await.unwrap_or(ApprovalDecision::Deny)
        }
    })
}

fn ask(request: &ApprovalRequest) -> ApprovalDecision {
    let mut args = request.arguments.to_string();
    if args.len() > 300 {
        let mut cut = 300;
        while !args.is_char_boundary(cut) {
            cut -= 1;
        }
        args.truncate(cut);
        args.push('…');
    }
    let _terminal = terminal();
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "Allow {} {args}? [y]es / [n]o / [a]lways this session: ", request.tool_name);
    let _ = stderr.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return ApprovalDecision::Deny;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::Approve,
        "a" | "always" => ApprovalDecision::ApproveForSession,
        _ => ApprovalDecision::Deny,
    }
}
