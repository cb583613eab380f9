//! What a shell script runs, as a permission rule needs to know it: every simple command
//! (its words, unquoted), and whether the script does anything an allow rule cannot vouch
//! for.
//!
//! The script is parsed as bash would parse it (brush-parser), not split on `;`: lists
//! (`;`, `&&`, `||`, `&`, newlines), pipelines, subshells and brace groups are walked
//! into. The script is *opaque* (no allow rule matches it) when it has a command or
//! process substitution (`$(..)`, backticks, `<(..)`), runs a string as a script (`eval`,
//! `bash -c`, `sh -c`, ..), writes through a redirection outside the workspace, defines
//! a function, or uses a control construct (`if`, `for`, `while`, `case`, `[[ ]]`,
//! `(( ))`): those run commands an allow rule does not see. What they run is still
//! collected, as far as it can be read (the script of `bash -c '..'`, of `eval`, of a
//! substitution), so that a deny or ask rule matches any part of it.
//!
//! Hostile input: a script longer than [`MAX_SCRIPT_BYTES`], with more than
//! [`MAX_CONSTRUCTS`] nesting constructs (the parser recurses on them), or nested more
//! than [`MAX_DEPTH`] scripts deep (`bash -c "bash -c .."`) is not parsed at all: it is
//! [`Script::unreadable`], which no allow rule matches and every deny and ask rule on
//! commands does.

use brush_parser::ast::{
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, RedirectList, SimpleCommand,
};
use brush_parser::word::{WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, SourceInfo};

use crate::permission::path;

/// Scripts longer than this are not parsed (they match no allow rule).
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Scripts with more opening constructs than this (`(`, `{`, backticks, `if`, `for`,
/// `while`, `until`, `case`, `select`, `function`) are not parsed: the parser recurses
/// on them, and a tool call has no use for so many.
pub const MAX_CONSTRUCTS: usize = 200;
/// How many scripts deep (`bash -c`, `eval`, substitutions) the walk reads.
pub const MAX_DEPTH: usize = 8;

/// One simple command: its words, unquoted, assignments before the name included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCmd {
    /// The words (`FOO=1`, `git`, `status`), quotes removed; expansions as written.
    pub words: Vec<String>,
    /// Index of the command's name in `words` (after the assignments).
    pub name: usize,
}

impl SimpleCmd {
    /// The words from the command's name on, and then past the wrappers that run the rest
    /// as a command (`env A=1`, `command`, `exec`, `nohup`, `sudo`, `time`, `builtin`):
    /// every way a deny rule should look at it.
    pub fn tails(&self) -> impl Iterator<Item = &[String]> {
        let mut at = Some(self.name.min(self.words.len()));
        let words = &self.words;
        std::iter::from_fn(move || {
            let here = at?;
            let rest = &words[here..];
            at = match rest.first().map(String::as_str) {
                Some("env") => {
                    let skip = rest[1..].iter().take_while(|w| w.contains('=') || w.starts_with('-')).count();
                    Some(here + 1 + skip)
                }
                Some("command" | "exec" | "nohup" | "sudo" | "doas" | "time" | "builtin") => {
                    let skip = rest[1..].iter().take_while(|w| w.starts_with('-')).count();
                    Some(here + 1 + skip)
                }
                _ => None,
            }
            .filter(|&next| next < words.len());
            Some(rest)
        })
    }
}

/// What a script runs. See the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command found, in order, those of nested scripts included.
    pub commands: Vec<SimpleCmd>,
    /// Something runs that no allow rule can vouch for.
    pub opaque: bool,
    /// The script could not be read (a syntax error, too long, too deep).
    pub unreadable: bool,
}

impl Script {
    /// Reads `script`; `workspace` is the folder commands run in (redirections are
    /// checked against it; `None`: only relative paths that stay below the working
    /// directory count as inside).
    pub fn parse(script: &str, workspace: Option<&std::path::Path>) -> Self {
        if script.len() <= MAX_SCRIPT_BYTES
            && let Some(commands) = plain_list(script)
        {
            return Script { commands, opaque: false, unreadable: false };
        }
        let mut out = Script::default();
        Walker { out: &mut out, workspace }.script(script, 0);
        if out.unreadable {
            out.opaque = true;
        }
        out
    }
}

struct Walker<'a, 'w> {
    out: &'a mut Script,
    workspace: Option<&'w std::path::Path>,
}

