//! The resolved tool: name, description, parameters and policy, checked and ready to
//! expand. Every mistake found is collected before giving up (see [`Errors`]).

use darling::FromMeta;
use darling::util::Override;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, Lit, Pat, Signature, Type};

use crate::attr::{ArgAttr, RetryAttr, ToolAttr};
use crate::json::{self, Json};
use crate::{doc, ty};

/// Collects errors so the user sees all of them at once (serde_derive's `Ctxt`).
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub(crate) fn push_darling(&mut self, e: darling::Error) {
        self.push(e.into());
    }

    pub(crate) fn finish<T>(self, value: T) -> Result<T, syn::Error> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// A function that becomes a tool.
pub(crate) struct ToolFn {
    pub(crate) fn_ident: Ident,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) is_async: bool,
    pub(crate) params: Vec<Param>,
    pub(crate) returns_result: bool,
    pub(crate) policy: Policy,
    pub(crate) collect: bool,
    /// Where a non-`Send` future is reported.
    pub(crate) sig_span: Span,
    /// No `extern` ABI, so the function coerces to a plain Rust `fn` pointer.
    pub(crate) rust_abi: bool,
}

/// The execution policy set in the attribute; unset values keep the definition defaults.
#[derive(Default)]
pub(crate) struct Policy {
    pub(crate) permission: Option<&'static str>,
    pub(crate) replay_policy: Option<&'static str>,
    pub(crate) concurrent: Option<bool>,
    pub(crate) timeout_seconds: Option<f64>,
    pub(crate) retry: Option<RetryAttr>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

/// One parameter of the function, in declaration order.
pub(crate) enum Param {
    /// The injected `ToolContext` (by reference or by value); not in the schema.
    Context { by_ref: bool },
    /// A parameter the model supplies.
    Value(Box<ValueParam>),
}

pub(crate) struct ValueParam {
    pub(crate) name: String,
    pub(crate) ty: Type,
    /// Builds the type's schema (before description, choices and default).
    pub(crate) schema: TokenStream,
    /// The parameter's own schema trait, when `schema` uses it (a type known only through
    /// `schemars`): its "no JSON Schema" error names the parameter and the function.
    pub(crate) schema_trait: Option<Ident>,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<DefaultValue>,
    /// `#[arg(one_of = [..])]`, each a literal turned into a JSON value expression.
    pub(crate) one_of: Option<Vec<TokenStream>>,
    /// The same choices, and the default when it is a literal, as compile-time JSON.
    pub(crate) one_of_json: Option<Vec<Json>>,
    pub(crate) default_json: Option<Json>,
}

pub(crate) enum DefaultValue {
    /// `#[arg(default)]`: `Default::default()`.
    Trait,
    /// `#[arg(default = expr)]`, and the JSON form of `expr` when it is a literal.
    Expr(Expr, Option<TokenStream>),
}

const PERMISSIONS: [(&str, &str); 3] = [("allow", "Allow"), ("ask", "Ask"), ("deny", "Deny")];
const REPLAY_POLICIES: [(&str, &str); 3] =
    [("safe", "Safe"), ("idempotent", "Idempotent"), ("manual", "Manual")];

/// Parameter attributes taken off the signature (rustc rejects `///` on parameters, and
/// `#[arg]` is ours): must run even when the rest fails, so the emitted fn compiles.
pub(crate) struct ParamAttrs {
    docs: Vec<String>,
    arg: Option<ArgAttr>,
}

pub(crate) fn strip_param_attrs(sig: &mut Signature, errors: &mut Errors) -> Vec<ParamAttrs> {
    let mut out = Vec::new();
    for input in sig.inputs.iter_mut() {
        let attrs = match input {
            FnArg::Typed(p) => &mut p.attrs,
            FnArg::Receiver(r) => &mut r.attrs,
        };
        let mut docs = Vec::new();
        let mut arg: Option<ArgAttr> = None;
        for attr in std::mem::take(attrs) {
            if attr.path().is_ident("doc") {
                if let Some(line) = doc_line(&attr) {
                    docs.push(line);
                }
            } else if attr.path().is_ident("arg") {
                if arg.is_some() {
                    errors.push(syn::Error::new(
                        attr.span(),
                        "duplicate `#[arg]` attribute: put all options in one `#[arg(..)]`",
                    ));
                    continue;
                }
                match ArgAttr::from_meta(&attr.meta) {
                    Ok(a) => arg = Some(a),
                    Err(e) => {
                        errors.push_darling(e);
                        arg = Some(ArgAttr::default());
                    }
                }
            } else {
                attrs.push(attr);
            }
        }
        if matches!(input, FnArg::Receiver(_)) {
            continue;
        }
        out.push(ParamAttrs { docs, arg });
    }
    out
}

fn doc_line(attr: &Attribute) -> Option<String> {
    let syn::Meta::NameValue(nv) = &attr.meta else { return None };
    let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value else { return None };
    Some(s.value())
}

/// The doc lines of an item, one per line, leading space removed, with their spans.
pub(crate) fn doc_lines(attrs: &[Attribute]) -> Vec<(String, Span)> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let Some(text) = doc_line(attr) else { continue };
        let span = match &attr.meta {
            syn::Meta::NameValue(nv) => nv.value.span(),
            _ => attr.span(),
        };
        for line in text.lines() {
            lines.push((line.strip_prefix(' ').unwrap_or(line).to_owned(), span));
        }
        if text.is_empty() {
            lines.push((String::new(), span));
        }
    }
    lines
}

