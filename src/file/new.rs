//! [`NewFilter`]: a new filter file (`build`, or `dedup -f` on a missing
//! file), filled in a temporary file next to its final path and renamed into
//! place, complete, when it is finished: creating the temporary file (mode,
//! lock, reserved blocks), then syncing it and moving it to its path.

use super::checksum::Stale;
use super::forget::{free_list, write_list};
use super::header::write_header;
use super::layers::{Layers, new_header};
use super::lock::open_locked;
use super::map::{map_write, reserve};
use super::path::{
    TEMP_RAND_LEN, Target, check_target, dir_and_name, has_magic, sweep_leftovers, temp_prefix,
};
use crate::filter::forget::ForgetList;
use crate::filter::sizing::Spec;
use crate::format::Header;
use crate::hash::Hash128;
use crate::keys::KeySpec;
use crate::pipeline::Store;
use anyhow::{Context, Result, bail};
use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `h` with a forget list region that holds `forget` exactly, right after
/// its layers (none for an empty list: a copy or union forgets nothing).
fn with_room_for(mut h: Header, forget: &ForgetList) -> Header {
    h.forget = None;
    if !forget.is_empty() {
        let count = forget.len() as u64;
        h.forget = Some(crate::format::ForgetEntry {
            offset: h.file_len().next_multiple_of(crate::format::ALIGN),
            room: crate::format::forget_room(count),
            count,
            sum: 0,
        });
    }
    h
}

/// A new filter being filled in a temporary file next to its final path; it
/// appears at that path, complete, only in `NewFilter::finish`. Dropped
/// unfinished, the temporary file is removed and nothing changes.
pub struct NewFilter {
    target: PathBuf,
    tmp: tempfile::NamedTempFile,
    /// `pub(super)` for the tests of `layers`.
    pub(super) layers: Layers,
    /// A copy keeps the times of its original.
    keep_times: bool,
}

impl NewFilter {
    /// Makes a filter file of a fixed `capacity` at 1e-6 (seed 7, whole
    /// records as keys) at `path`, for tests.
    #[cfg(test)]
    pub(crate) fn fixed_for_test(path: &Path, capacity: u64) {
        let spec = Spec {
            capacity,
            target_fpp: 1e-6,
            growth: None,
            window: None,
        };
        NewFilter::create(path, &spec, 7, KeySpec::RAW)
            .unwrap()
            .finish(false)
            .unwrap();
    }

    /// Creates the temporary file for a filter made for `spec`, hashing keys
    /// made by `keys` (recorded in the header).
    ///
    /// # Errors
    /// When the directory cannot be written, the disk has no room, or `spec`
    /// cannot be sized.
    pub(crate) fn create(
        target: &Path,
        spec: &Spec,
        seed: u64,
        keys: KeySpec,
    ) -> Result<NewFilter> {
        let first = spec
            .layer(0)
            .context("cannot size the filter (-n/--capacity, -p/--fpp)")?;
        let header = new_header(spec, &first, seed, keys);
        if let Some(w) = &header.window {
            let name = target.display().to_string();
            super::header::warn_ahead(&name, 0, w.clock, w, true);
        }
        NewFilter::with_header(target, header, true)
    }

    /// A new filter file at `target` that is a copy of the filter `header`
    /// describes, whose layers hold `bits` (another store's: `seen copy`):
    /// the same bytes, checksums written afresh, times kept.
    ///
    /// # Errors
    /// As [`NewFilter::create`].
    pub(crate) fn copy_of(
        target: &Path,
        header: &Header,
        bits: &[&[u8]],
        forget: &ForgetList,
    ) -> Result<NewFilter> {
        let mut h = header.clone();
        h.flags = 0;
        let mut f = NewFilter::with_header(target, with_room_for(h, forget), false)?;
        for (m, b) in f.layers.maps.iter_mut().zip(bits) {
            m.copy_from_slice(b);
        }
        f.take_list(forget);
        if let Some(s) = &mut f.layers.stale {
            s.all();
        }
        f.keep_times = true;
        Ok(f)
    }

