//! The load generator behind `runnel bench`: closed-loop clients that endorse, sign and
//! submit over gRPC like an application, a per-transaction CSV with every node stage,
//! summaries (text and JSON) and SVG plots, and the stall clients saw when something
//! happened during a run; and the ordering service alone (`runnel bench order`), loaded
//! and read as its peers do.

mod bench;
mod floor;
mod hammer;
mod order;
mod plots;
mod record;
mod stall;
mod unary;

pub use bench::{BenchArgs, bench};
pub use order::{OrderArgs, SealCheck, SealChecks};
