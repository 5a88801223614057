// Ending a call with a contract error: the client receives the message as CONTRACT_ERROR,
// exactly as from a Rust contract's `Err(...)`, and nothing the call wrote or emitted is kept.
//
// The transform writes a message given as a literal, a template literal or a `+` chain
// (`fail("the balance of " + account + " would overflow")`) straight into the message buffer
// as UTF-8, piece by piece (see text.ts); only a message given as a ready string takes the
// path below.

import * as host from "./host";
import { __mFail, __mStart, __mValue, lit } from "./text";

/** Ends the call with a contract error carrying `message` (UTF-8 bytes). Never returns. */
export function failBytes(message: Uint8Array): void {
  host.abort(message.dataStart, <usize>message.length);
  // `abort` does not return; should a host ever let it, trap.
  unreachable();
}

/** Ends the call with a contract error carrying `message`. Never returns. */
export function fail(message: string): void {
  __mStart();
  __mValue<string>(message);
  __mFail();
}

/** Ends the call with a contract error unless `condition` holds (Rust's `ensure!`). */
export function ensure(condition: bool, message: string): void {
  if (!condition) fail(message);
}

/** Whether `file` is in the standard library: `~lib/`, but not `~lib/@runnel/`. */
function isStdFile(file: string): bool {
  const p = changetype<usize>(file);
  // "~lib" and "/@" as UTF-16 code units, read four and two at a time.
  if (file.length < 5 || load<u64>(p) != 0x0062_0069_006c_007e || load<u16>(p, 8) != 0x2f) return false;
  return file.length < 13 || load<u64>(p, 10) != 0x006e_0075_0072_0040 || load<u64>(p, 18) != 0x002f_006c_0065_006e;
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
  const w = __mStart();
  if (changetype<usize>(fileName) != 0 && isStdFile(changetype<string>(fileName))) {
    w.text(lit("panicked at "));
    w.utf16(changetype<string>(fileName), false);
    w.byte(0x3a);
    w.dec(line);
    w.byte(0x3a);
    w.dec(column);
    w.text(lit(": "));
  }
  if (changetype<usize>(message) == 0) w.text(lit("abort"));
  else w.utf16(changetype<string>(message), false);
  __mFail();
}

/**
 * The stand-in for `env.seed` (`--use seed=...`): `Math.random` would make endorsers
 * disagree, so a contract that calls it fails, with a message saying why.
 */
export function runnelSeed(): f64 {
  fail("Math.random is not available in a contract: every endorser must compute the same result");
  return 0;
}