    /// A new filter file at `target` holding the union of filters: `header`
    /// describes it, and layer `i` is the OR of `sources[i]` (layers of its
    /// shape); checksums are written afresh. `done` hears the bytes
    /// finished.
    ///
    /// # Errors
    /// As [`NewFilter::create`].
    pub(crate) fn union_of(
        target: &Path,
        header: &Header,
        sources: &[Vec<&[u8]>],
        forget: &ForgetList,
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<NewFilter> {
        let mut h = header.clone();
        h.flags = 0;
        let mut f = NewFilter::with_header(target, with_room_for(h, forget), false)?;
        f.take_list(forget);
        for (i, ((m, l), srcs)) in f
            .layers
            .maps
            .iter_mut()
            .zip(&header.layers)
            .zip(sources)
            .enumerate()
        {
            l.filter_kind()
                .as_kind()
                .union(m, srcs, done)
                .with_context(|| format!("cannot join layer {i} of the filters"))?;
        }
        if let Some(s) = &mut f.layers.stale {
            s.all();
        }
        Ok(f)
    }

    /// The temporary file of a filter whose header is `header` (layers
    /// mapped, bits zero; `new`: the layers were just made, so untouched
    /// segments have the checksum of zeros).
    fn with_header(target: &Path, header: Header, new: bool) -> Result<NewFilter> {
        // Never through a symbolic link: `check_target` refuses them, and a
        // link made since is replaced (rename), not followed.
        let (dir, name) = dir_and_name(target)?;
        if !dir.is_dir() {
            bail!(
                "cannot create {}: directory {} does not exist (create it first)",
                target.display(),
                dir.display()
            );
        }
        // A replaced file keeps its permission bits (never setuid, setgid or
        // sticky); a new one gets 0666 less the umask, as any file a shell
        // would create (tempfile's default is 0600).
        let old_mode = std::fs::symlink_metadata(target)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.permissions().mode() & 0o777);
        let mode = old_mode.unwrap_or(0o666);
        // Before ours exists: a sweep never meets this run's own file.
        sweep_leftovers(dir, name);
        let tmp = loop {
            let tmp = tempfile::Builder::new()
                .prefix(&temp_prefix(name))
                .rand_bytes(TEMP_RAND_LEN)
                .suffix(".tmp")
                .permissions(std::fs::Permissions::from_mode(mode))
                .tempfile_in(dir)
                .map_err(|e| {
                    // tempfile's message names the random temporary path: name the
                    // directory and the target instead.
                    anyhow::anyhow!(
                        "cannot create {}: cannot write in directory {}: {}",
                        target.display(),
                        dir.display(),
                        std::io::Error::from(e.kind())
                    )
                })?;
            // Held until the file is renamed into place (or the process
            // ends, however it ends): `sweep_leftovers` in other runs takes a
            // file it can lock for abandoned. One that got the lock first (in
            // the moment between create and lock) removed it: make another.
            tmp.as_file()
                .lock()
                .with_context(|| format!("cannot lock a temporary file in {}", dir.display()))?;
            if tmp.as_file().metadata()?.nlink() > 0 {
                break tmp;
            }
        };
        if let Some(mode) = old_mode {
            // Exactly the replaced file's bits, whatever the umask.
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .with_context(|| format!("cannot set the mode of a file in {}", dir.display()))?;
        }
        tmp.as_file().set_len(header.file_len()).with_context(|| {
            format!(
                "cannot size a {}-byte filter in {}",
                header.file_len(),
                dir.display()
            )
        })?;
        reserve(tmp.as_file(), 0, header.file_len()).with_context(|| {
            format!(
                "no room for a {}-byte filter in {}: free some space, choose \
                 another directory, or lower -n / raise -p",
                header.file_len(),
                dir.display()
            )
        })?;
        let maps = header
            .layers
            .iter()
            .map(|l| map_write(tmp.as_file(), tmp.path(), l))
            .collect::<Result<_>>()?;
        Ok(NewFilter {
            target: target.to_path_buf(),
            tmp,
            keep_times: false,
            layers: Layers {
                stale: {
                    let mut s = Stale::default();
                    s.cover(&header.layers, new);
                    Some(s)
                },
                header,
                maps,
                name: target.display().to_string(),
                warned: 0,
                alarms: None,
                expected: None,
                populating: Default::default(),
                forget: Default::default(),
                forget_changed: false,
                forget_removed: Vec::new(),
                forget_asked: Default::default(),
            },
        })
    }

