//! `harnessx eval FILE`: the cases of a TOML file ([`cases`]), each run by an agent of
//! its own in a fresh folder, `--jobs` at a time, `--repeat` times each; what each run
//! showed checked against its expectations ([`check`]); a table or `--json` lines in case
//! order as they finish, and with `--report` an HTML page ([`page`]).
//!
//! The model is the agent flags' (`--record` and `--replay` included): under `--replay`
//! the cassettes are read once and answer every case, the judge's exchanges too.

mod cases;
mod check;
mod page;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use futures_util::StreamExt;
use harnessx::agent::model::{Model, Usage};
use harnessx::agent::{AgentEvent, Output, RunStatus};
use serde_json::json;

use crate::error::CliError;
use crate::output::Stdout;
use crate::report;
use crate::setup::flags::AgentArgs;
use crate::setup::{self, Approvals};
use crate::shutdown::Shutdown;
use crate::text::one_line;
use cases::Case;
use check::{Judge, Ran};

/// The most characters of one transcript entry the report keeps.
const ENTRY_CHARS: usize = 20_000;

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The case file: TOML with `[defaults]` and `[[case]]` tables (docs/evals.md).
    file: PathBuf,
    /// Run only the case of this name (repeatable); a name the file does not have is a
    /// usage error.
    #[arg(long = "case", value_name = "NAME")]
    only: Vec<String>,
    /// How many runs go at once.
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    /// Run each case N times and report its pass rate; a case passes when every run does.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeat: u32,
    /// Print one JSON line per case, `{"case", "passed", "failed", "turns", "usage",
    /// "seconds"}`, then `{"summary": {"passed": N, "failed": M}}`.
    #[arg(long)]
    json: bool,
    /// Write a self-contained HTML page: each case's transcript and a chart of tokens
    /// and cost per case.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// The model that grades `expect.judge` (default: --model, with --base-url):
    /// MODEL[@BASE_URL], e.g. `openai:gpt-4o-mini` or `openai:judge@http://127.0.0.1:8080/v1`.
    #[arg(long, value_name = "MODEL[@BASE_URL]")]
    judge_model: Option<String>,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// One case, ready to run: its agent flags and its typed output, both checked.
struct Ready {
    case: Case,
    args: AgentArgs,
    output: Option<Output>,
}

/// What the runs of one case showed, together.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) name: String,
    pub(crate) runs: u32,
    pub(crate) passed: u32,
    /// The first failed expectation of the first run that failed.
    pub(crate) failed: Option<String>,
    pub(crate) turns: u64,
    pub(crate) usage: Usage,
    pub(crate) seconds: f64,
    /// The judge's grade and reason, of the last run graded.
    pub(crate) grade: Option<(f64, String)>,
    /// Each run's transcript.
    pub(crate) transcripts: Vec<Vec<page::Entry>>,
}

impl Tally {
    fn passed(&self) -> bool {
        self.passed == self.runs
    }

    fn add(&mut self, ran: Ran) {
        self.runs += 1;
        if ran.failed.is_none() {
            self.passed += 1;
        } else if self.failed.is_none() {
            self.failed = ran.failed;
        }
        self.turns += u64::from(ran.turns);
        self.usage += ran.usage;
        self.seconds += ran.seconds;
        if ran.grade.is_some() {
            self.grade = ran.grade;
        }
        self.transcripts.push(ran.transcript);
    }
}

