//! Contract runtime figures (recorded in docs/benchmarks.md):
//! - kv `put` invoke (instantiate + call + host calls), pooling vs on-demand allocation;
//! - the same for an empty function, to show what instantiation alone costs;
//! - artifact load from the on-disk cache, and first compile, per example contract;
//! - the same for the TypeScript (AssemblyScript) twins of kv and token (`kv_ts`,
//!   `token_ts`): kv `put` and loads beside the Rust modules, in the same run.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use runnel_runtime::{CallContext, MemoryState, Runtime, RuntimeConfig, StateView, Version};

const EXAMPLES: &[&str] = &["kv", "token", "asset-transfer"];

fn wasm(package: &str) -> Vec<u8> {
    runnel_wasm_build::wasm(package).expect("build the example contracts first")
}

/// The module of `name`: a Rust example, or `<example>_ts`, a TypeScript one.
fn module(name: &str) -> Vec<u8> {
    match name.strip_suffix("_ts") {
        Some(example) => runnel_wasm_build::typescript_wasm(example)
            .expect("build the TypeScript examples first (npm ci)"),
        None => wasm(name),
    }
}

/// A module whose one function does nothing: the floor of an invoke.
fn empty_module() -> Vec<u8> {
    wat::parse_str(
        r#"(module (memory (export "memory") 1) (func (export "runnel_abi_v1"))
             (func (export "runnel_alloc") (param i32) (result i32) (i32.const 1024))
             (func (export "runnel_fn_noop") (param i32 i32)))"#,
    )
    .expect("wat")
}

fn runtime(pooling: bool) -> Runtime {
    Runtime::new(RuntimeConfig {
        pooling,
        ..RuntimeConfig::default()
    })
    .expect("runtime")
}

fn invoke(c: &mut Criterion) {
    let kv = wasm("kv");
    let kv_ts = module("kv_ts");
    let value = "v".repeat(1024);
    let args = vec![b"key-000042".to_vec(), value.into_bytes()];
    let ctx = CallContext::default();
    let mut state = MemoryState::new();
    state.insert("key-000042", "old", Version::from_seq(7));
    let view: Arc<dyn StateView> = Arc::new(state);

    let mut group = c.benchmark_group("invoke");
    for pooling in [true, false] {
        let label = if pooling { "pooling" } else { "on-demand" };
        let rt = runtime(pooling);
        let contract = rt.install(&kv).expect("kv loads");
        group.bench_function(BenchmarkId::new("kv_put_1KB", label), |b| {
            b.iter(|| {
                let sim = rt
                    .invoke(&contract, "kv", "put", &args, &ctx, view.clone())
                    .expect("put");
                black_box(sim)
            })
        });
        let twin = rt.install(&kv_ts).expect("kv_ts loads");
        group.bench_function(BenchmarkId::new("kv_ts_put_1KB", label), |b| {
            b.iter(|| {
                black_box(
                    rt.invoke(&twin, "kv", "put", &args, &ctx, view.clone())
                        .expect("put"),
                )
            })
        });
        let small = vec![b"key-000042".to_vec(), b"v".to_vec()];
        group.bench_function(BenchmarkId::new("kv_put_1B", label), |b| {
            b.iter(|| {
                black_box(
                    rt.invoke(&contract, "kv", "put", &small, &ctx, view.clone())
                        .expect("put"),
                )
            })
        });
        group.bench_function(BenchmarkId::new("kv_ts_put_1B", label), |b| {
            b.iter(|| {
                black_box(
                    rt.invoke(&twin, "kv", "put", &small, &ctx, view.clone())
                        .expect("put"),
                )
            })
        });
        if pooling {
            for (name, module) in [("kv", &contract), ("kv_ts", &twin)] {
                for (size, args) in [("1KB", &args), ("1B", &small)] {
                    let fuel = rt
                        .invoke(module, "kv", "put", args, &ctx, view.clone())
                        .expect("put")
                        .fuel_used;
                    eprintln!("fuel: {name} put {size}: {fuel}");
                }
            }
        }
        let get_args = vec![b"key-000042".to_vec()];
        group.bench_function(BenchmarkId::new("kv_get", label), |b| {
            b.iter(|| black_box(rt.invoke(&contract, "kv", "get", &get_args, &ctx, view.clone())))
        });
        let empty = rt.install(&empty_module()).expect("empty loads");
        group.bench_function(BenchmarkId::new("empty_fn", label), |b| {
            b.iter(|| black_box(rt.invoke(&empty, "e", "noop", &[], &ctx, view.clone())))
        });
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cached = Runtime::new(RuntimeConfig {
        cache_dir: Some(dir.path().to_path_buf()),
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let uncached = runtime(true);
    let mut group = c.benchmark_group("module");
    group.sample_size(10);
    for package in EXAMPLES.iter().chain(&["kv_ts", "token_ts"]) {
        let bytes = module(package);
        let hash = cached.install(&bytes).expect("loads").hash();
        group.bench_function(BenchmarkId::new("load_cached_artifact", package), |b| {
            b.iter(|| {
                cached.forget(&hash);
                black_box(cached.load(&hash).expect("cached"))
            })
        });
        group.bench_function(BenchmarkId::new("first_compile", package), |b| {
            b.iter(|| {
                uncached.forget(&hash);
                black_box(uncached.install(&bytes).expect("compiles"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, invoke, load);
criterion_main!(benches);