    /// Takes `forget` as the new filter's list (written at the finish).
    fn take_list(&mut self, forget: &ForgetList) {
        if self.layers.header.forget.is_some() {
            self.layers.forget = forget.clone();
            self.layers.forget_changed = true;
        }
    }

    /// The header as it will be written.
    pub(crate) fn header(&self) -> &Header {
        &self.layers.header
    }

    /// Bit array of layer `i`.
    pub(crate) fn layer_bits(&self, i: usize) -> &[u8] {
        &self.layers.maps[i]
    }

    /// Says how many keys this run may insert (`None`: unknown; repeated
    /// lines count too), which decides whether the layer written asks for
    /// 2 MiB pages (only for a dense run: see README, Limits). Call it before
    /// the layer's pages are touched: pages already cached keep their size.
    pub(crate) fn expect_keys(&mut self, keys: Option<u64>) {
        self.layers.expect_keys(keys);
    }

    /// Writes the header, syncs the file, renames it over the target (refusing to
    /// replace an existing file unless `replace`) and syncs the directory.
    ///
    /// # Errors
    /// When the data cannot be synced or the rename fails; the target is then
    /// unchanged and the temporary file removed.
    pub(crate) fn finish(self, replace: bool) -> Result<()> {
        self.finish_over(replace, None)
    }

    /// [`NewFilter::finish`], replacing the filter at the target only if its
    /// header is still `unchanged` once it is locked (`seen merge -o A A B`:
    /// a writer that recorded keys in A meanwhile would lose them to the
    /// rename); otherwise nothing changes and the run fails.
    ///
    /// # Errors
    /// As [`NewFilter::finish`]; also when the filter there changed.
    pub(crate) fn finish_over(mut self, replace: bool, unchanged: Option<&Header>) -> Result<()> {
        let l = &mut self.layers;
        if let Some(stale) = &mut l.stale {
            stale.write(
                self.tmp.as_file(),
                self.tmp.path(),
                &l.header,
                &l.maps,
                false,
            )?;
        }
        let mut left = None;
        if l.forget_changed {
            left = write_list(
                self.tmp.as_file(),
                self.tmp.path(),
                &mut l.header,
                &mut l.forget,
            )?;
            l.forget.stored();
            l.forget_changed = false;
        }
        let h = &mut self.layers.header;
        if !self.keep_times {
            h.updated = crate::clock::system_secs();
        }
        write_header(self.tmp.as_file(), self.tmp.path(), h)?;
        free_list(self.tmp.as_file(), left);
        for m in &self.layers.maps {
            m.flush()
                .with_context(|| format!("cannot write {}", self.tmp.path().display()))?;
        }
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot sync {}", self.tmp.path().display()))?;
        drop(self.layers);
        let target = self.target;
        // Hold an exclusive lock on the file being replaced, so no writer that
        // has it open loses its changes to the rename.
        // Checked again: the path may have changed since `build` began.
        let _old = if replace && check_target(&target, true)? == Target::Filter {
            let old = open_locked(&target, true)?;
            // What is locked is what `check_target` saw: a filter (or empty).
            if old.metadata()?.len() > 0 && !has_magic(&old) {
                bail!(
                    "{} changed into something that is not a seen filter during this run: \
                     it was left as it is",
                    target.display()
                );
            }
            if let Some(want) = unchanged {
                let now = super::header::read_header(&old, &target)?;
                if now.encode() != want.encode() {
                    bail!(
                        "{} changed during this run (another process recorded lines in it): \
                         it was left as it is; run again",
                        target.display()
                    );
                }
            }
            Some(old)
        } else {
            None
        };
        let persisted = if replace {
            self.tmp.persist(&target).map_err(|e| e.error)
        } else {
            self.tmp.persist_noclobber(&target).map_err(|e| e.error)
        };
        match persisted {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                bail!(
                    "{} already exists: pass --force to replace it or --add to insert into it",
                    target.display()
                )
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot move the new filter to {}", target.display())
                });
            }
        }
        let (dir, _) = dir_and_name(&target)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Store for NewFilter {
    fn seed(&self) -> u64 {
        self.layers.header.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.layers.contains(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        let mut room = super::write::FileRoom {
            file: self.tmp.as_file(),
            path: self.tmp.path(),
            sync: false,
            held: false,
        };
        self.layers.add(hashes, Some(out), &mut room)
    }
}
