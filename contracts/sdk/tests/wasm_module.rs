//! The example contracts, built to wasm with the `contract` profile, have exactly the
//! shape docs/abi.md asks of a module: the fixed exports, one `runnel_fn_<name>` per
//! function with the right signature, imports only from `runnel` with the listed
//! signatures, no start function, and only WebAssembly 2.0 features without SIMD.

use std::collections::BTreeMap;

use wasmparser::{
    ExternalKind, FuncType, Parser, Payload, TypeRef, ValType, Validator, WasmFeatures,
};

use ValType::{I32, I64};

/// docs/abi.md, "Host functions".
const HOST_FUNCTIONS: &[(&str, &[ValType], &[ValType])] = &[
    ("state_get", &[I32, I32], &[I64]),
    ("state_put", &[I32, I32, I32, I32], &[]),
    ("state_delete", &[I32, I32], &[]),
    ("range_open", &[I32, I32, I32, I32], &[I32]),
    ("range_next", &[I32], &[I64]),
    ("event_emit", &[I32, I32, I32, I32], &[]),
    ("ctx_tx_id", &[], &[I64]),
    ("ctx_creator", &[], &[I64]),
    ("ctx_timestamp_ms", &[], &[I64]),
    ("log", &[I32, I32, I32], &[]),
    ("result_read", &[I32], &[]),
    ("return_value", &[I32, I32], &[]),
    ("abort", &[I32, I32], &[]),
];

/// What a module imports and exports.
struct Shape {
    /// `(module, name, type)` per imported function.
    imports: Vec<(String, String, FuncType)>,
    /// Exported functions with their types, and other exports with their kind.
    functions: BTreeMap<String, FuncType>,
    others: BTreeMap<String, ExternalKind>,
    start: bool,
}

fn shape(wasm: &[u8]) -> Shape {
    Validator::new_with_features(WasmFeatures::WASM2.difference(WasmFeatures::SIMD))
        .validate_all(wasm)
        .expect("valid WebAssembly 2.0 without SIMD");
    let mut types = Vec::new();
    let mut imported = Vec::new();
    let mut defined = Vec::new();
    let mut exports = Vec::new();
    let mut start = false;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("parses") {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    types.push(ty.expect("function type"));
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.expect("import");
                    let TypeRef::Func(index) = import.ty else {
                        panic!(
                            "import {}::{} is not a function",
                            import.module, import.name
                        );
                    };
                    imported.push((import.module.to_string(), import.name.to_string(), index));
                }
            }
            Payload::FunctionSection(reader) => {
                for index in reader {
                    defined.push(index.expect("function"));
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.expect("export");
                    exports.push((export.name.to_string(), export.kind, export.index));
                }
            }
            Payload::StartSection { .. } => start = true,
            _ => {}
        }
    }
    let type_of = |func: u32| -> FuncType {
        let func = func as usize;
        let index = match imported.get(func) {
            Some((_, _, index)) => *index,
            None => defined[func - imported.len()],
        };
        types[index as usize].clone()
    };
    let mut functions = BTreeMap::new();
    let mut others = BTreeMap::new();
    for (name, kind, index) in exports {
        if kind == ExternalKind::Func {
            functions.insert(name, type_of(index));
        } else {
            others.insert(name, kind);
        }
    }
    let imports = imported
        .iter()
        .map(|(module, name, index)| (module.clone(), name.clone(), types[*index as usize].clone()))
        .collect();
    Shape {
        imports,
        functions,
        others,
        start,
    }
}

fn func(params: &[ValType], results: &[ValType]) -> FuncType {
    FuncType::new(params.iter().copied(), results.iter().copied())
}

fn check(package: &str, contract_functions: &[&str]) {
    let wasm = runnel_wasm_build::wasm(package).expect("contract builds");
    let shape = shape(&wasm);

    assert!(!shape.start, "{package}: a start function");
    for (module, name, ty) in &shape.imports {
        assert_eq!(module, "runnel", "{package}: import {module}::{name}");
        let Some((_, params, results)) = HOST_FUNCTIONS.iter().find(|(n, _, _)| n == name) else {
            panic!("{package}: unknown import runnel::{name}");
        };
        assert_eq!(
            ty,
            &func(params, results),
            "{package}: signature of runnel::{name}"
        );
    }

    // rustc's wasm linker arguments always export the two layout globals; the runtime
    // ignores them.
    assert_eq!(
        shape.others,
        BTreeMap::from([
            ("memory".to_string(), ExternalKind::Memory),
            ("__data_end".to_string(), ExternalKind::Global),
            ("__heap_base".to_string(), ExternalKind::Global),
        ]),
        "{package}: non-function exports"
    );
    let mut expected = BTreeMap::from([
        ("runnel_abi_v1".to_string(), func(&[], &[])),
        ("runnel_alloc".to_string(), func(&[I32], &[I32])),
    ]);
    for name in contract_functions {
        expected.insert(format!("runnel_fn_{name}"), func(&[I32, I32], &[]));
    }
    assert_eq!(shape.functions, expected, "{package}: function exports");
}

#[test]
fn kv_module_has_the_abi_shape() {
    check("kv", &["put", "get", "update", "delete", "range"]);
}

#[test]
fn token_module_has_the_abi_shape() {
    check(
        "token",
        &["mint", "transfer", "balance", "total_supply", "whoami"],
    );
}

#[test]
fn asset_transfer_module_has_the_abi_shape() {
    check(
        "asset-transfer",
        &[
            "InitLedger",
            "CreateAsset",
            "ReadAsset",
            "UpdateAsset",
            "DeleteAsset",
            "AssetExists",
            "TransferAsset",
            "GetAllAssets",
        ],
    );
}
