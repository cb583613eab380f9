//! A free function as `#[tool]` needs it: attributes, visibility and signature parsed,
//! the body kept as tokens. The body is only re-emitted, so parsing it (as `syn::ItemFn`
//! does) would be wasted work on every expansion.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Visibility};

pub(crate) struct FnItem {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    body: TokenStream,
}

impl Parse for FnItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: TokenTree = input.parse()?;
        match &body {
            TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace => {}
            other => return Err(syn::Error::new_spanned(other, "expected the function body")),
        }
        Ok(Self { attrs, vis, sig, body: body.into_token_stream() })
    }
}

impl ToTokens for FnItem {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}
