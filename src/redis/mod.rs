//! Filters in Redis or Valkey (standalone or Cluster): a location type
//! ([`Location`]), connections with this crate's own Cluster routing
//! (`client`), the two layouts a filter may have there, each a store behind
//! the pipeline's port — fingerprint sets ([`SetsFilter`], in `sets`: one
//! `SADD` per line, the default) and Bloom layers in shards
//! ([`RedisFilter`], in `filter`; its `BITFIELD` test-and-set in
//! `bitfield`, its shards in `shards`) — their meta key (`meta`), opening
//! either (`open`), and the local journal that keeps a killed run's lines
//! (`journal`).
//!
//! It sits above `format`, whose header encoding the Bloom layout's meta
//! key reuses, so that such a filter moves between a file and Redis byte
//! for byte. Design, promises and limits: docs/REDIS.md.

mod bitfield;
mod client;
mod filter;
pub(crate) mod gens;
mod journal;
mod location;
mod meta;
mod open;
mod reply;
mod set_keys;
mod sets;
mod shards;
mod slot;

pub(crate) use client::Link;
pub(crate) use filter::{RedisFilter, first_layer};
pub(crate) use gens::store::GensFilter;
pub(crate) use journal::{Journaled, Orphan, orphans, remove_orphan};
pub(crate) use location::{Location, is_location, redact};
pub(crate) use open::{Layout, Opened, lost_meta, new_sets, open, open_or_create};
pub(crate) use sets::{Census, SetsFilter, SetsUnion};
