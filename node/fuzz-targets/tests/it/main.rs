//! The fuzz targets' integration tests, in one binary: the corpus replayed on stable, and
//! the writer of its seed inputs (ignored unless asked for).

mod corpus;
mod seeds;
