//! Asking on the terminal: approving ASK calls (yes / no with a reason / always, with the
//! narrowest useful rule / edit the arguments), and progress lines that never land inside
//! a question.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::Duration;

use harnessx::permission::suggest_rule;
use harnessx::{ApprovalDecision, ApprovalRequest, PermissionLevel, PermissionManager};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;

/// Held while a question is on the terminal, so progress lines of other calls wait
/// instead of landing in the middle of the prompt.
static TERMINAL: Mutex<()> = Mutex::new(());

fn terminal() -> MutexGuard<'static, ()> {
    TERMINAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Holds the terminal for a question (progress lines wait meanwhile).
pub(crate) fn hold() -> MutexGuard<'static, ()> {
    terminal()
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

/// `ask_user`'s way of asking from the command line: on this terminal, the question (and
/// its suggested replies) on stderr and the reply typed as a line; with no one here, no
/// reply (the model proceeds on its own reading).
pub(crate) async fn ask_user(question: String, choices: Vec<String>) -> Option<String> {
    if !interactive() {
        return None;
    }
    let choices = if choices.is_empty() { String::new() } else { format!(" ({})", choices.join(" / ")) };
    errln!("? {question}{choices}");
    crate::output::emit(std::io::stderr(), format_args!("> "));
    let cancelled = std::sync::Arc::new(AtomicBool::new(false));
    let reading = cancelled.clone();
    let line = tokio::task::spawn_blocking(move || next_line(&reading)).await.ok().flatten();
    line.filter(|l| !l.trim().is_empty())
}

/// Approve every ASK call (`--yes`).
pub(crate) fn approve_all(manager: PermissionManager) -> PermissionManager {
    manager.with_approval_fn(|_| async { ApprovalDecision::Approve })
}

/// What "always" needs: the folder path rules are relative to, and the project's rules
/// file to save a rule in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Always {
    pub(crate) base: Option<PathBuf>,
    pub(crate) project_file: Option<PathBuf>,
}

