//! Example contract: a fungible token.
//!
//! Accounts are identities, `"{org}/{name}"` ([`Creator::id`]); balances are stored under
//! the composite key `("balance", [account])` and the supply under `total_supply`. Every
//! change emits a `Transfer` event `{"from": account or null for a mint, "to": account,
//! "amount": n}`.
//!
//! | function | arguments | who | returns |
//! |---|---|---|---|
//! | `mint` | `to`, `amount` | role `admin` | `null` |
//! | `transfer` | `to`, `amount` | anyone, from their own account | `null` |
//! | `balance` | `account` | anyone | the balance |
//! | `total_supply` | | anyone | the supply |
//! | `whoami` | | anyone | the caller's account id |
//!
//! [`Creator::id`]: runnel_contract::Creator::id

/// The contract's functions.
#[runnel_contract::contract]
pub mod token {
    use runnel_contract::prelude::*;

    /// The role allowed to mint.
    pub const MINTER_ROLE: &str = "admin";
    /// The name of the event every mint and transfer emits.
    pub const TRANSFER_EVENT: &str = "Transfer";
    const SUPPLY_KEY: &str = "total_supply";
    const BALANCE_TYPE: &str = "balance";

    /// The payload of a `Transfer` event.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Transfer {
        /// The account debited; `None` (JSON `null`) for a mint.
        pub from: Option<String>,
        /// The account credited.
        pub to: String,
        /// How much moved.
        pub amount: u64,
    }

    /// Creates `amount` new tokens in account `to`. Only a caller with role `admin`.
    pub fn mint(ctx: &mut Context, to: String, amount: u64) -> Result<()> {
        let caller = ctx.creator()?;
        ensure!(
            caller.role == MINTER_ROLE,
            "mint: only role {MINTER_ROLE:?} may mint; {} has role {:?}",
            caller.id(),
            caller.role
        );
        ensure!(amount > 0, "mint: amount must be greater than 0");
        check_account(&to)?;
        let supply = total_supply(ctx)?
            .checked_add(amount)
            .ok_or("mint: the total supply would overflow")?;
        credit(ctx, &to, amount)?;
        ctx.put(SUPPLY_KEY, &supply)?;
        ctx.emit(
            TRANSFER_EVENT,
            &Transfer {
                from: None,
                to,
                amount,
            },
        )
    }

    /// Moves `amount` from the caller's account to `to`.
    pub fn transfer(ctx: &mut Context, to: String, amount: u64) -> Result<()> {
        let from = ctx.creator()?.id();
        ensure!(amount > 0, "transfer: amount must be greater than 0");
        check_account(&to)?;
        let have = balance(ctx, from.clone())?;
        ensure!(
            have >= amount,
            "insufficient balance: have {have}, need {amount}"
        );
        // Debit before reading the receiver, so a transfer to oneself nets to zero.
        set_balance(ctx, &from, have - amount)?;
        credit(ctx, &to, amount)?;
        ctx.emit(
            TRANSFER_EVENT,
            &Transfer {
                from: Some(from),
                to,
                amount,
            },
        )
    }

    /// The balance of `account` (0 for an account never credited).
    pub fn balance(ctx: &mut Context, account: String) -> Result<u64> {
        check_account(&account)?;
        Ok(ctx.get(balance_key(&account)?)?.unwrap_or(0))
    }

    /// All tokens minted so far.
    pub fn total_supply(ctx: &mut Context) -> Result<u64> {
        Ok(ctx.get(SUPPLY_KEY)?.unwrap_or(0))
    }

    /// The caller's account id, `"{org}/{name}"`.
    pub fn whoami(ctx: &mut Context) -> Result<String> {
        Ok(ctx.creator()?.id())
    }

    fn check_account(account: &str) -> Result<()> {
        ensure!(!account.is_empty(), "the account must not be empty");
        Ok(())
    }

    fn balance_key(account: &str) -> Result<CompositeKey> {
        CompositeKey::new(BALANCE_TYPE, &[account])
    }

    fn credit(ctx: &mut Context, account: &str, amount: u64) -> Result<()> {
        let balance = balance(ctx, account.to_string())?
            .checked_add(amount)
            .ok_or_else(|| Error::new(format!("the balance of {account} would overflow")))?;
        set_balance(ctx, account, balance)
    }

    fn set_balance(ctx: &mut Context, account: &str, balance: u64) -> Result<()> {
        ctx.put(balance_key(account)?, &balance)
    }
}

pub use crate::token::{Contract, Transfer};

#[cfg(test)]
mod tests {
    use runnel_contract::CompositeKey;
    use runnel_contract::testing::{Identity, NO_ARGS, TestLedger};

    use super::{Contract, Transfer};

    fn admin() -> Identity {
        Identity::new("Org1", "admin", "minter")
    }

    fn alice() -> Identity {
        Identity::new("Org1", "client", "alice")
    }

    fn bob() -> Identity {
        Identity::new("Org2", "client", "bob")
    }

    fn balance(ledger: &TestLedger, account: &str) -> u64 {
        ledger
            .evaluate::<Contract>(&alice(), "balance", &[account])
            .unwrap()
            .json()
            .unwrap()
    }

    fn supply(ledger: &TestLedger) -> u64 {
        ledger
            .evaluate::<Contract>(&alice(), "total_supply", NO_ARGS)
            .unwrap()
            .json()
            .unwrap()
    }

