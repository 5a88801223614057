//! Static checks on a module before it is compiled: cheap, and they turn the ways a module
//! can be wrong into precise errors instead of compile or link failures.

use wasmparser::{ExternalKind, Parser, Payload, TypeRef, Validator, WasmFeatures};

use crate::abi::{self, ABI_VERSION};
use crate::{Limits, LoadError};

/// Exports by which WASI hosts start a command or initialise a reactor. A Runnel node
/// calls neither, so a module that has one expects set-up that would never happen.
const ENTRY_POINTS: [&str; 2] = ["_start", "_initialize"];

/// The WebAssembly features a contract may use: WebAssembly 2.0 without SIMD. No threads,
/// no relaxed SIMD (non-deterministic), no memory64, exceptions, GC or stack switching.
/// Floats are allowed: NaN canonicalisation makes them deterministic.
pub fn features() -> WasmFeatures {
    WasmFeatures::WASM2.difference(WasmFeatures::SIMD)
}

/// Checks `wasm` against ABI v1's static rules. Signatures are checked after compilation,
/// from the compiled module's types (see `abi::check_signatures`).
pub fn check(wasm: &[u8], module_bytes_max: usize, limits: &Limits) -> Result<(), LoadError> {
    let memory_bytes_max = limits.memory_bytes_max;
    if wasm.len() > module_bytes_max {
        return Err(LoadError::TooLarge {
            size_bytes: wasm.len(),
            limit_bytes: module_bytes_max,
        });
    }
    Validator::new_with_features(features())
        .validate_all(wasm)
        .map_err(|e| LoadError::Malformed {
            offset: e.offset(),
            message: e.message().to_string(),
        })?;

    let mut abi_versions = Vec::new();
    let mut exports = Vec::new();
    let mut memories = 0usize;
    let mut tables = 0usize;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(malformed)?;
        match payload {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(malformed)?;
                    let known = import.module == abi::IMPORT_MODULE
                        && matches!(import.ty, TypeRef::Func(_) | TypeRef::FuncExact(_))
                        && abi::host_function(import.name).is_some();
                    if !known {
                        return Err(LoadError::ForbiddenImport {
                            module: import.module.to_string(),
                            name: import.name.to_string(),
                        });
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let memory = memory.map_err(malformed)?;
                    memories += 1;
                    let initial_bytes = memory.initial.saturating_mul(64 * 1024);
                    if initial_bytes > memory_bytes_max as u64 {
                        return Err(LoadError::MemoryTooLarge {
                            initial_bytes,
                            limit_bytes: memory_bytes_max,
                        });
                    }
                    if memory.shared {
                        return Err(shape("a shared memory"));
                    }
                }
            }
            Payload::TableSection(reader) => {
                for table in reader {
                    let table = table.map_err(malformed)?;
                    tables += 1;
                    if table.ty.initial > limits.table_elements_max as u64 {
                        return Err(shape(&format!(
                            "a table of {} elements, over the limit table_elements_max = {}",
                            table.ty.initial, limits.table_elements_max
                        )));
                    }
                }
            }
            Payload::StartSection { .. } => return Err(LoadError::StartFunction),
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(malformed)?;
                    if ENTRY_POINTS.contains(&export.name) {
                        return Err(LoadError::EntryPoint {
                            name: export.name.to_string(),
                        });
                    }
                    if let Some(version) = abi::abi_marker_version(export.name) {
                        abi_versions.push(version);
                    }
                    exports.push((export.name.to_string(), export.kind));
                }
            }
            _ => {}
        }
    }

    match abi_versions.as_slice() {
        [ABI_VERSION] => {}
        [] => {
            return Err(LoadError::AbiVersion {
                found: None,
                supported: ABI_VERSION,
            });
        }
        [other, ..] => {
            let found = abi_versions
                .iter()
                .copied()
                .find(|v| *v != ABI_VERSION)
                .unwrap_or(*other);
            return Err(LoadError::AbiVersion {
                found: Some(found),
                supported: ABI_VERSION,
            });
        }
    }
    if memories != 1 {
        return Err(shape(&format!(
            "{memories} memories; a contract has exactly one"
        )));
    }
    if tables > 1 {
        return Err(shape(&format!(
            "{tables} tables; a contract may have at most one"
        )));
    }
    for (name, kind) in [
        (abi::EXPORT_MEMORY, ExternalKind::Memory),
        (abi::EXPORT_ALLOC, ExternalKind::Func),
    ] {
        if !exports.iter().any(|(n, k)| n == name && *k == kind) {
            return Err(LoadError::MissingExport {
                name: name.to_string(),
            });
        }
    }
    Ok(())
}

fn malformed(e: wasmparser::BinaryReaderError) -> LoadError {
    LoadError::Malformed {
        offset: e.offset(),
        message: e.message().to_string(),
    }
}

fn shape(what: &str) -> LoadError {
    LoadError::Shape {
        what: what.to_string(),
    }
}
