//! Reading plain argument text: the cursor over its bytes, the plain scalars it reads, and
//! the values of named arguments located in it.

/// `a == b`, compared in place: argument names are short, and a call to `memcmp` costs
/// more than comparing them.
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A position in argument text, for [`FlatSchema::plain`](super::FlatSchema::plain).
pub(super) struct Cursor<'t> {
    pub(super) text: &'t str,
    pub(super) at: usize,
}

impl<'t> Cursor<'t> {
    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// JSON's whitespace.
    pub(super) fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The rest of a string whose opening quote was read, when it has no escape and no
    /// control character (a raw one is not JSON); the position is after its closing quote.
    pub(super) fn plain_string(&mut self) -> Option<&'t str> {
        let start = self.at;
        let mut end = start;
        // (An index loop: a short string costs a few instructions a byte.)
        while let Some(&b) = self.bytes().get(end) {
            if b == b'"' {
                self.at = end + 1;
                // (Both ends are at ASCII bytes, so on character boundaries.)
                return self.text.get(start..end);
            }
            if b == b'\\' || b < 0x20 {
                return None;
            }
            end += 1;
        }
        None
    }

    /// `literal` (`true`, `false`, `null`), read.
    fn word(&mut self, literal: &str) -> Option<()> {
        self.bytes()[self.at..].starts_with(literal.as_bytes()).then(|| self.at += literal.len())
    }

    /// An integer as JSON writes it (`-?(0|[1-9][0-9]*)`), of at most 18 digits, not
    /// followed by a fraction or exponent, and not `-0` (a float to serde_json).
    fn plain_integer(&mut self) -> Option<i64> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let start = self.at;
        let digits = self.bytes()[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 18 || (digits > 1 && self.bytes()[start] == b'0') {
            return None;
        }
        self.at += digits;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let n = self.bytes()[start..self.at].iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        match (negative, n) {
            // serde_json reads `-0` as the float -0.0.
            (true, 0) => None,
            (true, n) => Some(-n),
            (false, n) => Some(n),
        }
    }
}

/// The value at `at`: a plain scalar, or `None`.
pub(super) fn plain_scalar<'t>(at: &mut Cursor<'t>) -> Option<PlainScalar<'t>> {
    at.skip_space();
    Some(match at.peek()? {
        b'"' => {
            at.at += 1;
            PlainScalar::Str(at.plain_string()?)
        }
        b't' => at.word("true").map(|()| PlainScalar::Bool(true))?,
        b'f' => at.word("false").map(|()| PlainScalar::Bool(false))?,
        b'n' => at.word("null").map(|()| PlainScalar::Null)?,
        _ => PlainScalar::Int(at.plain_integer()?),
    })
}

/// One plain scalar, served as serde_json serves the same text: a non-negative integer
/// as `u64`, a negative one as `i64`, a string borrowed.
#[derive(Clone, Copy)]
pub(super) enum PlainScalar<'t> {
    Str(&'t str),
    Int(i64),
    Bool(bool),
    Null,
}

/// Finds, in argument text a flat schema accepted, the text of each named argument's
/// value: `values[i]` for `names[i]` (left `None` when absent). `false` when a key has an
/// escape (it is then matched on the value path).
pub(crate) fn locate_values<'t>(text: &'t str, names: &[&str], values: &mut [Option<&'t str>]) -> bool {
    locate(text, names, values).is_some()
}

fn locate<'t>(text: &'t str, names: &[&str], values: &mut [Option<&'t str>]) -> Option<()> {
    let mut at = Cursor { text, at: 0 };
    at.skip_space();
    at.eat(b'{')?;
    loop {
        at.skip_space();
        match at.peek()? {
            b'}' => return Some(()),
            b',' => {
                at.at += 1;
                continue;
            }
            _ => {}
        }
        at.eat(b'"')?;
        let key = at.plain_string()?;
        at.skip_space();
        at.eat(b':')?;
        at.skip_space();
        let start = at.at;
        if at.peek()? == b'"' {
            // A string: to its closing quote, escapes skipped (the text is valid JSON).
            at.at += 1;
            loop {
                match at.peek()? {
                    b'"' => break,
                    b'\\' => at.at += 2,
                    _ => at.at += 1,
                }
            }
            at.at += 1;
        } else {
            // A number or a word.
            while !matches!(at.peek()?, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                at.at += 1;
            }
        }
        // (Both ends are at ASCII bytes, so on character boundaries.)
        let value = text.get(start..at.at)?;
        if let Some(i) =
            names.iter().position(|name| !name.is_empty() && same_bytes(name.as_bytes(), key.as_bytes()))
        {
            values[i] = Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_located_by_name_and_an_escaped_key_is_refused() {
        let text = r#" {"a": 12, "s": "x\"y" , "n": null} "#;
        let mut values = [None; 3];
        assert!(locate_values(text, &["s", "a", "missing"], &mut values));
        assert_eq!(values, [Some(r#""x\"y""#), Some("12"), None]);
        let mut values = [None];
        assert!(!locate_values(r#"{"\u0061": 1}"#, &["a"], &mut values));
    }

    #[test]
    fn plain_integers_stop_where_serde_json_reads_a_float() {
        let int = |s: &str| Cursor { text: s, at: 0 }.plain_integer();
        assert_eq!(int("-12"), Some(-12));
        assert_eq!(int("0"), Some(0));
        assert_eq!(int("123456789012345678"), Some(123_456_789_012_345_678));
        for float_or_wide in ["-0", "01", "1.5", "1e3", "1E3", "1234567890123456789", "-", ""] {
            assert_eq!(int(float_or_wide), None, "{float_or_wide}");
        }
    }

    #[test]
    fn plain_strings_end_at_an_escape_or_a_control_character() {
        fn string(text: &str) -> Option<&str> {
            Cursor { text, at: 0 }.plain_string()
        }
        assert_eq!(string(r#"héllo" rest"#), Some("héllo"));
        assert_eq!(string(r#"a\"b""#), None);
        assert_eq!(string("a\u{1}b\""), None);
        assert_eq!(string("unterminated"), None);
    }
}
