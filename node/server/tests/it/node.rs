//! A ledger served on loopback in this process, the node every API test talks to: a
//! fresh directory, a free port, the API (and, if asked, the operations routes) over
//! plain HTTP or TLS; stopped before its directory goes.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use runnel_ledger::identity::{NetworkKeys, Role, Signer};
use runnel_ledger::ledger::{Ledger, LedgerConfig};
use runnel_server::metrics::NodeMetrics;
use runnel_server::{ApiConfig, ApiError, ReadAccess, Server, ops};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Long enough for anything that should happen; tests never wait it out on success.
pub const WAIT: Duration = Duration::from_secs(20);

/// A node on loopback.
pub struct Node {
    pub ledger: Arc<Ledger>,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<Result<(), ApiError>>>,
    pub dir: tempfile::TempDir,
}

/// A ledger of `orgs` that seals every 4 transactions or 20 ms.
pub fn ledger_config(orgs: &[&str]) -> LedgerConfig {
    let mut config = LedgerConfig {
        orgs: orgs.iter().map(|o| o.to_string()).collect(),
        ..LedgerConfig::default()
    };
    config.runtime.instances_max = 8;
    config.orderer.seal_max_txs = 4;
    config.orderer.seal_max_delay = Duration::from_millis(20);
    config
}

/// The API's defaults, but reads open to anyone: what most tests read through.
pub fn open_api() -> ApiConfig {
    ApiConfig {
        read_access: ReadAccess::Open,
        ..ApiConfig::default()
    }
}

/// A ledger of `orgs` in a fresh directory (its identities written there).
pub async fn open_ledger(orgs: &[&str]) -> (Arc<Ledger>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (path, config) = (dir.path().to_path_buf(), ledger_config(orgs));
    let ledger = tokio::task::spawn_blocking(move || Ledger::open(&path, config))
        .await
        .unwrap()
        .unwrap();
    (Arc::new(ledger), dir)
}

impl Node {
    /// A ledger of `orgs` served with the settings `api` gives for its directory, on a
    /// free port of 127.0.0.1; with `with_ops`, the operations routes too.
    pub async fn serve(
        orgs: &[&str],
        api: impl FnOnce(&Path) -> ApiConfig,
        with_ops: bool,
    ) -> Node {
        let (ledger, dir) = open_ledger(orgs).await;
        let api = ApiConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..api(dir.path())
        };
        let tls = api.tls.is_some();
        let server = Server::bind(ledger.clone(), api).await.unwrap();
        let addr = server.local_addr();
        assert_eq!(server.is_tls(), tls);
        let scheme = if tls { "https" } else { "http" };
        assert_eq!(server.url(), format!("{scheme}://{addr}"));
        let (stop, stopped) = oneshot::channel::<()>();
        let stopped = async {
            let _ = stopped.await;
        };
        let served = if with_ops {
            let metrics = Arc::new(NodeMetrics::new(&ledger));
            let routes = ops::routes(ledger.clone(), metrics, None, None);
            tokio::spawn(server.serve_with(routes, stopped))
        } else {
            tokio::spawn(server.serve(stopped))
        };
        Node {
            ledger,
            addr,
            stop: Some(stop),
            served: Some(served),
            dir,
        }
    }

    /// Runs a blocking ledger call (deploy, submit) off the async threads.
    pub async fn with_ledger<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Ledger) -> T + Send + 'static,
    ) -> T {
        let ledger = self.ledger.clone();
        tokio::task::spawn_blocking(move || call(&ledger))
            .await
            .unwrap()
    }

    /// An identity of this network, by org and role, from the ledger's directory.
    pub fn identity(&self, org: &str, role: Role) -> Signer {
        let keys = NetworkKeys::load(self.dir.path()).unwrap();
        keys.signer(org, role).unwrap().clone()
    }

    /// Org1's client.
    pub fn client(&self) -> Signer {
        self.identity("Org1", Role::Client)
    }

    /// Org1's admin.
    pub fn admin(&self) -> Signer {
        self.identity("Org1", Role::Admin)
    }

    /// Stops the server, then closes the ledger before its directory goes.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            tokio::time::timeout(WAIT, served)
                .await
                .expect("the server stops")
                .unwrap()
                .unwrap();
        }
        let Node { ledger, dir, .. } = self;
        // A page read the server started may still hold the ledger for a moment.
        tokio::time::timeout(WAIT, async {
            while Arc::strong_count(&ledger) > 1 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the server lets go of the ledger");
        tokio::task::spawn_blocking(move || drop(ledger))
            .await
            .unwrap();
        drop(dir);
    }
}
