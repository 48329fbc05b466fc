//! The stores behind the pipeline's port (`pipeline::Store`): a filter file on
//! disk (open and validate, memory-map, grow, create through a temporary file
//! renamed into place, commit counters) and the in-memory filter. What the
//! header's bytes mean is the [`format`](crate::format) room's business (below
//! this one, so `redis` reads it too). One file per concern:
//!
//! - `layers`: what every store shares: `Layers` (the bit arrays of a
//!   writable filter and their header: inserting in order, growth, capacity
//!   warnings, stale checksums, the 2 MiB page hint), a new filter's header,
//!   lookups over all layers.
//! - `map`: memory-mapping a file's layers, the huge page request, extending
//!   the file for a new layer with its blocks reserved.
//! - `header`: the header of an open file: read and validated under its
//!   lock, the warning for a dirty file, written back.
//! - `read`: [`ReadFilter`], a file read under a shared lock.
//! - `write`: [`WriteFilter`], a file written under an exclusive lock (dirty
//!   flag, commit spans, growth at the end of the file, commit).
//! - `new`: [`NewFilter`], a new file filled as a temporary file and renamed
//!   into place when finished.
//! - `memory`: [`MemFilter`], the in-memory filter.
//! - `clock`: setting a filter's clock back (`verify --set-clock`).
//! - `forget`: the forget list's region (format 3.0): read and checked,
//!   written back, placed and grown.
//! - `lock` (flock), `path` (what a filter path may be, temporary files of
//!   killed runs), `checksum` (which segments' checksums to rewrite).
//!
//! Its `unsafe` is memory-mapping a filter file and anonymous memory, in
//! `map` (`map_read`, `map_write`, `anon`), and two system calls that read
//! or write no memory of Rust's: `sync_file_range` in `write` (the
//! write-back nudge) and `madvise(MADV_POPULATE_WRITE)` in `populate`. The
//! crate's other `unsafe` is listed in `lib.rs`.

mod checksum;
mod clock;
mod forget;
mod header;
mod layers;
mod lock;
mod map;
mod memory;
mod new;
mod path;
mod populate;
mod read;
mod write;

pub use clock::ClockBack;
pub(crate) use header::quiet_clock;
pub use lock::wait_for_locks_at_most;
pub use memory::MemFilter;
pub use new::NewFilter;
pub(crate) use path::{Target, check_target};
pub use path::{holds_filter, names_filter};
pub use read::ReadFilter;
pub use write::WriteFilter;

/// The header of a new, empty filter for `spec` whose first layer is `first`,
/// as a new file would have.
pub(crate) fn new_header(
    spec: &crate::filter::sizing::Spec,
    first: &crate::filter::sizing::Plan,
    seed: u64,
    keys: crate::keys::KeySpec,
) -> crate::format::Header {
    layers::new_header(spec, first, seed, keys)
}
