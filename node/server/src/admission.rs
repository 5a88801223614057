//! Endorse, Evaluate and Submit calls, handed from the connections' tasks to a few threads
//! of the API's own that take whatever has queued up as one batch.
//!
//! Why: under load the two costs of a call that are not the ledger's are the hand-off to a
//! thread that may block, and signature verification paid one signature at a time. A
//! batch pays the hand-off once (a busy thread takes the next batch without sleeping) and
//! verifies its signatures together, at less than half the price each. A lone call waits
//! for no one: a thread takes what is there, even a batch of one. A handler answers a
//! batch's calls one by one as it goes: each call is told as soon as its answer exists,
//! not when the whole batch is done.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use tokio::sync::oneshot;
use tonic::{Code, Status};

use super::status;

/// What a batcher's threads run: a batch of requests, and where each answer goes, in
/// order.
type Handler<Request, Answer> = dyn Fn(Vec<Request>, &mut dyn FnMut(Answer)) + Send + Sync;

/// One call waiting for its answer.
struct Job<Request, Answer> {
    request: Request,
    answer: oneshot::Sender<Answer>,
    /// Its bytes' place in the queue, given back once its batch is handled.
    _bytes: Reserved,
}

/// The bytes of the calls queued or being handled, against a bound.
struct QueueBytes {
    used: AtomicUsize,
    max: usize,
}

/// `bytes` of a [`QueueBytes`], given back when dropped.
struct Reserved {
    queue: Arc<QueueBytes>,
    bytes: usize,
}

impl QueueBytes {
    /// Takes `bytes` if they fit under the bound (or the queue holds nothing, so that one
    /// call bigger than the bound still goes alone).
    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<Reserved> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let after = used.checked_add(bytes)?;
                (used == 0 || after <= self.max).then_some(after)
            })
            .ok()?;
        Some(Reserved {
            queue: self.clone(),
            bytes,
        })
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.queue.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// A bounded queue of calls and the threads that answer them in batches.
pub struct Batcher<Request, Answer> {
    queue: Sender<Job<Request, Answer>>,
    /// What the calls are, for errors ("endorse", "submit").
    what: &'static str,
    /// The queue's bound, for the error that says it is full.
    queue_max: usize,
    /// The bytes queued and being handled, and their bound.
    bytes: Arc<QueueBytes>,
    /// How many bytes a request holds.
    weigh: fn(&Request) -> usize,
    threads: Vec<JoinHandle<()>>,
}

impl<Request, Answer> Batcher<Request, Answer>
where
    Request: Send + 'static,
    Answer: Send + 'static,
{
    /// Starts `threads` threads named `runnel-<what>-<i>`, each taking up to `batch_max`
    /// queued calls at a time and answering them with `handle`, which gives one answer
    /// per request, in order, to the function it is passed (each answer goes out at
    /// once). At most `queue_max` calls wait, holding at most `bytes_max` bytes between
    /// them as `weigh` counts them (calls being handled count too).
    pub fn start<H>(
        what: &'static str,
        threads: usize,
        batch_max: usize,
        (queue_max, bytes_max, weigh): (usize, usize, fn(&Request) -> usize),
        handle: H,
    ) -> std::io::Result<Self>
    where
        H: Fn(Vec<Request>, &mut dyn FnMut(Answer)) + Send + Sync + 'static,
    {
        assert!(threads > 0 && batch_max > 0 && queue_max > 0);
        let (queue, jobs) = crossbeam_channel::bounded(queue_max);
        let handle = Arc::new(handle);
        let threads = (0..threads)
            .map(|i| {
                let (jobs, handle) = (jobs.clone(), handle.clone());
                std::thread::Builder::new()
                    .name(format!("runnel-{what}-{i}"))
                    .spawn(move || run(&jobs, batch_max, &*handle))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Batcher {
            queue,
            what,
            queue_max,
            bytes: Arc::new(QueueBytes {
                used: AtomicUsize::new(0),
                max: bytes_max,
            }),
            weigh,
            threads,
        })
    }

    /// Queues `request` and waits for its answer. RESOURCE_EXHAUSTED when the queue is
    /// full; INTERNAL if the call's batch failed without answering it.
    pub async fn call(&self, request: Request) -> Result<Answer, Status> {
        let (answer, answered) = oneshot::channel();
        let weight = (self.weigh)(&request);
        let Some(bytes) = self.bytes.reserve(weight) else {
            return Err(status::error(
                Code::ResourceExhausted,
                "QUEUE_FULL",
                format_args!(
                    "the {} calls waiting hold {} bytes; this one would pass the {} this \
                     node queues; retry later",
                    self.what,
                    self.bytes.used.load(Ordering::Acquire),
                    self.bytes.max
                ),
            ));
        };
        let job = Job {
            request,
            answer,
            _bytes: bytes,
        };
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(status::error(
                    Code::ResourceExhausted,
                    "QUEUE_FULL",
                    format_args!(
                        "{} {} calls are waiting, the most this node queues; retry later",
                        self.queue_max, self.what
                    ),
                ));
            }
            Err(TrySendError::Disconnected(_)) => return Err(gone(self.what)),
        }
        answered.await.map_err(|_| gone(self.what))
    }
}

