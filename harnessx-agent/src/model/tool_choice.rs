//! [`ToolChoice`]: whether the model may, must or must not call a tool.
//!
//! Provider-neutral; each adapter maps it to its wire format (see `docs/agent.md`,
//! "Tool choice").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use harnessx_core::tool::name::is_valid_tool_name;

/// Whether the model may, must or must not call a tool on a request.
///
/// Serialized as `"auto"`, `"required"`, `"none"` or `{"tool": "NAME"}`; parsed (the
/// CLI's `--tool-choice`) from `auto`, `required`, `none` or a tool name.
///
/// ```
/// use harnessx_agent::ToolChoice;
///
/// assert_eq!("required".parse::<ToolChoice>(), Ok(ToolChoice::Required));
/// assert_eq!("get_weather".parse::<ToolChoice>(), Ok(ToolChoice::Tool("get_weather".into())));
/// assert_eq!(ToolChoice::Tool("get_weather".into()).to_string(), "get_weather");
/// assert!("two words".parse::<ToolChoice>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default; providers' own default, so nothing is sent).
    #[default]
    Auto,
    /// The model must call at least one tool (Anthropic calls it `any`).
    Required,
    /// The model must not call a tool.
    None,
    /// The model must call this tool (a registered name, exactly).
    Tool(String),
}

impl ToolChoice {
    /// Whether this is [`ToolChoice::Auto`].
    pub fn is_auto(&self) -> bool {
        *self == Self::Auto
    }
}

impl fmt::Display for ToolChoice {
    /// The form [`FromStr`] reads back: `auto`, `required`, `none` or the tool's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::None => "none",
            Self::Tool(name) => name,
        })
    }
}

/// A `--tool-choice` value that is neither a keyword nor a possible tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid tool choice \"{0}\": use auto, required, none or a tool name (letters, digits, _ and -, at most 64)"
)]
pub struct ParseToolChoiceError(String);

// Hand-written rather than derived from serde: the value is either a keyword or free text
// (a tool name), which serde's enum forms cannot read from one plain string.
impl FromStr for ToolChoice {
    type Err = ParseToolChoiceError;

    /// `auto`, `required` and `none` (any letter case) are the keywords, so a tool named
    /// one of them cannot be forced from a string; anything else must be a valid tool
    /// name and is kept as written.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Ok(match s.to_ascii_lowercase().as_str() {
            "auto" => Self::Auto,
            "required" => Self::Required,
            "none" => Self::None,
            _ if is_valid_tool_name(s) => Self::Tool(s.to_owned()),
            _ => return Err(ParseToolChoiceError(s.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_choice_reads_back_what_it_displays() {
        for choice in
            [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None, ToolChoice::Tool("read-file_2".into())]
        {
            assert_eq!(choice.to_string().parse::<ToolChoice>(), Ok(choice.clone()));
        }
    }

    #[test]
    fn keywords_ignore_case_and_spaces_tool_names_keep_their_case() {
        assert_eq!(" Required ".parse::<ToolChoice>(), Ok(ToolChoice::Required));
        assert_eq!("NONE".parse::<ToolChoice>(), Ok(ToolChoice::None));
        assert_eq!("ReadFile".parse::<ToolChoice>(), Ok(ToolChoice::Tool("ReadFile".into())));
    }

    #[test]
    fn empty_and_impossible_names_are_refused_with_the_valid_forms() {
        for bad in ["", "  ", "read file", "functions.read_file", &"x".repeat(65)] {
            let e = bad.parse::<ToolChoice>().unwrap_err().to_string();
            assert!(e.contains("use auto, required, none or a tool name"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn serde_round_trips_in_the_documented_forms() {
        let cases = [
            (ToolChoice::Auto, json!("auto")),
            (ToolChoice::Required, json!("required")),
            (ToolChoice::None, json!("none")),
            (ToolChoice::Tool("get_weather".into()), json!({"tool": "get_weather"})),
        ];
        for (choice, wire) in cases {
            assert_eq!(serde_json::to_value(&choice).unwrap(), wire);
            assert_eq!(serde_json::from_value::<ToolChoice>(wire).unwrap(), choice);
        }
    }
}
