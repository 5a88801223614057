//! `#[contract]`, the attribute of `runnel-contract` (use it as
//! `runnel_contract::contract`).
//!
//! Applied to an inline module, it turns every `pub fn` of the module into a contract
//! function: one `runnel_fn_<name>` wasm export per function (under
//! `cfg(target_arch = "wasm32")`), and a `pub struct Contract` implementing
//! `runnel_contract::Contract`, the native dispatcher the test harness uses. The
//! conventions (first parameter `&mut Context`, arguments decoded from JSON or raw text,
//! `Result` return encoded as JSON) are documented in `runnel-contract`.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Ident, Item, ItemFn, ItemMod, LitStr, Pat, ReturnType, Type, Visibility,
};

/// Makes a module of functions a Runnel contract.
///
/// ```text
/// #[runnel_contract::contract]
/// pub mod kv {
///     use runnel_contract::prelude::*;
///
///     pub fn put(ctx: &mut Context, key: String, value: String) -> Result<()> {
///         ctx.put_bytes(key, value)
///     }
///
///     #[function(name = "Get")]
///     pub fn get(ctx: &mut Context, key: String) -> Result<Option<Vec<u8>>> {
///         ctx.get_bytes(key)
///     }
/// }
/// ```
///
/// - Every `pub fn` is a contract function. Its first parameter must be `&mut Context`,
///   it must return `runnel_contract::Result<T>` with `T: Serialize`, and its other
///   parameters must be owned types implementing `DeserializeOwned`. Functions that are
///   not `pub` (including `pub(crate)`) are private helpers.
/// - `#[function(name = "CreateAsset")]` sets the name clients call a function by (by
///   default the Rust name).
/// - The module gains `pub struct Contract`, implementing `runnel_contract::Contract`.
#[proc_macro_attribute]
pub fn contract(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// A contract function found in the module.
struct Function {
    /// The Rust name.
    ident: Ident,
    /// The name clients call it by.
    name: String,
    /// Each further parameter: its name (for error messages) and type.
    params: Vec<(String, Type)>,
    /// The return type.
    output: Type,
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    if !attr.is_empty() {
        return Err(syn::Error::new(
            attr.span(),
            "#[contract] takes no arguments",
        ));
    }
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new(
            module.span(),
            "#[contract] needs an inline module: `pub mod name { ... }`",
        ));
    };

    let mut functions: Vec<Function> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for item in items.iter_mut() {
        let Item::Fn(func) = item else { continue };
        let rename = match take_function_attr(&mut func.attrs) {
            Ok(rename) => rename,
            Err(e) => {
                push_error(e);
                continue;
            }
        };
        if !matches!(func.vis, Visibility::Public(_)) {
            if let Some(rename) = rename {
                push_error(syn::Error::new(
                    rename.span(),
                    "#[function] applies to contract functions, which are `pub fn`",
                ));
            }
            continue;
        }
        match contract_function(func, rename) {
            Ok(function) => {
                if let Some(other) = functions.iter().find(|f| f.name == function.name) {
                    push_error(syn::Error::new(
                        function.ident.span(),
                        format!(
                            "two contract functions are named {:?} (`{}` and `{}`)",
                            function.name, other.ident, function.ident
                        ),
                    ));
                }
                functions.push(function);
            }
            Err(e) => push_error(e),
        }
    }
    if let Some(errors) = errors {
        return Err(errors);
    }

    let generated = generate(&module.ident, &functions);
    items.push(Item::Verbatim(generated));
    Ok(quote!(#module))
}

/// Removes the `#[function(name = "...")]` attribute, returning the name.
fn take_function_attr(attrs: &mut Vec<Attribute>) -> syn::Result<Option<LitStr>> {
    let mut rename = None;
    let mut result = Ok(());
    attrs.retain(|attr| {
        if !attr.path().is_ident("function") {
            return true;
        }
        if rename.is_some() {
            result = Err(syn::Error::new(
                attr.span(),
                "duplicate #[function] attribute",
            ));
            return false;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                rename = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            } else {
                Err(meta.error("expected `name = \"...\"`"))
            }
        });
        if let Err(e) = parsed {
            result = Err(e);
        } else if rename.is_none() {
            result = Err(syn::Error::new(
                attr.span(),
                "expected #[function(name = \"...\")]",
            ));
        }
        false
    });
    result.map(|()| rename)
}

