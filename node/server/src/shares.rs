//! Each connection's share of a pool the node's clients have in common (live streams,
//! calls waiting for a status): one client cannot take a whole pool from the others by
//! opening as much as it may on one connection. A share is taken before any work is done
//! for the call and given back when the call ends.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tonic::{Code, Status};

use super::status;

/// A pool bounded overall and per connection.
#[derive(Debug)]
pub(super) struct Shares {
    /// The error name and the settings, for the refusal's message.
    code: &'static str,
    what: &'static str,
    total_setting: &'static str,
    connection_setting: &'static str,
    total_max: usize,
    connection_max: usize,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    total: usize,
    by_connection: HashMap<SocketAddr, usize>,
}

/// One call's share; given back when dropped.
#[derive(Debug)]
pub(super) struct Share {
    shares: Arc<Shares>,
    connection: Option<SocketAddr>,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut used = self.shares.lock();
        used.total -= 1;
        if let Some(connection) = self.connection
            && let Some(count) = used.by_connection.get_mut(&connection)
        {
            *count -= 1;
            if *count == 0 {
                used.by_connection.remove(&connection);
            }
        }
    }
}

impl Shares {
    /// A pool of `total_max` shares, at most `connection_max` of them held by one
    /// connection; refusals are `RESOURCE_EXHAUSTED` named `code`, about `what`, naming
    /// the two settings.
    pub fn new(
        code: &'static str,
        what: &'static str,
        (total_setting, total_max): (&'static str, usize),
        (connection_setting, connection_max): (&'static str, usize),
    ) -> Arc<Shares> {
        Arc::new(Shares {
            code,
            what,
            total_setting,
            connection_setting,
            total_max,
            connection_max: connection_max.max(1),
            used: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A share for a call of `connection` (none: a call not over TCP, bounded overall
    /// only), or the refusal.
    pub fn take(self: &Arc<Self>, connection: Option<SocketAddr>) -> Result<Share, Status> {
        let mut used = self.lock();
        if used.total >= self.total_max {
            return Err(status::error(
                Code::ResourceExhausted,
                self.code,
                format_args!(
                    "{} {} are open, the most this node serves ({}); retry later",
                    self.total_max, self.what, self.total_setting
                ),
            ));
        }
        if let Some(connection) = connection {
            let count = used.by_connection.entry(connection).or_insert(0);
            if *count >= self.connection_max {
                return Err(status::error(
                    Code::ResourceExhausted,
                    self.code,
                    format_args!(
                        "{} {} are open on this connection, the most one connection may hold ({}); \
                         close some, or retry later",
                        self.connection_max, self.what, self.connection_setting
                    ),
                ));
            }
            *count += 1;
        }
        used.total += 1;
        Ok(Share {
            shares: self.clone(),
            connection,
        })
    }

    /// Shares held now.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.lock().total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_connection_cannot_take_the_whole_pool() {
        let shares = Shares::new("TOO_MANY", "things", ("total", 5), ("each", 2));
        let greedy: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let other: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let held: Vec<Share> = (0..2).map(|_| shares.take(Some(greedy)).unwrap()).collect();
        let refused = shares.take(Some(greedy)).unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert!(refused.message().contains("this connection"), "{refused:?}");
        let others: Vec<Share> = (0..2).map(|_| shares.take(Some(other)).unwrap()).collect();
        let last = shares.take(None).unwrap();
        assert!(
            shares
                .take(Some("127.0.0.1:3000".parse().unwrap()))
                .is_err(),
            "the pool is full"
        );
        drop(held);
        assert_eq!(shares.used(), 3);
        assert!(shares.take(Some(greedy)).is_ok(), "given back");
        drop((others, last));
        assert_eq!(shares.used(), 0);
    }
}
