//! `seen copy`: a filter from a file to Redis, from Redis to a file, or
//! between two Redis locations, byte for byte; and through a pipe (`-`, to
//! another machine: `seen copy F - | ssh host seen copy - F`), compressed
//! with zstd when asked (`--zstd`, or a name ending in `.zst`).

use crate::cli::CopyArgs;
use crate::progress::Progress;
use crate::store::FilterAt;
use anyhow::{Context, Result, anyhow, bail};
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// zstd's level when none is given: fast, and most of what a higher one
/// saves on a filter (docs/PERFORMANCE.md, "Copies through a pipe").
const ZSTD_LEVEL: i32 = 3;

/// Runs `seen copy`.
///
/// # Errors
/// A source that is not a usable filter, a target that may not be written,
/// or a server that cannot be reached.
pub fn run(mut a: CopyArgs) -> Result<ExitCode> {
    // A pipe or a .zst file is staged as a plain filter file.
    let stage = Stage::default();
    let level = packing(&a)?;
    let to = level.map(|level| (a.to.clone(), level));
    if let Some((at, _)) = &to {
        refuse_target(at, a.force)?;
        a.to = FilterAt::File(stage.dir()?.join("to.seen"));
    }
    let mut named = None;
    if a.from.is_stdio() || is_zst(&a.from) {
        let staged = stage.dir()?.join("from.seen");
        unpack(&a.from, &staged)?;
        named = Some((staged.display().to_string(), name(&a.from)));
        a.from = FilterAt::File(staged);
    }
    // Messages name the source as given, not where it was staged.
    copy(&a).map_err(|e| match &named {
        Some((staged, name)) => anyhow!("{}", format!("{e:#}").replace(staged, name)),
        None => e,
    })?;
    if let Some((at, level)) = to {
        pack(&stage.dir()?.join("to.seen"), &at, level)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The copy between two stores.
fn copy(a: &CopyArgs) -> Result<()> {
    let link = a.lock.link();
    // Refuse a target that may not be written before reading anything.
    if a.to.path().is_none() && a.from.path().is_some() {
        // Only the header is read here (a filter the target cannot keep).
        a.to.refuse_header(a.from.open_read(link)?.header())?;
    }
    a.to.check_new(a.force, link, "")?;
    let mut from = a.from.open_read(link)?;
    // Its damage would be hidden under the copy's new checksums.
    from.check_whole()?;
    let header = from.header().clone();
    let forget = from.forget_list();
    // Only a fetch takes time worth showing: a file's bits are mapped.
    let progress = from
        .fetches_bits()
        .then(|| Progress::start(a.progress.into(), Some(header.bit_bytes()), "", false));
    let bits = from.bits(&mut |b| crate::progress::advance(b, 0))?;
    drop(progress);
    a.to.write_whole(link, &header, &bits, &forget, a.force)
}

/// A file whose name ends in `.zst`.
fn is_zst(at: &FilterAt) -> bool {
    at.path()
        .and_then(Path::extension)
        .is_some_and(|e| e == "zst")
}

/// The zstd level of the copy's output, `Some(0)` for plain output
/// through a pipe, `None` for a copy between stores.
fn packing(a: &CopyArgs) -> Result<Option<i32>> {
    let asked = a.zstd;
    if a.to.path().is_none() {
        if asked.is_some() {
            bail!(
                "--zstd compresses a copy into a file or through a pipe (-), not into {}",
                a.to
            );
        }
        return Ok(None);
    }
    if a.to.is_stdio() {
        return Ok(Some(asked.unwrap_or(0)));
    }
    Ok(asked
        .or(is_zst(&a.to).then_some(ZSTD_LEVEL))
        .filter(|&l| l != 0))
}

/// Refuses a terminal for a filter's bytes, and a file already there
/// without `--force`, before anything is read.
fn refuse_target(at: &FilterAt, force: bool) -> Result<()> {
    if at.is_stdio() {
        if io::stdout().is_terminal() {
            bail!(
                "standard output is a terminal: a filter is binary; pipe it (`seen copy F - | \
                 ssh host seen copy - F`) or redirect it to a file"
            );
        }
        return Ok(());
    }
    let path = at.path().expect("a file");
    if !force && path.symlink_metadata().is_ok() {
        bail!("{} already exists: --force replaces it", path.display());
    }
    Ok(())
}

/// Writes the filter file at `from` to `to` (standard output or a file,
/// replaced whole), compressed at `level` (0: as it is).
fn pack(from: &Path, to: &FilterAt, level: i32) -> Result<()> {
    let mut src = File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    let cannot = || format!("cannot write {to}");
    if to.is_stdio() {
        let out = io::stdout().lock();
        return write_packed(&mut src, out, level)
            .map(drop)
            .with_context(cannot);
    }
    let path = to.path().expect("a file");
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".seen-copy-")
        .tempfile_in(dir)
        .with_context(cannot)?;
    let file = write_packed(&mut src, tmp.as_file(), level).with_context(cannot)?;
    file.sync_all().with_context(cannot)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(cannot)?;
    Ok(())
}

/// Copies `src` into `out`, through zstd at `level` unless it is 0.
fn write_packed<W: Write>(src: &mut File, mut out: W, level: i32) -> io::Result<W> {
    if level == 0 {
        io::copy(src, &mut out)?;
    } else {
        let mut z = zstd::stream::Encoder::new(out, level)?;
        io::copy(src, &mut z)?;
        out = z.finish()?;
    }
    out.flush()?;
    Ok(out)
}

/// How messages name a source.
fn name(from: &FilterAt) -> String {
    if from.is_stdio() {
        "standard input".to_string()
    } else {
        from.to_string()
    }
}

/// Stages the filter at `from` (standard input or a file, compressed with
/// zstd or not: its first bytes tell) as a plain file at `to`.
fn unpack(from: &FilterAt, to: &Path) -> Result<()> {
    let input: Box<dyn Read> = if from.is_stdio() {
        Box::new(io::stdin().lock())
    } else {
        let path = from.path().expect("a file");
        Box::new(File::open(path).with_context(|| format!("cannot read {}", path.display()))?)
    };
    let name = name(from);
    let mut input = BufReader::with_capacity(1 << 20, input);
    let head = input
        .fill_buf()
        .with_context(|| format!("cannot read {name}"))?;
    if head.is_empty() {
        bail!("{name} is empty: no filter to copy");
    }
    let zstd = head.starts_with(&ZSTD_MAGIC);
    let mut out = File::create(to).with_context(|| format!("cannot stage {}", to.display()))?;
    if zstd {
        zstd::stream::copy_decode(input, &mut out)
            .with_context(|| format!("{name}: not a whole zstd stream (cut short, or damaged)"))?;
    } else {
        io::copy(&mut input, &mut out).with_context(|| format!("cannot read {name}"))?;
    }
    Ok(())
}

/// A temporary directory, made when first needed (in `$TMPDIR`), removed
/// with the run.
#[derive(Default)]
struct Stage(std::cell::OnceCell<tempfile::TempDir>);

impl Stage {
    fn dir(&self) -> Result<PathBuf> {
        if self.0.get().is_none() {
            let d = tempfile::Builder::new()
                .prefix("seen-copy-")
                .tempdir()
                .context("cannot make a temporary directory to stage the copy in ($TMPDIR)")?;
            let _ = self.0.set(d);
        }
        Ok(self.0.get().expect("set").path().to_path_buf())
    }
}
