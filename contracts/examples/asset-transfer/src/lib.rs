//! Example contract: Hyperledger Fabric's `asset-transfer-basic`, with the same function
//! names, JSON and error messages, so its clients work unchanged.
//!
//! Assets are stored as JSON under their plain id, as in Fabric.
//!
//! | function | arguments | returns |
//! |---|---|---|
//! | `InitLedger` | | `null` (creates `asset1` .. `asset6`) |
//! | `CreateAsset` | `id`, `color`, `size`, `owner`, `appraisedValue` | `null` |
//! | `ReadAsset` | `id` | the asset |
//! | `UpdateAsset` | `id`, `color`, `size`, `owner`, `appraisedValue` | `null` |
//! | `DeleteAsset` | `id` | `null` |
//! | `AssetExists` | `id` | `true` / `false` |
//! | `TransferAsset` | `id`, `newOwner` | the previous owner |
//! | `GetAllAssets` | | every asset, by id |

/// The contract's functions.
#[runnel_contract::contract]
pub mod asset_transfer {
    use runnel_contract::prelude::*;

    /// An asset, serialised with Fabric's field names (in Fabric's alphabetical order).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Asset {
        /// What the asset is worth.
        #[serde(rename = "AppraisedValue")]
        pub appraised_value: u64,
        /// Its colour.
        #[serde(rename = "Color")]
        pub color: String,
        /// Its id (also its state key).
        #[serde(rename = "ID")]
        pub id: String,
        /// Who owns it.
        #[serde(rename = "Owner")]
        pub owner: String,
        /// Its size.
        #[serde(rename = "Size")]
        pub size: u32,
    }

    impl Asset {
        fn new(id: &str, color: &str, size: u32, owner: &str, appraised_value: u64) -> Self {
            Asset {
                appraised_value,
                color: color.to_string(),
                id: id.to_string(),
                owner: owner.to_string(),
                size,
            }
        }
    }

    /// Creates Fabric's six sample assets.
    #[function(name = "InitLedger")]
    pub fn init_ledger(ctx: &mut Context) -> Result<()> {
        let assets = [
            Asset::new("asset1", "blue", 5, "Tomoko", 300),
            Asset::new("asset2", "red", 5, "Brad", 400),
            Asset::new("asset3", "green", 10, "Jin Soo", 500),
            Asset::new("asset4", "yellow", 10, "Max", 600),
            Asset::new("asset5", "black", 15, "Adriana", 700),
            Asset::new("asset6", "white", 15, "Michel", 800),
        ];
        for asset in &assets {
            ctx.put(&asset.id, asset)?;
        }
        Ok(())
    }

    /// Creates asset `id`; it must not exist yet.
    #[function(name = "CreateAsset")]
    pub fn create_asset(
        ctx: &mut Context,
        id: String,
        color: String,
        size: u32,
        owner: String,
        appraised_value: u64,
    ) -> Result<()> {
        if asset_exists(ctx, id.clone())? {
            bail!("the asset {id} already exists");
        }
        let asset = Asset {
            appraised_value,
            color,
            id,
            owner,
            size,
        };
        ctx.put(&asset.id, &asset)
    }

    /// Asset `id`.
    #[function(name = "ReadAsset")]
    pub fn read_asset(ctx: &mut Context, id: String) -> Result<Asset> {
        match ctx.get(&id)? {
            Some(asset) => Ok(asset),
            None => bail!("the asset {id} does not exist"),
        }
    }

    /// Replaces asset `id`; it must exist.
    #[function(name = "UpdateAsset")]
    pub fn update_asset(
        ctx: &mut Context,
        id: String,
        color: String,
        size: u32,
        owner: String,
        appraised_value: u64,
    ) -> Result<()> {
        if !asset_exists(ctx, id.clone())? {
            bail!("the asset {id} does not exist");
        }
        let asset = Asset {
            appraised_value,
            color,
            id,
            owner,
            size,
        };
        ctx.put(&asset.id, &asset)
    }

    /// Deletes asset `id`; it must exist.
    #[function(name = "DeleteAsset")]
    pub fn delete_asset(ctx: &mut Context, id: String) -> Result<()> {
        if !asset_exists(ctx, id.clone())? {
            bail!("the asset {id} does not exist");
        }
        ctx.delete(&id)
    }

    /// Whether asset `id` exists.
    #[function(name = "AssetExists")]
    pub fn asset_exists(ctx: &mut Context, id: String) -> Result<bool> {
        ctx.exists(&id)
    }

    /// Gives asset `id` to `new_owner` and returns the previous owner.
    #[function(name = "TransferAsset")]
    pub fn transfer_asset(ctx: &mut Context, id: String, new_owner: String) -> Result<String> {
        let mut asset = read_asset(ctx, id)?;
        let old_owner = core::mem::replace(&mut asset.owner, new_owner);
        ctx.put(&asset.id, &asset)?;
        Ok(old_owner)
    }

    /// Every asset, in id order.
    #[function(name = "GetAllAssets")]
    pub fn get_all_assets(ctx: &mut Context) -> Result<Vec<Asset>> {
        // As in Fabric: the open range "" .. "" is the whole namespace.
        ctx.range("", "")?
            .json::<Asset>()
            .map(|entry| entry.map(|(_, asset)| asset))
            .collect()
    }
}

