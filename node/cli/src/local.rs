//! Local contract runs: one call against a namespace kept in a JSON file, with the call's
//! writes applied as if it had committed. A development tool, not a ledger: there is no
//! endorsement, ordering or validation here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use runnel_runtime::{
    CallContext, Creator, MemoryState, NsRwSet, Runtime, RuntimeConfig, Simulation, Version,
};
use serde_json::{Value, json};

/// State of every namespace, as kept on disk between runs.
#[derive(Debug, Default)]
pub struct LocalState {
    /// The last sequence number assigned to a run.
    pub seq: u64,
    /// Each namespace's entries.
    pub namespaces: BTreeMap<String, MemoryState>,
}

impl LocalState {
    /// Reads `path`, or an empty state if it does not exist.
    pub fn load(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Ok(Self::default());
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading state file {}", path.display()))?;
        let doc: Value = serde_json::from_str(&text)
            .with_context(|| format!("state file {} is not JSON", path.display()))?;
        let mut state = LocalState {
            seq: doc["seq"].as_u64().unwrap_or(0),
            ..Self::default()
        };
        if let Some(namespaces) = doc["namespaces"].as_object() {
            for (ns, entries) in namespaces {
                let map = state.namespaces.entry(ns.clone()).or_default();
                for entry in entries.as_array().into_iter().flatten() {
                    let field = |name: &str| -> Result<Vec<u8>> {
                        let text = entry[name].as_str().unwrap_or_default();
                        hex::decode(text).with_context(|| format!("bad {name} in state file"))
                    };
                    let version = Version::from_seq(entry["version"].as_u64().unwrap_or(0));
                    map.insert(field("key")?, field("value")?, version);
                }
            }
        }
        Ok(state)
    }

    /// Writes the state to `path` (write then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        let namespaces: serde_json::Map<String, Value> = self
            .namespaces
            .iter()
            .map(|(ns, entries)| {
                let list = entries
                    .iter()
                    .map(|(k, v)| {
                        json!({"key": hex::encode(k), "value": hex::encode(&v.value), "version": v.version.seq})
                    })
                    .collect();
                (ns.clone(), Value::Array(list))
            })
            .collect();
        let doc = json!({"seq": self.seq, "namespaces": namespaces});
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&doc)?)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    /// A snapshot of one namespace.
    pub fn view(&self, namespace: &str) -> MemoryState {
        self.namespaces.get(namespace).cloned().unwrap_or_default()
    }

    /// Applies a call's writes at the next sequence number and returns it.
    pub fn apply(&mut self, rwset: &NsRwSet) -> u64 {
        self.seq += 1;
        self.namespaces
            .entry(rwset.namespace.clone())
            .or_default()
            .apply(rwset, Version::from_seq(self.seq));
        self.seq
    }
}

/// One local call.
#[derive(Debug)]
pub struct LocalCall {
    /// The contract module.
    pub wasm: PathBuf,
    /// The namespace (contract name); defaults to the module's file stem.
    pub namespace: Option<String>,
    /// Function name.
    pub function: String,
    /// Arguments, as given.
    pub args: Vec<String>,
    /// The caller: `org/role/name`.
    pub identity: String,
    /// Where the state file and the artifact cache live.
    pub data_dir: PathBuf,
    /// Keep the writes (apply them to the state file).
    pub commit: bool,
}

/// Runs `call` and returns a JSON report of the simulation.
pub fn run(call: &LocalCall) -> Result<Value> {
    let wasm = std::fs::read(&call.wasm)
        .with_context(|| format!("reading contract module {}", call.wasm.display()))?;
    let namespace = match &call.namespace {
        Some(ns) => ns.clone(),
        None => call
            .wasm
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("contract")
            .replace('_', "-"),
    };
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(call.data_dir.join("artifacts")),
        instances_max: 4,
        ..RuntimeConfig::default()
    })?;
    let contract = runtime.install(&wasm)?;

    let state_path = call.data_dir.join("state.json");
    let mut state = LocalState::load(&state_path)?;
    let mut parts = call.identity.splitn(3, '/');
    let creator = Creator {
        org: parts.next().unwrap_or_default().to_string(),
        role: parts.next().unwrap_or_default().to_string(),
        name: parts.next().unwrap_or_default().to_string(),
        cert: Vec::new(),
    };
    let ctx = CallContext {
        tx_id: hex::encode(
            runnel_runtime::CodeHash::of(
                format!(
                    "{}:{}:{}",
                    state.seq,
                    call.function,
                    call.args.join("\u{0}")
                )
                .as_bytes(),
            )
            .0,
        ),
        creator,
        timestamp_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    };
    let args: Vec<Vec<u8>> = call.args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let view = Arc::new(state.view(&namespace));
    let sim = runtime.invoke(&contract, &namespace, &call.function, &args, &ctx, view)?;
    let mut report = report(&sim);
    report["contract"] = json!({"namespace": namespace, "code_hash": contract.hash().to_hex()});
    if call.commit && !sim.rwset.writes.is_empty() {
        let seq = state.apply(&sim.rwset);
        state.save(&state_path)?;
        report["applied_at_seq"] = json!(seq);
    }
    Ok(report)
}

fn text(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => json!(s),
        Err(_) => json!(format!("0x{}", hex::encode(bytes))),
    }
}

fn version(v: &Option<Version>) -> Value {
    v.map(|v| json!(v.seq)).unwrap_or(Value::Null)
}

/// A JSON rendering of a simulation, with bytes shown as text where they are UTF-8.
pub fn report(sim: &Simulation) -> Value {
    let rw = &sim.rwset;
    json!({
        "result": text(&sim.result),
        "rwset": {
            "reads": rw.reads.iter().map(|r| json!({"key": text(&r.key), "version": version(&r.version)})).collect::<Vec<_>>(),
            "range_reads": rw.range_reads.iter().map(|r| json!({
                "start": text(&r.start), "end": r.end.as_deref().map(text), "exhausted": r.exhausted,
                "last": r.last.as_deref().map(text),
                "reads": r.reads.iter().map(|k| json!({"key": text(&k.key), "version": version(&k.version)})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "writes": rw.writes.iter().map(|w| if w.is_delete {
                json!({"key": text(&w.key), "delete": true})
            } else {
                json!({"key": text(&w.key), "value": text(&w.value)})
            }).collect::<Vec<_>>(),
        },
        "events": sim.events.iter().map(|e| json!({"name": e.name, "payload": text(&e.payload)})).collect::<Vec<_>>(),
        "fuel_used": sim.fuel_used,
        "logs": sim.logs.iter().map(|l| json!(l.message)).collect::<Vec<_>>(),
    })
}
