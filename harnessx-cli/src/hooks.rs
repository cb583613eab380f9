//! Command hooks: a shell command run as a [`ToolHook`], in the protocol people know from
//! Claude Code. The command runs with `sh -c` in the working directory and reads one JSON
//! object on stdin (`{"hook": "pre_tool_use", "run_id": .., "call_id": .., "tool": ..,
//! "arguments": {..}, "usage": {..}}`; a post hook also gets `content` and `is_error`;
//! the run points' objects are in [`run_points`]). It answers by its exit status and
//! stdout:
//!
//! - exit 0, nothing on stdout: no opinion;
//! - exit 0, a JSON object: `{"decision": "allow" | "ask" | "deny", "message": ..}` or
//!   `{"arguments": {..}}` (a rewrite) for a pre hook, `{"content": ..}` for a post hook;
//! - exit 2: deny, with stderr as the message the model reads;
//! - anything else (another status, output that is not such an object, more than
//!   [`MAX_OUTPUT`] bytes, its timeout): an error naming the hook, which refuses the call
//!   (a post hook keeps the result).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

mod run_points;

use futures_util::future::BoxFuture;
use harnessx::hooks::{
    HookError, ModelTurn, PostDecision, PostToolUse, PreDecision, PreToolUse, PromptDecision,
    ResponseDecision, RunEnd, ToolHook, UserPrompt,
};
use harnessx::{PermissionLevel, PermissionRules, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most a hook may print on stdout (and the most of stderr kept).
pub(crate) const MAX_OUTPUT: usize = 1 << 20;

/// Which calls a hook sees.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// Every call (`*`).
    Any,
    /// The calls a rule matches: a tool name, or `NAME(PATTERN)` as in `--allow`.
    Rule(PermissionRules),
}

impl Matcher {
    /// `*`, a tool name or a rule; the error is the rule's.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if text.trim() == "*" {
            return Ok(Self::Any);
        }
        PermissionRules::new().with(PermissionLevel::Allow, text).map(Self::Rule).map_err(|e| e.to_string())
    }

    fn matches(&self, tool: &str, arguments: &Value) -> bool {
        match self {
            Self::Any => true,
            Self::Rule(rules) => rules.decide(tool, arguments).is_some(),
        }
    }
}

/// The point of a run a command hook is asked at (its `EVENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Point {
    /// Before a call runs (takes a matcher).
    PreToolUse,
    /// After a call ran (takes a matcher).
    PostToolUse,
    /// Before the first model request of a run.
    UserPrompt,
    /// After each model response.
    ModelResponse,
    /// When the run ends.
    RunEnd,
}

impl Point {
    /// Whether the point is about calls, and so takes a matcher.
    fn on_calls(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
    }
}

/// One `--hook EVENT:MATCHER=COMMAND` (or `EVENT=COMMAND` for a run point), read.
#[derive(Debug, Clone)]
pub(crate) struct HookSpec {
    pub(crate) point: Point,
    pub(crate) matcher: Matcher,
    pub(crate) command: String,
}