fn contract_function(func: &ItemFn, rename: Option<LitStr>) -> syn::Result<Function> {
    let sig = &func.sig;
    let ident = sig.ident.clone();
    let helper_hint = format!("(make `{ident}` private, not `pub`, if it is a helper)");
    if let Some(token) = &sig.asyncness {
        return Err(syn::Error::new(
            token.span(),
            "contract functions cannot be async",
        ));
    }
    if let Some(token) = &sig.unsafety {
        return Err(syn::Error::new(
            token.span(),
            "contract functions cannot be unsafe",
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new(
            abi.span(),
            "contract functions cannot declare an ABI",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "contract functions cannot be generic",
        ));
    }

    let mut inputs = sig.inputs.iter();
    let first_ok = match inputs.next() {
        Some(FnArg::Typed(first)) => is_mut_context(&first.ty),
        _ => false,
    };
    if !first_ok {
        let span = sig.inputs.first().map_or(sig.ident.span(), |a| a.span());
        return Err(syn::Error::new(
            span,
            format!(
                "the first parameter of contract function `{ident}` must be `ctx: &mut Context` {helper_hint}"
            ),
        ));
    }

    let mut params = Vec::new();
    for (index, input) in inputs.enumerate() {
        let FnArg::Typed(param) = input else {
            return Err(syn::Error::new(input.span(), "unexpected receiver"));
        };
        match &*param.ty {
            Type::Reference(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "contract function arguments are owned values (e.g. `String`, not `&str`)",
                ));
            }
            Type::ImplTrait(t) => {
                return Err(syn::Error::new(
                    t.span(),
                    "contract function arguments need a concrete type",
                ));
            }
            _ => {}
        }
        let name = match &*param.pat {
            Pat::Ident(p) => p.ident.unraw().to_string(),
            _ => format!("arg{}", index + 1),
        };
        params.push((name, (*param.ty).clone()));
    }

    let output = match &sig.output {
        ReturnType::Type(_, ty) if last_segment_is(ty, "Result") => (**ty).clone(),
        other => {
            let span = match other {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => sig.paren_token.span.join(),
            };
            return Err(syn::Error::new(
                span,
                format!(
                    "contract function `{ident}` must return `runnel_contract::Result<T>` {helper_hint}"
                ),
            ));
        }
    };

    let name = match rename {
        Some(lit) => {
            let name = lit.value();
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(syn::Error::new(
                    lit.span(),
                    "a function name is non-empty and made of ASCII letters, digits and `_`",
                ));
            }
            name
        }
        None => ident.unraw().to_string(),
    };
    Ok(Function {
        ident,
        name,
        params,
        output,
    })
}

/// `&mut Context` or `&mut Context<'_>`, possibly path-qualified.
fn is_mut_context(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_some() && last_segment_is(&r.elem, "Context"),
        _ => false,
    }
}

fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == name)
        }
        Type::Group(g) => last_segment_is(&g.elem, name),
        Type::Paren(p) => last_segment_is(&p.elem, name),
        _ => false,
    }
}

