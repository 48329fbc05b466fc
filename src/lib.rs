//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. The binary (`src/main.rs`) is a thin shell over these
//! modules; the library exists so benchmarks and tests can reach the core.
//!
//! Rooms, top down: `cmd` (one per subcommand, over everything below) →
//! `pipeline` (reader, hashing, ordered test-and-set, writer) → `input` (line
//! sources, counting) and `file` (filter files and the in-memory filter) →
//! `filter` (layout, kernels, sizing) → leaves: `hash`, `keys`, `scan`,
//! `prefetch`, `memory`, `output`, `signals`. `cli` (clap) is read by `cmd`
//! and `main` only, but for the arrows below.
//!
//! Arrows that still run back up or sideways (to be cut, issue 20):
//! `filter` → `progress` (advances the counter), `progress` → `cli`
//! (`ProgressArgs`), `units` → `filter::sizing` (`MIN_FPP`), `input` → `file`
//! (`map_input`), and `filter::BatchFilter` carries `file`'s commit steps
//! (`begin_window`, `end_window`, `interrupted`). `unsafe` lives in `file`
//! (mappings), `filter` (SIMD kernels), `prefetch`, `scan` (prefetch),
//! `signals`, `memory` (malloc arenas) and `main` (the stdout check).

pub mod cli;
pub mod cmd;
pub mod file;
pub mod filter;
pub mod hash;
pub mod input;
pub mod keys;
pub mod memory;
pub mod output;
pub mod pipeline;
pub mod prefetch;
pub mod progress;
pub mod scan;
pub mod signals;
pub mod units;