    /// A ledger where alice holds 100.
    fn funded() -> TestLedger {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&admin(), "mint", &["Org1/alice", "100"])
            .unwrap();
        ledger
    }

    #[test]
    fn admin_mints_into_an_account() {
        let ledger = funded();
        assert_eq!(balance(&ledger, "Org1/alice"), 100);
        assert_eq!(supply(&ledger), 100);
        let key = CompositeKey::new("balance", &["Org1/alice"]).unwrap();
        assert_eq!(ledger.get_json::<u64>(&key), Some(100));
        assert_eq!(
            ledger.events()[0].json::<Transfer>().unwrap(),
            Transfer {
                from: None,
                to: "Org1/alice".into(),
                amount: 100
            }
        );
        assert_eq!(
            ledger.events()[0].payload,
            br#"{"from":null,"to":"Org1/alice","amount":100}"#
        );
    }

    #[test]
    fn only_admins_mint() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Contract>(&alice(), "mint", &["Org1/alice", "100"])
            .unwrap_err();
        assert_eq!(
            error.message(),
            "mint: only role \"admin\" may mint; Org1/alice has role \"client\""
        );
        assert!(ledger.is_empty());
        assert!(ledger.events().is_empty());
    }

    #[test]
    fn transfer_moves_tokens_from_the_caller() {
        let mut ledger = funded();
        let response = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "30"])
            .unwrap();
        assert_eq!(response.result, b"null");
        assert_eq!(balance(&ledger, "Org1/alice"), 70);
        assert_eq!(balance(&ledger, "Org2/bob"), 30);
        assert_eq!(supply(&ledger), 100);
        assert_eq!(
            response.events[0].payload,
            br#"{"from":"Org1/alice","to":"Org2/bob","amount":30}"#
        );
        assert_eq!(ledger.events().len(), 2);
    }

    #[test]
    fn transfer_of_the_whole_balance_leaves_zero() {
        let mut ledger = funded();
        ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "100"])
            .unwrap();
        assert_eq!(balance(&ledger, "Org1/alice"), 0);
        ledger
            .invoke::<Contract>(&bob(), "transfer", &["Org1/alice", "100"])
            .unwrap();
        assert_eq!(balance(&ledger, "Org2/bob"), 0);
        assert_eq!(balance(&ledger, "Org1/alice"), 100);
    }

    #[test]
    fn transfer_to_oneself_keeps_the_balance() {
        let mut ledger = funded();
        ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org1/alice", "40"])
            .unwrap();
        assert_eq!(balance(&ledger, "Org1/alice"), 100);
        assert_eq!(supply(&ledger), 100);
    }

    #[test]
    fn insufficient_balance_is_refused() {
        let mut ledger = funded();
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "101"])
            .unwrap_err();
        assert_eq!(error.message(), "insufficient balance: have 100, need 101");
        let error = ledger
            .invoke::<Contract>(&bob(), "transfer", &["Org1/alice", "1"])
            .unwrap_err();
        assert_eq!(error.message(), "insufficient balance: have 0, need 1");
        assert_eq!(balance(&ledger, "Org1/alice"), 100);
        assert_eq!(balance(&ledger, "Org2/bob"), 0);
        assert_eq!(ledger.events().len(), 1);
    }

    #[test]
    fn zero_amounts_are_refused() {
        let mut ledger = funded();
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "0"])
            .unwrap_err();
        assert_eq!(error.message(), "transfer: amount must be greater than 0");
        let error = ledger
            .invoke::<Contract>(&admin(), "mint", &["Org2/bob", "0"])
            .unwrap_err();
        assert_eq!(error.message(), "mint: amount must be greater than 0");
    }

    #[test]
    fn overflow_is_refused() {
        let mut ledger = TestLedger::new();
        let max = u64::MAX.to_string();
        ledger
            .invoke::<Contract>(&admin(), "mint", &["Org1/alice", max.as_str()])
            .unwrap();
        let error = ledger
            .invoke::<Contract>(&admin(), "mint", &["Org2/bob", "1"])
            .unwrap_err();
        assert_eq!(error.message(), "mint: the total supply would overflow");
        assert_eq!(balance(&ledger, "Org2/bob"), 0);
        assert_eq!(supply(&ledger), u64::MAX);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let mut ledger = funded();
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "ten"])
            .unwrap_err();
        assert_eq!(
            error.message(),
            "transfer: argument 2 (amount): invalid digit found in string"
        );
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob", "-5"])
            .unwrap_err();
        assert!(
            error
                .message()
                .starts_with("transfer: argument 2 (amount): invalid value"),
            "{error}"
        );
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["Org2/bob"])
            .unwrap_err();
        assert_eq!(error.message(), "transfer: expected 2 arguments, got 1");
        let error = ledger
            .invoke::<Contract>(&alice(), "transfer", &["", "5"])
            .unwrap_err();
        assert_eq!(error.message(), "the account must not be empty");
        let error = ledger
            .invoke::<Contract>(&admin(), "mint", &["a\u{0}b", "5"])
            .unwrap_err();
        assert!(error.message().contains("U+0000"), "{error}");
        let error = ledger
            .evaluate::<Contract>(&alice(), "balance", NO_ARGS)
            .unwrap_err();
        assert_eq!(error.message(), "balance: expected 1 argument, got 0");
        assert_eq!(balance(&ledger, "Org1/alice"), 100);
    }

    #[test]
    fn json_amounts_work_too() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&admin(), "mint", &["\"Org1/alice\"", " 7 "])
            .unwrap();
        assert_eq!(balance(&ledger, "Org1/alice"), 7);
    }

    #[test]
    fn whoami_is_org_slash_name() {
        let ledger = TestLedger::new();
        let response = ledger
            .evaluate::<Contract>(&bob(), "whoami", NO_ARGS)
            .unwrap();
        assert_eq!(response.json::<String>().unwrap(), "Org2/bob");
    }

    #[test]
    fn unknown_accounts_have_nothing() {
        let ledger = TestLedger::new();
        assert_eq!(balance(&ledger, "Org9/nobody"), 0);
        assert_eq!(supply(&ledger), 0);
    }
}
