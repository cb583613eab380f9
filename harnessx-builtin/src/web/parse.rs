//! Parsing a page into a DOM whose nesting, and whose cost, the page cannot choose.
//!
//! A page is untrusted input, and the straightforward pipeline (html5ever's parser into an
//! `RcDom`, then htmd's walk over it) lets a page pick how deep it nests and how much work
//! each tag costs:
//!
//! - **htmd's walk recurses** once per DOM level, several frames and kilobytes of stack per
//!   level (tables most): 20,000 nested `<div>`s overflow the 8 MiB main thread, a few
//!   hundred nested tables a 2 MiB one, and the process aborts (a stack overflow is not a
//!   panic; nothing catches it).
//! - **html5ever's tree builder is O(depth) per tag**: a start tag checks for a `<p>` "in
//!   button scope", an end tag looks for its element, both scanning the stack of open
//!   elements, so n nested elements cost O(n²) (100,000 nested `<div>`s: minutes).
//! - **Unclosed formatting elements multiply**: every `<b>`, `<i>`, `<a>`, `<font>` left
//!   open stays on the list of active formatting elements, and every later block that
//!   closed them reopens (clones) all of them, so `<b id=k>` tags that are never closed turn
//!   a page of `<div>x</div>` into a quadratic number of elements.
//! - **`RcDom` searches a whole `<select>` on every `</option>`** (its `selectedcontent`
//!   lookup, which never finds one: it tests the select, not the node it visits), so a
//!   list of options is quadratic too.
//!
//! What this module does instead, and why this way: it runs html5ever's own tokenizer and
//! tree builder (so every page a browser can read converts exactly as before), with a
//! token filter between them. Before a start tag reaches the tree builder, the filter asks
//! the builder how many elements it holds open ([`TreeBuilder::trace_handles`] visits its
//! stack of open elements and its list of active formatting elements), and drops the tag
//! when that is [`MAX_OPEN`] or more (a formatting tag already when [`MAX_FORMATTING`]
//! formatting elements are held); the tag's end tag is dropped with it, and the text
//! inside stays, in the element that was open. The tree builder itself is the only
//! source of truth for depth: a simulation of its stack (implied closes of `<p>`, `<li>`
//! and table parts, the adoption agency, foster parenting, stray closers) would be a
//! second HTML parser to get wrong, and a depth counted over raw tags is defeated by
//! implied closes in one direction and by reconstructed formatting elements in the other.
//! A dropped `<script>`, `<style>`, `<noscript>` or `<iframe>` still switches the
//! tokenizer to raw text, and its content is dropped too, so a script full of `<div>` is
//! neither parsed as markup nor shown as text.
//!
//! Bounded that way, the DOM is at most about [`MAX_OPEN`] levels deep (a reconstruction
//! reopens only elements already counted), every tag costs the tree builder O(`MAX_OPEN`)
//! at most, and the list of active formatting elements stays short. On top, the sink
//! counts the elements it creates: past [`element_budget`] (one per 4 bytes of page plus
//! 10,000, at most 1,000,000: more than a page creates without amplification), every
//! further tag is dropped and only the text kept. The sink also leaves out the `selectedcontent` search
//! (its result is always "none") and the parse-error log nobody reads.
//!
//! Iterative conversion instead (rewriting htmd's walk without recursion) would have
//! fixed the stack but not the quadratic tree builder, and would have been a fork of the
//! converter; a depth past a few hundred has no Markdown rendering worth keeping anyway.
//! Browsers make the same choice: Blink stops nesting at 512 levels.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{
    ElementFlags, NodeOrText, QuirksMode, Tracer, TreeBuilder, TreeBuilderOpts, TreeSink,
};
use html5ever::{Attribute, ExpandedName, LocalName, QualName, TokenizerResult, local_name, ns};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// Most elements the tree builder may hold (its stack of open elements and its list of
/// active formatting elements together) for another start tag to be let through.
pub(super) const MAX_OPEN: usize = 256;

/// Most formatting elements (`<b>`, `<i>`, `<a>`, `<font>`, ... open, or waiting to be
/// reopened) for another formatting start tag to be let through.
pub(super) const MAX_FORMATTING: usize = 64;

/// Most elements a page of `len` bytes may create before only its text is kept: one per
/// 4 bytes (a page of `<br>`s) plus 10,000, and never more than 1,000,000 (about 200 MB
/// of DOM).
pub(super) fn element_budget(len: usize) -> usize {
    (len / 4 + 10_000).min(1_000_000)
}

