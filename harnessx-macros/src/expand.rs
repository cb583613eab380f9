//! Code generation only: turns a resolved [`ToolFn`] into tokens. Every generated path
//! goes through `_harnessx`, bound once per expansion by `use #krate as _harnessx;`
//! inside a `const _: () = { .. };` block.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Path, Visibility};

use crate::json::{self, Json};
use crate::model::{DefaultValue, Param, ToolFn};

/// How the handler reaches the function.
pub(crate) enum Target {
    /// A free function, called by name.
    Free,
    /// A `#[toolbox]` method, called on the shared instance `__hx_this: Arc<Self>`.
    Method,
}

/// An expression for `tool` (needs `_harnessx` in scope): for a free function a
/// `&'static StaticTool`, for a `#[toolbox]` method a `ToolDefinition` (with `__hx_this`,
/// the shared instance, in scope). Only the tokens the chosen shape needs are built:
/// every token costs time in each build of the user's crate.
pub(crate) fn definition(tool: &ToolFn, target: &Target) -> TokenStream {
    let p = quote!(_harnessx::__private);
    let name = &tool.name;
    let description = &tool.description;
    let policy = policy(tool);
    // The schema is built when the definition is (at registration), never per request.
    let text = compile_time_schema(tool);

    if let Target::Method = target {
        let handler = closure_handler(tool, target);
        let schema = match text {
            Some(text) => quote!(#p::schema::parse(#text)),
            None => schema_builder(tool),
        };
        let def = quote!(#p::definition(#name, #description, #schema, #handler));
        return match policy {
            Some(options) => quote!(#def.apply(&#options)),
            None => def,
        };
    }

    // A free function: everything is a constant (see `__private::GeneratedTool`). Free
    // functions capture nothing, so their own handlers are plain `fn` pointers.
    let handler = match shared_handler(tool) {
        Some(shared) => quote!(#p::StaticHandler::Shared(#shared)),
        None => closure_handler(tool, target),
    };
    let schema = match text {
        Some(text) => quote!(#p::StaticSchema::Json(#text)),
        None => {
            let build = schema_builder(tool);
            quote!(#p::StaticSchema::Build(|| #build))
        }
    };
    let options = policy.unwrap_or_else(|| quote!(#p::ToolOptions::new()));
    quote!(&#p::StaticTool {
        name: #name,
        description: #description,
        schema: #schema,
        handler: #handler,
        options: #options,
    })
}

/// The input schema built at run time (a parameter type known only through
/// `schemars::JsonSchema`, or choices/defaults whose JSON is not known here).
fn schema_builder(tool: &ToolFn) -> TokenStream {
    let p = quote!(_harnessx::__private);
    let mut props = Vec::new();
    let mut required = Vec::new();
    for param in &tool.params {
        let Param::Value(v) = param else { continue };
        let pname = &v.name;
        let mut schema = v.schema.clone();
        if let Some(choices) = &v.one_of {
            schema = quote!(#p::schema::one_of(#schema, ::std::vec![#(#choices),*]));
        }
        let description = match &v.description {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        let default_json = match &v.default {
            Some(DefaultValue::Expr(_, Some(json))) => quote!(::core::option::Option::Some(#json)),
            _ => quote!(::core::option::Option::None),
        };
        props.push(quote!((#pname, #p::schema::property(#schema, #description, #default_json))));
        if v.default.is_none() {
            required.push(pname);
        }
    }
    quote!(#p::schema::object(::std::vec![#(#props),*], &[#(#required),*]))
}

/// A handler of its own for `tool`: a closure decoding each parameter and calling the
/// function. For a free function a non-capturing closure (`StaticHandler::Blocking` or
/// `Async`), for a method a `ToolHandler` capturing `__hx_this`.
fn closure_handler(tool: &ToolFn, target: &Target) -> TokenStream {
    let p = quote!(_harnessx::__private);
    let mut decls = Vec::new();
    let mut call_args = Vec::new();
    let mut has_values = false;
    for (i, param) in tool.params.iter().enumerate() {
        match param {
            Param::Context { by_ref } => call_args.push(match (by_ref, tool.is_async) {
                (true, true) => quote!(&__hx_ctx),
                (true, false) => quote!(__hx_ctx),
                (false, true) => quote!(::core::clone::Clone::clone(&__hx_ctx)),
                (false, false) => quote!(::core::clone::Clone::clone(__hx_ctx)),
            }),
            Param::Value(v) => {
                has_values = true;
                let pname = &v.name;
                let ty = &v.ty;
                let local = format_ident!("__hx_p{}", i);
                decls.push(match &v.default {
                    None => quote!(let #local: #ty = __hx_args.required::<#ty>(#pname)?;),
                    Some(DefaultValue::Trait) => quote!(
                        let #local: #ty = __hx_args.optional::<#ty>(#pname)?.unwrap_or_default();
                    ),
                    Some(DefaultValue::Expr(expr, _)) => {
                        let expr = match expr {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }) => {
                                quote!(::core::convert::Into::into(#expr))
                            }
                            other => quote!(#other),
                        };
                        quote!(let #local: #ty = __hx_args.optional::<#ty>(#pname)?.unwrap_or_else(|| #expr);)
                    }
                });
                call_args.push(quote!(#local));
            }
        }
    }

    let ident = &tool.fn_ident;
    let call = match target {
        Target::Free => quote!(#ident(#(#call_args),*)),
        Target::Method => quote!(__hx_this.#ident(#(#call_args),*)),
    };
    let convert = if tool.returns_result { quote!(#p::result_output) } else { quote!(#p::output) };
    let args = if has_values {
        quote!(let mut __hx_args = #p::Args::new(__hx_args, &__hx_ctx)?;)
    } else {
        quote!(let _ = __hx_args;)
    };
    let body = if tool.is_async {
        let send_check = quote_spanned!(tool.sig_span=> #p::require_send(#call));
        quote!(async move {
            #args
            #(#decls)*
            #convert(#send_check.await)
        })
    } else {
        quote!({
            #args
            #(#decls)*
            #convert(#call)
        })
    };
    match (target, tool.is_async) {
        (Target::Free, true) => quote!(#p::StaticHandler::Async(
            |__hx_args: #p::Value, __hx_ctx: #p::ToolContext| ::std::boxed::Box::pin(#body)
        )),
        (Target::Free, false) => {
            quote!(#p::StaticHandler::Blocking(|__hx_args: #p::Value, __hx_ctx: &#p::ToolContext| #body))
        }
        (Target::Method, true) => {
            quote!(#p::ToolHandler::from_async(move |__hx_args: #p::Value, __hx_ctx: #p::ToolContext| {
                let __hx_this = ::std::sync::Arc::clone(&__hx_this);
                #body
            }))
        }
        (Target::Method, false) => quote!(#p::ToolHandler::from_blocking(
            move |__hx_args: #p::Value, __hx_ctx: &#p::ToolContext| #body
        )),
    }
}

/// The options given in the attribute, as `ToolOptions` built with its (`const`) setters
/// (`None` if there are none).
fn policy(tool: &ToolFn) -> Option<TokenStream> {
    let p = quote!(_harnessx::__private);
    let mut setters = Vec::new();
    if let Some(level) = tool.policy.permission {
        let level = format_ident!("{}", level);
        setters.push(quote!(.permission(#p::PermissionLevel::#level)));
    }
    if let Some(replay) = tool.policy.replay_policy {
        let replay = format_ident!("{}", replay);
        setters.push(quote!(.replay_policy(#p::ReplayPolicy::#replay)));
    }
    if let Some(c) = tool.policy.concurrent {
        setters.push(quote!(.concurrent(#c)));
    }
    if let Some(t) = tool.policy.timeout_seconds {
        setters.push(quote!(.timeout_seconds(#t)));
    }
    if let Some(r) = &tool.policy.retry {
        let opt = |v: Option<TokenStream>| match v {
            Some(v) => quote!(::core::option::Option::Some(#v)),
            None => quote!(::core::option::Option::None),
        };
        let a = opt(r.max_attempts.map(|v| quote!(#v)));
        let [b, c, d] = [r.initial_delay_seconds, r.backoff_multiplier, r.max_delay_seconds].map(|v| {
            opt(v.map(|v| {
                let v = v.value;
                quote!(#v)
            }))
        });
        setters.push(quote!(.retry(#p::retry(#a, #b, #c, #d))));
    }
    let hints = [
        (tool.policy.read_only, "read_only"),
        (tool.policy.destructive, "destructive"),
        (tool.policy.idempotent, "idempotent"),
        (tool.policy.open_world, "open_world"),
    ];
    for (value, setter) in hints {
        if let Some(v) = value {
            let setter = format_ident!("{}", setter);
            setters.push(quote!(.#setter(#v)));
        }
    }
    if setters.is_empty() {
        return None;
    }
    Some(quote!(#p::ToolOptions::new() #(#setters)*))
}

/// The handler of a sync free function whose parameters are all required, `#[arg(default)]`
/// or the context by value: a constant built by a runtime helper (`__private::syncN`),
/// whose `call` is instantiated once per signature rather than a closure per tool. `None`
/// for the other shapes, which get their own closure.
fn shared_handler(tool: &ToolFn) -> Option<TokenStream> {
    const MAX_PARAMS: usize = 12;
    if tool.is_async || !tool.rust_abi || tool.params.len() > MAX_PARAMS {
        return None;
    }
    let mut takes = Vec::new();
    let mut names = Vec::new();
    for param in &tool.params {
        match param {
            Param::Context { by_ref: false } => {
                takes.push(quote!(_harnessx::__private::context()));
                names.push(String::new());
            }
            Param::Context { by_ref: true } => return None,
            Param::Value(v) => {
                let ty = &v.ty;
                // Spanned at the type, so "cannot be decoded" errors point at it.
                let span = syn::spanned::Spanned::span(ty);
                takes.push(match &v.default {
                    None => quote_spanned!(span=> _harnessx::__private::required::<#ty>()),
                    Some(DefaultValue::Trait) => {
                        quote_spanned!(span=> _harnessx::__private::or_default::<#ty>())
                    }
                    Some(DefaultValue::Expr(..)) => return None,
                });
                names.push(v.name.clone());
            }
        }
    }
    let p = quote!(_harnessx::__private);
    let returns = if tool.returns_result { quote!(#p::Fallible) } else { quote!(#p::Plain) };
    let ident = &tool.fn_ident;
    let helper = format_ident!("sync{}", tool.params.len());
    let shared = if takes.is_empty() {
        quote!(#p::sync0::<_, #returns>(#ident))
    } else {
        let wild = takes.iter().map(|_| quote!(_));
        quote!(#p::#helper::<#(#wild,)* _, #returns>(&[#(#names),*], #ident, #(#takes),*))
    };
    // Evaluated at compile time and borrowed as `'static`: no per-signature constructor or `Arc`.
    Some(quote!(&#shared))
}

/// The whole input schema as JSON text, when every parameter type is recognised (the
/// common case): the generated code then only parses one string, once.
fn compile_time_schema(tool: &ToolFn) -> Option<String> {
    let mut props = Vec::new();
    let mut required = Vec::new();
    for param in &tool.params {
        let Param::Value(v) = param else { continue };
        let mut schema = json::schema(&v.ty)?;
        if v.one_of.is_some() {
            schema.insert("enum", Json::Arr(json::one_of(&schema, v.one_of_json.clone()?)));
        }
        if let Some(d) = &v.description {
            schema.insert("description", Json::Str(d.clone()));
        }
        match &v.default {
            None => required.push(Json::Str(v.name.clone())),
            Some(_) => {
                if let Some(d) = &v.default_json {
                    schema.insert("default", d.clone());
                }
            }
        }
        props.push((v.name.clone(), schema));
    }
    let mut object =
        vec![("type".to_owned(), Json::Str("object".into())), ("properties".to_owned(), Json::Obj(props))];
    if !required.is_empty() {
        object.push(("required".to_owned(), Json::Arr(required)));
    }
    let mut text = String::new();
    Json::Obj(object).write(&mut text);
    Some(text)
}

/// For each parameter whose type is known only through `schemars`: a trait of its own,
/// implemented for every `ParamSchema` type, through which its schema is built. When the
/// type has no JSON Schema, the error is this trait's, and so names the parameter.
pub(crate) fn schema_traits(tool: &ToolFn) -> TokenStream {
    let p = quote!(_harnessx::__private);
    let traits = tool.params.iter().filter_map(|param| {
        let Param::Value(v) = param else { return None };
        let name = v.schema_trait.as_ref()?;
        let message = format!(
            "`{{Self}}` cannot be the type of tool parameter `{}` (of `{}`): it has no JSON Schema",
            v.name, tool.fn_ident
        );
        Some(quote! {
            #[diagnostic::on_unimplemented(
                message = #message,
                label = "this parameter's type has no JSON Schema",
                note = "use bool, an integer or float type, String, Option<T>, Vec<T> or HashMap/BTreeMap<String, T>, \
                        or add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}`",
                note = "or register the function with an explicit schema: `ToolRegistry::register_with_schema`"
            )]
            #[allow(non_camel_case_types)]
            trait #name {
                fn schema() -> #p::Value;
            }
            impl<T: #p::ParamSchema + ?::core::marker::Sized> #name for T {
                fn schema() -> #p::Value {
                    #p::schema::of::<T>()
                }
            }
        })
    });
    quote!(#(#traits)*)
}

/// The unit struct and its `IntoToolDefinition` impl for a free `#[tool]` fn.
pub(crate) fn free_tool(tool: &ToolFn, vis: &Visibility, struct_ident: &Ident, krate: &Path) -> TokenStream {
    let def = definition(tool, &Target::Free);
    let traits = schema_traits(tool);
    let fn_name = tool.fn_ident.to_string();
    let name = &tool.name;
    let doc = format!(
        "The tool [`{fn_name}`] as a registrable definition (generated by `#[tool]`): pass it to `register_tool`."
    );
    let collect = tool.collect.then(|| {
        quote!(_harnessx::__private::inventory::submit! {
            _harnessx::__private::CollectedTool::new(_harnessx::__private::collected::<#struct_ident>)
        })
    });
    // No derives: each would be an impl per tool to check and compile (see
    // docs/performance.md); the struct is a name, written wherever it is needed.
    let body = quote! {
        #traits

        impl _harnessx::__private::GeneratedTool for #struct_ident {
            const TOOL: &'static _harnessx::__private::StaticTool = #def;
        }

        #collect
    };
    unit_struct(&doc, vis, struct_ident, krate, name, body)
}

/// A tool's unit struct with its `NAME`, and `body` (impls naming the runtime through
/// `_harnessx`) in an anonymous `const` block: what a free `#[tool]` fn gets, with or
/// without errors.
fn unit_struct(
    doc: &str,
    vis: &Visibility,
    struct_ident: &Ident,
    krate: &Path,
    name: &str,
    body: TokenStream,
) -> TokenStream {
    quote! {
        #[doc = #doc]
        #vis struct #struct_ident;

        #[doc(hidden)]
        const _: () = {
            use #krate as _harnessx;

            impl #struct_ident {
                /// The name the model calls this tool by.
                #vis const NAME: &'static str = #name;
            }

            #body
        };
    }
}

/// What a free `#[tool]` fn gets beside its errors: the unit struct, its `NAME` and an
/// `IntoToolDefinition` impl, so the code that registers it still compiles and the user
/// sees the attribute's errors alone, not "cannot find type" wherever the tool is used.
/// The build fails anyway, so the definition is never built; it is a minimal one that
/// cannot panic.
pub(crate) fn placeholder_tool(
    tool: &ToolFn,
    vis: &Visibility,
    struct_ident: &Ident,
    krate: &Path,
) -> TokenStream {
    let name = &tool.name;
    let p = quote!(_harnessx::__private);
    // Documented as in `free_tool`, so a crate denying `missing_docs` adds no error.
    let doc = format!("The tool [`{}`] (its `#[tool]` attribute has errors).", tool.fn_ident);
    let body = quote! {
        impl #p::IntoToolDefinition for #struct_ident {
            fn into_tool_definition(self) -> #p::ToolDefinition {
                let handler = #p::ToolHandler::from_blocking(|_, _| #p::output(()));
                #p::definition(#name, "", #p::Value::Null, handler)
            }
        }
    };
    unit_struct(&doc, vis, struct_ident, krate, name, body)
}

/// What a `#[toolbox]` impl block gets beside its errors: a `Toolbox` impl with no tools,
/// so `register_toolbox` calls still compile (see [`placeholder_tool`]).
pub(crate) fn placeholder_toolbox(self_ty: &syn::Type, krate: &Path) -> TokenStream {
    quote! {
        #[doc(hidden)]
        const _: () = {
            use #krate as _harnessx;

            impl _harnessx::__private::Toolbox for #self_ty {
                fn tool_definitions(
                    self: ::std::sync::Arc<Self>,
                ) -> ::std::vec::Vec<_harnessx::__private::ToolDefinition> {
                    ::std::vec::Vec::new()
                }
            }
        };
    }
}

/// The `Toolbox` impl for a `#[toolbox]` impl block.
pub(crate) fn toolbox(self_ty: &syn::Type, tools: &[ToolFn], krate: &Path) -> TokenStream {
    let defs = tools.iter().map(|t| {
        let def = definition(t, &Target::Method);
        quote!({
            let __hx_this = ::std::sync::Arc::clone(&self);
            #def
        })
    });
    let traits = tools.iter().map(schema_traits);
    quote! {
        #[doc(hidden)]
        const _: () = {
            use #krate as _harnessx;

            #(#traits)*

            impl _harnessx::__private::Toolbox for #self_ty {
                fn tool_definitions(
                    self: ::std::sync::Arc<Self>,
                ) -> ::std::vec::Vec<_harnessx::__private::ToolDefinition> {
                    ::std::vec![#(#defs),*]
                }
            }
        };
    }
}
