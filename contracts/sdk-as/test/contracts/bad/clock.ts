import { Context } from "@runnel/contract";

export function now(ctx: Context): u64 {
  return <u64>Date.now();
}
