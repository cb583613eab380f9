//! [`PermissionLevel`]: ALLOW, ASK or DENY.

use std::fmt;
use std::str::FromStr;

use crate::error::ParsePolicyError;

/// Whether a tool call may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PermissionLevel {
    /// Run without asking.
    Allow,
    /// Run only once approved (by a session grant, a stored approval, or the approval
    /// callback). With no way to approve, the call is denied.
    Ask,
    /// Never run; the model gets `Permission denied`.
    Deny,
}

impl PermissionLevel {
    /// All levels, in the order they are listed in messages.
    pub const ALL: [PermissionLevel; 3] = [Self::Allow, Self::Ask, Self::Deny];

    /// The level as a lower-case string (`"allow"`, `"ask"`, `"deny"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for PermissionLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionLevel {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParsePolicyError::new("permission", s, "allow, ask, deny"))
    }
}

impl serde::Serialize for PermissionLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for PermissionLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        assert_eq!("ALLOW".parse::<PermissionLevel>().unwrap(), PermissionLevel::Allow);
        assert_eq!(PermissionLevel::Deny.to_string(), "deny");
        assert_eq!(
            "maybe".parse::<PermissionLevel>().unwrap_err().to_string(),
            "invalid permission \"maybe\": expected one of allow, ask, deny"
        );
    }
}