/// The parser's options, shared with the reading of command patterns.
pub(crate) fn options() -> ParserOptions {
    // Plain bash, as `bash -c` runs it: extglob on (as brush's default), tilde expansion.
    ParserOptions::default()
}

/// Words a shell reads as syntax at the start of a command.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "select",
    "function", "time", "coproc", "in", "[[", "]]",
];

/// The commands of a script that is only plain words and control operators (`;`, `&`,
/// `&&`, `|`, `||`, `|&`, newlines): no quotes, expansions, redirections, groups,
/// comments, assignments or reserved words. Bash splits such a script exactly there, so
/// the parser is not needed (the common case, read in a fraction of the time). `None`:
/// parse it.
fn plain_list(script: &str) -> Option<Vec<SimpleCmd>> {
    let plain = script.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b' ' | b'\t'
                    | b'\n'
                    | b'-'
                    | b'_'
                    | b'.'
                    | b'/'
                    | b':'
                    | b','
                    | b'+'
                    | b'%'
                    | b'@'
                    | b'^'
                    | b'='
                    | b'*'
                    | b'?'
                    | b'['
                    | b']'
                    | b';'
                    | b'&'
                    | b'|'
            )
    });
    if !plain {
        return None;
    }
    let mut commands = Vec::new();
    let mut rest = script;
    let mut before: Option<&str> = None;
    loop {
        let end = rest.find([';', '&', '|', '\n']).unwrap_or(rest.len());
        let words: Vec<String> = rest[..end].split_ascii_whitespace().map(str::to_owned).collect();
        // The operator after this command: a newline alone, or a run of `;&|`.
        let op_len = match rest[end..].chars().next() {
            None => 0,
            Some('\n') => 1,
            Some(_) => rest[end..].find(|c: char| !matches!(c, ';' | '&' | '|')).unwrap_or(rest.len() - end),
        };
        let op = &rest[end..end + op_len];
        if !matches!(op, "" | "\n" | ";" | "&" | "&&" | "|" | "||" | "|&") {
            return None;
        }
        match words.first() {
            // Nothing between two operators: only blank lines and a trailing `;` or `&`
            // are that simple; the parser says what the rest is.
            None if matches!(before, None | Some("\n" | ";" | "&")) && matches!(op, "" | "\n") => {}
            None => return None,
            Some(first) => {
                let program = first.rsplit('/').next().unwrap_or(first);
                if first.contains('=')
                    || RESERVED.contains(&first.as_str())
                    || STRING_RUNNERS.contains(&program)
                {
                    return None;
                }
                if words.iter().any(|w| STRING_RUNNERS.contains(&w.rsplit('/').next().unwrap_or(w))) {
                    // `sudo bash -c ..`, `env eval ..`: read by the parser and the walk.
                    return None;
                }
                commands.push(SimpleCmd { words, name: 0 });
            }
        }
        if op.is_empty() {
            return Some(commands);
        }
        before = Some(op);
        rest = &rest[end + op_len..];
    }
}

