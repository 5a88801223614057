import { Context } from "@runnel/contract";

const startedAt = new Context().timestampMs();

export function when(ctx: Context): u64 {
  return startedAt;
}
