// Example contract: a fungible token, the twin of the Rust token (contracts/examples/token):
// the same functions, arguments, results, events, errors and state layout.
//
// Accounts are identities, `"{org}/{name}"` (`Creator.id()`); balances are stored as JSON
// under the composite key `("balance", [account])` and the supply under `total_supply`.
// Account ids stay UTF-8 bytes throughout (`Utf8`): a call never converts them to
// AssemblyScript's UTF-16 strings.
// Every change emits a `Transfer` event `{"from": account or null for a mint, "to": account,
// "amount": n}`.
//
// | function | arguments | who | returns |
// |---|---|---|---|
// | `mint` | `to`, `amount` | role `admin` | `null` |
// | `transfer` | `to`, `amount` | anyone, from their own account | `null` |
// | `balance` | `account` | anyone | the balance |
// | `total_supply` | | anyone | the supply |
// | `whoami` | | anyone | the caller's account id |

import { CompositeKey, Context, Utf8, fail, quoted } from "@runnel/contract";

/** The role allowed to mint. */
const MINTER_ROLE = "admin";
/** The name of the event every mint and transfer emits. */
const TRANSFER_EVENT = "Transfer";
const SUPPLY_KEY = "total_supply";
const BALANCE_TYPE = "balance";

/** The payload of a `Transfer` event. */
@json
class Transfer {
  /** The account debited; `null` for a mint. */
  from: Utf8 | null;
  /** The account credited. */
  to: Utf8;
  /** How much moved. */
  amount: u64;

  constructor(from: Utf8 | null, to: Utf8, amount: u64) {
    this.from = from;
    this.to = to;
    this.amount = amount;
  }
}

/** Creates `amount` new tokens in account `to`. Only a caller with role `admin`. */
export function mint(ctx: Context, to: Utf8, amount: u64): void {
  const caller = ctx.creator();
  if (!caller.role.equals(MINTER_ROLE)) {
    fail("mint: only role " + quoted(MINTER_ROLE) + " may mint; " + caller.id() + " has role " + quoted(caller.role));
  }
  if (amount == 0) fail("mint: amount must be greater than 0");
  checkAccount(to);
  const supply = total_supply(ctx);
  if (supply > u64.MAX_VALUE - amount) fail("mint: the total supply would overflow");
  credit(ctx, to, amount);
  ctx.putJson(SUPPLY_KEY, supply + amount);
  ctx.emit(TRANSFER_EVENT, new Transfer(null, to, amount));
}

/** Moves `amount` from the caller's account to `to`. */
export function transfer(ctx: Context, to: Utf8, amount: u64): void {
  const from = ctx.creator().id();
  if (amount == 0) fail("transfer: amount must be greater than 0");
  checkAccount(to);
  const have = balance(ctx, from);
  if (have < amount) fail("insufficient balance: have " + have.toString() + ", need " + amount.toString());
  // Debit before reading the receiver, so a transfer to oneself nets to zero.
  setBalance(ctx, from, have - amount);
  credit(ctx, to, amount);
  ctx.emit(TRANSFER_EVENT, new Transfer(from, to, amount));
}

/** The balance of `account` (0 for an account never credited). */
export function balance(ctx: Context, account: Utf8): u64 {
  checkAccount(account);
  return ctx.getJson(balanceKey(account), <u64>0);
}

/** All tokens minted so far. */
export function total_supply(ctx: Context): u64 {
  return ctx.getJson(SUPPLY_KEY, <u64>0);
}

/** The caller's account id, `"{org}/{name}"`. */
export function whoami(ctx: Context): Utf8 {
  return ctx.creator().id();
}

function checkAccount(account: Utf8): void {
  if (account.isEmpty) fail("the account must not be empty");
}

function balanceKey(account: Utf8): CompositeKey {
  return CompositeKey.of(BALANCE_TYPE, account);
}

function credit(ctx: Context, account: Utf8, amount: u64): void {
  const current = balance(ctx, account);
  if (current > u64.MAX_VALUE - amount) fail("the balance of " + account + " would overflow");
  setBalance(ctx, account, current + amount);
}

function setBalance(ctx: Context, account: Utf8, amount: u64): void {
  ctx.putJson(balanceKey(account), amount);
}
