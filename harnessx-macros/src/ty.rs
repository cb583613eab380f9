//! Parameter types: recognising the context type, and the schema expression of a type.
//!
//! Common types are recognised by spelling and composed from `__private::schema`
//! builders; any other type goes through the parameter's own schema trait (over
//! `ParamSchema`, i.e. schemars), whose `#[diagnostic::on_unimplemented]` names the
//! parameter and explains what to do when the schema is missing.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericArgument, Ident, PathArguments, Type};

/// Whether `ty` is the injected context (`ToolContext` or `&ToolContext`); `Some(by_ref)`.
pub(crate) fn context_kind(ty: &Type) -> Option<bool> {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => context_kind(&r.elem).map(|_| true),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            (last.ident == "ToolContext" && last.arguments.is_none()).then_some(false)
        }
        Type::Paren(p) => context_kind(&p.elem),
        Type::Group(g) => context_kind(&g.elem),
        _ => None,
    }
}

/// Whether the return type is spelled as a `Result` (`Result<T, E>`, `io::Result<T>`, ..).
pub(crate) fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
        Type::Paren(p) => is_result(&p.elem),
        Type::Group(g) => is_result(&g.elem),
        _ => false,
    }
}

fn generic_args(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_string(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
}

/// A type recognised by its spelling.
pub(crate) enum Known<'a> {
    Bool,
    Integer,
    Range(i64, i64),
    Unsigned,
    Number,
    String,
    Char,
    Option(&'a Type),
    Array(&'a Type),
    Map(&'a Type),
}

/// Recognises the common types by their last path segment.
pub(crate) fn known(ty: &Type) -> Option<Known<'_>> {
    match ty {
        Type::Paren(p) => known(&p.elem),
        Type::Group(g) => known(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            let args = generic_args(&last.arguments);
            Some(match (name.as_str(), args.as_slice()) {
                ("bool", []) => Known::Bool,
                ("i8", []) => Known::Range(i8::MIN.into(), i8::MAX.into()),
                ("i16", []) => Known::Range(i16::MIN.into(), i16::MAX.into()),
                ("i32", []) => Known::Range(i32::MIN.into(), i32::MAX.into()),
                ("u8", []) => Known::Range(0, u8::MAX.into()),
                ("u16", []) => Known::Range(0, u16::MAX.into()),
                ("u32", []) => Known::Range(0, u32::MAX.into()),
                ("i64" | "isize" | "i128", []) => Known::Integer,
                ("u64" | "usize" | "u128", []) => Known::Unsigned,
                ("f32" | "f64", []) => Known::Number,
                ("String", []) => Known::String,
                ("char", []) => Known::Char,
                ("Option", [inner]) => Known::Option(inner),
                ("Vec" | "VecDeque", [inner]) => Known::Array(inner),
                ("HashMap" | "BTreeMap" | "IndexMap", [key, value, ..]) if is_string(key) => {
                    Known::Map(value)
                }
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Rejects the types that can never be parameters (references, `impl Trait`).
pub(crate) fn check(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Paren(p) => check(&p.elem),
        Type::Group(g) => check(&g.elem),
        Type::Reference(_) => Err(syn::Error::new(
            ty.span(),
            "a tool parameter cannot be a reference: arguments are decoded into owned values; \
             take an owned type (`String` rather than `&str`, `Vec<T>` rather than `&[T]`)",
        )),
        Type::ImplTrait(_) => Err(syn::Error::new(
            ty.span(),
            "a tool parameter cannot be `impl Trait`: its JSON Schema must be known; take a concrete type",
        )),
        _ => match known(ty) {
            Some(Known::Option(t) | Known::Array(t) | Known::Map(t)) => check(t),
            _ => Ok(()),
        },
    }
}

/// The expression that builds `ty`'s schema at run time; `s` is the path of the schema
/// builders. Used when some part of the type needs `schemars`: that part goes through
/// `schema_trait`, the parameter's own trait (see `expand::schema_traits`), and `uses_trait`
/// is set.
pub(crate) fn schema_expr(
    ty: &Type,
    s: &TokenStream,
    schema_trait: &Ident,
    uses_trait: &mut bool,
) -> syn::Result<TokenStream> {
    check(ty)?;
    let expr = match known(ty) {
        Some(Known::Bool) => quote!(#s::boolean()),
        Some(Known::Integer) => quote!(#s::integer()),
        Some(Known::Range(min, max)) => quote!(#s::integer_range(#min, #max)),
        Some(Known::Unsigned) => quote!(#s::unsigned()),
        Some(Known::Number) => quote!(#s::number()),
        Some(Known::String) => quote!(#s::string()),
        Some(Known::Char) => quote!(#s::character()),
        Some(Known::Option(inner)) => {
            let inner = schema_expr(inner, s, schema_trait, uses_trait)?;
            quote!(#s::nullable(#inner))
        }
        Some(Known::Array(inner)) => {
            let inner = schema_expr(inner, s, schema_trait, uses_trait)?;
            quote!(#s::array(#inner))
        }
        Some(Known::Map(inner)) => {
            let inner = schema_expr(inner, s, schema_trait, uses_trait)?;
            quote!(#s::map(#inner))
        }
        None => {
            *uses_trait = true;
            quote_spanned!(ty.span()=> <#ty as #schema_trait>::schema())
        }
    };
    Ok(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(ty: &str) -> String {
        let ty: Type = syn::parse_str(ty).unwrap();
        let mut used = false;
        schema_expr(&ty, &quote!(s), &quote::format_ident!("Check"), &mut used)
            .map(|t| t.to_string())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn known_types_compose() {
        assert_eq!(expr("i64"), "s :: integer ()");
        assert_eq!(expr("Option<Vec<String>>"), "s :: nullable (s :: array (s :: string ()))");
        assert_eq!(expr("std::collections::HashMap<String, f64>"), "s :: map (s :: number ())");
        assert_eq!(expr("u8"), "s :: integer_range (0i64 , 255i64)");
    }

    #[test]
    fn other_types_go_through_param_schema() {
        assert_eq!(expr("Unit"), "< Unit as Check > :: schema ()");
        assert_eq!(
            expr("Vec<HashMap<u32, bool>>"),
            "s :: array (< HashMap < u32 , bool > as Check > :: schema ())"
        );
        assert!(expr("&str").starts_with("error: a tool parameter cannot be a reference"));
    }

    #[test]
    fn context_and_result() {
        let ty = |s: &str| syn::parse_str::<Type>(s).unwrap();
        assert_eq!(context_kind(&ty("&ToolContext")), Some(true));
        assert_eq!(context_kind(&ty("harnessx::ToolContext")), Some(false));
        assert_eq!(context_kind(&ty("Context")), None);
        assert!(is_result(&ty("std::io::Result<String>")));
        assert!(!is_result(&ty("Option<String>")));
    }
}
