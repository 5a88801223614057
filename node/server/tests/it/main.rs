//! The server's integration tests, in one binary: a real ledger served on loopback and
//! reached by real gRPC, gRPC-web and HTTP clients, with and without TLS.

mod api;
mod api_tls;
mod node;
mod readers;
