// Builds an AssemblyScript contract into a module the Runnel runtime accepts, and checks
// that it does: asc (with the shared asconfig.json and the transform), then binaryen's
// wasm-ctor-eval to run the module's start code at build time, then a check of the output
// against ABI v1 (docs/abi.md). A module that would be refused at deploy fails here, loudly.

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The asconfig.json contracts extend. */
export const SHARED_CONFIG = path.join(here, "..", "asconfig.json");
/** The export asc gives the start function (asconfig.json's `exportStart`). */
export const START_EXPORT = "__runnel_start";
/** Initial memory a module must declare, in 64 KiB pages (2 MiB, as the Rust examples link). */
export const INITIAL_MEMORY_PAGES_MIN = 32;

/** The Wasm features asc's output uses; the runtime accepts them. */
const FEATURES = ["--enable-bulk-memory", "--enable-sign-ext", "--enable-mutable-globals", "--enable-nontrapping-float-to-int"];

/** The `runnel` host functions of ABI v1 and their signatures. */
export const HOST_FUNCTIONS = {
  state_get: "(i32,i32)->i64",
  state_put: "(i32,i32,i32,i32)->()",
  state_delete: "(i32,i32)->()",
  range_open: "(i32,i32,i32,i32)->i32",
  range_next: "(i32)->i64",
  event_emit: "(i32,i32,i32,i32)->()",
  ctx_tx_id: "()->i64",
  ctx_creator: "()->i64",
  ctx_timestamp_ms: "()->i64",
  log: "(i32,i32,i32)->()",
  result_read: "(i32)->()",
  return_value: "(i32,i32)->()",
  abort: "(i32,i32)->()",
};

/** What an import outside `runnel` usually means, for the error message. */
const FORBIDDEN_HINTS = {
  "env.abort": "the build did not use @runnel/contract's asconfig.json (its `use: abort=...`)",
  "env.seed": "Math.random needs `use: seed=...` from @runnel/contract's asconfig.json",
  "env.Date.now": "contracts have no clock: use ctx.timestampMs(), the proposal's timestamp",
  "env.console.log": "contracts have no console: use ctx.log(LogLevel.Info, message)",
  "env.trace": "trace() prints to a console contracts do not have: use ctx.log",
};

/** A module the runtime would refuse, or a build that failed. */
export class ContractBuildError extends Error {
  constructor(message) {
    super(message);
    this.name = "ContractBuildError";
  }
}

function binaryenTool(name) {
  const pkg = path.dirname(require.resolve("binaryen/package.json", { paths: [path.dirname(require.resolve("assemblyscript/package.json"))] }));
  return path.join(pkg, "bin", name);
}

/** Reads a LEB128 unsigned integer at `at`: [value, next offset]. */
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [value, at];
    shift += 7;
  }
}

const VALTYPES = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64" };

/** The sections a check needs: section ids, function types, imports, memory limits. */
export function parseModule(bytes) {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new ContractBuildError("not a WebAssembly module");
  }
  const sections = [];
  const types = [];
  const imports = [];
  const memories = [];
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at];
    const [size, body] = leb(bytes, at + 1);
    sections.push(id);
    let p = body;
    if (id === 1) {
      let count;
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) {
        p++; // 0x60
        let n;
        [n, p] = leb(bytes, p);
        const params = [];
        for (let k = 0; k < n; k++) params.push(VALTYPES[bytes[p++]] ?? "?");
        [n, p] = leb(bytes, p);
        const results = [];
        for (let k = 0; k < n; k++) results.push(VALTYPES[bytes[p++]] ?? "?");
        types.push(`(${params.join(",")})->(${results.join(",")})`.replace("->()", "->()"));
      }
    } else if (id === 2) {
      let count;
      [count, p] = leb(bytes, p);
      const decoder = new TextDecoder();
      for (let i = 0; i < count; i++) {
        let len;
        [len, p] = leb(bytes, p);
        const module = decoder.decode(bytes.subarray(p, p + len));
        p += len;
        [len, p] = leb(bytes, p);
        const name = decoder.decode(bytes.subarray(p, p + len));
        p += len;
        const kind = bytes[p++];
        let type = null;
        if (kind === 0) [type, p] = leb(bytes, p);
        imports.push({ module, name, kind, type });
        if (kind !== 0) break; // only function imports are expected; the check refuses the rest
      }
    } else if (id === 5) {
      let count;
      [count, p] = leb(bytes, p);
      for (let i = 0; i < count; i++) {
        const flags = bytes[p++];
        let initial;
        [initial, p] = leb(bytes, p);
        let maximum = null;
        if (flags & 1) [maximum, p] = leb(bytes, p);
        memories.push({ initial, maximum, shared: (flags & 2) !== 0, memory64: (flags & 4) !== 0 });
      }
    }
    at = body + size;
  }
  return { sections, types, imports, memories };
}

function signatureText(type) {
  return type.replace(/->\(([^)]*)\)$/, (_, r) => `->${r ? (r.includes(",") ? `(${r})` : r) : "()"}`);
}

/**
 * Checks `wasm` against what the runtime accepts (runtime/src/validate.rs and abi.rs):
 * valid, a single memory with at least 2 MiB initially, the ABI marker and allocator, only
 * `runnel` imports with their ABI signatures, no start function, no `_start`/`_initialize`
 * export. Returns the contract function names; throws ContractBuildError otherwise.
 */