pub(crate) async fn eval(args: EvalArgs) -> Result<ExitCode, CliError> {
    if args.agent.base_path.is_some() {
        return Err(CliError::Usage(
            "--base-path has no place in eval: each case runs in a fresh folder of its own, holding its `files`".into(),
        ));
    }
    let replayed = setup::replay_model(&args.agent)?;
    let ready = checked(&args, chosen(cases::read(&args.file)?, &args.only)?, replayed.clone())?;
    // The report's file made now: a path that cannot be written is said before any case runs.
    let report = match &args.report {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| CliError::Usage(format!("--report {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let judge = match ready.iter().any(|r| r.case.expect.judge.is_some()) {
        true => {
            Some(Judge::new(setup::judge_model(&args.agent, args.judge_model.as_deref(), replayed.clone())?)?)
        }
        false => None,
    };
    let mut shown = Shown::new(args.json, &ready)?;
    let runs = ready.iter().flat_map(|r| (0..args.repeat).map(move |_| r));
    let mut ran = futures_util::stream::iter(runs)
        .map(|r| run_case(r, replayed.clone(), judge.as_ref()))
        .buffered(usize::from(args.jobs));
    let mut tallies: Vec<Tally> = Vec::with_capacity(ready.len());
    let mut written = Ok(());
    let mut done = 0;
    // A signal stops the runs: their folders go, what finished is reported.
    let mut stop = std::pin::pin!(Shutdown::listen().wait());
    let mut stopped = false;
    // In case order, each case's runs one after the other.
    loop {
        let outcome = tokio::select! {
            outcome = ran.next() => outcome,
            () = &mut stop => {
                stopped = true;
                None
            }
        };
        let Some(outcome) = outcome else { break };
        let index = done / args.repeat as usize;
        done += 1;
        if index == tallies.len() {
            tallies.push(Tally { name: ready[index].case.name.clone(), ..Tally::default() });
        }
        let tally = &mut tallies[index];
        tally.add(outcome);
        if tally.runs == args.repeat {
            written = shown.case(tally, args.repeat);
            if written.is_err() {
                break;
            }
        }
    }
    drop(ran);
    written?;
    if stopped {
        // A case whose runs did not all finish is not reported.
        tallies.retain(|t| t.runs == args.repeat);
    }
    let failed = tallies.iter().filter(|t| !t.passed()).count();
    shown.summary(tallies.len() - failed, failed)?;
    if let (Some(mut file), Some(path)) = (report, &args.report) {
        let title = format!("harnessx eval {}", args.file.display());
        std::io::Write::write_all(&mut file, page::html(&title, &tallies).as_bytes())
            .map_err(|e| CliError::Failed(format!("--report {}: {e}", path.display())))?;
    }
    if stopped {
        let finished = tallies.iter().filter(|t| t.runs == args.repeat).count();
        return Err(CliError::Failed(format!(
            "eval stopped by a signal: {finished} of {} cases finished",
            ready.len()
        )));
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The cases `--case` names (all without it), in the file's order.
fn chosen(cases: Vec<Case>, only: &[String]) -> Result<Vec<Case>, CliError> {
    if let Some(unknown) = only.iter().find(|name| !cases.iter().any(|c| &c.name == *name)) {
        return Err(CliError::Usage(format!("--case {unknown:?}: the file has no case of that name")));
    }
    Ok(cases.into_iter().filter(|c| only.is_empty() || only.contains(&c.name)).collect())
}

/// Every case checked before any runs (its agent, its schema file): a bad one is the
/// file's fault, `FILE:LINE: case NAME: ...` (exit 2).
fn checked(
    args: &EvalArgs,
    cases: Vec<Case>,
    replayed: Option<Arc<dyn Model>>,
) -> Result<Vec<Ready>, CliError> {
    let mut ready = Vec::with_capacity(cases.len());
    for case in cases {
        let at = |m: String| {
            CliError::Usage(format!("{}:{}: case {:?}: {m}", args.file.display(), case.line, case.name))
        };
        let case_args = agent_args(&args.agent, &case);
        setup::checked(&case_args, replayed.clone()).map_err(|e| match e {
            CliError::Usage(m) => at(m),
            e => e,
        })?;
        let output = match &case.expect.output_schema {
            Some(path) => Some(setup::output::schema_file(path).map_err(|e| match e {
                CliError::Usage(m) | CliError::Failed(m) => at(format!("expect.output_schema: {m}")),
                e => e,
            })?),
            None => None,
        };
        ready.push(Ready { case, args: case_args, output });
    }
    Ok(ready)
}

/// The agent flags of `case`: its tools and system prompt over the command line's. Its
/// folder (the file tools' base path) is the case's fresh one, given when it runs.
fn agent_args(flags: &AgentArgs, case: &Case) -> AgentArgs {
    let mut args = flags.clone();
    if let Some(tools) = &case.tools {
        // `tools = []` is no built-in tool, as `--tools ''` is.
        args.tools = if tools.is_empty() { vec![String::new()] } else { tools.clone() };
    }
    if let Some(system) = &case.system {
        args.system = Some(system.clone());
        args.system_file = None;
    }
    args
}

/// One run of a case, in a fresh folder holding its files; whatever goes wrong is the
/// run's failure, never the command's.
async fn run_case(ready: &Ready, replayed: Option<Arc<dyn Model>>, judge: Option<&Judge>) -> Ran {
    let started = Instant::now();
    let mut ran = match fresh_folder(&ready.case) {
        Ok(dir) => {
            let mut args = ready.args.clone();
            args.folder = Some(dir.path().to_owned());
            let ran = run_in(ready, &args, replayed).await;
            drop(dir);
            ran
        }
        Err(e) => Ran::failed(format!("the case's folder: {e}")),
    };
    if ran.failed.is_none() {
        ran.failed = check::expectations(&ready.case.expect, &ready.case.prompt, &mut ran, judge).await;
    }
    ran.seconds = started.elapsed().as_secs_f64();
    ran
}

/// A new folder with the case's files.
fn fresh_folder(case: &Case) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("harnessx-eval-").tempdir()?;
    for (name, content) in &case.files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, content)?;
    }
    Ok(dir)
}

/// The case's run by an agent made from `args`, its events gathered.
async fn run_in(ready: &Ready, args: &AgentArgs, replayed: Option<Arc<dyn Model>>) -> Ran {
    // No one is asked: a call that asks is denied, unless --yes.
    let agent = match setup::build_agent_with(args, false, Approvals::of(args.yes, false), replayed).await {
        Ok(agent) => agent,
        Err(CliError::Usage(m) | CliError::Failed(m)) => return Ran::failed(format!("the agent: {m}")),
        Err(CliError::Output(e)) => return Ran::failed(format!("the agent: {e}")),
    };
    let mut ran = Ran::default();
    ran.transcript.push(page::Entry::new("prompt", &ready.case.prompt));
    let mut events = match &ready.output {
        Some(output) => agent.run_stream_with_output(ready.case.prompt.as_str(), output.clone()),
        None => agent.run_stream(ready.case.prompt.as_str()),
    };
    let mut text = String::new();
    while let Some(event) = events.next().await {
        ran.event(event, &mut text);
    }
    drop(events);
    agent.close().await;
    ran
}

impl Ran {
    /// Takes in one event of the run; `text` gathers the model's words of a response.
    fn event(&mut self, event: AgentEvent, text: &mut String) {
        let said = |ran: &mut Ran, text: &mut String| {
            if !text.trim().is_empty() {
                ran.transcript.push(page::Entry::new("model", text));
            }
            text.clear();
        };
        match event {
            AgentEvent::TextDelta { text: delta } => text.push_str(&delta),
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                said(self, text);
                self.transcript.push(page::Entry::new("call", &format!("{name} {arguments}")));
                self.tools_called.push(name);
            }
            AgentEvent::ToolCallEnd { name, is_error, content, .. } => {
                let kind = if is_error { "error" } else { "result" };
                self.transcript.push(page::Entry::new(kind, &format!("{name}: {content}")));
            }
            AgentEvent::ModelRequest { .. } => said(self, text),
            AgentEvent::Error { message } => {
                said(self, text);
                self.transcript.push(page::Entry::new("error", &message));
                self.failed = Some(format!("the run failed: {}", one_line(&message, 400)));
            }
            AgentEvent::RunEnd { status, limit, output, value, usage, turns, blocked } => {
                text.clear();
                self.turns = turns;
                self.usage = usage;
                self.output = match value {
                    Some(value) => value.to_string(),
                    None => output,
                };
                self.transcript.push(page::Entry::new("answer", &self.output));
                self.failed = match status {
                    RunStatus::Completed => None,
                    RunStatus::Blocked => Some(report::blocked_line(blocked.as_ref())),
                    _ => Some(match limit {
                        Some(limit) => format!("the run stopped at a limit ({})", report::limit_flag(limit)),
                        None => "the run stopped before its answer".to_owned(),
                    }),
                };
            }
            _ => {}
        }
    }
}

