//! Approving ASK calls on the terminal: yes / no / always for this session.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use harnessx_core::{ApprovalDecision, ApprovalRequest, PermissionManager};
use tokio::sync::Mutex;

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
    let one_at_a_time = Arc::new(Mutex::new(()));
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
