//! [`ToolAnnotations`]: what a tool does to the world it acts on, as hints in MCP's
//! vocabulary (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`).
//!
//! Hints describe a tool; they enforce nothing. Policy that depends on what a tool does
//! (the CLI asking before a tool that may change things, an MCP server publishing them)
//! reads these hints, never a list of tool names.

use serde::{Deserialize, Serialize};

/// Hints about a tool's effects, each unset unless the tool (or its registration) says.
///
/// An unset hint means "not stated", and callers that need an answer take MCP's
/// cautious default: not read-only, destructive, not idempotent, open world.
///
/// Built with `const` setters so a `#[tool(..)]` attribute can keep them in a constant:
///
/// ```
/// use harnessx_core::ToolAnnotations;
///
/// const READS: ToolAnnotations = ToolAnnotations::new().read_only(true).idempotent(true);
/// assert!(!READS.may_modify());
/// assert_eq!(
///     serde_json::to_value(READS).unwrap(),
///     serde_json::json!({"readOnlyHint": true, "idempotentHint": true}),
/// );
/// ```
///
/// Serialized with MCP's names, leaving out unset hints; deserializing ignores MCP's other
/// annotation keys (such as `title`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// `readOnlyHint`: the tool does not modify its environment.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`: when not read-only, the tool may delete or overwrite (rather
    /// than only add to) what is there.
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`: calling it again with the same arguments has no further effect.
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`: the tool reaches beyond a closed domain (the web, a person,
    /// another system), rather than only local state such as the workspace.
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// No hints set.
    pub const fn new() -> Self {
        Self { read_only: None, destructive: None, idempotent: None, open_world: None }
    }

    /// Sets `read_only`.
    pub const fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Sets `destructive`.
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Sets `idempotent`.
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Sets `open_world`.
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Whether no hint is set.
    pub const fn is_empty(&self) -> bool {
        self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
    }

    /// The hints of `self`, with unset ones taken from `fallback`.
    pub fn or(self, fallback: ToolAnnotations) -> ToolAnnotations {
        ToolAnnotations {
            read_only: self.read_only.or(fallback.read_only),
            destructive: self.destructive.or(fallback.destructive),
            idempotent: self.idempotent.or(fallback.idempotent),
            open_world: self.open_world.or(fallback.open_world),
        }
    }

    /// Whether a call may change things: `true` unless the tool is declared read-only,
    /// and always for a tool declared destructive (so contradictory hints err on the
    /// cautious side). An unset `read_only` counts as "may change things", as in MCP.
    ///
    /// This is the question behind confirmation: `harnessx run` asks before calling a tool
    /// for which this is `true`.
    ///
    /// ```
    /// use harnessx_core::ToolAnnotations;
    ///
    /// assert!(ToolAnnotations::new().may_modify());
    /// assert!(!ToolAnnotations::new().read_only(true).may_modify());
    /// assert!(ToolAnnotations::new().read_only(true).destructive(true).may_modify());
    /// ```
    pub const fn may_modify(&self) -> bool {
        matches!(self.destructive, Some(true)) || !matches!(self.read_only, Some(true))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn serializes_mcp_names_and_skips_unset_hints() {
        assert_eq!(serde_json::to_value(ToolAnnotations::new()).unwrap(), json!({}));
        let all =
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(true);
        assert_eq!(
            serde_json::to_value(all).unwrap(),
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
        );
    }

    #[test]
    fn deserializes_mcp_annotations_ignoring_other_keys() {
        let a: ToolAnnotations =
            serde_json::from_value(json!({"title": "Read", "readOnlyHint": true, "openWorldHint": false}))
                .unwrap();
        assert_eq!(a, ToolAnnotations::new().read_only(true).open_world(false));
    }

    #[test]
    fn or_keeps_set_hints_and_fills_unset_ones() {
        let own = ToolAnnotations::new().read_only(false).destructive(true);
        let fallback = ToolAnnotations::new().read_only(true).idempotent(true);
        assert_eq!(
            own.or(fallback),
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(true)
        );
        assert_eq!(ToolAnnotations::new().or(fallback), fallback);
        assert!(ToolAnnotations::new().is_empty());
        assert!(!fallback.is_empty());
    }

    #[test]
    fn may_modify_unless_read_only_and_not_destructive() {
        let cases = [
            (None, None, true),
            (None, Some(false), true),
            (None, Some(true), true),
            (Some(false), None, true),
            (Some(false), Some(false), true),
            (Some(false), Some(true), true),
            (Some(true), None, false),
            (Some(true), Some(false), false),
            (Some(true), Some(true), true),
        ];
        for (read_only, destructive, expected) in cases {
            let a = ToolAnnotations { read_only, destructive, ..ToolAnnotations::new() };
            assert_eq!(a.may_modify(), expected, "read_only {read_only:?}, destructive {destructive:?}");
        }
        // `idempotent` and `open_world` do not enter into it.
        assert!(!ToolAnnotations::new().read_only(true).idempotent(false).open_world(true).may_modify());
    }
}
