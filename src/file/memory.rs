//! The in-memory store: a filter in anonymous memory, growing like a file's.

use super::layers::{Anon, Layers, new_header};
use super::map::anon;
use crate::filter::sizing::{Plan, Spec};
use crate::format::Header;
use crate::hash::Hash128;
use crate::keys::KeySpec;
use crate::pipeline::Store;
use anyhow::{Context, Result};

/// An in-memory filter (anonymous mappings), growing like a file-backed one.
pub struct MemFilter {
    pub(super) layers: Layers,
}

impl MemFilter {
    /// A fixed filter sized by `plan`.
    ///
    /// # Errors
    /// When the memory cannot be reserved.
    pub fn new(plan: &Plan, seed: u64) -> Result<MemFilter> {
        let spec = Spec {
            capacity: plan.capacity,
            target_fpp: plan.target_fpp,
            growth: None,
            window: None,
        };
        Self::build(&spec, plan, seed)
    }

    /// A filter made for `spec` (fixed or growing).
    ///
    /// # Errors
    /// When `spec` cannot be sized or the memory cannot be reserved.
    pub fn with_spec(spec: &Spec, seed: u64) -> Result<MemFilter> {
        let first = spec
            .layer(0)
            .context("cannot size the filter (-n/--capacity, -p/--fpp)")?;
        Self::build(spec, &first, seed)
    }

    /// A filter made for `spec` whose first layer is `first` instead of the one
    /// `spec` sizes (layers added later follow `spec`).
    ///
    /// # Errors
    /// When the memory cannot be reserved.
    pub(crate) fn with_first(spec: &Spec, first: &Plan, seed: u64) -> Result<MemFilter> {
        Self::build(spec, first, seed)
    }

    fn build(spec: &Spec, first: &Plan, seed: u64) -> Result<MemFilter> {
        // Keys are the pipeline's business; an in-memory filter records none.
        let header = new_header(spec, first, seed, KeySpec::RAW);
        let map = anon(&header.layers[0])?;
        let mut filter = MemFilter {
            layers: Layers {
                header,
                maps: vec![map],
                name: "the in-memory filter".into(),
                warned: 0,
                alarms: None,
                stale: None,
                // Its memory asks for 2 MiB pages itself (`anon`).
                expected: None,
                populating: Default::default(),
                forget: Default::default(),
                forget_changed: false,
                forget_removed: Vec::new(),
                forget_asked: Default::default(),
            },
        };
        filter.layers.populate(0);
        Ok(filter)
    }

    /// Touches every page now (writes a zero to each), so later probes pay no
    /// page faults; used by benchmarks to separate the two costs.
    pub fn prefault(&mut self) {
        for m in &mut self.layers.maps {
            for page in m.chunks_mut(4096) {
                page[0] = 0;
            }
        }
    }

    /// Keys recorded as new so far.
    pub fn inserts(&self) -> u64 {
        self.layers.header.inserts()
    }

    /// The header this filter would have as a file (layers, counters).
    /// Records `keys` as the filter's key options.
    pub(crate) fn set_keys(&mut self, keys: KeySpec) {
        self.layers.header.keys = keys;
    }

    /// Names the filter in its warnings: where it will be stored (a new
    /// Redis filter is built in memory first).
    pub(crate) fn set_name(&mut self, name: String) {
        self.layers.name = name;
    }

    pub fn header(&self) -> &Header {
        &self.layers.header
    }

    /// Bit array of layer `i`.
    pub fn layer_bits(&self, i: usize) -> &[u8] {
        &self.layers.maps[i]
    }
}

impl Store for MemFilter {
    fn seed(&self) -> u64 {
        self.layers.header.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.layers.contains(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.layers.add(hashes, Some(out), &mut Anon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large in-memory filter's first layer is faulted in by a helper,
    /// not by the lines that go in, once a batch brings it to the keys due
    /// (a batch of fewer starts none); a small one gets none.
    #[test]
    fn a_large_layer_is_populated_on_the_side() {
        use crate::file::populate::{keys_due, resident};
        use crate::filter::sizing::plan;
        let small = MemFilter::new(&plan(1_000_000, 1e-6).unwrap(), 1).unwrap();
        assert!(small.layers.populating.waiting.is_empty());
        let mut large = MemFilter::new(&plan(20_000_000, 1e-6).unwrap(), 1).unwrap();
        let bytes = large.layers.maps[0].len() as u64;
        let due = keys_due(&large.layers.maps[0]);
        assert!(due >= 2, "{bytes} bytes, {due} keys due");
        let keys: Vec<Hash128> = (0..due)
            .map(|i| crate::hash::hash(&i.to_le_bytes(), 1))
            .collect();
        let mut out = Vec::new();
        large.insert_batch(&keys[..1], &mut out).unwrap();
        assert!(
            large.layers.populating.running.is_empty(),
            "not due after one key"
        );
        large.insert_batch(&keys[1..], &mut out).unwrap();
        assert!(large.layers.populating.waiting.is_empty());
        assert_eq!(
            large.layers.populating.running.len(),
            crate::file::populate::HELPERS
        );
        for p in large.layers.populating.running.drain(..) {
            p.finish();
        }
        let resident = resident(large.layers.maps[0].as_ptr());
        assert!(resident >= bytes, "{resident} of {bytes} bytes");
    }
}
