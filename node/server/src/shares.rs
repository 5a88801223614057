//! Each connection's and each reader's share of a pool the node's clients have in common
//! (live streams, calls waiting for a status): one client cannot take a whole pool from
//! the others by opening as much as it may on one connection, nor, when reads are for
//! members, by opening many connections as one identity. A share is taken before any
//! work is done for the call and given back when the call ends.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tonic::{Code, Status};

use super::status;

/// Who makes a call, as far as shares go: its connection, and the reader it was let in
/// as, if any ([`crate::readers::Reader`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Caller {
    pub connection: Option<SocketAddr>,
    /// The reader's public key: one identity however many certificates it holds.
    pub identity: Option<[u8; 32]>,
}

impl Caller {
    /// The caller of `request`.
    pub fn of<T>(request: &tonic::Request<T>) -> Caller {
        Caller {
            connection: request.remote_addr(),
            identity: request
                .extensions()
                .get::<crate::readers::Reader>()
                .map(|reader| reader.0.key),
        }
    }
}

/// A pool bounded overall and per connection.
#[derive(Debug)]
pub(super) struct Shares {
    /// The error name and the settings, for the refusal's message.
    code: &'static str,
    what: &'static str,
    total_setting: &'static str,
    connection_setting: &'static str,
    identity_setting: &'static str,
    total_max: usize,
    connection_max: usize,
    identity_max: usize,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    total: usize,
    by_connection: HashMap<SocketAddr, usize>,
    by_identity: HashMap<[u8; 32], usize>,
}

/// One call's share; given back when dropped.
#[derive(Debug)]
pub(super) struct Share {
    shares: Arc<Shares>,
    caller: Caller,
}

/// Takes one from `key`'s count in `counts`, forgetting it at zero.
fn give_back<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut used = self.shares.lock();
        used.total -= 1;
        if let Some(connection) = self.caller.connection {
            give_back(&mut used.by_connection, &connection);
        }
        if let Some(identity) = self.caller.identity {
            give_back(&mut used.by_identity, &identity);
        }
    }
}

impl Shares {
    /// A pool of `total_max` shares, at most `connection_max` of them held by one
    /// connection and `identity_max` by one reader; refusals are `RESOURCE_EXHAUSTED`
    /// named `code`, about `what`, naming the setting reached.
    pub fn new(
        code: &'static str,
        what: &'static str,
        (total_setting, total_max): (&'static str, usize),
        (connection_setting, connection_max): (&'static str, usize),
        (identity_setting, identity_max): (&'static str, usize),
    ) -> Arc<Shares> {
        Arc::new(Shares {
            code,
            what,
            total_setting,
            connection_setting,
            identity_setting,
            total_max,
            connection_max: connection_max.max(1),
            identity_max: identity_max.max(1),
            used: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A share for a call of `caller` (no connection: a call not over TCP, bounded
    /// overall only), or the refusal.
    pub fn take(self: &Arc<Self>, caller: Caller) -> Result<Share, Status> {
        let mut used = self.lock();
        let refuse = |held: usize, whose: &str, setting: &str| {
            status::error(
                Code::ResourceExhausted,
                self.code,
                format_args!(
                    "{held} {} are open {whose}, the most it may hold ({setting}); close \
                     some, or retry later",
                    self.what
                ),
            )
        };
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
        if let Some(connection) = caller.connection
            && used.by_connection.get(&connection).copied().unwrap_or(0) >= self.connection_max
        {
            return Err(refuse(
                self.connection_max,
                "on this connection",
                self.connection_setting,
            ));
        }
        if let Some(identity) = caller.identity
            && used.by_identity.get(&identity).copied().unwrap_or(0) >= self.identity_max
        {
            return Err(refuse(
                self.identity_max,
                "for this identity, over all its connections",
                self.identity_setting,
            ));
        }
        if let Some(connection) = caller.connection {
            *used.by_connection.entry(connection).or_insert(0) += 1;
        }
        if let Some(identity) = caller.identity {
            *used.by_identity.entry(identity).or_insert(0) += 1;
        }
        used.total += 1;
        Ok(Share {
            shares: self.clone(),
            caller,
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

    fn on(connection: &str) -> Caller {
        Caller {
            connection: Some(connection.parse().unwrap()),
            identity: None,
        }
    }

    #[test]
    fn one_connection_cannot_take_the_whole_pool() {
        let shares = Shares::new(
            "TOO_MANY_STREAMS",
            "things",
            ("total", 5),
            ("each", 2),
            ("reader", 100),
        );
        let greedy = on("127.0.0.1:1000");
        let held: Vec<Share> = (0..2).map(|_| shares.take(greedy).unwrap()).collect();
        let refused = shares.take(greedy).unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert!(refused.message().contains("this connection"), "{refused:?}");
        let others: Vec<Share> = (0..2)
            .map(|_| shares.take(on("127.0.0.1:2000")).unwrap())
            .collect();
        let last = shares.take(Caller::default()).unwrap();
        assert!(
            shares.take(on("127.0.0.1:3000")).is_err(),
            "the pool is full"
        );
        drop(held);
        assert_eq!(shares.used(), 3);
        assert!(shares.take(greedy).is_ok(), "given back");
        drop((others, last));
        assert_eq!(shares.used(), 0);
    }

    #[test]
    fn one_reader_cannot_take_the_pool_over_many_connections() {
        let shares = Shares::new(
            "TOO_MANY_STREAMS",
            "things",
            ("total", 100),
            ("each", 2),
            ("reader", 3),
        );
        let reader = |port: u16| Caller {
            connection: Some(SocketAddr::from(([127, 0, 0, 1], port))),
            identity: Some([7; 32]),
        };
        let held: Vec<Share> = (0..3)
            .map(|i| shares.take(reader(1000 + i)).unwrap())
            .collect();
        let refused = shares.take(reader(2000)).unwrap_err();
        assert!(refused.message().contains("this identity"), "{refused:?}");
        // Another reader, on the same connections, is served.
        let other = Caller {
            identity: Some([8; 32]),
            ..reader(1000)
        };
        let theirs = shares.take(other).unwrap();
        drop(held);
        let again = shares.take(reader(2000)).expect("given back");
        drop(theirs);
        assert_eq!(shares.used(), 1);
        drop(again);
    }
}
