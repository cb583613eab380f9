//! What a run depends on and what a decision is bound to: the agent's fingerprint,
//! compared on resume (and by Restate workers), and the hash of a call's arguments.

use harnessx_agent::Agent;

/// What a run depends on, as (the text compared on resume, a summary for the error):
/// the tools' schemas, the model's name and the system prompt; and the tool choice
/// settings when they are not the defaults (so that the fingerprints of runs that never
/// set them are the same as before those settings existed).
pub(crate) fn fingerprint(agent: &Agent) -> (String, String) {
    let tools = agent.tools().get_tool_params();
    let model = agent.model().map(|m| m.name().to_owned()).unwrap_or_default();
    let system = agent.effective_system_prompt().unwrap_or_default();
    let mut full = serde_json::json!({"model": model, "system": system, "tools": tools});
    let names: Vec<String> = agent.tools().list_tools().into_iter().map(|d| d.name.to_string()).collect();
    let mut summary = format!(
        "tools [{}], model {:?}, a system prompt of {} characters",
        names.join(", "),
        model,
        system.chars().count()
    );
    let config = agent.config();
    if !config.tool_choice.is_auto() || config.parallel_tool_calls.is_some() || !config.reset_tool_choice {
        full["tool_choice"] = serde_json::json!({
            "choice": config.tool_choice,
            "parallel_tool_calls": config.parallel_tool_calls,
            "reset": config.reset_tool_choice,
        });
        summary.push_str(&format!(", tool choice {}", config.tool_choice));
        if let Some(parallel) = config.parallel_tool_calls {
            summary.push_str(&format!(" (parallel tool calls {parallel})"));
        }
        if !config.reset_tool_choice {
            summary.push_str(" without reset");
        }
    }
    // The context settings decide when the history is compacted: a resume with others
    // would not replay the run's requests (and on Restate, not its journal).
    let context = &config.context;
    let defaults = harnessx_agent::ContextPolicy::default();
    let cap = agent.tools().policy().max_result_chars;
    if context.window.is_some()
        || context.compact_at != defaults.compact_at
        || context.keep_turns != defaults.keep_turns
        || cap != harnessx_core::DEFAULT_MAX_RESULT_CHARS
    {
        full["context"] = serde_json::json!({
            "window": context.window,
            "compact_at": context.compact_at,
            "keep_turns": context.keep_turns,
            "max_result_chars": cap,
        });
        let window = context.window.map_or_else(|| "the model's".to_owned(), |w| w.to_string());
        summary.push_str(&format!(", context window {window}, result cap {cap}"));
    }
    (full.to_string(), summary)
}

/// The hash a journaled decision is bound to: SHA-256 of the call's arguments as the
/// model sent them, in hex.
pub fn arguments_hash(arguments: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(arguments.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
