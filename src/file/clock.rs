//! Setting a filter file's clock back (`seen verify --set-clock`), after a
//! `--now` too far ahead moved it for good (time in a filter never goes back
//! on its own: docs/FORMAT.md, "Setting a clock back").

use super::layers::{Layers, Room};
use anyhow::{Result, bail};

/// What setting a filter's clock back did.
#[derive(Debug)]
pub struct ClockBack {
    /// The filter's time before.
    pub from: u64,
    /// Its time now.
    pub to: u64,
    /// Lines and layers recorded in slices after `to`: now counted as
    /// recorded at `to`.
    pub moved: (u64, usize),
    /// Lines and layers of slices that expired when the clock moved ahead
    /// and are in the window at `to` again: seen again when `revived`, else
    /// cleared (a filter that forgot keys: its forget list may have let go
    /// of keys those layers hold, which would come back).
    pub expired: (u64, usize),
    /// Whether the `expired` layers answer again.
    pub revived: bool,
}

impl Layers {
    /// Sets the filter's time back to `t`: layers of slices after `t`'s are
    /// named for `t`'s slice, those that expired only because the time had
    /// moved ahead answer again (or are cleared: [`ClockBack::revived`]), and
    /// the forget list keeps what live layers hold. `None`: the time is not
    /// after `t`, nothing to do.
    ///
    /// # Errors
    /// A filter without a window, or a cleared layer that cannot be
    /// written.
    pub(super) fn set_clock(&mut self, t: u64, room: &mut dyn Room) -> Result<Option<ClockBack>> {
        let Some(w) = self.header.window else {
            bail!(
                "{} has no time window (--window), so it has no clock to set",
                self.name
            );
        };
        if t >= w.clock {
            return Ok(None);
        }
        let win = w.window;
        let cur = win.slice_at(t);
        let (live, gone) = (win.oldest_live(t), win.oldest_live(w.clock));
        let revived = self.header.forget.is_none();
        let mut back = ClockBack {
            from: w.clock,
            to: t,
            moved: (0, 0),
            expired: (0, 0),
            revived,
        };
        let mut expired = vec![false; self.header.layers.len()];
        for (j, e) in expired.iter_mut().enumerate() {
            let l = self.header.layers[j];
            if (live..gone).contains(&l.slice) && l.inserts > 0 {
                *e = true;
                back.expired.0 += l.inserts;
                back.expired.1 += 1;
                if !revived {
                    self.reuse(j, l.slice, room)?;
                }
            }
        }
        // No layer may be after the clock: one the jump expired (recorded
        // ahead of `t` before it) is counted as expired only.
        for (l, e) in self.header.layers.iter_mut().zip(expired) {
            if l.slice > cur {
                if !e {
                    back.moved.0 += l.inserts;
                    back.moved.1 += 1;
                }
                l.slice = cur;
            }
        }
        if let Some(w) = &mut self.header.window {
            w.clock = t;
            // Made at the time set back (a --now mistyped on the run that
            // made it): slices count from `t`'s, every layer named for it.
            w.base = w.base.min(cur);
        }
        self.alarms = None;
        self.prune_forget();
        Ok(Some(back))
    }
}
