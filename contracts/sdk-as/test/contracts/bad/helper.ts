import { Context } from "@runnel/contract";

export function helper(n: u32): u32 {
  return n + 1;
}

export function ratio(ctx: Context, x: f64): void {}