/// Programs that run a string as a script (`eval ..`, `bash -c ..`).
const STRING_RUNNERS: &[&str] = &["eval", "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// A cheap, quote-blind count of what makes the parser recurse.
fn too_complex(script: &str) -> bool {
    let mut n = script.bytes().filter(|b| matches!(b, b'(' | b'{' | b'`')).count();
    if n > MAX_CONSTRUCTS {
        return true;
    }
    for word in script.split(|c: char| !c.is_ascii_alphanumeric()) {
        if matches!(word, "if" | "for" | "while" | "until" | "case" | "select" | "function") {
            n += 1;
            if n > MAX_CONSTRUCTS {
                return true;
            }
        }
    }
    false
}

impl Walker<'_, '_> {
    fn unreadable(&mut self) {
        self.out.unreadable = true;
        self.out.opaque = true;
    }

    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH || text.len() > MAX_SCRIPT_BYTES || too_complex(text) {
            return self.unreadable();
        }
        let mut reader = std::io::BufReader::new(text.as_bytes());
        let mut parser = brush_parser::Parser::new(&mut reader, &options(), &SourceInfo::default());
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(_) => self.unreadable(),
        }
    }

    fn list(&mut self, list: &CompoundList, depth: usize) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                let (brush_parser::ast::AndOr::And(p) | brush_parser::ast::AndOr::Or(p)) = next;
                self.pipeline(p, depth);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &Command, depth: usize) {
        match command {
            Command::Simple(simple) => self.simple(simple, depth),
            Command::Compound(compound, redirects) => {
                if let Some(RedirectList(list)) = redirects {
                    for r in list {
                        self.redirect(r, depth);
                    }
                }
                self.compound(compound, depth);
            }
            Command::Function(function) => {
                // Defining a function runs nothing, but it can shadow a command an
                // allow rule trusts (`git() { rm -rf ..; }; git status`).
                self.out.opaque = true;
                self.compound(&function.body.0, depth);
            }
            Command::ExtendedTest(test) => {
                self.out.opaque = true;
                // Words inside `[[ ]]` can hold substitutions; read them as text.
                self.text_for_substitutions(&test.to_string(), depth);
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, depth: usize) {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list, depth),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list, depth),
            other => {
                // Control flow: what runs depends on values an allow rule does not see.
                self.out.opaque = true;
                match other {
                    CompoundCommand::ForClause(f) => {
                        for w in f.values.iter().flatten() {
                            self.word(&w.value, depth);
                        }
                        self.list(&f.body.list, depth);
                    }
                    CompoundCommand::ArithmeticForClause(f) => self.list(&f.body.list, depth),
                    CompoundCommand::CaseClause(c) => {
                        self.word(&c.value.value, depth);
                        for case in &c.cases {
                            if let Some(cmd) = &case.cmd {
                                self.list(cmd, depth);
                            }
                        }
                    }
                    CompoundCommand::IfClause(i) => {
                        self.list(&i.condition, depth);
                        self.list(&i.then, depth);
                        for e in i.elses.iter().flatten() {
                            if let Some(condition) = &e.condition {
                                self.list(condition, depth);
                            }
                            self.list(&e.body, depth);
                        }
                    }
                    CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                        self.list(&w.0, depth);
                        self.list(&w.1.list, depth);
                    }
                    CompoundCommand::Arithmetic(a) => self.text_for_substitutions(&a.expr.value, depth),
                    CompoundCommand::BraceGroup(_) | CompoundCommand::Subshell(_) => {}
                }
            }
        }
    }

    fn simple(&mut self, simple: &SimpleCommand, depth: usize) {
        let mut words = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| &p.0) {
            self.item(item, &mut words, depth);
        }
        let name = words.len();
        if let Some(w) = &simple.word_or_name {
            let text = self.word(&w.value, depth);
            words.push(text);
        }
        for item in simple.suffix.iter().flat_map(|s| &s.0) {
            self.item(item, &mut words, depth);
        }
        let command = SimpleCmd { words, name };
        self.nested_scripts(&command, depth);
        self.out.commands.push(command);
    }

    fn item(&mut self, item: &CommandPrefixOrSuffixItem, words: &mut Vec<String>, depth: usize) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, depth),
            CommandPrefixOrSuffixItem::Word(w) | CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                let text = self.word(&w.value, depth);
                words.push(text);
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.out.opaque = true;
                words.push(format!("<({})", subshell.list));
                self.list(&subshell.list, depth + 1);
            }
        }
    }

    /// `bash -c SCRIPT`, `sh -c SCRIPT`, `eval WORDS..`: the string runs as a script.
    fn nested_scripts(&mut self, command: &SimpleCmd, depth: usize) {
        for rest in command.tails() {
            let Some((first, args)) = rest.split_first() else { continue };
            let program = first.rsplit('/').next().unwrap_or(first);
            match program {
                "eval" => {
                    self.out.opaque = true;
                    self.script(&args.join(" "), depth + 1);
                }
                "bash" | "sh" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox" => {
                    // `-c` alone or among combined short options (`-ec`, `-lc`).
                    let at = args
                        .iter()
                        .position(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains('c'));
                    if let Some(at) = at {
                        self.out.opaque = true;
                        match args.get(at + 1) {
                            Some(script) => self.script(script, depth + 1),
                            None => self.unreadable(),
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn redirect(&mut self, redirect: &IoRedirect, depth: usize) {
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite
                        | IoFileRedirectKind::DuplicateOutput
                );
                match target {
                    IoFileRedirectTarget::Filename(w) => {
                        let file = self.word(&w.value, depth);
                        if writes {
                            self.output_to(&file, &w.value);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(w) => {
                        let file = self.word(&w.value, depth);
                        // `>&2`, `>&-` duplicate a descriptor; `>& file` writes a file.
                        let descriptor = file.trim_end_matches('-').bytes().all(|b| b.is_ascii_digit());
                        if writes && !descriptor {
                            self.output_to(&file, &w.value);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.out.opaque = true;
                        self.list(&subshell.list, depth + 1);
                    }
                }
            }
            IoRedirect::OutputAndError(w, _) => {
                let file = self.word(&w.value, depth);
                self.output_to(&file, &w.value);
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.text_for_substitutions(&doc.doc.value, depth);
                }
            }
            IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth);
            }
        }
    }

    /// Output redirected to `file` (unquoted; `raw` as written): outside the workspace,
    /// or to a name that expands, makes the script opaque.
    fn output_to(&mut self, file: &str, raw: &str) {
        if file == "/dev/null" || file == "/dev/stdout" || file == "/dev/stderr" {
            return;
        }
        let expands = raw.contains(['$', '`', '~', '*', '?', '[', '{']);
        if expands || !path::stays_inside(file, self.workspace) {
            self.out.opaque = true;
        }
    }

    /// Text that the shell expands (a here-document, an arithmetic expression): any
    /// substitution in it makes the script opaque, and its script is read.
    fn text_for_substitutions(&mut self, text: &str, depth: usize) {
        if !text.contains("$(") && !text.contains('`') && !text.contains("<(") && !text.contains(">(") {
            return;
        }
        self.out.opaque = true;
        if depth >= MAX_DEPTH {
            return self.unreadable();
        }
        match substitutions(text) {
            Some(scripts) => {
                for script in scripts {
                    self.script(script, depth + 1);
                }
            }
            None => self.unreadable(),
        }
    }

    /// The word with quotes removed; substitutions in it make the script opaque and
    /// their scripts are read.
    fn word(&mut self, raw: &str, depth: usize) -> String {
        if !raw.contains(['\'', '"', '\\', '$', '`', '~']) {
            return raw.to_owned();
        }
        match brush_parser::word::parse(raw, &options()) {
            Ok(pieces) => {
                let mut text = String::with_capacity(raw.len());
                self.pieces(raw, &pieces, &mut text, depth);
                text
            }
            Err(_) => {
                self.unreadable();
                raw.to_owned()
            }
        }
    }

    fn pieces(&mut self, raw: &str, pieces: &[WordPieceWithSource], text: &mut String, depth: usize) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                    text.push_str(t)
                }
                WordPiece::EscapeSequence(e) => text.push_str(e.strip_prefix('\\').unwrap_or(e)),
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, text, depth)
                }
                WordPiece::CommandSubstitution(script) | WordPiece::BackquotedCommandSubstitution(script) => {
                    self.out.opaque = true;
                    text.push_str(raw.get(p.start_index..p.end_index).unwrap_or("$(..)"));
                    self.script(script, depth + 1);
                }
                WordPiece::ArithmeticExpression(expr) => {
                    text.push_str(raw.get(p.start_index..p.end_index).unwrap_or("$((..))"));
                    self.text_for_substitutions(&expr.value, depth);
                }
                WordPiece::TildePrefix(_) | WordPiece::ParameterExpansion(_) => {
                    let source = raw.get(p.start_index..p.end_index).unwrap_or("$");
                    // `${x:-$(cmd)}` hides a substitution in a parameter expression.
                    if source.contains("$(") || source.contains('`') {
                        self.text_for_substitutions(source, depth);
                    }
                    text.push_str(source);
                }
            }
        }
    }
}

