//! runnel-node's integration tests: nodes started in the test's process through
//! `Node::start`, the entry the `runnel` command uses, on loopback and temp dirs.

mod start;
