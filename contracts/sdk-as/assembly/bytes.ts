// Byte arrays without the standard library's checks and copies: the SDK makes views of the
// argument and result buffers the host filled, and new arrays it fills itself.

/** A Uint8Array of the `len` bytes at `ptr`, which lie inside `buffer`. */
export function view(buffer: ArrayBuffer, ptr: usize, len: i32): Uint8Array {
  const out = __new(offsetof<Uint8Array>(), idof<Uint8Array>());
  store<usize>(out, changetype<usize>(buffer), offsetof<Uint8Array>("buffer"));
  store<usize>(out, ptr, offsetof<Uint8Array>("dataStart"));
  store<i32>(out, len, offsetof<Uint8Array>("byteLength"));
  return changetype<Uint8Array>(out);
}

/** A new buffer of `len` bytes, not zeroed (the caller fills it). */
export function newBuffer(len: i32): ArrayBuffer {
  return changetype<ArrayBuffer>(__new(<usize>len, idof<ArrayBuffer>()));
}

/** A new Uint8Array of `len` bytes, not zeroed (the caller fills it). */
export function newBytes(len: i32): Uint8Array {
  const buffer = newBuffer(len);
  return view(buffer, changetype<usize>(buffer), len);
}