fn generate(module: &Ident, functions: &[Function]) -> TokenStream2 {
    let krate = quote!(::runnel_contract);
    let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    let mut arms = Vec::new();
    let mut shims = Vec::new();
    for function in functions {
        let Function {
            ident,
            name,
            params,
            output,
        } = function;
        // Spanned by the return type: a `T` without `Serialize` is reported there.
        let encode = quote_spanned!(output.span()=> ::runnel_contract::__private::encode_return);
        let base = ident.unraw();
        let call = format_ident!("__runnel_call_{}", base);
        let export = format_ident!("__runnel_export_{}", base);
        let export_name = format!("runnel_fn_{name}");
        let count = params.len();
        let vars: Vec<Ident> = (0..count).map(|i| format_ident!("__arg{}", i)).collect();
        let decodes = params
            .iter()
            .zip(&vars)
            .enumerate()
            .map(|(index, ((param, ty), var))| {
                // Spanned by the type: a type without `Deserialize` is reported there.
                quote_spanned! {ty.span()=>
                    let #var: #ty =
                        ::runnel_contract::__private::decode_arg(#name, args, #index, #param)?;
                }
            });
        arms.push(quote!(#name => #call(ctx, args),));
        shims.push(quote! {
            #[doc(hidden)]
            fn #call(
                ctx: &mut #krate::Context<'_>,
                args: &[::std::vec::Vec<u8>],
            ) -> #krate::Result<::std::vec::Vec<u8>> {
                #krate::__private::check_arity(#name, args, #count)?;
                #(#decodes)*
                #encode(&#ident(ctx, #(#vars),*)?)
            }

            #[cfg(target_arch = "wasm32")]
            #[doc(hidden)]
            #[unsafe(export_name = #export_name)]
            pub extern "C" fn #export(args_ptr: i32, args_len: i32) {
                #krate::__private::run(args_ptr, args_len, #call);
            }
        });
    }
    let doc = format!(
        " The contract defined by module `{module}`: its functions by name ({}).",
        names.join(", ")
    );
    let span = Span::call_site();
    let contract = Ident::new("Contract", span);
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct #contract;

        impl #krate::Contract for #contract {
            const FUNCTIONS: &'static [&'static str] = &[#(#names),*];

            // A contract without functions uses neither parameter.
            #[allow(unused_variables)]
            fn dispatch(
                ctx: &mut #krate::Context<'_>,
                function: &str,
                args: &[::std::vec::Vec<u8>],
            ) -> #krate::Result<::std::vec::Vec<u8>> {
                match function {
                    #(#arms)*
                    _ => ::core::result::Result::Err(#krate::__private::unknown_function(
                        function,
                        <Self as #krate::Contract>::FUNCTIONS,
                    )),
                }
            }
        }

        #(#shims)*
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(item: TokenStream2) -> String {
        match expand(TokenStream2::new(), item) {
            Ok(out) => panic!("expected an error, got {out}"),
            Err(e) => e.to_string(),
        }
    }

    fn expanded(item: TokenStream2) -> String {
        match expand(TokenStream2::new(), item) {
            Ok(out) => out.to_string(),
            Err(e) => panic!("expected an expansion, got {e}"),
        }
    }

    #[test]
    fn generates_exports_dispatch_and_function_list() {
        let out = expanded(quote! {
            pub mod kv {
                use runnel_contract::prelude::*;
                pub fn put(ctx: &mut Context, key: String, value: String) -> Result<()> { Ok(()) }
                #[function(name = "Get")]
                pub fn get(ctx: &mut Context<'_>, r#type: String) -> runnel_contract::Result<u8> { Ok(0) }
                fn helper(x: u8) -> u8 { x }
                pub(crate) fn also_helper() {}
            }
        });
        assert!(out.contains("export_name = \"runnel_fn_put\""), "{out}");
        assert!(out.contains("export_name = \"runnel_fn_Get\""), "{out}");
        assert!(
            out.contains("const FUNCTIONS : & 'static [& 'static str] = & [\"put\" , \"Get\"]"),
            "{out}"
        );
        assert!(
            out.contains("fn __runnel_export_type") || out.contains("fn __runnel_export_get"),
            "{out}"
        );
        assert!(
            out.contains("decode_arg (\"Get\" , args , 0usize , \"type\")"),
            "{out}"
        );
        assert!(
            !out.contains("# [function"),
            "the helper attribute is stripped: {out}"
        );
        assert!(!out.contains("runnel_fn_helper") && !out.contains("runnel_fn_also_helper"));
        assert!(out.contains("cfg (target_arch = \"wasm32\")"), "{out}");
    }

    #[test]
    fn wrong_first_parameter_is_an_error() {
        for item in [
            quote!(
                pub mod m {
                    pub fn f(ctx: &Context) -> Result<()> {
                        Ok(())
                    }
                }
            ),
            quote!(
                pub mod m {
                    pub fn f(ctx: Context) -> Result<()> {
                        Ok(())
                    }
                }
            ),
            quote!(
                pub mod m {
                    pub fn f(key: String) -> Result<()> {
                        Ok(())
                    }
                }
            ),
            quote!(
                pub mod m {
                    pub fn f() -> Result<()> {
                        Ok(())
                    }
                }
            ),
        ] {
            let error = error_of(item);
            assert!(
                error.contains(
                    "the first parameter of contract function `f` must be `ctx: &mut Context`"
                ),
                "{error}"
            );
        }
    }

    #[test]
    fn non_result_return_is_an_error() {
        for item in [
            quote!(
                pub mod m {
                    pub fn f(ctx: &mut Context) -> u64 {
                        0
                    }
                }
            ),
            quote!(
                pub mod m {
                    pub fn f(ctx: &mut Context) {}
                }
            ),
        ] {
            let error = error_of(item);
            assert!(
                error.contains("contract function `f` must return `runnel_contract::Result<T>`"),
                "{error}"
            );
        }
    }

    #[test]
    fn other_misuse_is_an_error() {
        let cases = [
            (
                quote!(
                    pub mod m;
                ),
                "needs an inline module",
            ),
            (
                quote!(
                    pub mod m {
                        pub fn f(ctx: &mut Context, k: &str) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "owned values",
            ),
            (
                quote!(
                    pub mod m {
                        pub async fn f(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "cannot be async",
            ),
            (
                quote!(
                    pub mod m {
                        pub fn f<T>(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "cannot be generic",
            ),
            (
                quote!(
                    pub mod m {
                        pub fn f(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                        #[function(name = "f")]
                        pub fn g(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "two contract functions are named \"f\"",
            ),
            (
                quote!(
                    pub mod m {
                        #[function(name = "a-b")]
                        pub fn f(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "ASCII letters",
            ),
            (
                quote!(
                    pub mod m {
                        #[function(rename = "x")]
                        pub fn f(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "expected `name = \"...\"`",
            ),
            (
                quote!(
                    pub mod m {
                        #[function(name = "x")]
                        fn f(ctx: &mut Context) -> Result<()> {
                            Ok(())
                        }
                    }
                ),
                "applies to contract functions",
            ),
        ];
        for (item, expected) in cases {
            let error = error_of(item);
            assert!(error.contains(expected), "{expected:?} not in {error:?}");
        }
        let error = expand(
            quote!(x),
            quote!(
                pub mod m {}
            ),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(error, "#[contract] takes no arguments");
    }
}
