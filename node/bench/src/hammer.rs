//! Pressure beside the load, to measure what it takes from it: callers that ask for the
//! state digest in a loop, and live streams that stay open and idle — what a careless or
//! hostile client can do with nothing but read access.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;
use runnel_api::proto::deliver_client::DeliverClient;
use runnel_api::proto::query_client::QueryClient;
use runnel_api::proto::{DeliverTransactionsRequest, GetStateHashRequest};
use runnel_client::{Connection, connect};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// Idle streams opened on one HTTP/2 connection (within the node's default share of 64
/// live streams per connection).
const STREAMS_PER_CONNECTION: usize = 50;

/// A seq no node reaches: a stream from there waits for ever.
const FAR_AHEAD: u64 = 1 << 60;

/// What the pressure did.
#[derive(Debug, Default)]
pub struct Counts {
    state_hashes: AtomicU64,
    state_hash_errors: AtomicU64,
    streams_open: AtomicU64,
    streams_refused: AtomicU64,
}

/// The pressure, running until dropped.
pub struct Hammer {
    tasks: JoinSet<()>,
    counts: Arc<Counts>,
}

impl Hammer {
    /// Starts `state_hash_callers` loops of `GetStateHash` (on one connection of their
    /// own) and opens `idle_streams` transaction deliveries from a seq far ahead, which
    /// send nothing.
    pub async fn start(
        connection: &Connection,
        state_hash_callers: usize,
        idle_streams: usize,
    ) -> Result<Hammer> {
        let counts = Arc::new(Counts::default());
        let mut tasks = JoinSet::new();
        if state_hash_callers > 0 {
            let query = QueryClient::new(connect(connection).await?);
            for _ in 0..state_hash_callers {
                let (mut query, counts) = (query.clone(), counts.clone());
                tasks.spawn(async move {
                    loop {
                        let counter = match query.get_state_hash(GetStateHashRequest {}).await {
                            Ok(_) => &counts.state_hashes,
                            Err(_) => &counts.state_hash_errors,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
        let mut left = idle_streams;
        while left > 0 {
            let batch = left.min(STREAMS_PER_CONNECTION);
            left -= batch;
            let deliver = DeliverClient::new(connect(connection).await?);
            for _ in 0..batch {
                let (mut deliver, counts) = (deliver.clone(), counts.clone());
                tasks.spawn(async move {
                    let request = DeliverTransactionsRequest {
                        start_seq: FAR_AHEAD,
                    };
                    match deliver.transactions(request).await {
                        Ok(response) => {
                            counts.streams_open.fetch_add(1, Ordering::Relaxed);
                            let mut stream = response.into_inner();
                            while let Ok(Some(_)) = stream.message().await {}
                            counts.streams_open.fetch_sub(1, Ordering::Relaxed);
                        }
                        Err(_) => {
                            counts.streams_refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        }
        Ok(Hammer { tasks, counts })
    }

    /// What it did so far, for the summary.
    pub fn summary(&self) -> Value {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        json!({
            "state_hashes": get(&self.counts.state_hashes),
            "state_hash_errors": get(&self.counts.state_hash_errors),
            "streams_open": get(&self.counts.streams_open),
            "streams_refused": get(&self.counts.streams_refused),
        })
    }

    /// Stops every caller and closes every stream.
    pub fn stop(mut self) {
        self.tasks.abort_all();
    }
}
