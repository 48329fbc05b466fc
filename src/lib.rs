//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. The binary (`src/main.rs`) is a thin shell over these
//! modules; the library exists so benchmarks and tests can reach the core.
//!
//! Rooms and their arrows, top down (each room uses only those after it):
//!
//! - `main`: flags to a command, errors to exit codes; `cli` holds the clap
//!   definitions, which only `main` and `cmd` read.
//! - `cmd`: one module per subcommand, wiring inputs, a store and output.
//! - `file`: the stores (a filter file: mmap, locks, checksums; the in-memory
//!   filter). Each implements `pipeline::Store`, the port the pipeline owns:
//!   a new store (Redis, time windows) plugs in there, unseen by the pipeline.
//! - `pipeline`: reader, parallel hashing, ordered test-and-set, writer.
//! - `input`: line sources and counting, over `hash`, `scan` and `memory`.
//! - `filter`: the pure data structure: layout, kernels, sizing, occupancy.
//! - leaves: `hash`, `keys`, `scan`, `prefetch`, `memory`, `output`,
//!   `signals`, `units` (flag values; `filter` takes `MIN_FPP` from it), and
//!   `progress`, a counter that `cmd`, `file`, `input` and `pipeline` advance.
//!
//! `unsafe` lives in `file` and `input` (memory mappings), `filter` (SIMD
//! kernels), `prefetch`, `scan` (prefetches), `signals`, `memory` (malloc
//! arenas) and `main` (the stdout check), each with its `SAFETY` note.

pub mod cli;
pub mod cmd;
pub mod file;
pub mod filter;
pub mod hash;
pub mod input;
pub mod job;
pub mod keys;
pub mod memory;
pub mod output;
pub mod pipeline;
pub mod prefetch;
pub mod progress;
pub mod report;
pub mod scan;
pub mod signals;
pub mod tuning;
pub mod units;
