//! `harnessx chat` under a pseudo-terminal, as a person uses it: two turns of one
//! conversation, Ctrl-C in the middle of a tool call (the turn stops, the session goes
//! on), and a conversation that goes on after its process was killed.
//!
//! The terminal is a pty opened with rustix; the command runs in a session of its own
//! whose controlling terminal is that pty (`setsid --ctty`, util-linux), so a Ctrl-C
//! typed there is a SIGINT, exactly as in a terminal emulator.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harnessx_test_support::skip_or_fail;

/// How long any one expected text may take to appear.
const PATIENCE: Duration = Duration::from_secs(60);

/// `harnessx` on a pseudo-terminal: what it printed so far (stdout and stderr
/// together, as a terminal shows them), and a keyboard.
pub(crate) struct Terminal {
    child: Child,
    keyboard: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of the screen earlier expectations consumed.
    seen: usize,
}

impl Terminal {
    /// Starts `harnessx ARGS` in `dir` on a new pty; `None` (after `skip_or_fail`) where
    /// no pty or no `setsid` can be had.
    pub(crate) fn start(dir: &Path, path_prefix: Option<&Path>, args: &[&str]) -> Option<Self> {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        if Command::new("setsid").arg("--version").output().is_err() {
            skip_or_fail("no setsid (util-linux) to give the command a controlling terminal");
            return None;
        }
        let master = match openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC) {
            Ok(master) => master,
            Err(e) => {
                skip_or_fail(format!("no pseudo-terminal: {e}"));
                return None;
            }
        };
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new().read(true).write(true).open(name.to_str().unwrap()).unwrap();
        let mut command = Command::new("setsid");
        command
            .arg("--ctty")
            .arg(env!("CARGO_BIN_EXE_harnessx"))
            .args(args)
            .current_dir(dir)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("XDG_CONFIG_HOME", dir.join("no-config"))
            .env("TERM", "dumb")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        if let Some(prefix) = path_prefix {
            let path = std::env::var("PATH").unwrap_or_default();
            command.env("PATH", format!("{}:{path}", prefix.display()));
        }
        let child = command.spawn().expect("starting setsid harnessx");
        let master = std::fs::File::from(master);
        let keyboard = master.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let shown = screen.clone();
        std::thread::spawn(move || {
            let mut master = master;
            let mut buf = [0u8; 4096];
            // Ends with EIO once every holder of the pty's other side is gone.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Some(Self { child, keyboard, screen, seen: 0 })
    }

    pub(crate) fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits until `text` appears after what earlier expectations consumed; returns
    /// everything up to and including it.
    pub(crate) fn expect(&mut self, text: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(self.seen..).and_then(|rest| rest.find(text)) {
                let end = self.seen + at + text.len();
                let got = screen[self.seen..end].to_owned();
                self.seen = end;
                return got;
            }
            assert!(started.elapsed() < PATIENCE, "no {text:?} on the terminal; it shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the test model's whole answer and the next prompt; returns all of it.
    fn answer(&mut self) -> String {
        let mut got = self.expect("offline test model");
        got.push_str(&self.expect("\n> "));
        got
    }

    pub(crate) fn type_line(&mut self, line: &str) {
        self.keyboard.write_all(format!("{line}\r").as_bytes()).unwrap();
    }

    fn ctrl(&mut self, key: u8) {
        self.keyboard.write_all(&[key - b'a' + 1]).unwrap();
    }

    /// Waits for the command to exit; its status.
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < PATIENCE, "still running; it shows:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A folder to chat in, with a file for the file tools to find.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# Demo\nA folder about parsers.\n").unwrap();
    dir
}

/// The conversation's id, from the line the session starts with.
fn session_id(screen: &str) -> String {
    let at = screen.find("conversation ").expect("the session says its id") + "conversation ".len();
    screen[at..].split(|c: char| c == ';' || c.is_whitespace()).next().unwrap().to_owned()
}

#[test]
fn chat_two_turns_continue_one_conversation() {
    let dir = workspace();
    let chat = ["chat", "--durable", "chat.db", "--tools", "list_directory,read_file,glob,grep"];
    let Some(mut term) = Terminal::start(dir.path(), None, &chat) else { return };
    let start = term.expect("Ctrl-D ends");
    assert!(start.contains("built-in test model"), "{start}");
    term.type_line("What is in this folder?");
    let first = term.answer();
    assert!(first.contains("offline test model"), "{first}");
    assert!(first.contains("→ list_directory"), "streamed progress: {first}");
    assert!(first.contains("README.md"), "it read the file it found: {first}");
    term.type_line("Tell me about the parsers.");
    let second = term.answer();
    assert!(
        second.contains(
            "This conversation has 2 prompts so far; the one before this was: \"What is in this folder?\""
        ),
        "the second turn continues the first: {second}"
    );
    term.ctrl(b'd');
    term.expect("continue this conversation with: harnessx chat --session");
    let end = term.expect("\n");
    assert!(end.contains("--durable chat.db"), "{end}");
    assert!(term.wait().success(), "{}", term.screen());
}

#[test]
fn ctrl_c_in_a_tool_call_stops_the_turn_and_not_the_session() {
    let dir = workspace();
    // The test model runs `run_bash` with the command `a`: here, a program that blocks
    // the first time (until Ctrl-C stops the turn) and answers at once afterwards.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let marker = dir.path().join("ran-once");
    std::fs::write(
        bin.join("a"),
        format!(
            "#!/bin/sh\nif [ -e '{0}' ]; then echo quick; else touch '{0}'; exec sleep 300; fi\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("a"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let chat = ["chat", "--durable", "chat.db", "--tools", "run_bash", "--yes"];
    let Some(mut term) = Terminal::start(dir.path(), Some(&bin), &chat) else { return };
    term.expect("Ctrl-D ends");
    term.type_line("Run the slow thing.");
    term.expect("→ run_bash");
    // The tool is running (blocked in `sleep`): stop the turn.
    let started = Instant::now();
    while !marker.exists() {
        assert!(started.elapsed() < PATIENCE, "the tool never started: {}", term.screen());
        std::thread::sleep(Duration::from_millis(20));
    }
    term.ctrl(b'c');
    let stopped = term.expect("goes on from the answer before it");
    assert!(stopped.contains("stopped turn"), "{stopped}");
    assert!(term.child.try_wait().unwrap().is_none(), "the session is still running");
    // The session goes on: the next prompt is a turn of its own, which runs to its answer.
    term.type_line("Now the quick one.");
    let next = term.answer();
    assert!(next.contains("quick"), "{next}");
    assert!(
        !next.contains("This conversation has"),
        "the stopped turn is not part of the conversation: {next}"
    );
    term.ctrl(b'd');
    assert!(term.wait().success(), "{}", term.screen());
    // The stopped turn is marked in the journal, not left looking like a crash.
    let out = harnessx_test_support::bin::Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .run(dir.path(), &["runs", "list", "--durable", "chat.db", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses: Vec<(&str, &str)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["run_id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert!(statuses.iter().any(|(id, status)| id.ends_with(".1") && *status == "failed"), "{statuses:?}");
    assert!(statuses.iter().any(|(id, status)| id.ends_with(".2") && *status == "completed"), "{statuses:?}");
}

#[test]
fn a_conversation_goes_on_after_its_process_was_killed() {
    let dir = workspace();
    let chat = ["chat", "--durable", "chat.db", "--tools", "list_directory,read_file"];
    let Some(mut term) = Terminal::start(dir.path(), None, &chat) else { return };
    let start = term.expect("Ctrl-D ends");
    let id = session_id(&start);
    term.type_line("What is in this folder?");
    term.answer();
    // Killed outright: no chance to say anything.
    term.child.kill().unwrap();
    term.child.wait().unwrap();
    drop(term);

    let mut args = chat.to_vec();
    args.extend(["--session", id.as_str()]);
    let Some(mut term) = Terminal::start(dir.path(), None, &args) else { return };
    let again = term.expect("Ctrl-D ends");
    assert!(again.contains(&format!("continuing {id} after turn {id}.1")), "{again}");
    term.type_line("And then?");
    let answer = term.answer();
    assert!(
        answer.contains(
            "This conversation has 2 prompts so far; the one before this was: \"What is in this folder?\""
        ),
        "{answer}"
    );
    term.ctrl(b'd');
    assert!(term.wait().success(), "{}", term.screen());

    // An unknown session is a usage error, before any agent starts.
    let out = harnessx_test_support::bin::Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .run(dir.path(), &["chat", "--durable", "chat.db", "--session", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn chat_reads_prompts_from_a_pipe_too() {
    let dir = workspace();
    let out = harnessx_test_support::bin::Binary::new(env!("CARGO_BIN_EXE_harnessx")).run_with_input(
        dir.path(),
        &["chat", "--durable", "chat.db", "--tools", "list_directory", "--json"],
        b"What is in this folder?\n\nSecond question?\n",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ends: Vec<serde_json::Value> =
        harnessx_test_support::bin::json_lines(&out).into_iter().filter(|e| e["type"] == "run_end").collect();
    assert_eq!(ends.len(), 2, "two turns, the empty line skipped");
    assert!(ends[1]["output"].as_str().unwrap().contains("2 prompts so far"), "{ends:?}");
}

/// Ctrl-C while the terminal asks to approve a call stops the turn, and the question
/// takes no line of what is typed next: the next line is the next prompt.
#[test]
fn ctrl_c_at_an_approval_question_leaves_the_next_line_to_the_prompt() {
    let dir = workspace();
    let chat = ["chat", "--durable", "chat.db", "--tools", "write_file"];
    let Some(mut term) = Terminal::start(dir.path(), None, &chat) else { return };
    term.expect("Ctrl-D ends");
    term.type_line("Write something.");
    term.expect("Allow write_file");
    term.ctrl(b'c');
    term.expect("goes on from the answer before it");
    term.type_line("Write it again.");
    // A new turn asks again: the line was a prompt, not an answer to the old question.
    term.expect("Allow write_file");
    term.type_line("n");
    let answer = term.answer();
    assert!(answer.contains("write_file (error): Permission denied"), "{answer}");
    assert!(!dir.path().join("a").exists());
    term.ctrl(b'd');
    assert!(term.wait().success(), "{}", term.screen());
}
