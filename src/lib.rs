//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. The binary (`src/main.rs`) is a thin shell over these
//! modules; the library exists so benchmarks and tests can reach the core.
//!
//! Arrows point one way: `cmd` → `pipeline` → `filter`, `cmd` → `file` → `filter`,
//! `pipeline` → `input` → {`hash`, `progress`}, `pipeline` → `scan`; `hash`,
//! `keys`, `output`, `progress`, `scan`, `signals` and `units` are leaves.

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
