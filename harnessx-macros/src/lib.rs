#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod attr;
mod doc;
mod expand;
mod item;
mod json;
mod model;
mod ty;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{ToTokens, format_ident, quote};

use crate::attr::{ToolAttr, ToolboxAttr};
use crate::model::{Errors, Site};

/// Turns a documented function into a tool.
///
/// The function stays callable as written; next to it appears a unit struct named in
/// PascalCase (`fetch_url` -> `FetchUrl`) that implements `IntoToolDefinition`, so it can
/// be passed to `ToolRegistry::register_tool`. The doc comment gives the description (up
/// to the first `Args:`/`# Arguments`/`Returns:`/`# Errors`/.. section) and the parameter
/// texts; parameter types give the JSON Schema.
///
/// Options: `name = ".."`, `description = ".."`, `permission = "allow" | "ask" | "deny"`,
/// `concurrent = bool`, `replay_policy = "safe" | "idempotent" | "manual"`,
/// `timeout_seconds = number`, `retry` or `retry(max_attempts = .., initial_delay_seconds = ..,
/// backoff_multiplier = .., max_delay_seconds = ..)`, the annotation hints `read_only`,
/// `destructive`, `idempotent`, `open_world` (flags, or `= true`/`= false`; `read_only`
/// with `destructive` is an error), `collect` (submit to the global collection),
/// `crate = path` (where the runtime is; default `::harnessx`).
///
/// On a parameter: `/// text` or `#[arg(description = "..", default, default = expr,
/// one_of = [..])]`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    tool_impl(args.into(), input.into()).into()
}

/// Turns the `#[tool]` methods (taking `&self`) of an `impl` block into tools bound to one
/// shared instance, so tools can hold state. Implements `Toolbox` for the type; register
/// with `registry.register_toolbox(Arc::new(value))`.
///
/// Option: `crate = path` (default `::harnessx`).
#[proc_macro_attribute]
pub fn toolbox(args: TokenStream, input: TokenStream) -> TokenStream {
    toolbox_impl(args.into(), input.into()).into()
}

fn default_krate() -> syn::Path {
    syn::parse_quote!(::harnessx)
}

fn parse_attr<T: FromMeta + Default>(args: TokenStream2, errors: &mut Errors) -> T {
    match NestedMeta::parse_meta_list(args) {
        Ok(list) => T::from_list(&list).unwrap_or_else(|e| {
            errors.push_darling(e);
            T::default()
        }),
        Err(e) => {
            errors.push(e);
            T::default()
        }
    }
}

fn with_errors(item: impl ToTokens, errors: syn::Error) -> TokenStream2 {
    let errors = errors.to_compile_error();
    quote!(#item #errors)
}

fn tool_impl(args: TokenStream2, input: TokenStream2) -> TokenStream2 {
    let mut item: item::FnItem = match syn::parse2(input.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[tool]` goes on a function (or on a method inside a `#[toolbox]` impl block)",
            );
            return with_errors(input, e);
        }
    };
    let mut errors = Errors::default();
    let attr: ToolAttr = parse_attr(args, &mut errors);
    let param_attrs = model::strip_param_attrs(&mut item.sig, &mut errors);
    let krate = attr.krate.as_ref().map(|k| (**k).clone()).unwrap_or_else(default_krate);
    let tool = model::tool_fn(attr, &item.attrs, &item.sig, param_attrs, Site::Free, &mut errors);
    let struct_name = model::pascal_case(tool.fn_ident.to_string().trim_start_matches("r#"));
    match errors.finish(()) {
        Ok(()) => {
            let struct_ident = format_ident!("{}", struct_name);
            let generated = expand::free_tool(&tool, &item.vis, &struct_ident, &krate);
            quote!(#item #generated)
        }
        // Still emit the struct, so its uses compile and only the attribute's errors show;
        // not for a method (`self` outside `#[toolbox]`), where a struct cannot go.
        Err(e) if !struct_name.is_empty() && item.sig.receiver().is_none() => {
            let struct_ident = format_ident!("{}", struct_name);
            let placeholder = expand::placeholder_tool(&tool, &item.vis, &struct_ident, &krate);
            with_errors(quote!(#item #placeholder), e)
        }
        Err(e) => with_errors(item, e),
    }
}

fn toolbox_impl(args: TokenStream2, input: TokenStream2) -> TokenStream2 {
    let mut item: syn::ItemImpl = match syn::parse2(input.clone()) {
        Ok(i) => i,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "`#[toolbox]` goes on an inherent `impl` block");
            return with_errors(input, e);
        }
    };
    let mut errors = Errors::default();
    let attr: ToolboxAttr = parse_attr(args, &mut errors);
    let krate = attr.krate.unwrap_or_else(default_krate);
    if let Some((path, _)) = &item.trait_ {
        errors.push(syn::Error::new_spanned(
            path,
            "`#[toolbox]` goes on an inherent `impl` block, not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &item.generics,
            "`#[toolbox]` cannot be generic: each tool's JSON Schema is fixed when it is defined",
        ));
    }
    let mut tools = Vec::new();
    for impl_item in item.items.iter_mut() {
        let syn::ImplItem::Fn(f) = impl_item else { continue };
        let (tool_attrs, rest): (Vec<_>, Vec<_>) =
            std::mem::take(&mut f.attrs).into_iter().partition(|a| a.path().is_ident("tool"));
        f.attrs = rest;
        let Some(first) = tool_attrs.first() else { continue };
        for dup in &tool_attrs[1..] {
            errors
                .push(syn::Error::new_spanned(dup, "duplicate `#[tool]` attribute: put all options in one"));
        }
        let args = match &first.meta {
            syn::Meta::Path(_) => TokenStream2::new(),
            syn::Meta::List(l) => l.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                errors.push(syn::Error::new_spanned(nv, "write `#[tool]` or `#[tool(..)]`"));
                TokenStream2::new()
            }
        };
        let tool_attr: ToolAttr = parse_attr(args, &mut errors);
        if let Some(k) = &tool_attr.krate {
            errors.push(syn::Error::new(
                k.span(),
                "set `crate` on the `#[toolbox(crate = ..)]` attribute, not on each tool",
            ));
        }
        if tool_attr.collect.is_present() {
            let span = tool_attr.collect.span();
            errors.push(syn::Error::new(
                span,
                "`collect` does not apply to a `#[toolbox]` tool: it needs an instance; use `register_toolbox`",
            ));
        }
        let param_attrs = model::strip_param_attrs(&mut f.sig, &mut errors);
        tools.push(model::tool_fn(tool_attr, &f.attrs, &f.sig, param_attrs, Site::Method, &mut errors));
    }
    if tools.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            "`#[toolbox]` found no `#[tool]` method: mark the methods to expose with `#[tool]`",
        ));
    }
    match errors.finish(()) {
        Ok(()) => {
            let generated = expand::toolbox(&item.self_ty, &tools, &krate);
            quote!(#item #generated)
        }
        // Still implement `Toolbox` (without tools), so `register_toolbox` calls compile
        // and only the attributes' errors show; not where the impl block itself is wrong.
        Err(e) if item.trait_.is_none() && item.generics.params.is_empty() => {
            let placeholder = expand::placeholder_toolbox(&item.self_ty, &krate);
            with_errors(quote!(#item #placeholder), e)
        }
        Err(e) => with_errors(item, e),
    }
}
