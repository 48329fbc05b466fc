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

pub(crate) use client::Link;
pub(crate) use filter::{RedisFilter, first_layer};
pub(crate) use location::{Location, is_location, redact};
