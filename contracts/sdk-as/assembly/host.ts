// The `runnel` host functions of ABI v1 (docs/abi.md), one declaration each. Contract code
// never calls these directly: it goes through `Context`, which checks keys and decodes.

@external("runnel", "state_get")
export declare function state_get(keyPtr: usize, keyLen: usize): i64;
@external("runnel", "state_put")
export declare function state_put(keyPtr: usize, keyLen: usize, valPtr: usize, valLen: usize): void;
@external("runnel", "state_delete")
export declare function state_delete(keyPtr: usize, keyLen: usize): void;
@external("runnel", "range_open")
export declare function range_open(startPtr: usize, startLen: usize, endPtr: usize, endLen: usize): i32;
@external("runnel", "range_next")
export declare function range_next(handle: i32): i64;
@external("runnel", "event_emit")
export declare function event_emit(namePtr: usize, nameLen: usize, payloadPtr: usize, payloadLen: usize): void;
@external("runnel", "ctx_tx_id")
export declare function ctx_tx_id(): i64;
@external("runnel", "ctx_creator")
export declare function ctx_creator(): i64;
@external("runnel", "ctx_timestamp_ms")
export declare function ctx_timestamp_ms(): i64;
@external("runnel", "log")
export declare function log(level: i32, ptr: usize, len: usize): void;
@external("runnel", "result_read")
export declare function result_read(dstPtr: usize): void;
@external("runnel", "return_value")
export declare function return_value(ptr: usize, len: usize): void;
@external("runnel", "abort")
export declare function abort(ptr: usize, len: usize): void;