impl HookSpec {
    /// `EVENT:MATCHER=COMMAND` for `pre_tool_use` and `post_tool_use`, `EVENT=COMMAND`
    /// for `user_prompt`, `model_response` and `run_end`; the error says what is wrong,
    /// in one line.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let at = text.find([':', '=']).ok_or_else(|| {
            format!("{text:?} is not EVENT:MATCHER=COMMAND or EVENT=COMMAND (no `:` or `=` after the event)")
        })?;
        let (event, separator, rest) = (text[..at].trim(), &text[at..=at], &text[at + 1..]);
        let point: Point = serde_json::from_value(Value::String(event.to_owned())).map_err(|_| {
            format!(
                "unknown hook event {event:?}: use pre_tool_use, post_tool_use, user_prompt, model_response or run_end"
            )
        })?;
        match (point.on_calls(), separator) {
            (true, "=") => {
                return Err(format!("{text:?} is not EVENT:MATCHER=COMMAND (no `:` after the event)"));
            }
            (false, ":") => return Err(format!("a {event} hook takes no matcher: {event}=COMMAND")),
            (false, _) => {
                let command = rest.trim();
                if command.is_empty() {
                    return Err(format!("{text:?} has no command after `=`"));
                }
                return Ok(Self { point, matcher: Matcher::Any, command: command.to_owned() });
            }
            (true, _) => {}
        }
        // The matcher ends at the first `=` outside parentheses.
        let mut depth = 0usize;
        let split = rest.char_indices().find(|&(_, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                '=' if depth == 0 => return true,
                _ => {}
            }
            false
        });
        let Some((at, _)) = split else {
            return Err(format!("{text:?} is not EVENT:MATCHER=COMMAND (no `=` before the command)"));
        };
        let (matcher, command) = (rest[..at].trim(), rest[at + 1..].trim());
        if command.is_empty() {
            return Err(format!("{text:?} has no command after `=`"));
        }
        let matcher = Matcher::parse(matcher).map_err(|e| format!("hook matcher {matcher:?}: {e}"))?;
        Ok(Self { point, matcher, command: command.to_owned() })
    }

    /// A configuration file's `[[hooks.EVENT]]` table: its event, matcher and command,
    /// read as [`parse`](Self::parse) reads `--hook EVENT:MATCHER=COMMAND` (`EVENT=COMMAND`
    /// for an event without a matcher), so the events a file knows are the flag's. The
    /// error says what is wrong, in one line.
    pub(crate) fn from_parts(event: &str, matcher: Option<&str>, command: &str) -> Result<Self, String> {
        // An event is a plain name; anything else would be read as flag syntax.
        let known = |text: String| {
            if !event.is_empty() && event.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                Self::parse(&text)
            } else {
                Err(format!("unknown hook event {event:?}"))
            }
        };
        let on_tools = known(format!("{event}:*=true"));
        let command = command.trim();
        if command.is_empty() {
            return Err("the hook's `command` is empty".into());
        }
        let spec = match (matcher, &on_tools) {
            (Some(matcher), Ok(_)) => {
                Matcher::parse(matcher).map_err(|e| format!("hook matcher {matcher:?}: {e}"))?;
                Self::parse(&format!("{event}:{matcher}={command}"))?
            }
            (None, Ok(_)) => {
                return Err(format!(
                    "a {event} hook needs a `matcher`: a tool name, a rule like \"write_file(path=src/**)\", or \"*\""
                ));
            }
            (matcher, Err(unknown)) => match known(format!("{event}={command}")) {
                Ok(_) if matcher.is_some() => return Err(format!("a {event} hook takes no `matcher`")),
                Ok(spec) => spec,
                Err(_) => return Err(unknown.clone()),
            },
        };
        // A matcher with `=` outside parentheses would take part of the command (no valid
        // rule has one; this keeps it so should rules ever allow one).
        if spec.command != command {
            return Err(format!(
                "hook matcher {:?}: `=` belongs inside a rule's parentheses",
                matcher.unwrap_or("")
            ));
        }
        Ok(spec)
    }

    /// The hook, run in `dir` under `timeout` (a file's `timeout_seconds`, else
    /// [`harnessx::hooks::DEFAULT_HOOK_TIMEOUT`]); its matcher reads paths relative to
    /// `base` (the file tools' base path), as `--allow` does.
    pub(crate) fn hook(&self, dir: PathBuf, base: &Path, timeout: Duration) -> CommandHook {
        let matcher = match &self.matcher {
            Matcher::Any => Matcher::Any,
            Matcher::Rule(rules) => Matcher::Rule(rules.clone().base_path(base)),
        };
        CommandHook::new(&self.command, matcher, dir, timeout, self.point)
    }
}

/// A shell command as a hook on one point.
#[derive(Debug, Clone)]
pub(crate) struct CommandHook {
    /// The command, as its name in refusals and events.
    command: String,
    matcher: Matcher,
    /// Where it runs.
    dir: PathBuf,
    timeout: Duration,
    /// Where it is asked.
    point: Point,
}

impl CommandHook {
    pub(crate) fn new(
        command: &str,
        matcher: Matcher,
        dir: PathBuf,
        timeout: Duration,
        point: Point,
    ) -> Self {
        Self { command: command.to_owned(), matcher, dir, timeout, point }
    }

