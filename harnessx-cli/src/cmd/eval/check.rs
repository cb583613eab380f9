//! What a case's run must show ([`Expect`]), checked in the order the file lists them;
//! the first that fails is the case's failure, said in one line naming the expectation.
//! `expect.judge` is last: a model ([`Judge`]) grades the answer against the rubric.

use std::sync::Arc;

use harnessx::agent::model::{Model, Usage};
use harnessx::agent::{Agent, AgentConfig, Output};
use serde_json::json;

use super::cases::{Expect, JUDGE_THRESHOLD};
use super::page::Entry;
use crate::error::CliError;
use crate::text::one_line;

/// What one run of a case showed.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    /// The first failed expectation (or why the run failed), `None` when it passed.
    pub(crate) failed: Option<String>,
    /// The final answer (a typed run's: its value as JSON).
    pub(crate) output: String,
    /// Every tool call's name, in call order.
    pub(crate) tools_called: Vec<String>,
    pub(crate) turns: u32,
    pub(crate) usage: Usage,
    pub(crate) seconds: f64,
    /// The judge's grade and its reason.
    pub(crate) grade: Option<(f64, String)>,
    pub(crate) transcript: Vec<Entry>,
}

impl Ran {
    /// A run that could not start.
    pub(crate) fn failed(why: String) -> Self {
        Self { transcript: vec![Entry::new("error", &why)], failed: Some(why), ..Self::default() }
    }
}

/// The first of `expect` that `ran` does not show, said in one line; the judge's grade
/// (asked last, and only when everything else holds) is kept in `ran`.
pub(crate) async fn expectations(
    expect: &Expect,
    prompt: &str,
    ran: &mut Ran,
    judge: Option<&Judge>,
) -> Option<String> {
    for wanted in &expect.output_contains {
        if !ran.output.contains(wanted.as_str()) {
            return Some(format!("output_contains: {:?} is not in the answer", one_line(wanted, 80)));
        }
    }
    for tool in &expect.tools_called {
        if !ran.tools_called.contains(tool) {
            return Some(format!("tools_called: {tool} was not called"));
        }
    }
    for tool in &expect.tools_not_called {
        if ran.tools_called.contains(tool) {
            return Some(format!("tools_not_called: {tool} was called"));
        }
    }
    if let Some(max) = expect.max_tool_calls
        && ran.usage.tool_calls > max
    {
        return Some(format!("max_tool_calls: {} calls, at most {max}", ran.usage.tool_calls));
    }
    if let Some(max) = expect.max_cost_usd {
        match ran.usage.cost_usd {
            None => {
                return Some(
                    "max_cost_usd: the run's cost is unknown: give the model's price with --price IN,OUT"
                        .into(),
                );
            }
            Some(cost) if cost > max => return Some(format!("max_cost_usd: ${cost:.4}, at most ${max}")),
            Some(_) => {}
        }
    }
    let rubric = expect.judge.as_deref()?;
    let Some(judge) = judge else { return Some("judge: no judge model".into()) };
    let threshold = expect.judge_threshold.unwrap_or(JUDGE_THRESHOLD);
    match judge.grade(rubric, prompt, &ran.output).await {
        Err(why) => Some(format!("judge: the grade could not be had: {}", one_line(&why, 300))),
        Ok((score, reason)) => {
            let failed = (score < threshold)
                .then(|| format!("judge: graded {score} (below {threshold}): {}", one_line(&reason, 200)));
            ran.grade = Some((score, reason));
            failed
        }
    }
}

/// What the judge is told it is.
const JUDGE_SYSTEM: &str = "You grade the answer an AI agent gave to a task, against a rubric. \
Read the task, the rubric and the answer; then give a score from 0 (the answer does not meet the \
rubric at all) to 1 (it meets it fully), and the reason in one sentence.";

/// A model that grades answers against a rubric: its reply must be
/// `{"score": 0..1, "reason": "..."}` (a typed run: a reply that does not fit is asked again).
pub(crate) struct Judge {
    agent: Agent,
}

impl Judge {
    pub(crate) fn new(model: Arc<dyn Model>) -> Result<Self, CliError> {
        let agent = Agent::builder()
            .model_arc(model)
            .system_prompt(JUDGE_SYSTEM)
            .config(AgentConfig { stream: false, ..AgentConfig::default() })
            .build()
            .map_err(CliError::usage)?;
        Ok(Self { agent })
    }

    /// The grade of `answer` to `task` against `rubric`, and its reason.
    async fn grade(&self, rubric: &str, task: &str, answer: &str) -> Result<(f64, String), String> {
        let schema = json!({
            "type": "object",
            "properties": {
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "reason": {"type": "string"}
            },
            "required": ["score", "reason"],
            "additionalProperties": false
        });
        let output = Output::json_schema(schema).map_err(|e| e.to_string())?;
        let prompt = format!("The task:\n{task}\n\nThe rubric:\n{rubric}\n\nThe answer:\n{answer}");
        let result = self.agent.run_with_output(prompt, output).await.map_err(|e| e.to_string())?;
        let value = result.value.unwrap_or_default();
        let score = value["score"].as_f64().ok_or("the judge gave no score")?;
        let reason = value["reason"].as_str().unwrap_or_default().to_owned();
        Ok((score, reason))
    }
}
