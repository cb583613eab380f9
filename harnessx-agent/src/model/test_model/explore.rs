//! The exploring behaviour of [`TestModel`](super::TestModel) (`TestModel::exploring`):
//! what the `harnessx` command's default model does with a prompt such as `What is in
//! this folder?`. It calls the filesystem tools the way a person would: list the folder,
//! glob and grep for the words of the prompt, then read a file the listing found; any
//! other tool it is given (but the agent's planning tools) it calls once with arguments
//! made from the tool's schema. Then
//! it answers with what came back, saying first that it is the offline test model.
//!
//! Why tool names here, where the rest of the workspace decides on annotations: this is a
//! script that imitates a person who knows the built-in filesystem tools, not a policy.
//! A tool of another name is never mistaken for one of them; it is called the generic way.
//!
//! It keeps no state: each response is decided from the messages since the last user
//! message, so a durable run replays it exactly and a conversation starts over on each
//! prompt.

use serde_json::json;

use crate::model::{Message, ModelRequest, ModelResponse, ToolChoice};
use harnessx_core::ToolCall;

use super::{PLACEHOLDER, example_with};

/// How the answer ends: nobody should mistake it for a language model's.
pub(super) const INTRO: &str = "This answer is from harnessx's offline test model, not a language model: it called the tools the way a person exploring this folder might, and listed what came back.";

/// The agent's planning tools, which it leaves alone: a person exploring a folder makes
/// no plan of it.
const PLANNING: [&str; 2] = ["write_todos", "read_todos"];

/// The tools it calls its own way.
const LIST: &str = "list_directory";
const READ: &str = "read_file";
const GLOB: &str = "glob";
const GREP: &str = "grep";

/// Words too common to search for.
const COMMON: &[&str] = &[
    "about", "and", "any", "are", "can", "does", "for", "from", "have", "here", "how", "into", "is", "me",
    "please", "show", "tell", "that", "the", "there", "these", "this", "what", "whats", "where", "which",
    "who", "why", "with", "you", "your",
];

/// Lines of each result shown in the answer.
const SHOWN_LINES: usize = 6;

/// The response to `request`: the next calls, or the answer.
/// `scratch`: the name chosen with [`scratch_name`](super::TestModel::scratch_name).
pub(super) fn respond(request: &ModelRequest, scratch: Option<&str>) -> ModelResponse {
    let since_user: Vec<&Message> = {
        let mut tail: Vec<&Message> =
            request.messages.iter().rev().take_while(|m| !matches!(m, Message::User { .. })).collect();
        tail.reverse();
        tail
    };
    let prompt = request.messages.iter().rev().find_map(|m| match m {
        Message::User { content, .. } => Some(content.as_str()),
        _ => None,
    });
    let offered = |name: &str| request.tools.iter().any(|t| t.name == name) && allowed(request, name);
    let rounds = since_user.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
    let results: Vec<(&str, &str, bool)> = since_user
        .iter()
        .filter_map(|m| match m {
            Message::Tool { name, content, is_error, .. } => {
                Some((name.as_str(), content.as_str(), *is_error))
            }
            _ => None,
        })
        .collect();
    let mut calls = Vec::new();
    if rounds == 0 {
        let words = keywords(prompt.unwrap_or(""));
        if offered(LIST) {
            calls.push((LIST.to_owned(), json!({"path": "."})));
        }
        if let Some(word) = words.first()
            && offered(GLOB)
        {
            calls.push((GLOB.to_owned(), json!({"pattern": format!("**/*{word}*")})));
        }
        if !words.is_empty() && offered(GREP) {
            calls.push((
                GREP.to_owned(),
                json!({"pattern": words.join("|"), "ignore_case": true, "output_mode": "files_with_matches"}),
            ));
        }
        for tool in &request.tools {
            let name = tool.name.as_str();
            // `read_file` waits for a file the listing found; with no listing to find one,
            // it is called the generic way.
            let own_way = [LIST, GLOB, GREP].contains(&name) || (name == READ && offered(LIST));
            if own_way || PLANNING.contains(&name) || !allowed(request, name) {
                continue;
            }
            calls.push((tool.name.clone(), example_with(&tool.input_schema, scratch.unwrap_or(PLACEHOLDER))));
        }
    } else if rounds == 1 && offered(READ) {
        let listed = results.iter().find(|(name, _, is_error)| *name == LIST && !is_error);
        if let Some(file) = listed.and_then(|(_, content, _)| first_file(content)) {
            calls.push((READ.to_owned(), json!({"path": file})));
        }
    }
    if calls.is_empty() {
        return ModelResponse::text(answer(request, &results, scratch));
    }
    let turn = request.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
    ModelResponse::tool_calls(
        calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall::new(format!("test_{turn}_{i}"), name, args.to_string()))
            .collect(),
    )
}