    /// Runs the command with `input` on stdin: its exit status, stdout and stderr.
    async fn run(&self, input: Value) -> Result<(i32, Vec<u8>, String), HookError> {
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| HookError(format!("could not start: {e}")))?;
        let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        // Stderr is read on a task of its own, so a hook that fills stdout is stopped
        // at the cap without waiting for stderr to end.
        let stderr = tokio::spawn(async move {
            let mut err = Vec::new();
            if let Some(s) = stderr {
                let _ = s.take(MAX_OUTPUT as u64).read_to_end(&mut err).await;
            }
            err
        });
        let body = input.to_string();
        let exchange = async {
            // A command that does not read its input is fine: a broken pipe is ignored.
            if let Some(stdin) = stdin.as_mut() {
                let _ = stdin.write_all(body.as_bytes()).await;
            }
            drop(stdin.take());
            let mut out = Vec::new();
            if let Some(s) = stdout {
                let _ = s.take(MAX_OUTPUT as u64 + 1).read_to_end(&mut out).await;
            }
            if out.len() > MAX_OUTPUT {
                // Returning drops the child, which kills it (kill_on_drop).
                return Err(HookError(format!("printed more than {MAX_OUTPUT} bytes")));
            }
            let status = child.wait().await.map_err(|e| HookError(format!("could not wait: {e}")))?;
            let err = stderr.await.unwrap_or_default();
            Ok((status.code().unwrap_or(-1), out, String::from_utf8_lossy(&err).into_owned()))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answered) => answered,
            // Dropped: the child is killed (kill_on_drop).
            Err(_) => Err(HookError(format!("did not finish within {}s", self.timeout.as_secs_f64()))),
        }
    }

    /// The object the command printed, or `None` for nothing; an error for anything else.
    fn object(out: &[u8]) -> Result<Option<serde_json::Map<String, Value>>, HookError> {
        let text = String::from_utf8_lossy(out);
        if text.trim().is_empty() {
            return Ok(None);
        }
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            _ => Err(HookError("printed something that is not a JSON object".into())),
        }
    }
}

impl ToolHook for CommandHook {
    fn name(&self) -> &str {
        &self.command
    }

    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        Box::pin(async move {
            if self.point != Point::PreToolUse || !self.matcher.matches(call.tool, call.arguments) {
                return Ok(PreDecision::Continue);
            }
            let input = json!({
                "hook": "pre_tool_use",
                "run_id": call.run_id,
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "usage": call.usage,
            });
            let (status, out, err) = self.run(input).await?;
            match status {
                0 => {}
                2 => return Ok(PreDecision::Deny { message: one_line(&err, "refused by a hook") }),
                other => {
                    return Err(exited(other, &err));
                }
            }
            let Some(answer) = Self::object(&out)? else { return Ok(PreDecision::Continue) };
            let message =
                answer.get("message").and_then(Value::as_str).unwrap_or("refused by a hook").to_owned();
            let arguments = answer.get("arguments").cloned();
            match (answer.get("decision").and_then(Value::as_str), arguments) {
                (Some("deny"), _) => Ok(PreDecision::Deny { message }),
                (Some("allow"), Some(arguments)) => Ok(PreDecision::AllowRewritten { arguments }),
                (Some("allow"), None) => Ok(PreDecision::Allow),
                (Some("ask"), Some(arguments)) => Ok(PreDecision::AskRewritten { arguments }),
                (Some("ask"), None) => Ok(PreDecision::Ask),
                (None, Some(arguments)) => Ok(PreDecision::Rewrite { arguments }),
                (None, None) => Ok(PreDecision::Continue),
                (Some(other), _) => Err(HookError(format!("answered an unknown decision {other:?}"))),
            }
        })
    }

    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        Box::pin(async move {
            if self.point != Point::PostToolUse || !self.matcher.matches(call.tool, call.arguments) {
                return Ok(PostDecision::Keep);
            }
            let input = json!({
                "hook": "post_tool_use",
                "run_id": call.run_id,
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": call.arguments,
                "usage": call.usage,
                "content": call.content,
                "is_error": call.is_error,
            });
            let answered = async {
                let (status, out, err) = self.run(input).await?;
                if status != 0 {
                    return Err(exited(status, &err));
                }
                match Self::object(&out)?.as_ref().and_then(|a| a.get("content")) {
                    None => Ok(PostDecision::Keep),
                    Some(Value::String(content)) => {
                        Ok(PostDecision::Replace { result: ToolOutput::text(content.clone()) })
                    }
                    Some(_) => Err(HookError("answered a `content` that is not a string".into())),
                }
            };
            let answered = answered.await;
            if let Err(e) = &answered {
                self.say_failed(e, "the result was kept");
            }
            answered
        })
    }

    fn user_prompt<'a>(&'a self, prompt: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
        Box::pin(async move {
            match self.point {
                Point::UserPrompt => self.ask_prompt(prompt).await,
                _ => Ok(PromptDecision::Continue),
            }
        })
    }

    fn model_response<'a>(
        &'a self,
        response: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
        Box::pin(async move {
            match self.point {
                Point::ModelResponse => self.ask_response(response).await,
                _ => Ok(ResponseDecision::Continue),
            }
        })
    }

    fn run_end<'a>(&'a self, end: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
        Box::pin(async move {
            match self.point {
                Point::RunEnd => {
                    let told = self.tell_end(end).await;
                    if let Err(e) = &told {
                        self.say_failed(e, "it was ignored");
                    }
                    told
                }
                _ => Ok(()),
            }
        })
    }
}

