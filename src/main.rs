//! `seen`: deduplicate huge streams of lines with a Bloom filter kept in a
//! memory-mapped file. This file only parses arguments, runs the subcommand and
//! maps errors to `seen: error: …` and exit status 2.

use clap::Parser;
use seen::{cli, clock, cmd, memory, output, signals, tuning};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether file descriptor 1 was closed when the process started. The Rust
/// runtime reopens a closed standard descriptor on /dev/null before `main`,
/// which would make `seen dedup -f F >&-` record every line and print none:
/// this looks before the runtime does.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Runs from `.init_array`, before the Rust runtime's set-up.
#[cfg(target_os = "linux")]
extern "C" fn look_at_stdout() {
    // SAFETY: fcntl(F_GETFD) only asks whether fd 1 is open; it touches no
    // memory and is safe to call before the runtime exists.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

#[cfg(target_os = "linux")]
#[used]
// SAFETY: `.init_array` holds plain `extern "C" fn()` pointers that the C
// runtime calls once at start-up; `look_at_stdout` is one, and it neither
// panics nor needs anything initialised.
#[unsafe(link_section = ".init_array")]
static LOOK_AT_STDOUT: extern "C" fn() = look_at_stdout;

fn main() -> ExitCode {
    if std::env::args_os().len() == 1 {
        eprint!("{}", cli::short_usage());
        return ExitCode::from(2);
    }
    tuning::install(tuning::Tuning::from_env());
    memory::fit_address_space_limit();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // Help, version, or a usage error: printed by clap, which would
        // exit 0 after `seen --help > /dev/full` wrote nothing.
        Err(e) => {
            let printed = e.print().and_then(|()| std::io::stdout().flush());
            return match printed {
                Ok(()) => ExitCode::from(e.exit_code() as u8),
                // `seen dedup --help | head -3`: the reader had enough.
                Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => {
                    ExitCode::from(e.exit_code() as u8)
                }
                Err(w) => {
                    eprintln!("seen: error: cannot write output: {w}");
                    ExitCode::from(2)
                }
            };
        }
    };
    if let Some(t) = cli.command.now() {
        clock::set_fixed(t);
    }
    if let Some(wait) = cli.command.lock_wait() {
        seen::file::wait_for_locks_at_most(wait);
    }
    signals::explain_sigbus();
    signals::ignore_sigxfsz();
    if cli.command.writes_stdout()
        && let Err(e) = output::check_stdout(STDOUT_CLOSED.load(Ordering::Relaxed))
    {
        eprintln!("seen: error: {e:#}");
        return ExitCode::from(2);
    }
    if matches!(cli.command, cli::Command::Build(_) | cli::Command::Dedup(_)) {
        // Runs that write a filter stop at a safe point on SIGINT/SIGTERM.
        signals::catch();
    }
    let result = match cli.command {
        cli::Command::Build(a) => cmd::build::run(a),
        cli::Command::Query(a) => cmd::query::run(a),
        cli::Command::Forget(a) => cmd::forget::run(a),
        cli::Command::Dedup(a) => cmd::dedup::run(a),
        cli::Command::Stats(a) => cmd::stats::run(a),
        cli::Command::Plan(a) => cmd::plan::run(a),
        cli::Command::Verify(a) => cmd::verify::run(a),
        cli::Command::Copy(a) => cmd::copy::run(a),
        cli::Command::Merge(a) => cmd::merge::run(a),
        cli::Command::Completions(a) => cmd::completions::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        // SIGINT/SIGTERM: a run stopped at a safe point (`signals::Interrupted`
        // from the pipeline), or before anything needed saving (a lock wait).
        Err(_) if signals::received() != 0 => ExitCode::from(128 + signals::received() as u8),
        Err(e) => {
            eprintln!("seen: error: {e:#}{}", hint(&e));
            ExitCode::from(2)
        }
    }
}

/// What an error's cause means, where the system's message does not say.
fn hint(e: &anyhow::Error) -> &'static str {
    let os = |code| {
        e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.raw_os_error() == Some(code))
        })
    };
    if os(libc::EFBIG) && memory::limited(rustix::process::Resource::Fsize) {
        " (the file-size limit, `ulimit -f`, was reached: raise it, or write elsewhere)"
    } else {
        ""
    }
}
