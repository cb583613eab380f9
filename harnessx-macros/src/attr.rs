//! What the user wrote: the arguments of `#[tool(..)]`, `#[toolbox(..)]` and `#[arg(..)]`,
//! parsed with darling. No validation beyond syntax happens here (see `model.rs`).

use darling::FromMeta;
use darling::util::{Flag, Override, PreservedStrExpr, SpannedValue};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// `#[tool(name = "..", description = "..", permission = "..", concurrent = ..,
/// replay_policy = "..", timeout_seconds = .., retry(..), read_only, destructive, idempotent,
/// open_world, crate = path, collect)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ToolAttr {
    pub(crate) name: Option<SpannedValue<String>>,
    pub(crate) description: Option<String>,
    pub(crate) permission: Option<SpannedValue<String>>,
    pub(crate) concurrent: Option<bool>,
    pub(crate) replay_policy: Option<SpannedValue<String>>,
    pub(crate) timeout_seconds: Option<Seconds>,
    pub(crate) retry: Option<Override<RetryAttr>>,
    pub(crate) read_only: Option<Hint>,
    pub(crate) destructive: Option<Hint>,
    pub(crate) idempotent: Option<Hint>,
    pub(crate) open_world: Option<Hint>,
    #[darling(rename = "crate")]
    pub(crate) krate: Option<SpannedValue<syn::Path>>,
    pub(crate) collect: Flag,
}

/// `retry` (the default `ToolRetry`) or `retry(max_attempts = 5, ..)`.
#[derive(Debug, Default, Clone, FromMeta)]
pub(crate) struct RetryAttr {
    pub(crate) max_attempts: Option<u32>,
    pub(crate) initial_delay_seconds: Option<Seconds>,
    pub(crate) backoff_multiplier: Option<Seconds>,
    pub(crate) max_delay_seconds: Option<Seconds>,
}

/// `#[toolbox(crate = path)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ToolboxAttr {
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
}

/// `#[arg(description = "..", default, default = expr, one_of = [..])]` on a parameter.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct ArgAttr {
    pub(crate) description: Option<String>,
    pub(crate) default: Option<Override<PreservedStrExpr>>,
    pub(crate) one_of: Option<syn::ExprArray>,
}

/// An annotation hint: `read_only` (true), `read_only = true` or `read_only = false`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hint {
    pub(crate) value: bool,
    /// The whole `key` or `key = value`.
    pub(crate) span: Span,
}

impl FromMeta for Hint {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        let span = item.span();
        match item {
            syn::Meta::Path(_) => Ok(Self { value: true, span }),
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => {
                    Ok(Self { value: b.value, span })
                }
                other => Err(hint_error(item.path(), other.span())),
            },
            syn::Meta::List(l) => Err(hint_error(item.path(), l.delimiter.span().join())),
        }
    }
}

fn hint_error(path: &syn::Path, span: Span) -> darling::Error {
    let key = path.get_ident().map(|i| i.to_string()).unwrap_or_default();
    let message = format!("`{key}` is a flag: write `{key}`, `{key} = true` or `{key} = false`");
    syn::Error::new(span, message).into()
}

/// A number of seconds (or a factor), written as an integer or a float; `model.rs` checks
/// that it is positive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seconds {
    pub(crate) value: f64,
    pub(crate) span: Span,
}

impl FromMeta for Seconds {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        match expr {
            syn::Expr::Lit(l) => Self::from_value(&l.lit),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
                Self::from_expr(&u.expr).map(|s| Self { value: -s.value, span: expr.span() })
            }
            syn::Expr::Group(g) => Self::from_expr(&g.expr),
            _ => Err(darling::Error::custom("expected a number, e.g. `30` or `2.5`").with_span(expr)),
        }
    }

    fn from_value(lit: &syn::Lit) -> darling::Result<Self> {
        let value = match lit {
            syn::Lit::Int(i) => i.base10_parse::<f64>(),
            syn::Lit::Float(f) => f.base10_parse::<f64>(),
            _ => return Err(darling::Error::custom("expected a number, e.g. `30` or `2.5`").with_span(lit)),
        }
        .map_err(|e| darling::Error::from(e).with_span(lit))?;
        Ok(Self { value, span: lit.span() })
    }
}
