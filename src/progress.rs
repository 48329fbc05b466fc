//! Progress on standard error, for work that lasts more than about a second.
//!
//! The work only bumps two relaxed atomic counters, once per chunk of input (or
//! per MiB of filter scanned), so the hot path pays nothing measurable. A
//! ticker thread reads them ten times a second and draws: an indicatif bar with
//! bytes, percent and ETA when the total is known (regular files, filters; the
//! ETA is from the rate since the work started, see [`eta`]), a
//! spinner with lines and lines/s otherwise (standard input). On a terminal the
//! bar appears after [`DELAY`] and is cleared at the end; with `--progress` on
//! something that is not a terminal (a log file), one plain line is written per
//! second instead (the same fields, ETA included), since cursor movements
//! would only garble it.

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
pub(crate) const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(100);
const PLAIN_TICK: Duration = Duration::from_secs(1);

/// Counts `bytes` and `items` of work done (called per chunk, not per line).
#[inline]
pub(crate) fn advance(bytes: u64, items: u64) {
    BYTES.fetch_add(bytes, Relaxed);
    ITEMS.fetch_add(items, Relaxed);
}

/// Prints `line` on stderr, above the progress bar when one is drawn (so
/// the bar neither overwrites it nor is cut by it). Used by
/// [`say!`](crate::say) for messages printed while work is under way.
pub(crate) fn eprint_line(line: &str) {
    let bar = ACTIVE.lock().ok().and_then(|a| a.clone());
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// Clears the bar now, before an exit that skips destructors (a signal).
pub(crate) fn clear() {
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
pub(crate) struct Show {
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

/// How progress is shown, if at all: a bar when stderr is a terminal (but
/// not when the command's lines go to that terminal too: they show progress
/// themselves), plain lines when `--progress` forces it elsewhere, nothing
/// with `-q`.
fn style(show: Show, stderr_tty: bool, stdout_tty: bool, prints_lines: bool) -> Option<Style> {
    let tty = stderr_tty && !(prints_lines && stdout_tty);
    match (show.quiet, show.forced, tty) {
        (true, _, _) | (false, false, false) => None,
        (false, _, true) => Some(Style::Bar),
        (false, true, false) => Some(Style::Plain),
    }
}

/// A running progress display; stops (and clears its bar) when dropped.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress of work over `total` bytes (`None`: unknown) whose
    /// items are called `unit` (e.g. "lines"), if `args` and the terminal say so.
    /// A command whose data goes to stdout (`dedup`, `query`) passes
    /// `prints_lines`: when stdout is the terminal too, the lines themselves
    /// show progress, and a bar would only be drawn between them.
    pub(crate) fn start(
        show: Show,
        total: Option<u64>,
        unit: &'static str,
        prints_lines: bool,
    ) -> Progress {
        let Some(style) = style(
            show,
            std::io::stderr().is_terminal(),
            std::io::stdout().is_terminal(),
            prints_lines,
        ) else {
            return Progress::default();
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

    /// `ETA 1m 05s` from the rate since the work started (`ETA ?` before
    /// any byte is done), or `None` when the total is unknown.
    fn eta(&self, bytes: u64) -> Option<String> {
        let total = self.total?;
        Some(match eta(self.start.elapsed(), bytes, total) {
            Some(left) => format!("ETA {}", human_duration(left)),
            None => "ETA ?".to_string(),
        })
    }

    fn draw(&mut self) {
        let bytes = BYTES.load(Relaxed);
        let eta = self.eta(bytes);
        match self.style {
            Style::Bar => {
                let items = (!self.unit.is_empty()).then(|| self.items());
                let msg = [items, eta]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ");
                let total = self.total;
                let first = msg.clone();
                let bar = self.bar.get_or_insert_with(|| {
                    let bar = new_bar(total, first);
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
                if let Some(eta) = eta {
                    line += &format!(", {eta}");
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
fn new_bar(total: Option<u64>, msg: String) -> ProgressBar {
    // Not indicatif's own {eta}: the bar appears after DELAY with its position
    // already far along, and indicatif's estimator, seeing that jump, said
    // 0s for most of the run. The message carries an ETA from the rate since
    // the work started instead.
    let template = match total {
        Some(_) => "{spinner} [{bar:30}] {bytes}/{total_bytes} ({percent}%), {msg}",
        None => "{spinner} {bytes} read, {msg}",
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

/// Time left for work of `total` bytes with `done` of them done in
/// `elapsed`, at the same rate: `elapsed × (total − done) / done`. `None`
/// before anything is done (or when it would not fit a `Duration`).
fn eta(elapsed: Duration, done: u64, total: u64) -> Option<Duration> {
    if done >= total {
        return Some(Duration::ZERO);
    }
    if done == 0 {
        return None;
    }
    let left = total.saturating_sub(done);
    Duration::try_from_secs_f64(elapsed.as_secs_f64() * left as f64 / done as f64).ok()
}

/// `0s`, `59s`, `1m 05s`, `2h 03m`, `3d 04h`: the two largest units, in
/// whole seconds rounded to the nearest.
fn human_duration(d: Duration) -> String {
    let s = d
        .as_secs()
        .saturating_add(u64::from(d.subsec_millis() >= 500));
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    if days > 0 {
        format!("{days}d {:02}h", h % 24)
    } else if h > 0 {
        format!("{h}h {:02}m", m % 60)
    } else if m > 0 {
        format!("{m}m {:02}s", s % 60)
    } else {
        format!("{s}s")
    }
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

    #[test]
    fn progress_eta_is_from_the_rate_since_the_start() {
        let s = Duration::from_secs;
        // Half done after 3 s: 3 s left.
        assert_eq!(eta(s(3), 50, 100), Some(s(3)));
        // A quarter done after 2 s: 6 s left.
        assert_eq!(eta(s(2), 25, 100), Some(s(6)));
        // Nothing done yet: unknown, not 0.
        assert_eq!(eta(s(5), 0, 100), None);
        // Nothing to do (an empty file): done.
        assert_eq!(eta(Duration::ZERO, 0, 0), Some(Duration::ZERO));
        // All done (or more than the total, a file that grew): nothing left.
        assert_eq!(eta(s(4), 100, 100), Some(Duration::ZERO));
        assert_eq!(eta(s(4), 150, 100), Some(Duration::ZERO));
        // Absurd rates do not panic.
        assert_eq!(eta(s(u64::MAX / 2), 1, u64::MAX), None);
    }

    #[test]
    fn progress_durations_read_like_a_clock() {
        let s = Duration::from_secs;
        assert_eq!(human_duration(Duration::ZERO), "0s");
        assert_eq!(human_duration(Duration::from_millis(400)), "0s");
        assert_eq!(human_duration(Duration::from_millis(2_500)), "3s");
        assert_eq!(human_duration(s(59)), "59s");
        assert_eq!(human_duration(Duration::from_millis(59_600)), "1m 00s");
        assert_eq!(human_duration(s(65)), "1m 05s");
        assert_eq!(human_duration(s(3600 + 3 * 60 + 59)), "1h 03m");
        assert_eq!(human_duration(s(3 * 86_400 + 4 * 3600 + 5)), "3d 04h");
    }

    #[test]
    fn progress_style_follows_the_terminals_and_flags() {
        let auto = Show::default();
        let forced = Show {
            forced: true,
            quiet: false,
        };
        let quiet = Show {
            forced: false,
            quiet: true,
        };
        // (stderr tty, stdout tty, prints lines)
        for (err, out, lines) in [
            (true, true, true),
            (true, false, false),
            (false, false, true),
        ] {
            assert_eq!(style(quiet, err, out, lines), None, "-q: never");
        }
        assert_eq!(style(auto, true, true, false), Some(Style::Bar));
        assert_eq!(style(auto, true, false, true), Some(Style::Bar));
        // Lines printed on the terminal show progress themselves.
        assert_eq!(style(auto, true, true, true), None);
        // ...unless asked for: plain lines between them.
        assert_eq!(style(forced, true, true, true), Some(Style::Plain));
        // Off a terminal: only when forced, as plain lines.
        assert_eq!(style(auto, false, true, false), None);
        assert_eq!(style(forced, false, true, true), Some(Style::Plain));
        assert_eq!(style(forced, false, false, false), Some(Style::Plain));
    }
}
