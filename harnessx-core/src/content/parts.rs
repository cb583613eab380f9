//! [`Parts`]: the media beside a text (a tool result's, a user message's), one machine word
//! and no allocation when there are none.
//!
//! Most results and messages are text only, and they travel by value through every stage
//! of a call and every turn of the agent loop. A `Vec<Part>` there costs three words in
//! each result, output and message (and in each future holding one across an await), and
//! each move copies them; issue 43 asks that a text-only run stay exactly as cheap as
//! before parts existed. So the list is boxed and optional: none is a null pointer.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Part;

/// A list of [`Part`]s, in order: a slice to read (it derefs to `[Part]`), written and
/// read as a plain JSON list.
///
/// Empty is the default, one word and no allocation. Use it with
/// `#[serde(default, skip_serializing_if = "Parts::is_empty")]` so a text-only value is
/// written without it.
#[derive(Clone, Default, PartialEq, Eq)]
#[allow(clippy::box_collection, reason = "a boxed `Vec` is one word; a boxed slice is two")]
pub struct Parts(Option<Box<Vec<Part>>>);

impl Parts {
    /// No parts (allocates nothing).
    pub const fn new() -> Self {
        Self(None)
    }

    /// Whether there are no parts.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Adds `part` after the others.
    pub fn push(&mut self, part: Part) {
        self.0.get_or_insert_default().push(part);
    }

    /// Removes every part (freeing the list).
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl Deref for Parts {
    type Target = [Part];

    fn deref(&self) -> &[Part] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl From<Vec<Part>> for Parts {
    /// Takes the vector over; an empty one becomes none (no allocation kept).
    fn from(parts: Vec<Part>) -> Self {
        Self((!parts.is_empty()).then(|| Box::new(parts)))
    }
}

impl FromIterator<Part> for Parts {
    fn from_iter<I: IntoIterator<Item = Part>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<'a> IntoIterator for &'a Parts {
    type Item = &'a Part;
    type IntoIter = std::slice::Iter<'a, Part>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Parts {
    /// As the list it is: `[]`, `[Image { .. }]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Parts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Part>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Issue 43: a text-only result or message must cost what it did before parts.
    #[test]
    fn no_parts_is_one_word_and_no_allocation() {
        assert_eq!(std::mem::size_of::<Parts>(), std::mem::size_of::<usize>());
        assert!(Parts::from(Vec::new()).0.is_none());
        assert!(Parts::default().is_empty());
        assert_eq!(&*Parts::new(), &[] as &[Part]);
    }

    #[test]
    fn push_keeps_the_order_and_clear_empties() {
        let mut parts = Parts::new();
        parts.push(Part::text("a"));
        parts.push(Part::image("image/png", vec![1]));
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], Part::text("a"));
        assert_eq!(parts.iter().map(Part::kind).collect::<Vec<_>>(), ["text", "image"]);
        parts.clear();
        assert!(parts.is_empty());
    }

    #[test]
    fn written_and_read_as_a_plain_list() {
        let parts: Parts = vec![Part::text("a")].into();
        let written = serde_json::to_value(&parts).unwrap();
        assert_eq!(written, json!([{"type": "text", "text": "a"}]));
        assert_eq!(serde_json::from_value::<Parts>(written).unwrap(), parts);
        assert_eq!(serde_json::to_value(Parts::new()).unwrap(), json!([]));
        assert!(serde_json::from_value::<Parts>(json!([])).unwrap().is_empty());
        assert_eq!(format!("{parts:?}"), format!("{:?}", [Part::text("a")]));
    }
}