/// Ask on the terminal, one question at a time: yes / no (with a reason for the model) /
/// always (the narrowest useful rule, for this session, or saved to the project's rules
/// file) / edit the arguments.
pub(crate) fn prompt_on_terminal(manager: PermissionManager, always: Always) -> PermissionManager {
    let one_at_a_time = Arc::new(AsyncMutex::new(()));
    // "always" adds its rule to this manager. (The callback then holds the manager it is
    // set on: both live as long as the command.)
    let rules_to = manager.clone();
    let always = Arc::new(always);
    manager.with_approval_fn(move |request: ApprovalRequest| {
        let lock = one_at_a_time.clone();
        let rules_to = rules_to.clone();
        let always = always.clone();
        async move {
            let _turn = lock.lock().await;
            // A question whose run is stopped (Ctrl-C in `chat`) stops waiting, and takes
            // no line of what is typed next.
            let cancelled = Arc::new(AtomicBool::new(false));
            let _cancel = CancelOnDrop(cancelled.clone());
            tokio::task::spawn_blocking(move || ask(&request, &always, &rules_to, &cancelled))
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

/// One answer typed at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    Yes,
    No(Option<String>),
    Always,
    Save,
    Edit,
}

/// `y`, `n [REASON]`, `a`, `s`, `e` (or the words); anything else is no.
fn choice(line: &str) -> Choice {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Choice::Yes,
        "a" | "always" => Choice::Always,
        "s" | "save" => Choice::Save,
        "e" | "edit" => Choice::Edit,
        "n" | "no" if !rest.is_empty() => Choice::No(Some(rest.to_owned())),
        _ => Choice::No(None),
    }
}

fn shorten(mut text: String, at: usize) -> String {
    if text.len() > at {
        let mut cut = at;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

fn ask(
    request: &ApprovalRequest,
    always: &Always,
    rules_to: &PermissionManager,
    cancelled: &AtomicBool,
) -> ApprovalDecision {
    let args = shorten(request.arguments.to_string(), 300);
    let rule = suggest_rule(&request.tool_name, &request.arguments, always.base.as_deref());
    let _terminal = terminal();
    let mut stderr = std::io::stderr();
    loop {
        let save = match &always.project_file {
            Some(file) => format!(" / [s]ave that rule to {}", file.display()),
            None => String::new(),
        };
        let _ = write!(
            stderr,
            "Allow {} {args}?\n  [y]es / [n]o (n REASON tells the model why) / [a]lways: {rule} this session{save} / [e]dit the arguments: ",
            request.tool_name
        );
        let _ = stderr.flush();
        let Some(line) = next_line(cancelled) else { return ApprovalDecision::Deny };
        return match choice(&line) {
            Choice::Yes => ApprovalDecision::Approve,
            Choice::No(None) => ApprovalDecision::Deny,
            Choice::No(Some(message)) => ApprovalDecision::DenyWithMessage { message },
            Choice::Always | Choice::Save => {
                let saving = choice(&line) == Choice::Save;
                if let Err(e) = rules_to.add_rule(PermissionLevel::Allow, &rule) {
                    let _ = writeln!(stderr, "harnessx: cannot use {rule}: {e}");
                    return ApprovalDecision::ApproveForSession;
                }
                if saving && let Some(file) = &always.project_file {
                    match crate::setup::rules::save_allow_rule(file, &rule) {
                        Ok(()) => {
                            let _ = writeln!(stderr, "harnessx: saved {rule} to {}", file.display());
                        }
                        Err(e) => {
                            let _ = writeln!(stderr, "harnessx: could not save the rule: {e}");
                        }
                    }
                }
                ApprovalDecision::Approve
            }
            Choice::Edit => match edit(&request.arguments, &mut stderr, cancelled) {
                Some(arguments) if arguments == request.arguments => ApprovalDecision::Approve,
                Some(arguments) => ApprovalDecision::ApproveEdited { arguments, for_session: false },
                // Edit abandoned: ask again.
                None => continue,
            },
        };
    }
}

/// The arguments edited in `$VISUAL` / `$EDITOR` (a temporary file), or typed as one line
/// of JSON when neither is set. `None` when the person gives up (an empty line, an
/// editor that failed).
fn edit(arguments: &Value, stderr: &mut std::io::Stderr, cancelled: &AtomicBool) -> Option<Value> {
    let editor = ["VISUAL", "EDITOR"].into_iter().filter_map(std::env::var_os).find(|e| !e.is_empty());
    loop {
        let text = match &editor {
            Some(editor) => in_editor(editor, arguments, stderr)?,
            None => {
                let _ = write!(stderr, "Arguments as one line of JSON (empty: back): ");
                let _ = stderr.flush();
                let line = next_line(cancelled)?;
                if line.trim().is_empty() {
                    return None;
                }
                line
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => return Some(value),
            Ok(_) => {
                let _ = writeln!(stderr, "harnessx: the arguments must be a JSON object");
            }
            Err(e) => {
                let _ = writeln!(stderr, "harnessx: not valid JSON: {e}");
            }
        }
        if editor.is_some() {
            let _ = write!(stderr, "Edit again? [y/n]: ");
            let _ = stderr.flush();
            if choice(&next_line(cancelled)?) != Choice::Yes {
                return None;
            }
        }
    }
}

fn in_editor(editor: &std::ffi::OsStr, arguments: &Value, stderr: &mut std::io::Stderr) -> Option<String> {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let file = std::env::temp_dir().join(format!("harnessx-arguments-{}-{nanos}.json", std::process::id()));
    let pretty = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    std::fs::write(&file, pretty + "\n").ok()?;
    // Through the shell, as git does: `EDITOR="code --wait"` has arguments.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("$HARNESSX_EDITOR \"$1\"")
        .arg("harnessx")
        .arg(&file)
        .env("HARNESSX_EDITOR", editor)
        .status();
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    match status {
        Ok(s) if s.success() => text.ok(),
        Ok(s) => {
            let _ = writeln!(stderr, "harnessx: the editor exited with {s}; the arguments were not changed");
            None
        }
        Err(e) => {
            let _ = writeln!(stderr, "harnessx: could not start the editor: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(choice("y\n"), Choice::Yes);
        assert_eq!(choice("YES"), Choice::Yes);
        assert_eq!(choice("n"), Choice::No(None));
        assert_eq!(choice("n  use git diff instead \n"), Choice::No(Some("use git diff instead".into())));
        assert_eq!(choice("no thanks"), Choice::No(Some("thanks".into())));
        assert_eq!(choice("a"), Choice::Always);
        assert_eq!(choice("save"), Choice::Save);
        assert_eq!(choice("e"), Choice::Edit);
        assert_eq!(choice(""), Choice::No(None));
        assert_eq!(choice("whatever"), Choice::No(None));
    }
}
