//! The CPU scheduling policy of a process's threads.
//!
//! A node is a pipeline of threads that hand transactions to one another: the API's
//! workers, the endorsers, the orderer, the validator's stages, the commit and its
//! flushers, sled's writers. On a machine with fewer cores than busy threads, Linux's
//! default policy (`SCHED_OTHER`) lets each thread that wakes preempt the one running,
//! so under load a core switches threads mid-batch several times per transaction: at
//! 64 clients on two cores the node was preempted ~1.9 times per transaction beside its
//! ~3.2 voluntary switches. `SCHED_BATCH` is the same fair scheduler without wake-up
//! preemption: a woken thread waits for the running one's slice or its next wait, and
//! the pipeline's batches grow instead. Priorities and fairness between processes are
//! unchanged, and it needs no privilege. A thread woken on an idle core runs at once
//! under either policy, so a lightly loaded node's latency is the same.
//!
//! [`apply`] sets the policy of every thread of the process, and threads started
//! afterwards inherit it from the thread that starts them.

use serde::{Deserialize, Serialize};

/// How the process's threads are scheduled (`[node] scheduling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduling {
    /// `SCHED_BATCH`: no wake-up preemption; throughput under load.
    #[default]
    Batch,
    /// `SCHED_OTHER`: the system's default.
    Normal,
}

impl std::str::FromStr for Scheduling {
    type Err = String;

    fn from_str(name: &str) -> Result<Scheduling, String> {
        match name {
            "batch" => Ok(Scheduling::Batch),
            "normal" => Ok(Scheduling::Normal),
            other => Err(format!("no scheduling {other:?}: batch or normal")),
        }
    }
}

/// Why the policy could not be set on every thread.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// The process's thread list could not be read.
    #[error("listing the process's threads: {0}")]
    Threads(#[from] std::io::Error),
    /// The system refused the policy for a thread.
    #[error("setting the scheduling policy of thread {tid}: {error}")]
    Refused {
        /// The thread.
        tid: i32,
        /// The system's answer.
        error: std::io::Error,
    },
    /// Not on Linux: only the system's default exists here.
    #[error("scheduling policies other than the default need Linux")]
    Unsupported,
}

/// Sets `policy` on every thread of this process; threads started afterwards inherit it.
/// A thread that ends while this runs is skipped.
pub fn apply(policy: Scheduling) -> Result<(), SchedError> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        let kind = match policy {
            Scheduling::Batch => libc::SCHED_BATCH,
            Scheduling::Normal => libc::SCHED_OTHER,
        };
        for entry in std::fs::read_dir("/proc/self/task")? {
            let Some(tid) = entry?
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: `param` is a valid sched_param for the call's duration.
            if unsafe { libc::sched_setscheduler(tid, kind, &param) } != 0 {
                let error = std::io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::ESRCH) {
                    return Err(SchedError::Refused { tid, error });
                }
            }
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    match policy {
        Scheduling::Normal => Ok(()),
        Scheduling::Batch => Err(SchedError::Unsupported),
    }
}

/// The policy of the calling thread, if it is one of [`Scheduling`]'s.
pub fn current() -> Option<Scheduling> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: no arguments but the calling thread (0).
        match unsafe { libc::sched_getscheduler(0) } {
            libc::SCHED_BATCH => Some(Scheduling::Batch),
            libc::SCHED_OTHER => Some(Scheduling::Normal),
            _ => None,
        }
    }
    #[cfg(not(target_os = "linux"))]
    Some(Scheduling::Normal)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn every_thread_takes_the_policy_and_new_threads_inherit_it() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        // A thread that exists before the call, and reports its policy after it.
        let before = std::thread::spawn(move || {
            rx.recv().unwrap();
            seen_tx.send(current()).unwrap();
        });
        apply(Scheduling::Batch).unwrap();
        assert_eq!(current(), Some(Scheduling::Batch));
        tx.send(()).unwrap();
        assert_eq!(seen_rx.recv().unwrap(), Some(Scheduling::Batch));
        before.join().unwrap();
        let after = std::thread::spawn(current).join().unwrap();
        assert_eq!(after, Some(Scheduling::Batch), "a new thread inherits it");

        apply(Scheduling::Normal).unwrap();
        assert_eq!(current(), Some(Scheduling::Normal));
        let after = std::thread::spawn(current).join().unwrap();
        assert_eq!(after, Some(Scheduling::Normal));
    }
}