/// Where the function lives: a free fn (`self` is an error) or a `#[toolbox]` method
/// (`&self` required).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Site {
    Free,
    Method,
}

/// Resolves and checks one tool function. `param_attrs` comes from [`strip_param_attrs`].
pub(crate) fn tool_fn(
    attr: ToolAttr,
    fn_attrs: &[Attribute],
    sig: &Signature,
    param_attrs: Vec<ParamAttrs>,
    site: Site,
    errors: &mut Errors,
) -> ToolFn {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            "a tool cannot have generic parameters: its JSON Schema is fixed when it is defined; \
             use concrete types (or one tool per type)",
        ));
    }
    if let Some(c) = &sig.constness {
        errors.push(syn::Error::new(c.span(), "a tool cannot be a `const fn`"));
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errors.push(syn::Error::new(
            u.span(),
            "a tool cannot be an `unsafe fn`: the model cannot uphold its contract",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.push(syn::Error::new(v.span(), "a tool cannot be variadic"));
    }
    let receiver = sig.inputs.iter().find_map(|i| match i {
        FnArg::Receiver(r) => Some(r),
        FnArg::Typed(_) => None,
    });
    match (site, receiver) {
        (Site::Free, Some(r)) => errors.push(syn::Error::new(
            r.span(),
            "`#[tool]` on a method needs `#[toolbox]` on its `impl` block: add `#[toolbox]` to the impl \
             so the tool is bound to a shared instance",
        )),
        (Site::Method, None) => errors.push(syn::Error::new(
            sig.ident.span(),
            "a `#[tool]` in a `#[toolbox]` must take `&self`; move a function without `self` out of the impl",
        )),
        (Site::Method, Some(r)) if !matches!(r.kind, syn::ReceiverKind::Reference(_, _, None)) => errors
            .push(syn::Error::new(
                r.span(),
                "a `#[toolbox]` tool must take `&self` (not `self` or `&mut self`)",
            )),
        _ => {}
    }

    // Name.
    let fn_name = unraw(&sig.ident);
    let name = match &attr.name {
        Some(n) => {
            if !valid_tool_name(n) {
                errors.push(syn::Error::new(n.span(), invalid_name_message(n)));
            }
            n.as_str().to_owned()
        }
        None => {
            if !valid_tool_name(&fn_name) {
                errors.push(syn::Error::new(
                    sig.ident.span(),
                    format!("{}; or set `name = \"..\"`", invalid_name_message(&fn_name)),
                ));
            }
            fn_name.clone()
        }
    };

    // Docs.
    let parsed = doc::parse(&doc_lines(fn_attrs));
    let description = attr.description.clone().unwrap_or(parsed.description);

    // Parameters.
    let s = quote!(_harnessx::__private::schema);
    let mut params = Vec::new();
    let typed = sig.inputs.iter().filter_map(|i| match i {
        FnArg::Typed(p) => Some(p),
        FnArg::Receiver(_) => None,
    });
    let mut names: Vec<String> = Vec::new();
    for (p, pattrs) in typed.zip(param_attrs) {
        if let Some(by_ref) = ty::context_kind(&p.ty) {
            if pattrs.arg.is_some() {
                errors.push(syn::Error::new(
                    p.ty.span(),
                    "the `ToolContext` parameter is injected; `#[arg]` does not apply to it",
                ));
            }
            params.push(Param::Context { by_ref });
            continue;
        }
        let ident = match &*p.pat {
            Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => unraw(&pi.ident),
            other => {
                errors.push(syn::Error::new(
                    other.span(),
                    "a tool parameter must be a plain name (`city: String`): the name is the JSON property",
                ));
                continue;
            }
        };
        let check_trait = format_ident!("__HxSchemaOf_{}_{}", fn_name, ident);
        let mut uses_trait = false;
        let schema = match ty::schema_expr(&p.ty, &s, &check_trait, &mut uses_trait) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let arg = pattrs.arg.unwrap_or_default();
        let from_args =
            parsed.args.iter().rev().find(|a| a.name.strip_prefix("r#").unwrap_or(&a.name) == ident);
        let param_doc = (!pattrs.docs.is_empty())
            .then(|| pattrs.docs.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ").trim().to_owned());
        let description = arg.description.or(param_doc).or_else(|| from_args.map(|a| a.text.clone()));
        let default = arg.default.map(|d| match d {
            Override::Inherit => DefaultValue::Trait,
            Override::Explicit(e) => {
                let json = literal_json(&e.0);
                DefaultValue::Expr(e.0, json)
            }
        });
        let one_of_exprs: Option<Vec<Expr>> =
            arg.one_of.as_ref().map(|arr| arr.elems.iter().cloned().collect());
        let one_of = arg.one_of.map(|arr| {
            arr.elems
                .iter()
                .filter_map(|e| {
                    let json = literal_json(e);
                    if json.is_none() {
                        errors.push(syn::Error::new(
                            e.span(),
                            "`one_of` takes literals, e.g. `one_of = [\"celsius\", \"fahrenheit\"]`",
                        ));
                    }
                    json
                })
                .collect()
        });
        let one_of_json = arr_json(&one_of_exprs);
        let default_json = match &default {
            Some(DefaultValue::Expr(e, _)) => json::literal(e),
            _ => None,
        };
        names.push(ident.clone());
        params.push(Param::Value(Box::new(ValueParam {
            name: ident,
            ty: (*p.ty).clone(),
            schema,
            schema_trait: uses_trait.then_some(check_trait),
            description,
            default,
            one_of,
            one_of_json,
            default_json,
        })));
    }
    let context_names: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            FnArg::Typed(p) if ty::context_kind(&p.ty).is_some() => match &*p.pat {
                Pat::Ident(pi) => Some(unraw(&pi.ident)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    for a in &parsed.args {
        let n = a.name.strip_prefix("r#").unwrap_or(&a.name);
        if !names.iter().any(|p| p == n) && !context_names.iter().any(|p| p == n) {
            let listed = if names.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its parameters are {}", names.join(", "))
            };
            errors.push(syn::Error::new(
                a.span,
                format!(
                    "`Args:` documents `{n}`, which is not a parameter of `{fn_name}` ({listed}){}",
                    did_you_mean(n, names.iter().map(String::as_str))
                ),
            ));
        }
    }

    // Policy.
    let permission = attr
        .permission
        .as_ref()
        .and_then(|p| pick(p, "permission", &PERMISSIONS).map_err(|e| errors.push(e)).ok());
    let replay_policy = attr
        .replay_policy
        .as_ref()
        .and_then(|p| pick(p, "replay_policy", &REPLAY_POLICIES).map_err(|e| errors.push(e)).ok());
    let retry = attr.retry.clone().map(|r| match r {
        Override::Inherit => RetryAttr::default(),
        Override::Explicit(r) => r,
    });
    if let Some(t) = attr.timeout_seconds
        && !(t.value.is_finite() && t.value > 0.0)
    {
        errors.push(syn::Error::new(t.span, "`timeout_seconds` must be a positive number of seconds"));
    }
    let retry_values =
        retry.iter().flat_map(|r| [r.initial_delay_seconds, r.backoff_multiplier, r.max_delay_seconds]);
    for s in retry_values.flatten() {
        if !(s.value.is_finite() && s.value >= 0.0) {
            errors.push(syn::Error::new(s.span, "retry delays and factors cannot be negative"));
        }
    }
    if let Some(RetryAttr { max_attempts: Some(0), .. }) = &retry {
        errors.push(syn::Error::new(Span::call_site(), "`retry(max_attempts = ..)` must be at least 1"));
    }
    if let (Some(r), Some(d)) = (attr.read_only, attr.destructive)
        && r.value
        && d.value
    {
        errors.push(syn::Error::new(
            d.span,
            "a tool cannot be both `read_only` and `destructive`: a read-only tool changes nothing; \
             remove one of them",
        ));
    }
    let returns_result = match &sig.output {
        syn::ReturnType::Type(_, t) => ty::is_result(t),
        syn::ReturnType::Default => false,
    };
    ToolFn {
        fn_ident: sig.ident.clone(),
        name,
        description,
        is_async: sig.asyncness.is_some(),
        params,
        returns_result,
        policy: Policy {
            permission,
            replay_policy,
            concurrent: attr.concurrent,
            timeout_seconds: attr.timeout_seconds.map(|t| t.value),
            retry,
            read_only: attr.read_only.map(|h| h.value),
            destructive: attr.destructive.map(|h| h.value),
            idempotent: attr.idempotent.map(|h| h.value),
            open_world: attr.open_world.map(|h| h.value),
        },
        collect: attr.collect.is_present(),
        sig_span: sig.ident.span(),
        rust_abi: sig.abi.is_none(),
    }
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn invalid_name_message(name: &str) -> String {
    format!(
        "invalid tool name \"{name}\": a tool name must match ^[a-zA-Z0-9_-]{{1,64}}$ \
         (1 to 64 ASCII letters, digits, '_' or '-', the form every model provider accepts)"
    )
}

/// Resolves a fixed-choice string to its variant, or explains the valid choices.
fn pick(
    value: &darling::util::SpannedValue<String>,
    what: &str,
    choices: &[(&str, &'static str)],
) -> Result<&'static str, syn::Error> {
    let v = value.trim();
    if let Some((_, variant)) = choices.iter().find(|(s, _)| s.eq_ignore_ascii_case(v)) {
        return Ok(variant);
    }
    let list: Vec<String> = choices.iter().map(|(s, _)| format!("\"{s}\"")).collect();
    Err(syn::Error::new(
        value.span(),
        format!(
            "invalid {what} \"{v}\": expected one of {}{}",
            list.join(", "),
            did_you_mean(v, choices.iter().map(|(s, _)| *s))
        ),
    ))
}

/// "; did you mean `x`?" for the closest candidate within a small edit distance.
pub(crate) fn did_you_mean<'a>(wrong: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let wrong = wrong.to_ascii_lowercase();
    candidates
        .map(|c| (levenshtein(&wrong, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The JSON value of a literal expression (`"a"`, `3`, `-2.5`, `true`), as tokens.
fn arr_json(exprs: &Option<Vec<Expr>>) -> Option<Vec<Json>> {
    exprs.as_ref().and_then(|es| es.iter().map(json::literal).collect())
}

fn literal_json(e: &Expr) -> Option<TokenStream> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(_) | Lit::Int(_) | Lit::Float(_) | Lit::Bool(_) => {
                let lit = &l.lit;
                Some(quote!(_harnessx::__private::Value::from(#lit)))
            }
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match &*u.expr {
            Expr::Lit(l) if matches!(l.lit, Lit::Int(_) | Lit::Float(_)) => {
                Some(quote!(_harnessx::__private::Value::from(#e)))
            }
            _ => None,
        },
        Expr::Group(g) => literal_json(&g.expr),
        _ => None,
    }
}

/// `fetch_url` -> `FetchUrl`.
pub(crate) fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_tool_name("fetch_url"));
        assert!(valid_tool_name("get-sum"));
        assert!(!valid_tool_name("fetch url"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name(&"x".repeat(65)));
        assert_eq!(pascal_case("fetch_url"), "FetchUrl");
        assert_eq!(pascal_case("_private__x2"), "PrivateX2");
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("alow", ["allow", "ask", "deny"].into_iter()), "; did you mean `allow`?");
        assert_eq!(did_you_mean("sometimes", ["allow", "ask", "deny"].into_iter()), "");
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