pub use crate::asset_transfer::{Asset, Contract};

#[cfg(test)]
mod tests {
    use runnel_contract::testing::{Identity, NO_ARGS, TestLedger};

    use super::{Asset, Contract};

    fn user() -> Identity {
        Identity::new("Org1", "client", "appUser")
    }

    fn initialised() -> TestLedger {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(&user(), "InitLedger", NO_ARGS)
            .unwrap();
        ledger
    }

    fn read(ledger: &TestLedger, id: &str) -> Asset {
        ledger
            .evaluate::<Contract>(&user(), "ReadAsset", &[id])
            .unwrap()
            .json()
            .unwrap()
    }

    fn exists(ledger: &TestLedger, id: &str) -> bool {
        ledger
            .evaluate::<Contract>(&user(), "AssetExists", &[id])
            .unwrap()
            .json()
            .unwrap()
    }

    #[test]
    fn init_ledger_creates_the_six_sample_assets() {
        let ledger = initialised();
        let all: Vec<Asset> = ledger
            .evaluate::<Contract>(&user(), "GetAllAssets", NO_ARGS)
            .unwrap()
            .json()
            .unwrap();
        let summary: Vec<(&str, &str, u32, &str, u64)> = all
            .iter()
            .map(|a| {
                (
                    a.id.as_str(),
                    a.color.as_str(),
                    a.size,
                    a.owner.as_str(),
                    a.appraised_value,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("asset1", "blue", 5, "Tomoko", 300),
                ("asset2", "red", 5, "Brad", 400),
                ("asset3", "green", 10, "Jin Soo", 500),
                ("asset4", "yellow", 10, "Max", 600),
                ("asset5", "black", 15, "Adriana", 700),
                ("asset6", "white", 15, "Michel", 800),
            ]
        );
    }

    #[test]
    fn assets_are_fabric_json_under_their_id() {
        let ledger = initialised();
        assert_eq!(
            ledger.get_bytes("asset1"),
            Some(&br#"{"AppraisedValue":300,"Color":"blue","ID":"asset1","Owner":"Tomoko","Size":5}"#[..])
        );
        let response = ledger
            .evaluate::<Contract>(&user(), "ReadAsset", &["asset1"])
            .unwrap();
        assert_eq!(
            response.text(),
            Some(
                r#"{"AppraisedValue":300,"Color":"blue","ID":"asset1","Owner":"Tomoko","Size":5}"#
            )
        );
    }

    #[test]
    fn create_then_read() {
        let mut ledger = TestLedger::new();
        ledger
            .invoke::<Contract>(
                &user(),
                "CreateAsset",
                &["asset7", "purple", "20", "Ana", "1000"],
            )
            .unwrap();
        assert_eq!(
            read(&ledger, "asset7"),
            Asset {
                appraised_value: 1000,
                color: "purple".into(),
                id: "asset7".into(),
                owner: "Ana".into(),
                size: 20,
            }
        );
        assert!(exists(&ledger, "asset7"));
        assert!(!exists(&ledger, "asset8"));
    }

    #[test]
    fn create_of_an_existing_asset_fails() {
        let mut ledger = initialised();
        let error = ledger
            .invoke::<Contract>(&user(), "CreateAsset", &["asset1", "red", "1", "Eve", "1"])
            .unwrap_err();
        assert_eq!(error.message(), "the asset asset1 already exists");
        assert_eq!(read(&ledger, "asset1").owner, "Tomoko");
    }

    #[test]
    fn missing_assets_are_reported_like_fabric() {
        let mut ledger = initialised();
        let error = ledger
            .evaluate::<Contract>(&user(), "ReadAsset", &["asset9"])
            .unwrap_err();
        assert_eq!(error.message(), "the asset asset9 does not exist");
        let error = ledger
            .invoke::<Contract>(&user(), "UpdateAsset", &["asset9", "red", "1", "Eve", "1"])
            .unwrap_err();
        assert_eq!(error.message(), "the asset asset9 does not exist");
        let error = ledger
            .invoke::<Contract>(&user(), "DeleteAsset", &["asset9"])
            .unwrap_err();
        assert_eq!(error.message(), "the asset asset9 does not exist");
        let error = ledger
            .invoke::<Contract>(&user(), "TransferAsset", &["asset9", "Eve"])
            .unwrap_err();
        assert_eq!(error.message(), "the asset asset9 does not exist");
        assert!(!exists(&ledger, "asset9"));
    }

    #[test]
    fn update_replaces_the_asset() {
        let mut ledger = initialised();
        ledger
            .invoke::<Contract>(
                &user(),
                "UpdateAsset",
                &["asset1", "blue", "5", "Tomoko", "350"],
            )
            .unwrap();
        assert_eq!(read(&ledger, "asset1").appraised_value, 350);
        assert_eq!(ledger.version("asset1"), Some(2));
    }

    #[test]
    fn delete_removes_the_asset() {
        let mut ledger = initialised();
        ledger
            .invoke::<Contract>(&user(), "DeleteAsset", &["asset2"])
            .unwrap();
        assert!(!exists(&ledger, "asset2"));
        assert_eq!(ledger.len(), 5);
    }

    #[test]
    fn transfer_changes_the_owner_and_returns_the_old_one() {
        let mut ledger = initialised();
        let response = ledger
            .invoke::<Contract>(&user(), "TransferAsset", &["asset1", "Christopher"])
            .unwrap();
        assert_eq!(response.json::<String>().unwrap(), "Tomoko");
        assert_eq!(read(&ledger, "asset1").owner, "Christopher");
    }

    #[test]
    fn get_all_assets_of_an_empty_ledger_is_empty() {
        let ledger = TestLedger::new();
        let response = ledger
            .evaluate::<Contract>(&user(), "GetAllAssets", NO_ARGS)
            .unwrap();
        assert_eq!(response.result, b"[]");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let mut ledger = TestLedger::new();
        let error = ledger
            .invoke::<Contract>(
                &user(),
                "CreateAsset",
                &["asset7", "purple", "big", "Ana", "1000"],
            )
            .unwrap_err();
        assert_eq!(
            error.message(),
            "CreateAsset: argument 3 (size): invalid digit found in string"
        );
        let error = ledger
            .invoke::<Contract>(
                &user(),
                "CreateAsset",
                &["asset7", "purple", "20", "Ana", "-1"],
            )
            .unwrap_err();
        assert!(
            error
                .message()
                .starts_with("CreateAsset: argument 5 (appraised_value): "),
            "{error}"
        );
        let error = ledger
            .invoke::<Contract>(&user(), "CreateAsset", &["asset7", "purple"])
            .unwrap_err();
        assert_eq!(error.message(), "CreateAsset: expected 5 arguments, got 2");
        let error = ledger
            .invoke::<Contract>(&user(), "CreateAsset", &["", "purple", "1", "Ana", "1"])
            .unwrap_err();
        assert_eq!(error.message(), "state keys must not be empty");
        let error = ledger
            .invoke::<Contract>(&user(), "createAsset", NO_ARGS)
            .unwrap_err();
        assert!(
            error
                .message()
                .starts_with("unknown function \"createAsset\""),
            "{error}"
        );
        assert!(ledger.is_empty());
    }

    #[test]
    fn corrupt_state_is_an_error_not_a_panic() {
        let mut ledger = TestLedger::new();
        ledger.put_bytes("asset1", "not json");
        let error = ledger
            .evaluate::<Contract>(&user(), "ReadAsset", &["asset1"])
            .unwrap_err();
        assert!(
            error
                .message()
                .starts_with("the value of key \"asset1\" is not the expected JSON"),
            "{error}"
        );
        let error = ledger
            .evaluate::<Contract>(&user(), "GetAllAssets", NO_ARGS)
            .unwrap_err();
        assert!(error.message().contains("asset1"), "{error}");
    }
}