/// Whether the request's tool choice lets it call `name`.
fn allowed(request: &ModelRequest, name: &str) -> bool {
    match &request.tool_choice {
        ToolChoice::None => false,
        ToolChoice::Tool(only) => only == name,
        _ => true,
    }
}

/// The words of the prompt worth searching for: letters and digits, three or more,
/// lower-cased, common words left out, each once, at most three.
pub(super) fn keywords(prompt: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in prompt.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if word.chars().count() < 3 || COMMON.contains(&word.as_str()) || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == 3 {
            break;
        }
    }
    words
}

/// The file of a `list_directory` listing a person would open first: a README, else the
/// first file listed (a line `NAME  (SIZE)`; folders end in `/`).
pub(super) fn first_file(listing: &str) -> Option<String> {
    let files: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.strip_suffix(')').and_then(|l| l.rsplit_once("  (")).map(|(name, _)| name))
        .filter(|name| !name.is_empty())
        .collect();
    let readme = files.iter().find(|name| name.to_ascii_lowercase().starts_with("readme"));
    readme.or(files.first()).map(|name| (*name).to_owned())
}

/// The answer: each result's first lines (the first beside the tool's name, as
/// [`TestModel::new`](super::TestModel::new) answers), the conversation so far when there
/// is one, and who is speaking.
fn answer(request: &ModelRequest, results: &[(&str, &str, bool)], scratch: Option<&str>) -> String {
    let mut text = String::new();
    if results.is_empty() {
        text.push_str("No tool was given (or allowed), so there was nothing to call.");
    } else {
        let calls = results.len();
        text.push_str(&format!("Ran {calls} tool call{}:", if calls == 1 { "" } else { "s" }));
    }
    for (name, content, is_error) in results {
        let error = if *is_error { " (error)" } else { "" };
        let lines: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
        let short = |line: &str| line.chars().take(160).collect::<String>();
        text.push_str(&format!(
            "\n- {name}{error}: {}",
            lines.first().map(|l| short(l.trim_start())).unwrap_or_default()
        ));
        for line in lines.iter().skip(1).take(SHOWN_LINES - 1) {
            text.push_str(&format!("\n    {}", short(line)));
        }
        if lines.len() > SHOWN_LINES {
            text.push_str(&format!("\n    … {} more lines", lines.len() - SHOWN_LINES));
        }
    }
    let prompts: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    if let [.., previous, _] = prompts.as_slice() {
        let first: String = previous.lines().next().unwrap_or("").chars().take(120).collect();
        text.push_str(&format!(
            "\nThis conversation has {} prompts so far; the one before this was: \"{first}\".",
            prompts.len()
        ));
    }
    // The tools it called the generic way were given the scratch name where they took
    // a string: the user is told what that name was.
    if let Some(scratch) = scratch
        && results.iter().any(|(name, ..)| ![LIST, GLOB, GREP, READ].contains(name))
    {
        text.push_str(&format!(
            "\nWhere a tool took a name or a path, it was given `{scratch}`, a name nothing had when it started: whatever the tools wrote is under that name, and they edited or deleted nothing else."
        ));
    }
    text.push('\n');
    text.push_str(INTRO);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_leave_out_common_and_short_words() {
        assert_eq!(keywords("What is in this folder?"), ["folder"]);
        assert_eq!(keywords("Where is the config parser, the CONFIG one?"), ["config", "parser", "one"]);
        assert!(keywords("is it a b?").is_empty());
        assert!(keywords("").is_empty());
    }

    #[test]
    fn the_first_file_is_a_readme_or_the_first_listed() {
        assert_eq!(
            first_file("src/\nCargo.toml  (1.2 KiB)\nREADME.md  (40 B)\n").as_deref(),
            Some("README.md")
        );
        assert_eq!(first_file("src/\nmain.rs  (12 B)\n").as_deref(), Some("main.rs"));
        assert_eq!(first_file("src/\nlink  [symlink]\n"), None);
        assert_eq!(first_file("\"./x\" is empty."), None);
    }
}
