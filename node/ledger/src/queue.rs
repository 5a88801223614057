//! Blocking receives for the node's worker threads that go to sleep as soon as their
//! queue is found empty.
//!
//! crossbeam-channel's own `recv` and `recv_timeout` spin and then call `sched_yield` up
//! to four times before they sleep. The node runs more busy threads than this machine
//! has cores, so each yield hands the core to another thread and takes it back again:
//! under load, about two yields per transaction, each a system call and a context switch
//! (docs/perf-log.md). crossbeam's [`Select`] registers and sleeps without yielding,
//! so the waits go through it once a first look finds nothing. (Not through `select!`:
//! with a single operation the macro calls `recv` itself.)

use std::time::Duration;

use crossbeam_channel::{Receiver, RecvError, RecvTimeoutError, Select, TryRecvError};

/// The next item, sleeping until one comes; `Err` once the queue is empty and every
/// sender has gone.
pub fn recv<T>(rx: &Receiver<T>) -> Result<T, RecvError> {
    match rx.try_recv() {
        Ok(item) => Ok(item),
        Err(TryRecvError::Disconnected) => Err(RecvError),
        Err(TryRecvError::Empty) => {
            let mut select = Select::new();
            select.recv(rx);
            select.select().recv(rx)
        }
    }
}

/// The next item, sleeping at most `timeout` for one.
pub fn recv_timeout<T>(rx: &Receiver<T>, timeout: Duration) -> Result<T, RecvTimeoutError> {
    match rx.try_recv() {
        Ok(item) => Ok(item),
        Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
        Err(TryRecvError::Empty) => {
            let mut select = Select::new();
            select.recv(rx);
            match select.select_timeout(timeout) {
                Ok(ready) => ready.recv(rx).map_err(|_| RecvTimeoutError::Disconnected),
                Err(_) => Err(RecvTimeoutError::Timeout),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_in_order_then_the_end_of_the_queue() {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let sender = std::thread::spawn(move || {
            for i in 0..100u32 {
                tx.send(i).unwrap();
            }
        });
        let got: Vec<u32> = std::iter::from_fn(|| recv(&rx).ok()).collect();
        sender.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!(recv(&rx), Err(RecvError));
    }

    #[test]
    fn a_timed_wait_tells_a_quiet_queue_from_a_closed_one() {
        let (tx, rx) = crossbeam_channel::unbounded::<u32>();
        assert_eq!(
            recv_timeout(&rx, Duration::from_millis(5)),
            Err(RecvTimeoutError::Timeout)
        );
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(7).unwrap();
        });
        assert_eq!(recv_timeout(&rx, Duration::from_secs(30)), Ok(7));
        sender.join().unwrap();
        assert_eq!(
            recv_timeout(&rx, Duration::from_secs(30)),
            Err(RecvTimeoutError::Disconnected)
        );
    }
}
