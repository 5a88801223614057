// @runnel/contract: write Runnel smart contracts in TypeScript (AssemblyScript).
//
// A contract is a file of exported functions whose first parameter is `ctx: Context`; the
// transform (`--transform @runnel/contract/transform`, set by the shared asconfig.json)
// makes each one a function clients call by name, as the Rust SDK's `#[contract]` does.
// Guide: docs/contracts.md.

export { Context, Creator, LogLevel, Range } from "./assembly/context";
export { CompositeKey, CompositeKeyParts } from "./assembly/key";
export { Utf8, Utf8Error, bytesEqual, concatBytes, decodeUtf8, encodeUtf8, quoted, showKey, utf8Error } from "./assembly/utf8";
export { ensure, fail, failBytes } from "./assembly/error";
export { JsonWriter, toJson, writeJson } from "./assembly/json";

// Used by the code the transform generates; not part of the authoring API.
export {
  runnel_abi_v1,
  runnel_alloc,
  __args,
  __argBool,
  __argBytes,
  __argInteger,
  __argString,
  __argStringOrNull,
  __argUtf8,
  __argUtf8OrNull,
  newContext as __newContext,
  returnJson as __returnJson,
  returnNull as __returnNull,
} from "./assembly/abi";
export { __mFail, __mQuoted, __mStart, __mText, __mValue, lit as __lit } from "./assembly/text";
export { runnelAbort as __runnelAbort, runnelSeed as __runnelSeed } from "./assembly/error";
