//! How the load generator reaches a network's orderers: as one of its peers, over mutual
//! TLS with the peer's own certificate (an orderer serves the `Ordering` service to the
//! network's peers and orderers only), each stream on a connection of its own as each
//! peer has; which orderer leads a Raft cluster; and the last seal, where the receivers'
//! chains start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use prost::Message;
use runnel_api::identity::{NetworkDefinition, OrderingProtocol, bft_faults};
use runnel_api::proto::ordering_client::OrderingClient;
use runnel_api::proto::ordering_item::Item;
use runnel_api::proto::{BlockSeal, HeightsRequest, SignedSeal, StreamRequest};
use runnel_client::Connection;
use tonic::transport::{Channel, ClientTlsConfig};

/// The largest message either way: an orderer's default `message_bytes_max`.
const MESSAGE_BYTES_MAX: usize = 32 << 20;

/// How long a connection or a call may take before the run fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the probe for the last seal waits for it to arrive.
const SEAL_WAIT: Duration = Duration::from_secs(5);

/// The network as the load generator sees it.
pub(super) struct Network {
    pub definition: NetworkDefinition,
    /// Each orderer's endpoint, in the definition's order.
    pub endpoints: Vec<String>,
    /// The directory of the peer whose identity the load generator borrows.
    pub peer_dir: PathBuf,
    tls: ClientTlsConfig,
}

impl Network {
    /// The network in `dir` (made by `runnel up` or `runnel init`), reached as `org`'s
    /// `peer` (the node directory `<dir>/<org>/<peer>`).
    pub fn open(dir: &Path, org: &str, peer: &str) -> Result<Network> {
        let peer_dir = dir.join(org).join(peer);
        let definition = NetworkDefinition::load(&peer_dir)
            .with_context(|| format!("reading the network definition in {}", peer_dir.display()))?;
        let endpoints: Vec<String> = definition
            .orderers
            .iter()
            .map(|o| o.endpoint.clone())
            .collect();
        if endpoints.is_empty() {
            bail!(
                "{} names no orderer endpoint: `runnel bench order` loads the ordering \
                 service of a network made by `runnel up` or `runnel init`",
                peer_dir.display()
            );
        }
        let own = peer_dir.join("identities").join(org);
        let tls = runnel_client::client_tls(&Connection {
            tls_client_cert: Some(own.join("peer.pem")),
            tls_client_key: Some(own.join("peer.key")),
            ..Connection::to(&endpoints[0], &peer_dir, org)
        })?;
        Ok(Network {
            definition,
            endpoints,
            peer_dir,
            tls,
        })
    }

    /// Whether its orderers agree through BFT consensus.
    pub fn bft(&self) -> bool {
        self.definition.ordering == OrderingProtocol::Bft
    }

    /// The name of its ordering: solo, raft or bft.
    pub fn ordering(&self) -> &'static str {
        match (self.bft(), self.endpoints.len()) {
            (true, _) => "bft",
            (false, 1) => "solo",
            (false, _) => "raft",
        }
    }

    /// How many orderers each submit goes to, as a peer sends it: `f + 1` of a BFT
    /// cluster (one that drops what it is given censors nothing), else one.
    pub fn peer_fan_out(&self) -> usize {
        if self.bft() {
            bft_faults(self.endpoints.len()) + 1
        } else {
            1
        }
    }

    /// A new connection to orderer `index`.
    pub async fn connect(&self, index: usize) -> Result<OrderingClient<Channel>> {
        let endpoint = &self.endpoints[index];
        let channel = Channel::from_shared(endpoint.clone())
            .map_err(|e| anyhow!("orderer endpoint {endpoint:?}: {e}"))?
            .connect_timeout(CALL_TIMEOUT)
            .tcp_nodelay(true)
            .tls_config(self.tls.clone())
            .map_err(|e| anyhow!("TLS for the orderer at {endpoint}: {e}"))?
            .connect()
            .await
            .map_err(|e| anyhow!("cannot reach the orderer at {endpoint}: {e}"))?;
        Ok(OrderingClient::new(channel)
            .max_decoding_message_size(MESSAGE_BYTES_MAX)
            .max_encoding_message_size(MESSAGE_BYTES_MAX))
    }

    /// The orderer a peer submits to: the Raft leader (a follower would forward every
    /// transaction to it), else the first.
    pub async fn leader(&self, clients: &[OrderingClient<Channel>]) -> Result<usize> {
        if self.bft() || self.endpoints.len() == 1 {
            return Ok(0);
        }
        let heights = clients[0]
            .clone()
            .heights(HeightsRequest {})
            .await
            .map_err(runnel_client::status)?
            .into_inner();
        self.definition
            .orderers
            .iter()
            .position(|o| o.raft_id == heights.raft_leader && o.raft_id != 0)
            .ok_or_else(|| {
                anyhow!(
                    "the Raft cluster has no leader (it names {})",
                    heights.raft_leader
                )
            })
    }
}

