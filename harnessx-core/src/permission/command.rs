//! [`CommandPattern`]: what a rule's `NAME(PATTERN)` compares each simple command of a
//! script with, in Claude Code's spelling.
//!
//! - `*` matches any run of characters, blanks between words included, anywhere in the
//!   pattern and any number of times. Without `*` the command must be the pattern exactly.
//! - A blank before `*` decides: `ls *` stops at a word (`ls`, `ls -la`, not `lsof`);
//!   `ls*` is a character prefix (`lsof` too). A trailing ` *` may match nothing, so
//!   `ls *` matches `ls` alone.
//! - The legacy suffix `:*` is a trailing ` *`: `npm run test:*` is `npm run test *` (it
//!   matches `npm run test --watch`, not `npm run test:unit`; `npm run test:**` does).
//! - The pattern is read as bash reads a command, and compared with the command as the
//!   script reader ([`Script`](super::shell::Script)) gives it: words with their quotes
//!   removed, a blank in the pattern standing for the boundary between two words. So
//!   `echo "a b"` is one word after `echo`, and a quoted or escaped star (`'*'`, `\*`) is
//!   a plain character, not a wildcard.
//! - A pattern is one simple command: an operator in it (`;`, `&&`, `|`, a redirection,
//!   a newline) is refused, since no simple command of a script holds one.
//!
//! The match is the textbook wildcard algorithm (one backtracking point, at worst the
//! pattern's length times the command's), written over words instead of over a string:
//! the boundary between two words is not a character, so no character a command holds
//! can pass for one. globset and regex match strings, which would need such a character.

use brush_parser::Token;
use brush_parser::word::{WordPiece, WordPieceWithSource};

use crate::permission::shell;

/// One element of a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    /// This character.
    Char(char),
    /// The boundary between two words.
    Blank,
    /// Any run of characters and boundaries, empty included.
    Star,
}

/// A command pattern. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    elems: Vec<Elem>,
}

impl CommandPattern {
    /// Reads a pattern; the error says what is wrong in a phrase.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let (text, legacy) = match text.strip_suffix(":*") {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        let tokens = brush_parser::uncached_tokenize_str(text, &shell::options().tokenizer_options())
            .map_err(|e| format!("the command pattern cannot be read as a command: {e}"))?;
        let mut elems = Vec::new();
        for (n, token) in tokens.iter().enumerate() {
            match token {
                Token::Operator(op, _) => {
                    return Err(format!(
                        "a command pattern is one simple command, and {op:?} joins or redirects commands; write a rule for each command, e.g. run_bash(git status *)"
                    ));
                }
                Token::Word(raw, _) => {
                    if n > 0 {
                        elems.push(Elem::Blank);
                    }
                    word(raw, &mut elems)?;
                }
            }
        }
        if legacy {
            if !elems.is_empty() {
                elems.push(Elem::Blank);
            }
            elems.push(Elem::Star);
        }
        if elems.is_empty() {
            return Err("the command pattern is empty".to_owned());
        }
        Ok(Self { elems })
    }

    /// Whether the command whose words (quotes removed) are `words` matches.
    pub(crate) fn matches(&self, words: &[String]) -> bool {
        wildcard(&self.elems, words)
            || match self.elems.as_slice() {
                // A trailing ` *` also matches nothing after the last word.
                [init @ .., Elem::Blank, Elem::Star] => wildcard(init, words),
                _ => false,
            }
    }
}

/// Appends the elements of one word of a pattern, unquoted as the script reader unquotes
/// a command's words (`Walker::word` in [`shell`]); an unquoted `*` is a [`Elem::Star`].
fn word(raw: &str, out: &mut Vec<Elem>) -> Result<(), String> {
    if !raw.contains(['\'', '"', '\\', '$', '`', '~']) {
        out.extend(raw.chars().map(unquoted));
        return Ok(());
    }
    let pieces = brush_parser::word::parse(raw, &shell::options())
        .map_err(|e| format!("the word {raw:?} of the command pattern cannot be read: {e}"))?;
    pieces_into(raw, &pieces, false, out);
    Ok(())
}

fn unquoted(c: char) -> Elem {
    if c == '*' { Elem::Star } else { Elem::Char(c) }
}

fn pieces_into(raw: &str, pieces: &[WordPieceWithSource], quoted: bool, out: &mut Vec<Elem>) {
    let literal = |text: &str, out: &mut Vec<Elem>| out.extend(text.chars().map(Elem::Char));
    for p in pieces {
        match &p.piece {
            WordPiece::Text(t) if !quoted => out.extend(t.chars().map(unquoted)),
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                literal(t, out)
            }
            WordPiece::EscapeSequence(e) => literal(e.strip_prefix('\\').unwrap_or(e), out),
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_into(raw, inner, true, out)
            }
            // Expansions and substitutions stay as written, as a command's words keep them.
            _ => literal(raw.get(p.start_index..p.end_index).unwrap_or_default(), out),
        }
    }
}

