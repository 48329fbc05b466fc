//! Progress on standard error, for work that lasts more than about a second.
//!
//! The work only bumps two relaxed atomic counters, once per chunk of input (or
//! per MiB of filter scanned), so the hot path pays nothing measurable. A
//! ticker thread reads them ten times a second and draws: an indicatif bar with
//! bytes, percent and ETA when the total is known (regular files, filters), a
//! spinner with lines and lines/s otherwise (standard input). On a terminal the
//! bar appears after [`DELAY`] and is cleared at the end; with `--progress` on
//! something that is not a terminal (a log file), one plain line is written per
//! second instead, since cursor movements would only garble it.

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static BYTES: AtomicU64 = AtomicU64::new(0);
/// The bar on the terminal, if one is drawn: messages go above it.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);
static ITEMS: AtomicU64 = AtomicU64::new(0);

/// How long work runs before progress is shown (unless `SEEN_PROGRESS_DELAY_MS`
/// says otherwise, for tests).
pub const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(100);
const PLAIN_TICK: Duration = Duration::from_secs(1);

/// Counts `bytes` and `items` of work done (called per chunk, not per line).
#[inline]
pub fn advance(bytes: u64, items: u64) {
    BYTES.fetch_add(bytes, Relaxed);
    ITEMS.fetch_add(items, Relaxed);
}

/// Prints `line` on stderr, above the progress bar when one is drawn (so
/// the bar neither overwrites it nor is cut by it). Used by
/// [`say!`](crate::say) for messages printed while work is under way.
pub fn eprint_line(line: &str) {
    let bar = ACTIVE.lock().ok().and_then(|a| a.clone());
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// Clears the bar now, before an exit that skips destructors (a signal).
pub fn clear() {
    let bar = ACTIVE.lock().ok().and_then(|mut a| a.take());
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// `eprintln!` for messages printed while work is under way: above the
/// progress bar, if one is drawn.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::progress::eprint_line(&format!($($arg)*))
    };
}

/// When progress may be shown: `--progress` (forced, even off a terminal)
/// and `-q` (never), as the command line says them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Show {
    /// Shown even when stderr is not a terminal.
    pub forced: bool,
    /// Never shown.
    pub quiet: bool,
}

/// Where progress goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// An indicatif bar on the terminal.
    Bar,
    /// One plain line per second (`--progress` when stderr is not a terminal).
    Plain,
}

/// A running progress display; stops (and clears its bar) when dropped.
#[derive(Debug, Default)]
pub struct Progress {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress of work over `total` bytes (`None`: unknown) whose
    /// items are called `unit` (e.g. "lines"), if `args` and the terminal say so.
    /// A command whose data goes to stdout (`dedup`, `query`) passes
    /// `prints_lines`: when stdout is the terminal too, the lines themselves
    /// show progress, and a bar would only be drawn between them.
    pub fn start(
        show: Show,
        total: Option<u64>,
        unit: &'static str,
        prints_lines: bool,
    ) -> Progress {
        let tty =
            std::io::stderr().is_terminal() && !(prints_lines && std::io::stdout().is_terminal());
        let style = match (show.quiet, show.forced, tty) {
            (true, _, _) => return Progress::default(),
            (false, _, true) => Style::Bar,
            (false, true, false) => Style::Plain,
            (false, false, false) => return Progress::default(),
        };
        BYTES.store(0, Relaxed);
        ITEMS.store(0, Relaxed);
        let delay = crate::tuning::get().progress_delay.unwrap_or(DELAY);
        let start = Instant::now();
        let mut view = View {
            style,
            total,
            unit,
            start,
            bar: None,
        };
        if delay.is_zero() {
            // Shown from the first moment: draw now, so even a short run shows it.
            view.draw();
        }
        let (stop, stopped) = channel::<()>();
        let thread = std::thread::Builder::new()
            .name("seen-progress".into())
            .spawn(move || {
                let tick = if style == Style::Plain {
                    PLAIN_TICK
                } else {
                    TICK
                };
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    if start.elapsed() >= delay {
                        view.draw();
                    }
                }
                view.finish();
            })
            .ok();
        Progress {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The ticker's state.
struct View {
    style: Style,
    total: Option<u64>,
    unit: &'static str,
    start: Instant,
    bar: Option<ProgressBar>,
}

impl View {
    /// `12,345,678 lines, 7.5M lines/s`.
    fn items(&self) -> String {
        let n = ITEMS.load(Relaxed);
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        format!(
            "{} {}, {}/s",
            HumanCount(n),
            self.unit,
            human_rate(n as f64 / secs)
        )
    }

    fn draw(&mut self) {
        let bytes = BYTES.load(Relaxed);
        match self.style {
            Style::Bar => {
                let msg = if self.unit.is_empty() {
                    String::new()
                } else {
                    self.items()
                };
                let (total, unit) = (self.total, self.unit);
                let first = msg.clone();
                let bar = self.bar.get_or_insert_with(|| {
                    let bar = new_bar(total, unit, first);
                    if let Ok(mut a) = ACTIVE.lock() {
                        *a = Some(bar.clone());
                    }
                    bar
                });
                bar.set_position(bytes);
                bar.set_message(msg);
                bar.tick();
            }
            Style::Plain => {
                let mut line = format!("seen: {}", HumanBytes(bytes));
                if let Some(t) = self.total.filter(|&t| t > 0) {
                    line += &format!(
                        " of {} ({:.0}%)",
                        HumanBytes(t),
                        100.0 * bytes as f64 / t as f64
                    );
                }
                if !self.unit.is_empty() {
                    line += &format!(", {}", self.items());
                }
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    }

    fn finish(self) {
        if self.bar.is_some() {
            clear();
        }
    }
}

/// A bar for `total` bytes (a spinner when unknown), showing `msg` first: it
/// is built hidden and shown only once styled, so no frame lacks its message.
fn new_bar(total: Option<u64>, unit: &str, msg: String) -> ProgressBar {
    let template = match (total, unit.is_empty()) {
        (Some(_), true) => "{spinner} [{bar:30}] {bytes}/{total_bytes} ({percent}%), ETA {eta}",
        (Some(_), false) => {
            "{spinner} [{bar:30}] {bytes}/{total_bytes} ({percent}%), {msg}, ETA {eta}"
        }
        (None, _) => "{spinner} {bytes} read, {msg}",
    };
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(msg);
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    bar
}

/// `7.5M`, `830k`, `12`.
fn human_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.1}M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.0}k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(human_rate(7_512_345.0), "7.5M");
        assert_eq!(human_rate(830_400.0), "830k");
        assert_eq!(human_rate(12.0), "12");
    }
}