export function checkModule(wasm, what = "module") {
  const problems = [];
  let module;
  try {
    module = new WebAssembly.Module(wasm);
  } catch (e) {
    throw new ContractBuildError(`${what}: not a valid WebAssembly module: ${e.message}`);
  }
  const parsed = parseModule(wasm);
  if (parsed.sections.includes(8)) {
    problems.push("it has a start function (the runtime refuses modules that run code when instantiated)");
  }
  const exports = WebAssembly.Module.exports(module);
  const names = exports.map((e) => e.name);
  for (const name of [START_EXPORT, "_start", "_initialize"]) {
    if (names.includes(name)) {
      problems.push(
        name === START_EXPORT
          ? `its top-level code was not evaluated at build time (export ${name} survived wasm-ctor-eval): ` +
              "top-level code must not call the host (ctx, state, logging) or depend on call arguments; move that code into a function"
          : `it exports ${name}, which nothing would call (the runtime refuses it)`,
      );
    }
  }
  const abiMarkers = names.filter((n) => /^runnel_abi_v/.test(n));
  if (abiMarkers.length !== 1 || abiMarkers[0] !== "runnel_abi_v1") {
    problems.push(
      abiMarkers.length === 0
        ? "no ABI version marker (export runnel_abi_v1): was it built with the @runnel/contract transform?"
        : `ABI markers ${abiMarkers.join(", ")}; expected exactly runnel_abi_v1`,
    );
  }
  for (const [name, kind] of [["memory", "memory"], ["runnel_alloc", "function"]]) {
    if (!exports.some((e) => e.name === name && e.kind === kind)) problems.push(`missing export ${name} (${kind})`);
  }
  for (const imp of parsed.imports) {
    const key = `${imp.module}.${imp.name}`;
    const expected = imp.module === "runnel" ? HOST_FUNCTIONS[imp.name] : undefined;
    if (imp.kind !== 0 || expected === undefined) {
      const hint = FORBIDDEN_HINTS[key] ?? "a contract may import only the `runnel` host functions of docs/abi.md";
      problems.push(`it imports ${key}: ${hint}`);
      continue;
    }
    const found = signatureText(parsed.types[imp.type] ?? "?");
    if (found !== expected) problems.push(`import ${key} has type ${found}, expected ${expected}`);
  }
  if (parsed.memories.length !== 1) {
    problems.push(`${parsed.memories.length} memories; a contract has exactly one`);
  } else {
    const memory = parsed.memories[0];
    if (memory.shared || memory.memory64) problems.push("its memory is shared or 64-bit");
    if (memory.initial < INITIAL_MEMORY_PAGES_MIN) {
      problems.push(
        `its memory starts at ${memory.initial} pages; at least ${INITIAL_MEMORY_PAGES_MIN} (2 MiB) keep a typical call from growing it`,
      );
    }
  }
  const functions = names.filter((n) => n.startsWith("runnel_fn_")).map((n) => n.slice("runnel_fn_".length));
  if (problems.length) {
    throw new ContractBuildError(`${what} would be refused by the runtime:\n  - ${problems.join("\n  - ")}`);
  }
  return functions;
}

/**
 * Builds the contract whose entry file is `entry` into `outFile`. `config` is an
 * asconfig.json (default: the entry's directory's asconfig.json if any, else the shared
 * one). Returns `{ outFile, bytes, functions }`.
 */
export async function buildContract({ entry, outFile, config, textFile, quiet = true }) {
  const { main } = await import("assemblyscript/asc");
  entry = path.resolve(entry);
  outFile = path.resolve(outFile);
  const own = path.join(path.dirname(entry), "asconfig.json");
  config = path.resolve(config ?? (existsSync(own) ? own : SHARED_CONFIG));
  const work = await mkdtemp(path.join(tmpdir(), "runnel-as-"));
  try {
    const raw = path.join(work, "raw.wasm");
    const args = [entry, "--config", config, "--outFile", raw, "--baseDir", path.dirname(entry)];
    if (textFile) args.push("--textFile", path.resolve(textFile));
    const stderr = [];
    const { error } = await main(args, {
      stdout: { write: (s) => (quiet ? undefined : process.stdout.write(s)) },
      stderr: { write: (s) => stderr.push(typeof s === "string" ? s : Buffer.from(s).toString()) },
    });
    if (error) {
      throw new ContractBuildError(`asc failed for ${path.relative(process.cwd(), entry)}:\n${stderr.join("")}${error.message}`);
    }
    const rawBytes = await readFile(raw);
    const exports = WebAssembly.Module.exports(new WebAssembly.Module(rawBytes)).map((e) => e.name);
    let finalPath = raw;
    if (exports.includes(START_EXPORT)) {
      // Runs the start code at build time and drops its export; a start function that
      // cannot be evaluated (it calls an import) stays exported, and the check says so.
      finalPath = path.join(work, "evaluated.wasm");
      await run(process.execPath, [
        binaryenTool("wasm-ctor-eval"),
        raw,
        `--ctors=${START_EXPORT}`,
        "--ignore-external-input",
        "--quiet",
        ...FEATURES,
        "-o",
        finalPath,
      ]);
    }
    // Shrinks what wasm-ctor-eval left (the start code's functions, the data it folded).
    const optimized = path.join(work, "optimized.wasm");
    await run(process.execPath, [binaryenTool("wasm-opt"), finalPath, "-Oz", "--converge", ...FEATURES, "-o", optimized]);
    finalPath = optimized;
    const bytes = await readFile(finalPath);
    const functions = checkModule(bytes, path.basename(outFile));
    await mkdir(path.dirname(outFile), { recursive: true });
    await writeFile(outFile, bytes);
    return { outFile, bytes: bytes.length, functions };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