/// A place in a command's words: a word, and a byte offset in it.
#[derive(Clone, Copy)]
struct At {
    word: usize,
    byte: usize,
}

/// What is at `at`, and the place after it; `None` at the end.
fn unit(words: &[String], at: At) -> Option<(Elem, At)> {
    let word = words.get(at.word)?;
    match word[at.byte..].chars().next() {
        Some(c) => Some((Elem::Char(c), At { byte: at.byte + c.len_utf8(), ..at })),
        None if at.word + 1 < words.len() => Some((Elem::Blank, At { word: at.word + 1, byte: 0 })),
        None => None,
    }
}

/// Whether `words` match `pattern` whole: a star takes as little as it can, and one more
/// unit each time what follows it fails (only the last star is ever widened).
fn wildcard(pattern: &[Elem], words: &[String]) -> bool {
    let (mut p, mut at) = (0, At { word: 0, byte: 0 });
    let mut star: Option<(usize, At)> = None;
    while let Some((here, next)) = unit(words, at) {
        match pattern.get(p) {
            Some(Elem::Star) => {
                star = Some((p, at));
                p += 1;
                continue;
            }
            Some(e) if *e == here => {
                p += 1;
                at = next;
                continue;
            }
            _ => {}
        }
        let Some((s, from)) = star else { return false };
        // The star takes one more unit; `from` is before `at`, so not the end.
        let Some((_, wider)) = unit(words, from) else { return false };
        star = Some((s, wider));
        p = s + 1;
        at = wider;
    }
    pattern[p..].iter().all(|e| *e == Elem::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<String> {
        command.split(' ').map(str::to_owned).collect()
    }

    fn m(pattern: &str, command: &str) -> bool {
        CommandPattern::parse(pattern).unwrap().matches(&words(command))
    }

    #[test]
    fn elements_as_read() {
        use Elem::{Blank, Char, Star};
        let elems = |p: &str| CommandPattern::parse(p).unwrap().elems;
        assert_eq!(elems("ls *"), [Char('l'), Char('s'), Blank, Star]);
        assert_eq!(elems("ls:*"), [Char('l'), Char('s'), Blank, Star]);
        assert_eq!(elems("ls*"), [Char('l'), Char('s'), Star]);
        assert_eq!(elems(":*"), [Star]);
        assert_eq!(elems("'*'x"), [Char('*'), Char('x')]);
        assert_eq!(elems("\"a *\""), [Char('a'), Char(' '), Char('*')]);
        assert_eq!(elems("  a   b  "), [Char('a'), Blank, Char('b')]);
    }

    #[test]
    fn stars_and_blanks() {
        assert!(m("ls *", "ls") && m("ls *", "ls -la") && !m("ls *", "lsof"));
        assert!(m("ls*", "lsof") && m("ls*", "ls") && m("ls*", "ls -la"));
        assert!(m("a*b*c", "aXbYc") && m("a*b*c", "abc") && !m("a*b*c", "acb"));
        assert!(m("*", "") && m("*", "a b") && m("**", "a"));
        assert!(!m("a", "a b") && !m("a b", "a") && m("a b", "a b"));
        // A word boundary in the command is no character of the pattern.
        assert!(!m("a\\ b", "a b"));
        // Widening the last star is enough: the earlier one is settled.
        assert!(m("*a*a*a*b", "aaaaaaaaaab") && !m("*a*a*a*b", &"a".repeat(200)));
    }

    // The byte offsets stay on character boundaries.
    #[test]
    fn multibyte_characters_are_units() {
        assert!(m("é*", "éé") && m("*é", "aé") && !m("é", "e") && m("日*語", "日本語"));
        assert!(m("?*", "?x") && !m("é", "é é"));
    }

    #[test]
    fn an_empty_word_is_still_a_word() {
        let two = ["a".to_owned(), String::new()];
        let p = CommandPattern::parse("a *").unwrap();
        assert!(p.matches(&two) && p.matches(&two[..1]));
        assert!(!CommandPattern::parse("a").unwrap().matches(&two));
        assert!(CommandPattern::parse("*").unwrap().matches(&[]));
        assert!(!CommandPattern::parse("a").unwrap().matches(&[]));
    }

    #[test]
    fn refused() {
        for bad in ["a | b", "a; b", "a && b", "a > f", "a\nb", "'open", "", "   ", "''"] {
            let err = CommandPattern::parse(bad).unwrap_err();
            assert!(!err.contains('\n'), "{bad}: {err}");
        }
    }
}