/// The scripts of the `$(..)`, `<(..)`, `>(..)` and backtick substitutions in `text`,
/// found by counting parentheses (quote-blind: a parenthesis in quotes inside a
/// substitution may cut it short, which only makes a rule see less of it and the script
/// opaque anyway). `None` when one is not closed.
fn substitutions(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' | b'<' | b'>' if bytes.get(i + 1) == Some(&b'(') => {
                let start = i + 2;
                let mut open = 1usize;
                let mut j = start;
                while j < bytes.len() && open > 0 {
                    match bytes[j] {
                        b'(' => open += 1,
                        b')' => open -= 1,
                        _ => {}
                    }
                    j += 1;
                }
                if open > 0 {
                    return None;
                }
                found.push(text.get(start..j - 1)?);
                i = j;
            }
            b'`' => {
                let end = text[i + 1..].find('`')? + i + 1;
                found.push(text.get(i + 1..end)?);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(script: &str) -> (Vec<String>, bool) {
        let s = Script::parse(script, Some(std::path::Path::new("/work/p")));
        (s.commands.iter().map(|c| c.words.join(" ")).collect(), s.opaque)
    }

    #[test]
    fn plain_scripts_read_without_the_parser_as_the_parser_reads_them() {
        for script in [
            "git status",
            "git status -s && cargo test --workspace | grep ok",
            "ls -la; echo a b\n make all || true & wait",
            "cargo build --features=a,b",
            "ls *.rs src/[ab]?.rs",
            "a |& b",
        ] {
            let fast = plain_list(script).unwrap_or_else(|| panic!("{script}: not plain"));
            let mut slow = Script::default();
            Walker { out: &mut slow, workspace: None }.script(script, 0);
            assert!(!slow.opaque, "{script}");
            assert_eq!(fast, slow.commands, "{script}");
        }
        for script in ["FOO=1 make", "if true; then ls; fi", "a ;; b", "echo 'x'", "ls > f", "time ls"] {
            assert!(plain_list(script).is_none(), "{script}");
        }
    }

    #[test]
    fn lists_pipelines_and_groups_split() {
        let (cmds, opaque) = texts("git status; ls -la && echo 'a b' || true | cat & (cd x; pwd)\n{ make; }");
        assert_eq!(cmds, ["git status", "ls -la", "echo a b", "true", "cat", "cd x", "pwd", "make"],);
        assert!(!opaque);
    }

    #[test]
    fn substitutions_are_opaque_and_read() {
        for script in [
            "echo $(rm -rf x)",
            "echo `rm -rf x`",
            "cat <(rm -rf x)",
            "echo \"$(rm -rf x)\"",
            "echo ${x:-$(rm -rf x)}",
        ] {
            let (cmds, opaque) = texts(script);
            assert!(opaque, "{script}");
            assert!(cmds.iter().any(|c| c == "rm -rf x"), "{script}: {cmds:?}");
        }
    }

    #[test]
    fn nested_shells_and_eval_are_opaque_and_read() {
        for script in
            ["bash -c 'rm -rf x'", "sh -c \"rm -rf x\"", "eval rm -rf x", "/bin/bash -ec 'rm -rf x'"]
        {
            let (cmds, opaque) = texts(script);
            assert!(opaque, "{script}");
            assert!(cmds.iter().any(|c| c == "rm -rf x"), "{script}: {cmds:?}");
        }
    }

    #[test]
    fn redirections_outside_the_workspace_are_opaque() {
        assert!(!texts("echo hi > out.txt").1);
        assert!(!texts("echo hi 2>/dev/null").1);
        assert!(!texts("echo hi > /work/p/sub/x").1);
        assert!(!texts("echo hi >&2").1);
        assert!(texts("echo hi > /etc/passwd").1);
        assert!(texts("echo hi >> ../x").1);
        assert!(texts("echo hi > $HOME/x").1);
        assert!(texts("echo hi &> /tmp/x").1);
        assert!(texts("{ echo hi; } > /tmp/x").1);
    }

    #[test]
    fn hostile_scripts_are_unreadable_not_a_crash() {
        let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
        assert!(Script::parse(&deep, None).unreadable);
        let ifs = "if true; then ".repeat(3000);
        assert!(Script::parse(&ifs, None).unreadable);
        let mut nested = String::from("true");
        for _ in 0..4 {
            nested = format!("bash -c {}", shell_quote(&nested));
        }
        assert!(!Script::parse(&nested, None).unreadable, "four shells deep is read");
        let evals = format!("{}rm -rf x", "eval ".repeat(50));
        let script = Script::parse(&evals, None);
        assert!(script.unreadable && script.opaque, "fifty evals deep is not");
        let subs = format!("{}rm{}", "$(".repeat(150), ")".repeat(150));
        assert!(Script::parse(&subs, None).opaque);
        // Just under the limit, on a thread with a small stack: read, no overflow.
        let just_under = format!("{}true{}", "(".repeat(MAX_CONSTRUCTS), ")".repeat(MAX_CONSTRUCTS));
        let read = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || Script::parse(&just_under, None))
            .unwrap()
            .join()
            .unwrap();
        assert!(!read.unreadable);
        assert!(Script::parse("echo 'unterminated", None).unreadable);
        assert!(Script::parse(&"a".repeat(MAX_SCRIPT_BYTES + 1), None).unreadable);
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }

    #[test]
    fn wrappers_are_looked_through() {
        let s = Script::parse("FOO=1 env A=2 sudo -n rm -rf x", None);
        let tails: Vec<String> = s.commands[0].tails().map(|t| t.join(" ")).collect();
        assert_eq!(tails, ["env A=2 sudo -n rm -rf x", "sudo -n rm -rf x", "rm -rf x"]);
    }
}