/// A parsed page and what the bounds did to it.
pub(super) struct Parsed {
    pub(super) document: Handle,
    /// Start tags dropped because the page was nested too deeply.
    pub(super) too_deep: usize,
    /// Whether the element budget ran out (the rest of the page is text only).
    pub(super) budget_spent: bool,
}

/// Parses `html` (scripting on, as htmd does: `<noscript>` is raw text).
pub(super) fn parse(html: &str) -> Parsed {
    let opts = TreeBuilderOpts { scripting_enabled: true, ..Default::default() };
    let builder = TreeBuilder::new(Sink::default(), opts);
    let filter = Filter {
        builder,
        budget: element_budget(html.len()),
        dropped_open: RefCell::new(HashMap::new()),
        swallow: RefCell::new(None),
        fresh: Cell::new(None),
        too_deep: Cell::new(0),
        text_only: Cell::new(false),
    };
    let tokenizer = Tokenizer::new(filter, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // The tokenizer pauses for a script engine at `</script>` and for a charset at
    // `<meta charset>`; the text is decoded already, and there is no script engine.
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    let filter = tokenizer.sink;
    Parsed {
        document: filter.builder.sink.dom.document.clone(),
        too_deep: filter.too_deep.get(),
        budget_spent: filter.text_only.get(),
    }
}

/// Elements without content (in HTML; in SVG or MathML they may have some, so depth gates
/// them like any other): a dropped one leaves no end tag to wait for.
fn is_void(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("area")
            | local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("br")
            | local_name!("col")
            | local_name!("embed")
            | local_name!("frame")
            | local_name!("hr")
            | local_name!("image")
            | local_name!("img")
            | local_name!("input")
            | local_name!("keygen")
            | local_name!("link")
            | local_name!("meta")
            | local_name!("param")
            | local_name!("source")
            | local_name!("track")
            | local_name!("wbr")
    )
}

/// The elements that go on the list of active formatting elements.
fn is_formatting(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("a")
            | local_name!("b")
            | local_name!("big")
            | local_name!("code")
            | local_name!("em")
            | local_name!("font")
            | local_name!("i")
            | local_name!("nobr")
            | local_name!("s")
            | local_name!("small")
            | local_name!("strike")
            | local_name!("strong")
            | local_name!("tt")
            | local_name!("u")
    )
}

/// How the tokenizer reads the content of a start tag dropped here (the tree builder would
/// have told it), and whether that content is dropped too (it is never shown: htmd skips
/// these elements).
fn raw_content(name: &LocalName) -> Option<(TokenSinkResult<Handle>, bool)> {
    Some(match *name {
        local_name!("script") => (TokenSinkResult::RawData(RawKind::ScriptData), true),
        local_name!("style") | local_name!("noscript") | local_name!("iframe") => {
            (TokenSinkResult::RawData(RawKind::Rawtext), true)
        }
        local_name!("xmp") | local_name!("noembed") | local_name!("noframes") => {
            (TokenSinkResult::RawData(RawKind::Rawtext), false)
        }
        local_name!("title") | local_name!("textarea") => (TokenSinkResult::RawData(RawKind::Rcdata), false),
        local_name!("plaintext") => (TokenSinkResult::Plaintext, false),
        _ => return None,
    })
}

/// The token filter between the tokenizer and the tree builder.
struct Filter {
    builder: TreeBuilder<Handle, Sink>,
    budget: usize,
    /// Start tags dropped and not yet closed, by name: their end tags are dropped too.
    dropped_open: RefCell<HashMap<LocalName, usize>>,
    /// The raw-text element whose content is being dropped, until its end tag.
    swallow: RefCell<Option<LocalName>>,
    /// The builder's counts (all elements held, formatting ones), while no token reached it
    /// since they were taken.
    fresh: Cell<Option<(usize, usize)>>,
    too_deep: Cell<usize>,
    /// The element budget is spent: only text goes on.
    text_only: Cell<bool>,
}

/// Counts what the tree builder holds.
struct Count {
    all: Cell<usize>,
    formatting: Cell<usize>,
}

impl Tracer for Count {
    type Handle = Handle;

    fn trace_handle(&self, node: &Handle) {
        self.all.set(self.all.get() + 1);
        if let NodeData::Element { name, .. } = &node.data
            && name.ns == ns!(html)
            && is_formatting(&name.local)
        {
            self.formatting.set(self.formatting.get() + 1);
        }
    }
}