impl<Request, Answer> Drop for Batcher<Request, Answer> {
    fn drop(&mut self) {
        // Closing the queue ends the threads once they have answered what was queued.
        let (closed, _) = crossbeam_channel::bounded(1);
        self.queue = closed;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn gone(what: &str) -> Status {
    status::error(
        Code::Internal,
        "INTERNAL",
        format_args!("the {what} call failed without an answer"),
    )
}

/// A thread's loop: wait for one call, take what else is queued up to `batch_max`,
/// answer them all, repeat until the queue is closed.
fn run<Request, Answer>(
    jobs: &Receiver<Job<Request, Answer>>,
    batch_max: usize,
    handle: &Handler<Request, Answer>,
) {
    while let Ok(first) = runnel_ledger::queue::recv(jobs) {
        let mut batch = Vec::with_capacity(batch_max.min(jobs.len() + 1));
        batch.push(first);
        while batch.len() < batch_max {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        // The batch's bytes stay counted until it is handled.
        let mut reserved = Vec::with_capacity(batch.len());
        let (requests, answers): (Vec<Request>, Vec<oneshot::Sender<Answer>>) = batch
            .into_iter()
            .map(|job| {
                reserved.push(job._bytes);
                (job.request, job.answer)
            })
            .unzip();
        // A panic fails the batch's calls not yet answered (their senders drop), not the
        // thread.
        let mut answers = answers.into_iter();
        let handled = catch_unwind(AssertUnwindSafe(|| {
            handle(requests, &mut |answer| {
                // The caller may have gone (deadline, disconnect): nothing to tell it.
                if let Some(to) = answers.next() {
                    let _ = to.send(answer);
                }
            });
        }));
        debug_assert!(
            handled.is_err() || answers.next().is_none(),
            "a call without an answer"
        );
        drop(reserved);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_call_gets_its_own_answer_and_queued_calls_share_batches() {
        let largest = Arc::new(AtomicUsize::new(0));
        let seen = largest.clone();
        let batcher = Arc::new(
            Batcher::start(
                "double",
                1,
                8,
                (1024, usize::MAX, |_| 1),
                move |requests: Vec<u64>, answer| {
                    seen.fetch_max(requests.len(), Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    requests.into_iter().for_each(|r| answer(r * 2));
                },
            )
            .unwrap(),
        );
        let calls: Vec<_> = (0..200u64)
            .map(|i| {
                let batcher = batcher.clone();
                tokio::spawn(async move { (i, batcher.call(i).await.unwrap()) })
            })
            .collect();
        for call in calls {
            let (i, answer) = call.await.unwrap();
            assert_eq!(answer, i * 2);
        }
        let largest = largest.load(Ordering::Relaxed);
        assert!((2..=8).contains(&largest), "largest batch {largest}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_is_resource_exhausted_and_a_panic_is_internal() {
        let (started, holding) = crossbeam_channel::unbounded::<()>();
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let batcher = Arc::new(
            Batcher::start(
                "slow",
                1,
                1,
                (1, usize::MAX, |_| 1),
                move |requests: Vec<u64>, answer| {
                    if requests[0] == 0 {
                        started.send(()).unwrap();
                        wait.recv().unwrap();
                    }
                    assert_ne!(requests[0], 2, "a bug in the handler");
                    requests.into_iter().for_each(answer);
                },
            )
            .unwrap(),
        );
        let call = |i: u64| {
            let batcher = batcher.clone();
            tokio::spawn(async move { batcher.call(i).await })
        };
        let first = call(0);
        // The thread holds the first call; the second fills the queue's one place.
        tokio::task::spawn_blocking(move || holding.recv().unwrap())
            .await
            .unwrap();
        let second = call(1);
        while batcher.queue.is_empty() {
            tokio::task::yield_now().await;
        }
        let refused = batcher.call(3).await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert!(refused.message().contains("QUEUE_FULL"), "{refused:?}");
        tokio::task::spawn_blocking(move || release.send(()).unwrap())
            .await
            .unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 0);
        assert_eq!(second.await.unwrap().unwrap(), 1);
        let failed = batcher.call(2).await.unwrap_err();
        assert_eq!(failed.code(), Code::Internal);
        // The thread survived its handler's panic.
        assert_eq!(batcher.call(4).await.unwrap(), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_is_answered_before_the_rest_of_its_batch_is_done() {
        let (started, holding) = crossbeam_channel::unbounded::<()>();
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let (told, heard) = crossbeam_channel::bounded::<()>(1);
        let batcher = Arc::new(
            Batcher::start(
                "stream",
                1,
                8,
                (8, usize::MAX, |_| 1),
                move |requests: Vec<u64>, answer| {
                    if requests == [0] {
                        started.send(()).unwrap();
                        wait.recv().unwrap();
                    }
                    for (i, request) in requests.into_iter().enumerate() {
                        // The second answer waits until the first caller has its answer; if
                        // it never comes, the second caller learns so.
                        let early = i == 0 || heard.recv_timeout(Duration::from_secs(20)).is_ok();
                        answer(if early { request } else { u64::MAX });
                    }
                },
            )
            .unwrap(),
        );
        let call = |i: u64| {
            let batcher = batcher.clone();
            tokio::spawn(async move { batcher.call(i).await.unwrap() })
        };
        // The thread holds call 0 while calls 1 and 2 queue up to form the next batch.
        let first = call(0);
        tokio::task::spawn_blocking(move || holding.recv().unwrap())
            .await
            .unwrap();
        // Queued one after the other: the runtime does not promise to run two spawned
        // tasks in the order they were spawned.
        let second = call(1);
        while batcher.queue.is_empty() {
            tokio::task::yield_now().await;
        }
        let third = call(2);
        while batcher.queue.len() < 2 {
            tokio::task::yield_now().await;
        }
        tokio::task::spawn_blocking(move || release.send(()).unwrap())
            .await
            .unwrap();
        assert_eq!(first.await.unwrap(), 0);
        assert_eq!(second.await.unwrap(), 1);
        told.send(()).unwrap();
        assert_eq!(
            third.await.unwrap(),
            2,
            "call 1 was answered only with its batch"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_queue_is_bounded_in_bytes_until_the_batch_is_handled() {
        let (started, holding) = crossbeam_channel::unbounded::<()>();
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        // Calls weigh their value; 100 bytes between them at most.
        let batcher = Arc::new(
            Batcher::start(
                "weighed",
                1,
                1,
                (1024, 100, |request: &u64| *request as usize),
                move |requests: Vec<u64>, answer| {
                    if requests[0] == 60 {
                        started.send(()).unwrap();
                        wait.recv().unwrap();
                    }
                    requests.into_iter().for_each(answer);
                },
            )
            .unwrap(),
        );
        let held = {
            let batcher = batcher.clone();
            tokio::spawn(async move { batcher.call(60).await })
        };
        tokio::task::spawn_blocking(move || holding.recv().unwrap())
            .await
            .unwrap();
        // The held call's 60 bytes still count while it is handled: 41 more do not fit,
        // 40 do.
        let refused = batcher.call(41).await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert!(refused.message().contains("QUEUE_FULL"), "{refused:?}");
        let fits = {
            let batcher = batcher.clone();
            tokio::spawn(async move { batcher.call(40).await })
        };
        while batcher.queue.is_empty() {
            tokio::task::yield_now().await;
        }
        tokio::task::spawn_blocking(move || release.send(()).unwrap())
            .await
            .unwrap();
        assert_eq!(held.await.unwrap().unwrap(), 60);
        assert_eq!(fits.await.unwrap().unwrap(), 40);
        // Everything handled: the bytes come back (just after the answers go out), and
        // one call bigger than the bound still goes alone.
        let settled = || async {
            while batcher.bytes.used.load(Ordering::Acquire) > 0 {
                tokio::task::yield_now().await;
            }
        };
        settled().await;
        assert_eq!(batcher.call(100).await.unwrap(), 100);
        settled().await;
        assert_eq!(batcher.call(500).await.unwrap(), 500);
    }
}
