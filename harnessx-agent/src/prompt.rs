//! What a run starts from: the prompt's text and the media attached to it.

use harnessx_core::content::{Part, Parts};

/// A run's prompt: its text and the images, documents or audio attached to it, sent to
/// the model as one user message.
///
/// Every method that starts a run takes `impl Into<Prompt>`, so a `&str` or a `String`
/// is a prompt of text alone:
///
/// ```
/// use harnessx_agent::Prompt;
/// use harnessx_core::content::Part;
///
/// let plain: Prompt = "What is 2 + 2?".into();
/// assert!(plain.parts.is_empty());
///
/// let png = vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
/// let with_picture = Prompt::new("What is in this picture?").with_part(Part::image("image/png", png));
/// assert_eq!(with_picture.parts.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// The media attached, in order (none for a prompt of text alone).
    pub parts: Parts,
}

impl Prompt {
    /// A prompt of `text` alone.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), parts: Parts::new() }
    }

    /// This prompt with `part` attached after the others.
    #[must_use]
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// This prompt with `parts` attached after the others.
    #[must_use]
    pub fn with_parts(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        for part in parts {
            self.parts.push(part);
        }
        self
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<&String> for Prompt {
    fn from(text: &String) -> Self {
        Self::new(text.as_str())
    }
}
