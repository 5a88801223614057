//! runnel-api through its public API.

mod vectors;
