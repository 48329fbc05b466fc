//! [`ReadFilter`]: a filter file opened for reading under a shared lock
//! (`query`, `stats`, `verify`), its layers mapped read-only.

use super::checksum::damaged;
use super::forget::{list_mismatch, read_list};
use super::header::open_checked;
use super::layers::contains_in;
use super::map::map_read;
use crate::filter::forget::ForgetList;
use crate::format::{Header, segment_checksum};
use crate::hash::Hash128;
use crate::pipeline::Store;
use anyhow::{Context, Result, bail};
use memmap2::Mmap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A filter file opened for reading under a shared lock.
pub struct ReadFilter {
    path: PathBuf,
    file: File,
    /// One mapping per layer (`pub(super)` for the tests of `layers`).
    pub(super) maps: Vec<Mmap>,
    header: Header,
    /// The keys forgotten ([`crate::filter::forget`]).
    forget: ForgetList,
}

impl ReadFilter {
    /// Opens, locks (shared) and validates a filter file.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a valid filter (message names it).
    pub(crate) fn open(path: &Path) -> Result<ReadFilter> {
        let (file, header) = open_checked(path, false)?;
        let maps = header
            .layers
            .iter()
            .map(|l| map_read(&file, path, l))
            .collect::<Result<_>>()?;
        let forget = read_list(&file, path, &header)?;
        Ok(ReadFilter {
            path: path.to_path_buf(),
            file,
            maps,
            header,
            forget,
        })
    }

    /// The validated header.
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// Path it was opened from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The keys forgotten.
    pub(crate) fn forget_list(&self) -> &ForgetList {
        &self.forget
    }

    /// Whether the forget list's entries do not match their checksum
    /// (stale in a dirty file, damaged in a clean one).
    ///
    /// # Errors
    /// Entries that cannot be read.
    pub(crate) fn forget_mismatch(&self) -> Result<bool> {
        list_mismatch(&self.file, &self.path, &self.header)
    }

    /// Bit array of layer `i`.
    pub(crate) fn layer_bits(&self, i: usize) -> &[u8] {
        &self.maps[i]
    }

    /// The stored checksums of layer `i`'s segments (empty when it has none).
    ///
    /// # Errors
    /// When the table cannot be read.
    pub(crate) fn checksums(&self, i: usize) -> Result<Vec<u64>> {
        let l = &self.header.layers[i];
        if l.checksums == 0 {
            return Ok(vec![]);
        }
        let mut buf = vec![0u8; l.segments() as usize * 8];
        self.file
            .read_exact_at(&mut buf, l.checksums)
            .with_context(|| format!("cannot read the checksums of {}", self.path.display()))?;
        Ok(buf
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}

impl ReadFilter {
    /// Checks every segment of a clean file against its checksum (a dirty
    /// file's may be stale: a killed writer's, which `verify --repair`
    /// recomputes from the bits).
    ///
    /// # Errors
    /// The first damaged segment, or checksums that cannot be read.
    pub(crate) fn check_intact(&self) -> Result<()> {
        if self.header.is_dirty() {
            return Ok(());
        }
        if let Some(f) = self.header.forget
            && self.forget_mismatch()?
        {
            bail!("{}", super::forget::damaged(&self.path, &f));
        }
        let name = self.path.display().to_string();
        for (i, l) in self.header.layers.iter().enumerate() {
            for (s, sum) in self.checksums(i)?.iter().enumerate() {
                if segment_checksum(&self.maps[i][l.segment(s as u64)]) != *sum {
                    return Err(damaged(&name, i, l, s));
                }
            }
        }
        Ok(())
    }
}

impl Store for ReadFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        contains_in(&self.header, &self.maps, hashes, out);
        self.forget.unpresent(hashes, out);
        Ok(())
    }

    fn insert_batch(&mut self, _: &[Hash128], _: &mut Vec<bool>) -> Result<u64> {
        bail!("{} is open read-only", self.path.display())
    }
}