impl CommandHook {
    /// Says on stderr, in one line, that the hook failed where its failure changes
    /// nothing the model or the person would otherwise see (a post hook's result is
    /// kept, a run-end hook is ignored).
    fn say_failed(&self, error: &HookError, then: &str) {
        eprintln!("harnessx: hook {} failed: {}; {then}", one_line(&self.command, ""), error.0);
    }
}

/// Why a hook that exited with `status` gave no answer: its stderr, on one line.
pub(crate) fn exited(status: i32, stderr: &str) -> HookError {
    match one_line(stderr, "") {
        line if line.is_empty() => HookError(format!("exited with status {status} (nothing on stderr)")),
        line => HookError(format!("exited with status {status}: {line}")),
    }
}

/// `text` on one line (the first 300 characters), or `otherwise` when it is blank.
fn one_line(text: &str, otherwise: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return otherwise.to_owned();
    }
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: &str, matcher: &str, pre: bool) -> (CommandHook, tempfile::TempDir) {
        let point = if pre { Point::PreToolUse } else { Point::PostToolUse };
        let dir = tempfile::tempdir().unwrap();
        let hook = CommandHook::new(
            command,
            Matcher::parse(matcher).unwrap(),
            dir.path().to_owned(),
            Duration::from_secs(5),
            point,
        );
        (hook, dir)
    }

    async fn pre(hook: &CommandHook, tool: &str, arguments: Value) -> Result<PreDecision, HookError> {
        let call = PreToolUse {
            tool,
            call_id: "c1",
            arguments: &arguments,
            run_id: None,
            usage: Default::default(),
        };
        hook.pre_tool_use(call).await
    }

    #[test]
    fn a_hook_flag_reads_event_matcher_and_command() {
        let spec = HookSpec::parse("pre_tool_use:write_file(path=src/**)=./check.sh --strict=yes").unwrap();
        assert_eq!(spec.point, Point::PreToolUse);
        assert_eq!(spec.command, "./check.sh --strict=yes");
        assert!(spec.matcher.matches("write_file", &json!({"path": "src/a.rs"})));
        assert!(!spec.matcher.matches("write_file", &json!({"path": "docs/a.md"})));
        assert_eq!(HookSpec::parse("post_tool_use:*=./redact.sh").unwrap().point, Point::PostToolUse);
        // A run point has no matcher: its command is everything after the `=`.
        for (text, point) in [
            ("user_prompt=./gate.sh a:b=c", Point::UserPrompt),
            ("model_response = ./watch.sh", Point::ModelResponse),
            ("run_end=./notify.sh", Point::RunEnd),
        ] {
            let spec = HookSpec::parse(text).unwrap();
            assert_eq!((spec.point, spec.command.as_str()), (point, text.split_once('=').unwrap().1.trim()));
        }
        for (bad, says) in [
            ("pre_tool_use", "no `:` or `=` after the event"),
            ("pre_tool_use=./x.sh", "no `:` after the event"),
            ("user_prompt:*=./x.sh", "a user_prompt hook takes no matcher: user_prompt=COMMAND"),
            ("run_end=", "has no command"),
            ("before:*=x", "unknown hook event \"before\""),
            ("pre_tool_use:*", "no `=` before the command"),
            ("pre_tool_use:*= ", "has no command"),
        ] {
            let err = HookSpec::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_files_table_is_read_as_the_flag_is() {
        let spec =
            HookSpec::from_parts("pre_tool_use", Some("write_file(path=src/**)"), " ./check.sh ").unwrap();
        assert_eq!(spec.point, Point::PreToolUse);
        assert_eq!(spec.command, "./check.sh");
        assert!(spec.matcher.matches("write_file", &json!({"path": "src/a.rs"})));
        assert_eq!(
            HookSpec::from_parts("post_tool_use", Some("*"), "./redact.sh").unwrap().point,
            Point::PostToolUse
        );
        for (event, matcher, command, says) in [
            ("pre_tool_use", None, "x", "a pre_tool_use hook needs a `matcher`"),
            ("before", Some("*"), "x", "unknown hook event \"before\""),
            ("before", None, "x", "unknown hook event \"before\""),
            ("pre_tool_use:*", None, "x", "unknown hook event \"pre_tool_use:*\""),
            ("pre_tool_use", Some("*"), "  ", "`command` is empty"),
            ("pre_tool_use", Some("write_file(path="), "x", "hook matcher \"write_file(path=\""),
            ("pre_tool_use", Some("a=b"), "x", "hook matcher \"a=b\": malformed permission rule"),
        ] {
            let err = HookSpec::from_parts(event, matcher, command).unwrap_err();
            assert!(err.contains(says), "{event} {matcher:?}: {err}");
        }
    }

    #[tokio::test]
    async fn exit_status_and_stdout_give_the_decision() {
        let cases = [
            ("true", PreDecision::Continue),
            ("echo '{\"decision\": \"allow\"}'", PreDecision::Allow),
            ("echo '{\"decision\": \"ask\"}'", PreDecision::Ask),
            (
                "echo '{\"decision\": \"deny\", \"message\": \"no\"}'",
                PreDecision::Deny { message: "no".into() },
            ),
            ("echo 'not rm' >&2; exit 2", PreDecision::Deny { message: "not rm".into() }),
            (
                "echo '{\"arguments\": {\"path\": \"b\"}}'",
                PreDecision::Rewrite { arguments: json!({"path": "b"}) },
            ),
        ];
        for (command, expected) in cases {
            let (h, _dir) = hook(command, "*", true);
            assert_eq!(pre(&h, "write_file", json!({"path": "a"})).await.unwrap(), expected, "{command}");
        }
    }

    #[tokio::test]
    async fn the_hook_reads_the_call_on_stdin_and_runs_in_its_folder() {
        let (h, dir) = hook("cat > seen.json; pwd > where.txt", "*", true);
        pre(&h, "write_file", json!({"path": "a"})).await.unwrap();
        let seen: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap()).unwrap();
        assert_eq!(
            seen,
            json!({"hook": "pre_tool_use", "run_id": null, "call_id": "c1", "tool": "write_file", "arguments": {"path": "a"}, "usage": {"input_tokens": 0, "output_tokens": 0, "requests": 0, "tool_calls": 0}})
        );
        let here = std::fs::read_to_string(dir.path().join("where.txt")).unwrap();
        assert_eq!(
            std::path::Path::new(here.trim()).canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
    }

    #[tokio::test]
    async fn a_matcher_picks_the_calls_a_hook_sees() {
        let (h, _dir) = hook("exit 2", "write_file(path=src/**)", true);
        assert!(matches!(
            pre(&h, "write_file", json!({"path": "src/a.rs"})).await.unwrap(),
            PreDecision::Deny { .. }
        ));
        assert_eq!(pre(&h, "write_file", json!({"path": "docs/a.md"})).await.unwrap(), PreDecision::Continue);
        assert_eq!(pre(&h, "read_file", json!({"path": "src/a.rs"})).await.unwrap(), PreDecision::Continue);
        assert!(Matcher::parse("write_file(path=").is_err());
    }

    #[tokio::test]
    async fn a_hook_that_misbehaves_is_an_error_and_never_hangs() {
        for (command, expected) in [
            ("echo broken >&2; exit 1", "exited with status 1: broken"),
            ("echo garbage", "printed something that is not a JSON object"),
            ("head -c 5000000 /dev/zero | tr '\\0' x", "printed more than 1048576 bytes"),
            ("echo '{\"decision\": \"maybe\"}'", "answered an unknown decision \"maybe\""),
        ] {
            let (h, _dir) = hook(command, "*", true);
            assert_eq!(pre(&h, "t", json!({})).await.unwrap_err().0, expected, "{command}");
        }
        let dir = tempfile::tempdir().unwrap();
        let slow = CommandHook::new(
            "sleep 30",
            Matcher::Any,
            dir.path().to_owned(),
            Duration::from_millis(200),
            Point::PreToolUse,
        );
        let started = std::time::Instant::now();
        assert_eq!(pre(&slow, "t", json!({})).await.unwrap_err().0, "did not finish within 0.2s");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_post_hook_replaces_the_content_it_prints() {
        let (h, _dir) = hook(r#"sed 's/.*"content":"\([^"]*\)".*/{"content":"[\1] redacted"}/'"#, "*", false);
        let arguments = json!({});
        let post = PostToolUse {
            tool: "t",
            call_id: "c1",
            arguments: &arguments,
            run_id: None,
            usage: Default::default(),
            content: "secret",
            is_error: false,
        };
        assert_eq!(
            h.post_tool_use(post).await.unwrap(),
            PostDecision::Replace { result: ToolOutput::text("[secret] redacted") }
        );
        // A pre hook is not asked after calls, nor a post hook before them.
        assert_eq!(
            h.pre_tool_use(PreToolUse {
                tool: "t",
                call_id: "c1",
                arguments: &arguments,
                run_id: None,
                usage: Default::default()
            })
            .await
            .unwrap(),
            PreDecision::Continue
        );
    }
}
