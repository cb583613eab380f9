//! Name resolution: exact match, formatting-only repair, or an error that suggests.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::tool::name::{repair_key, strip_known_prefixes, suggestions};
use crate::tool::registered::RegisteredTool;

/// Result of resolving a requested name: the registered name, or why none was chosen.
pub type NameResolution = Result<String, UnknownTool>;

/// A name that resolved to no tool (a typo, or an alias matching several tools). Its
/// `Display` is the error text the model gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    /// The name as the model wrote it.
    pub requested: String,
    /// Up to three close names, best first (the matching names, when ambiguous).
    pub suggestions: Vec<String>,
    /// Every registered name, sorted.
    pub available: Vec<String>,
    /// Whether the name matched more than one tool by formatting.
    pub ambiguous: bool,
}

impl fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ambiguous {
            write!(f, "Unknown tool {:?}: it matches more than one tool.", self.requested)?;
        } else {
            write!(f, "Unknown tool {:?}.", self.requested)?;
        }
        if !self.suggestions.is_empty() {
            write!(f, " Did you mean: {}?", self.suggestions.join(", "))?;
        }
        if self.available.is_empty() {
            f.write_str(" No tools are available.")
        } else {
            write!(
                f,
                " Available tools: {}. Call again with one of these exact names.",
                self.available.join(", ")
            )
        }
    }
}

impl std::error::Error for UnknownTool {}

/// The registered tools by name, in registration order. Looked up once per call, so
/// hashed with `foldhash` (seeded per process) rather than SipHash: a name is short and
/// the table is the registrant's, so SipHash's flooding resistance buys nothing here.
pub(super) type Tools = IndexMap<String, Arc<RegisteredTool>, foldhash::fast::RandomState>;
/// Formatting-insensitive key -> the registered names with that key.
pub(super) type Keys = HashMap<String, Vec<Arc<str>>, foldhash::fast::RandomState>;

/// Resolves `requested` among `tools`, whose formatting-insensitive keys are `keys`.
pub(super) fn resolve(
    tools: &Tools,
    keys: &Keys,
    requested: &str,
) -> Result<Arc<RegisteredTool>, UnknownTool> {
    if let Some(tool) = tools.get(requested) {
        return Ok(tool.clone());
    }
    // Every tool the name could mean by formatting alone: the name without a known
    // prefix, and the formatting-insensitive keys of the name with and without it (so
    // `tools.list` still finds `tools_list`). Exactly one candidate is dispatched.
    let stripped = strip_known_prefixes(requested);
    let mut matches: Vec<Arc<str>> = Vec::new();
    if stripped.len() != requested.len()
        && let Some(tool) = tools.get(stripped)
    {
        matches.push(tool.name().clone());
    }
    let stripped_key = repair_key(stripped);
    let requested_key = repair_key(requested);
    let candidates =
        if stripped_key == requested_key { vec![stripped_key] } else { vec![stripped_key, requested_key] };
    for key in &candidates {
        for name in keys.get(key).map(Vec::as_slice).unwrap_or_default() {
            if !matches.contains(name) {
                matches.push(name.clone());
            }
        }
    }
    if let [only] = matches.as_slice()
        && let Some(tool) = tools.get(&**only)
    {
        return Ok(tool.clone());
    }
    let mut available: Vec<String> = tools.keys().cloned().collect();
    available.sort();
    let (suggested, ambiguous) = if matches.len() > 1 {
        (matches.iter().take(3).map(|n| n.to_string()).collect(), true)
    } else {
        let close = suggestions(requested, available.iter().map(String::as_str), 3);
        (close.into_iter().map(str::to_owned).collect(), false)
    };
    Err(UnknownTool { requested: requested.to_owned(), suggestions: suggested, available, ambiguous })
}
