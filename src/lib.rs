//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. The binary (`src/main.rs`) is a thin shell over these
//! modules; the library exists so benchmarks and tests can reach the core.
//!
//! Rooms on floors, top down: each room uses only rooms on lower floors
//! (`tests/integration/arrows.rs` checks it; docs/ARCHITECTURE.md draws it).
//!
//! - `main` (the binary): the environment switches read once, flags to a
//!   command, outcomes to exit codes (no other room exits the process).
//! - `cmd`: one module per subcommand; `build`, `dedup` and `query` resolve
//!   their flags into a `job::Job` and give it an output.
//! - `cli` (clap definitions) and `job`: the config layer, a plan of a run
//!   (`job::plan::resolve`: flags → measure → size → where) and the one
//!   function that executes it.
//! - `store`: where a filter lives, behind one door: `FilterAt` (every
//!   filter argument, parsed once), each kind of location a `Place`, any
//!   open store one `Opened`. A new store plugs in here.
//! - `report`: summaries and tables.
//! - `redis`: filters in Redis or a Redis Cluster (client, shards, the
//!   `BITFIELD` test-and-set, the journal).
//! - `file`: a filter file (mmap, locks, checksums, growth, time windows)
//!   and the in-memory filter. Each store implements `pipeline::Store`, the
//!   port the pipeline owns.
//! - `format`: a filter's header as bytes (encode, decode, validate; the
//!   kind of filter each layer holds), shared by `file` and `redis`.
//! - `pipeline`: reader, parallel hashing, ordered test-and-set, writer,
//!   each stage a type; the commit protocol of `dedup -f`.
//! - `input`: line sources, the chunked reader, counting and sampling.
//! - `filter`: the pure data structure (layout, kernels, occupancy), the
//!   filter-kind seam (`filter::Kind`: what a kind of filter does over its
//!   bytes; Bloom layers are the first) and `filter::sizing` (the math, and
//!   the policy that picks a size).
//! - leaves: `hash`, `keys`, `scan`, `memory`, `output`, `signals`, `units`, `clock`,
//!   `progress`; below them `prefetch` and `tuning` (the switches).
//!
//! `unsafe` lives in `file` and `input` (memory mappings), `filter` (SIMD
//! kernels), `prefetch`, `scan` (prefetches), `signals`, `memory` (malloc
//! arenas, huge-page hints) and `main` (the stdout check), each with its
//! `SAFETY` note.

//!
//! What the binary, the integration tests and the benchmarks use is `pub`;
//! the rest is `pub(crate)` or narrower, and `unreachable_pub` (denied by
//! `clippy -D warnings`) keeps a `pub` from growing back where nothing
//! outside the crate can reach it.

#![warn(unreachable_pub)]

pub mod cli;
pub mod clock;
pub mod cmd;
pub mod file;
pub mod filter;
pub(crate) mod format;
pub mod hash;
pub mod input;
pub mod job;
pub mod keys;
pub mod memory;
pub mod output;
pub mod pipeline;
pub(crate) mod prefetch;
pub(crate) mod progress;
pub(crate) mod redis;
pub(crate) mod report;
pub(crate) mod scan;
pub mod signals;
pub(crate) mod store;
pub mod tuning;
pub(crate) mod units;