impl Filter {
    /// (elements held, formatting elements among them): counted when a token reached the
    /// builder since the last count.
    fn held(&self) -> (usize, usize) {
        if let Some(counts) = self.fresh.get() {
            return counts;
        }
        let count = Count { all: Cell::new(0), formatting: Cell::new(0) };
        self.builder.trace_handles(&count);
        let counts = (count.all.get(), count.formatting.get());
        self.fresh.set(Some(counts));
        counts
    }

    /// Whether this start tag may reach the tree builder.
    fn admit(&self, tag: &Tag) -> bool {
        if self.text_only.get() {
            return false;
        }
        let (all, formatting) = self.held();
        all < MAX_OPEN && (formatting < MAX_FORMATTING || !is_formatting(&tag.name))
    }

    fn drop_start_tag(&self, tag: Tag) -> TokenSinkResult<Handle> {
        if !self.text_only.get() {
            self.too_deep.set(self.too_deep.get() + 1);
        }
        if let Some((result, hidden)) = raw_content(&tag.name) {
            if hidden {
                *self.swallow.borrow_mut() = Some(tag.name);
            }
            return result;
        }
        if !is_void(&tag.name) {
            *self.dropped_open.borrow_mut().entry(tag.name).or_insert(0) += 1;
        }
        TokenSinkResult::Continue
    }

    /// Whether this end tag closes a start tag dropped here (and is dropped with it).
    fn closes_dropped(&self, tag: &Tag) -> bool {
        let mut open = self.dropped_open.borrow_mut();
        match open.get_mut(&tag.name) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    fn forward(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        self.fresh.set(None);
        let result = self.builder.process_token(token, line_number);
        if self.builder.sink.created.get() > self.budget {
            self.text_only.set(true);
        }
        result
    }
}

impl TokenSink for Filter {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        let swallowing = self.swallow.borrow().clone();
        if let Some(name) = swallowing {
            match token {
                Token::TagToken(Tag { kind: TagKind::EndTag, name: ref end, .. }) if *end == name => {
                    *self.swallow.borrow_mut() = None;
                }
                Token::EOFToken => return self.forward(token, line_number),
                _ => {}
            }
            return TokenSinkResult::Continue;
        }
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag if !self.admit(&tag) => self.drop_start_tag(tag),
                TagKind::EndTag if self.text_only.get() || self.closes_dropped(&tag) => {
                    TokenSinkResult::Continue
                }
                _ => self.forward(Token::TagToken(tag), line_number),
            },
            // Nobody reads parse errors; the sink would keep one string per error.
            Token::ParseError(_) => TokenSinkResult::Continue,
            token => self.forward(token, line_number),
        }
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// An `RcDom` that counts the elements created and leaves out two things that cost
/// without changing the tree: the parse-error log, and the `selectedcontent` search run on
/// every `</option>` (a breadth-first walk of the whole `<select>` that cannot succeed:
/// markup5ever_rcdom 0.38 compares the select's own name instead of each node's).
#[derive(Default)]
struct Sink {
    dom: RcDom,
    created: Cell<usize>,
}

impl TreeSink for Sink {
    type Handle = Handle;
    type Output = Self;
    type ElemName<'a> = ExpandedName<'a>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.created.set(self.created.get() + 1);
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.dom.append(parent, child)
    }

    fn append_based_on_parent_node(&self, element: &Handle, prev: &Handle, child: NodeOrText<Handle>) {
        self.dom.append_based_on_parent_node(element, prev, child)
    }

    fn append_doctype_to_document(&self, name: StrTendril, public_id: StrTendril, system_id: StrTendril) {
        self.dom.append_doctype_to_document(name, public_id, system_id)
    }

    fn mark_script_already_started(&self, node: &Handle) {
        self.dom.mark_script_already_started(node)
    }

    fn pop(&self, node: &Handle) {
        self.dom.pop(node)
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        self.dom.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs)
    }

    fn associate_with_form(&self, target: &Handle, form: &Handle, nodes: (&Handle, Option<&Handle>)) {
        self.dom.associate_with_form(target, form, nodes)
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent)
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.dom.set_current_line(line_number)
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &Handle) -> bool {
        self.dom.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(&self, location: &Handle, template: &Handle, attrs: &[Attribute]) -> bool {
        self.dom.attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, _option: &Handle) {}
}
