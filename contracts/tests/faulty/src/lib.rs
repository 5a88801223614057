//! A contract that misbehaves on purpose: panics, runaway loops, recursion, allocation
//! and host-call-heavy work.
//! Its tests show each ends as a typed error and that the sandbox keeps working.

/// The misbehaving functions.
#[runnel_contract::contract]
pub mod faulty {
    use runnel_contract::prelude::*;

    /// Panics with `message` (after writing a key, which must not survive).
    pub fn panic_now(ctx: &mut Context, message: String) -> Result<()> {
        ctx.put_bytes("written-before-panic", "x")?;
        panic!("{message}");
    }

    /// Indexes past the end of a vector.
    pub fn out_of_bounds(_ctx: &mut Context, index: usize) -> Result<u8> {
        let v: Vec<u8> = std::hint::black_box(vec![1, 2, 3]);
        Ok(v[index])
    }

    /// Loops until fuel runs out.
    pub fn spin(_ctx: &mut Context) -> Result<u64> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    /// Recurses `depth` levels, keeping a frame alive on each.
    pub fn recurse(_ctx: &mut Context, depth: u64) -> Result<u64> {
        Ok(down(depth))
    }

    fn down(depth: u64) -> u64 {
        let frame = std::hint::black_box([depth; 16]);
        if depth == 0 {
            frame[0]
        } else {
            down(depth - 1) + frame[1]
        }
    }

    /// Allocates and touches `mib` MiB.
    pub fn hog(_ctx: &mut Context, mib: usize) -> Result<usize> {
        let mut held = Vec::new();
        for _ in 0..mib {
            held.push(std::hint::black_box(vec![7u8; 1 << 20]));
        }
        Ok(held.len())
    }

    /// Writes `key` (for `grind` to read).
    pub fn plant(ctx: &mut Context, key: String) -> Result<()> {
        ctx.put_bytes(key, "x")
    }

    /// Reads `key` `times` times: host calls buy the most of the host's time per unit of
    /// fuel, so this is the work that comes nearest the wall-clock backstop.
    pub fn grind(ctx: &mut Context, key: String, times: u64) -> Result<u64> {
        let mut reads = 0;
        for _ in 0..times {
            std::hint::black_box(ctx.get_bytes(&key)?);
            reads += 1;
        }
        Ok(reads)
    }

    /// Allocates and frees a small buffer `times` times (the bump allocator's worst case
    /// is bounded by the memory limit, not a crash).
    pub fn churn(_ctx: &mut Context, times: usize) -> Result<usize> {
        let mut total = 0;
        for i in 0..times {
            let s = std::hint::black_box(format!("item {i}"));
            total += s.len();
        }
        Ok(total)
    }
}

pub use crate::faulty::Contract;
