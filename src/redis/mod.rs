//! Filters in Redis or Valkey (standalone or Cluster): a location type
//! ([`Location`]), connections with this crate's own Cluster routing
//! (`client`), the store behind the pipeline's port ([`RedisFilter`], in
//! `filter`; its `BITFIELD` test-and-set in `bitfield`, its shards in
//! `shards`, its meta key in `meta`) and the local journal that keeps a
//! killed run's lines (`journal`).
//!
//! It sits above `file`, whose header encoding its meta key reuses, so that a
//! filter moves between a file and Redis byte for byte. Design, promises and
//! limits: docs/REDIS.md.

mod bitfield;
mod client;
mod filter;
mod journal;
mod location;
mod meta;
mod shards;

pub use client::{Link, TLS_ENV};
pub use filter::{ROOM, RedisFilter, first_layer};
pub use journal::{DIR_ENV as JOURNAL_DIR_ENV, Journal};
pub use location::{Location, PASSWORD_ENV, is_location, redact};
pub use shards::pages_per_shard;