/// Where the receivers start: after the last seal an orderer holds (its encoded
/// `SignedSeal`, and the block number and last seq it covers), or at the start.
pub(super) struct Anchor {
    pub seal: Option<Vec<u8>>,
    pub next_block: u64,
    pub next_seq: u64,
}

/// The last seal `client`'s orderer holds. Its number is not asked of it directly: an
/// orderer refuses a stream that starts past its last seal + 1 (`ORDERER_BEHIND`), so
/// the largest start it accepts is found by doubling, then halving; the stream from the
/// one before it hands over that seal first. Taken on an idle network, as a peer takes
/// its last stored seal.
pub(super) async fn anchor(client: &OrderingClient<Channel>) -> Result<Anchor> {
    let height = client
        .clone()
        .heights(HeightsRequest {})
        .await
        .map_err(runnel_client::status)?
        .into_inner()
        .height;
    let from_seq = height + 1;
    let accepts = |next_block: u64| {
        let mut client = client.clone();
        async move {
            client
                .stream(StreamRequest {
                    from_seq,
                    next_block,
                })
                .await
                .is_ok()
        }
    };
    let (mut accepted, mut refused) = (1u64, 2u64);
    while accepts(refused).await {
        accepted = refused;
        refused = refused.saturating_mul(2);
    }
    while refused - accepted > 1 {
        let middle = accepted + (refused - accepted) / 2;
        if accepts(middle).await {
            accepted = middle;
        } else {
            refused = middle;
        }
    }
    // `accepted` is the last seal + 1.
    if accepted == 1 {
        return Ok(Anchor {
            seal: None,
            next_block: 1,
            next_seq: 1,
        });
    }
    let seal = first_seal(client, from_seq, accepted - 1).await?;
    let header = BlockSeal::decode(SignedSeal::decode(seal.as_slice())?.seal.as_slice())?;
    Ok(Anchor {
        seal: Some(seal),
        next_block: header.number + 1,
        next_seq: header.last_seq + 1,
    })
}

/// The seal `number` from the stream at (`from_seq`, `number`): the first item, when
/// no transaction was ordered after `from_seq - 1`.
async fn first_seal(
    client: &OrderingClient<Channel>,
    from_seq: u64,
    number: u64,
) -> Result<Vec<u8>> {
    let mut stream = client
        .clone()
        .stream(StreamRequest {
            from_seq,
            next_block: number,
        })
        .await
        .map_err(runnel_client::status)?
        .into_inner();
    loop {
        let message = tokio::time::timeout(SEAL_WAIT, stream.message())
            .await
            .map_err(|_| anyhow!("the orderer did not send its last seal ({number})"))?
            .map_err(runnel_client::status)?
            .ok_or_else(|| anyhow!("the orderer ended the stream before its last seal"))?;
        for item in message.items {
            match item.item {
                Some(Item::Seal(bytes)) => return Ok(bytes),
                Some(Item::Transaction(_)) => bail!(
                    "transactions were ordered while looking for the last seal: run \
                     `runnel bench order` on an idle network"
                ),
                _ => {}
            }
        }
    }
}
