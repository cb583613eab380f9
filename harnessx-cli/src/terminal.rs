//! Asking on the terminal: approving ASK calls (yes / no / always for this session), and
//! progress lines that never land inside a question.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::Duration;

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
            // A question whose run is stopped (Ctrl-C in `chat`) stops waiting, and takes
            // no line of what is typed next.
            let cancelled = Arc::new(AtomicBool::new(false));
            let _cancel = CancelOnDrop(cancelled.clone());
            tokio::task::spawn_blocking(move || ask(&request, &cancelled))
                .await
                .unwrap_or(ApprovalDecision::Deny)
        }
    })
}

/// Sets its flag when dropped: the future waiting for an answer went away.
pub(crate) struct CancelOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The lines of standard input, read by one thread and handed to whoever asks next (an
/// approval question, `chat`'s prompt), so that a reader that stops waiting leaves the
/// next line to the next reader.
fn lines() -> &'static Mutex<mpsc::Receiver<String>> {
    static LINES: OnceLock<Mutex<mpsc::Receiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.lock().read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if tx.send(line).is_err() => break,
                    Ok(_) => {}
                }
            }
        });
        // Without the thread there is no input to read: the channel ends at once.
        drop(spawned);
        Mutex::new(rx)
    })
}

/// The next line of standard input (without its line end), or `None` at its end or once
/// `cancelled` is set. Blocks: call it off the async threads.
pub(crate) fn next_line(cancelled: &AtomicBool) -> Option<String> {
    let lines = lines().lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if cancelled.load(Ordering::SeqCst) {
            return None;
        }
        match lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => return Some(line.trim_end_matches(['\n', '\r']).to_owned()),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

fn ask(request: &ApprovalRequest, cancelled: &AtomicBool) -> ApprovalDecision {
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
    let Some(line) = next_line(cancelled) else { return ApprovalDecision::Deny };
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::Approve,
        "a" | "always" => ApprovalDecision::ApproveForSession,
        _ => ApprovalDecision::Deny,
    }
}
