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

#[cfg(test)]
mod tests {
    use harnessx_agent::AgentConfig;
    use harnessx_agent::model::{FunctionModel, ModelResponse, ToolChoice};
    use serde_json::Value;

    use super::*;

    fn agent(name: &str, system: Option<&str>, config: AgentConfig) -> Agent {
        let model = FunctionModel::new(|_| Ok(ModelResponse::text("ok"))).with_name(name);
        let mut builder = Agent::builder().model(model).config(config);
        if let Some(system) = system {
            builder = builder.system_prompt(system);
        }
        builder.build().unwrap()
    }

    #[test]
    fn the_same_agent_has_the_same_fingerprint_and_a_summary_naming_it() {
        // Without the planning tools, which add their line to the system prompt.
        let plain = || AgentConfig { planning: false, ..AgentConfig::default() };
        let (a, summary) = fingerprint(&agent("m1", Some("Be brief."), plain()));
        let (b, _) = fingerprint(&agent("m1", Some("Be brief."), plain()));
        assert_eq!(a, b);
        assert_eq!(summary, r#"tools [], model "m1", a system prompt of 9 characters"#);
    }

    #[test]
    fn another_model_system_prompt_or_tool_set_is_another_fingerprint() {
        let base = fingerprint(&agent("m1", Some("Be brief."), AgentConfig::default())).0;
        assert_ne!(base, fingerprint(&agent("m2", Some("Be brief."), AgentConfig::default())).0);
        assert_ne!(base, fingerprint(&agent("m1", Some("Be long."), AgentConfig::default())).0);
        let no_planning = AgentConfig { planning: false, ..AgentConfig::default() };
        let (other, summary) = fingerprint(&agent("m1", Some("Be brief."), no_planning));
        assert_ne!(base, other);
        assert!(summary.starts_with("tools [],"), "{summary}");
    }

    #[test]
    fn default_tool_choice_and_context_leave_the_fingerprint_as_it_was_before_they_existed() {
        let (full, summary) = fingerprint(&agent("m1", None, AgentConfig::default()));
        let value: Value = serde_json::from_str(&full).unwrap();
        let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["model", "system", "tools"]);
        assert!(!summary.contains("tool choice") && !summary.contains("context window"), "{summary}");
    }

    #[test]
    fn a_tool_choice_or_a_context_window_is_part_of_the_fingerprint() {
        let required = AgentConfig {
            tool_choice: ToolChoice::Required,
            reset_tool_choice: false,
            ..AgentConfig::default()
        };
        let (full, summary) = fingerprint(&agent("m1", None, required));
        let value: Value = serde_json::from_str(&full).unwrap();
        assert_eq!(value["tool_choice"]["reset"], false, "{full}");
        assert!(summary.contains(", tool choice ") && summary.ends_with(" without reset"), "{summary}");

        let mut windowed = AgentConfig::default();
        windowed.context.window = Some(8_000);
        let (full, summary) = fingerprint(&agent("m1", None, windowed));
        let value: Value = serde_json::from_str(&full).unwrap();
        assert_eq!(value["context"]["window"], 8_000, "{full}");
        assert!(summary.contains(", context window 8000, result cap "), "{summary}");
    }

    #[test]
    fn arguments_hash_is_the_hex_sha256_of_the_text_as_sent() {
        // FIPS 180-2's test vectors.
        assert_eq!(arguments_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(arguments_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // Byte for byte: the same object spelled otherwise is other arguments.
        assert_ne!(arguments_hash(r#"{"a":1}"#), arguments_hash(r#"{"a": 1}"#));
    }
}
