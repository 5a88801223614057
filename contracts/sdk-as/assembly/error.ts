// Ending a call with a contract error: the client receives the message as CONTRACT_ERROR,
// exactly as from a Rust contract's `Err(...)`, and nothing the call wrote or emitted is kept.

import * as host from "./host";

/** Ends the call with a contract error carrying `message` (UTF-8 bytes). Never returns. */
export function failBytes(message: Uint8Array): void {
  host.abort(message.dataStart, <usize>message.length);
  // `abort` does not return; should a host ever let it, trap.
  unreachable();
}

/** Ends the call with a contract error carrying `message`. Never returns. */
export function fail(message: string): void {
  const bytes = String.UTF8.encode(message);
  host.abort(changetype<usize>(bytes), <usize>bytes.byteLength);
  unreachable();
}

/** Ends the call with a contract error unless `condition` holds (Rust's `ensure!`). */
// @ts-ignore: decorator
@inline
export function ensure(condition: bool, message: string): void {
  if (!condition) fail(message);
}

/**
 * The `abort` every AssemblyScript build of a contract uses (`--use abort=...`, set by the
 * shared asconfig.json). `throw new Error(message)` in contract code arrives here with the
 * author's file name and becomes a contract error with the message as given, like a Rust
 * contract's `Err(message)`. A failure inside the standard library (index out of range,
 * an out-of-memory in the allocator, ...) is a bug rather than a decision, and is reported
 * the way the Rust SDK reports a panic: `panicked at <file>:<line>:<column>: <message>`.
 */
export function runnelAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  const text = message == null ? "abort" : message;
  if (fileName != null && fileName.startsWith("~lib/") && !fileName.startsWith("~lib/@runnel/")) {
    fail("panicked at " + fileName + ":" + line.toString() + ":" + column.toString() + ": " + text);
  }
  fail(text);
}

/**
 * The stand-in for `env.seed` (`--use seed=...`): `Math.random` would make endorsers
 * disagree, so a contract that calls it fails, with a message saying why.
 */
export function runnelSeed(): f64 {
  fail("Math.random is not available in a contract: every endorser must compute the same result");
  return 0;
}
