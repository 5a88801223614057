//! ABI v1 names, signatures and encodings (docs/abi.md is the reference).

use wasmtime::{ExternType, FuncType, Module, ValType};

use crate::LoadError;

// The names and the byte-list encoding both sides of the sandbox share.
pub use runnel_abi::{
    ABI_MARKER_PREFIX, ABI_VERSION, EXPORT_ALLOC, EXPORT_MEMORY, FUNCTION_PREFIX, IMPORT_MODULE,
    abi_marker_version, decode_byte_list, encode_byte_list,
};

use ValType::{I32, I64};

/// Parameter and result types of a host function.
pub type Signature = (&'static [ValType], &'static [ValType]);

/// The host functions of ABI v1 and their signatures.
pub const HOST_FUNCTIONS: &[(&str, Signature)] = &[
    ("state_get", (&[I32, I32], &[I64])),
    ("state_put", (&[I32, I32, I32, I32], &[])),
    ("state_delete", (&[I32, I32], &[])),
    ("range_open", (&[I32, I32, I32, I32], &[I32])),
    ("range_next", (&[I32], &[I64])),
    ("event_emit", (&[I32, I32, I32, I32], &[])),
    ("ctx_tx_id", (&[], &[I64])),
    ("ctx_creator", (&[], &[I64])),
    ("ctx_timestamp_ms", (&[], &[I64])),
    ("log", (&[I32, I32, I32], &[])),
    ("result_read", (&[I32], &[])),
    ("return_value", (&[I32, I32], &[])),
    ("abort", (&[I32, I32], &[])),
];

/// The signature of host function `name`, if it is one.
pub fn host_function(name: &str) -> Option<Signature> {
    HOST_FUNCTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, sig)| *sig)
}

fn matches(ty: &FuncType, (params, results): Signature) -> bool {
    let same = |a: &mut dyn ExactSizeIterator<Item = ValType>, b: &[ValType]| {
        a.len() == b.len() && a.zip(b).all(|(x, y)| ValType::eq(&x, y))
    };
    same(&mut ty.params(), params) && same(&mut ty.results(), results)
}

fn describe(ty: &FuncType) -> String {
    ty.to_string()
}

fn describe_sig((params, results): Signature) -> String {
    let list = |v: &[ValType]| {
        v.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("(func (param {}) (result {}))", list(params), list(results))
}

/// Checks the compiled module's import and export types against ABI v1 and returns the
/// names of its contract functions, sorted.
pub fn check_signatures(module: &Module) -> Result<Vec<String>, LoadError> {
    for import in module.imports() {
        let Some(sig) = host_function(import.name()).filter(|_| import.module() == IMPORT_MODULE)
        else {
            return Err(LoadError::ForbiddenImport {
                module: import.module().to_string(),
                name: import.name().to_string(),
            });
        };
        let ok = matches!(import.ty(), ExternType::Func(ref f) if matches(f, sig));
        if !ok {
            return Err(LoadError::Signature {
                item: format!("import runnel::{}", import.name()),
                expected: describe_sig(sig),
                found: extern_description(&import.ty()),
            });
        }
    }
    let mut functions = Vec::new();
    for export in module.exports() {
        let name = export.name();
        let expected: Option<Signature> = if name == EXPORT_ALLOC {
            Some((&[I32], &[I32]))
        } else if abi_marker_version(name).is_some() {
            Some((&[], &[]))
        } else if let Some(function) = name.strip_prefix(FUNCTION_PREFIX) {
            functions.push(function.to_string());
            Some((&[I32, I32], &[]))
        } else {
            None
        };
        if let Some(sig) = expected {
            let ok = matches!(export.ty(), ExternType::Func(ref f) if matches(f, sig));
            if !ok {
                return Err(LoadError::Signature {
                    item: format!("export {name}"),
                    expected: describe_sig(sig),
                    found: extern_description(&export.ty()),
                });
            }
        }
    }
    functions.sort();
    Ok(functions)
}

fn extern_description(ty: &ExternType) -> String {
    match ty {
        ExternType::Func(f) => describe(f),
        ExternType::Memory(_) => "a memory".into(),
        ExternType::Table(_) => "a table".into(),
        ExternType::Global(_) => "a global".into(),
        ExternType::Tag(_) => "a tag".into(),
    }
}
