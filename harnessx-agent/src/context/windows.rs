//! The context windows of known models, in tokens: the default of
//! [`ContextPolicy::window`](super::ContextPolicy::window). Matched on the model's name
//! without its `provider:` prefix, the longest matching prefix winning; a model that is
//! not listed has no default (give `--context-window`), and a run then learns the
//! window from the provider's first context-length error when it names it.

/// (name prefix, window in tokens), as the providers publish them.
const KNOWN: &[(&str, u64)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gpt-oss", 131_072),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
    // Google's model pages (and Gemini's own refusals: "maximum number of tokens allowed
    // (1048576)" from gemini-2.5-pro); the Gemini 3 previews are not listed.
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
];

/// The window of `model` (e.g. `openai:gpt-4o-mini`, `claude-sonnet-4-5`), if known.
///
/// ```
/// use harnessx_agent::context::known_window;
///
/// assert_eq!(known_window("openai:gpt-4o-mini"), Some(128_000));
/// assert_eq!(known_window("gpt-4-0613"), Some(8_192));
/// assert_eq!(known_window("anthropic:claude-sonnet-4-5"), Some(200_000));
/// assert_eq!(known_window("gemini:gemini-2.5-flash"), Some(1_048_576));
/// assert_eq!(known_window("openai:my-local-llama"), None);
/// ```
pub fn known_window(model: &str) -> Option<u64> {
    let name = model.split_once(':').map_or(model, |(_, m)| m);
    let name = name.rsplit('/').next().unwrap_or(name);
    KNOWN
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}
