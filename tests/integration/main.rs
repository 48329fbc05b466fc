//! The integration tests, compiled as one test binary (as ripgrep does):
//! one link of the test harness instead of one per file, and the helpers
//! in `common` compiled once. Each file is a module, so a test's name
//! starts with its file's: run one file's tests, or one test, with
//!
//! ```text
//! cargo test --test integration crash::
//! cargo test --test integration crash::sigkill_at_random_moments_loses_no_line
//! ```
//!
//! `common` is the harness they share: the one way to start the binary,
//! and the helpers and reference answers, compiled once.

mod common;

mod arrows;
mod cli;
mod crash;
mod dups_out;
mod edges;
mod file_edges;
mod filter_stats;
mod forget;
mod generated;
mod growth;
mod held;
mod hostile;
mod keys;
mod long_lines;
mod merge;
mod newcomer;
mod parallel;
mod probe;
mod progress;
mod redis;
mod redis_cut;
mod redis_edges;
mod redis_forget;
mod redis_gens;
mod redis_sets;
mod rooms;
mod streaming;
mod window;