/// Where the results go: a table, or JSON lines.
struct Shown {
    json: bool,
    stdout: Stdout,
    /// The width of the table's case column.
    width: usize,
}

/// The most characters of a case's name in the table.
const NAME_SHOWN: usize = 40;

impl Shown {
    /// Shows the results of `ready`'s cases; the table's head first.
    fn new(json: bool, ready: &[Ready]) -> Result<Self, CliError> {
        let width =
            ready.iter().map(|r| r.case.name.chars().count().min(NAME_SHOWN)).max().unwrap_or(0).max(4);
        let mut shown = Self { json, stdout: Stdout::default(), width };
        if !json {
            shown.row(["CASE", "RESULT", "TURNS", "TOKENS", "COST", "TIME", "FAILED"].map(str::to_owned))?;
        }
        Ok(shown)
    }

    fn row(&mut self, cells: [String; 7]) -> Result<(), CliError> {
        let [case, result, turns, tokens, cost, time, failed] = cells;
        let line = format!(
            "{case:<w$}  {result:<6}  {turns:>5}  {tokens:>8}  {cost:>9}  {time:>7}  {failed}",
            w = self.width
        );
        self.stdout.write_now(format_args!("{}\n", line.trim_end()))
    }

    /// One case's line, once its every run is done.
    fn case(&mut self, tally: &Tally, repeat: u32) -> Result<(), CliError> {
        if self.json {
            let mut line = json!({
                "case": tally.name,
                "passed": tally.passed(),
                "failed": tally.failed,
                "turns": tally.turns,
                "usage": tally.usage,
                "seconds": (tally.seconds * 1000.0).round() / 1000.0,
            });
            if let Some((score, reason)) = &tally.grade {
                line["judge"] = json!({"score": score, "reason": reason});
            }
            if repeat > 1 {
                line["runs"] = json!(tally.runs);
                line["pass_rate"] = json!(f64::from(tally.passed) / f64::from(tally.runs));
            }
            return self.stdout.write_now(format_args!("{line}\n"));
        }
        let result = match (repeat, tally.passed()) {
            (1, true) => "pass".to_owned(),
            (1, false) => "FAIL".to_owned(),
            _ => format!("{}/{}", tally.passed, tally.runs),
        };
        let cost = tally.usage.cost_usd.map_or_else(|| "-".to_owned(), |c| format!("${c:.4}"));
        self.row([
            one_line(&tally.name, NAME_SHOWN),
            result,
            tally.turns.to_string(),
            tally.usage.total_tokens().to_string(),
            cost,
            format!("{:.1}s", tally.seconds),
            tally.failed.as_deref().map(|f| one_line(f, 200)).unwrap_or_default(),
        ])
    }

    fn summary(&mut self, passed: usize, failed: usize) -> Result<(), CliError> {
        if self.json {
            let line = json!({"summary": {"passed": passed, "failed": failed}});
            return self.stdout.write_now(format_args!("{line}\n"));
        }
        self.stdout.write_now(format_args!("{passed} passed, {failed} failed\n"))
    }
}
