//! `seen plan`: the layout, size and false-positive rate a configuration gives,
//! without writing anything.

use crate::cli::{DEFAULT_CAPACITY, PlanArgs};
use crate::filter::BLOCK_BITS;
use crate::filter::sizing::policy::Asked;
use crate::filter::sizing::{
    self, Growth, Plan, Spec, Window, classic_bits, classic_fpp, classic_k,
};
use crate::format::HEADER_LEN;
use anyhow::{Context, Result};
use indicatif::{HumanBytes, HumanCount};
use std::io::Write;
use std::process::ExitCode;

fn layout_text(p: &Plan) -> String {
    format!(
        "blocked, {BLOCK_BITS}-bit blocks, {} block{}/key, k = {} bits per block, {} bit positions",
        p.layout.blocks_per_key,
        if p.layout.blocks_per_key == 1 {
            ""
        } else {
            "s"
        },
        p.layout.k,
        p.layout.scheme.name()
    )
}

/// A layer's size: bytes, bits, bits per key.
fn size_text(p: &Plan) -> String {
    format!(
        "{} ({} bits, {:.2} bits per key)",
        HumanBytes(p.layout.bytes()),
        HumanCount(p.layout.bits()),
        p.bits_per_key()
    )
}

/// Runs `seen plan`.
///
/// # Errors
/// A configuration that cannot be sized, or a failed write.
pub fn run(a: PlanArgs) -> Result<ExitCode> {
    let spec = Asked::from(a.size).spec(DEFAULT_CAPACITY);
    let size = |i: u32| {
        spec.layer(i)
            .context("cannot size the filter (-n/--capacity, -p/--fpp)")
    };
    let first = size(0)?;
    let mut out = crate::output::stdout();
    if let Some(w) = spec.window {
        windowed(&mut out, &spec, w, &first)?;
        forgetting(&mut out)?;
        if a.classic {
            classic(&mut out, &spec)?;
        }
        out.flush().context("cannot write output")?;
        return Ok(ExitCode::SUCCESS);
    }
    let row = crate::report::field;
    row(
        &mut out,
        "capacity",
        format!(
            "{}{}",
            HumanCount(spec.capacity),
            if spec.growth.is_some() {
                " (first layer)"
            } else {
                ""
            }
        ),
    )?;
    row(
        &mut out,
        "target fpp",
        format!(
            "{:.1e}{}",
            spec.target_fpp,
            if spec.growth.is_some() {
                " (compound, at any size)"
            } else {
                " (at capacity)"
            }
        ),
    )?;
    match spec.growth {
        None => fixed(&mut out, &first)?,
        Some(g) => growing(&mut out, &spec, g, a.layers)?,
    }
    forgetting(&mut out)?;
    if a.classic {
        classic(&mut out, &spec)?;
    }
    out.flush().context("cannot write output")?;
    Ok(ExitCode::SUCCESS)
}

/// The rows of a fixed filter: its one layer's layout, size and rate.
fn fixed(out: &mut dyn Write, first: &Plan) -> Result<()> {
    let row = crate::report::field;
    row(out, "layout", layout_text(first))?;
    row(out, "size", size_text(first))?;
    row(
        out,
        "file size",
        format!(
            "{} bytes (with the {HEADER_LEN}-byte header)",
            HumanCount(first.layout.bytes() + HEADER_LEN as u64)
        ),
    )?;
    row(
        out,
        "expected fpp",
        format!("{:.3e} at capacity", first.expected_fpp),
    )?;
    Ok(())
}

/// The rows of a growing filter: its growth rule, then a table of its first
/// `layers` layers.
fn growing(out: &mut dyn Write, spec: &Spec, g: Growth, layers: u32) -> Result<()> {
    let row = crate::report::field;
    row(
        out,
        "growth",
        format!(
            "x{} capacity per layer, fpp ratio {} per layer",
            g.factor, g.ratio
        ),
    )?;
    writeln!(out)?;
    let head = [
        "layer",
        "capacity",
        "total cap",
        "layer fpp",
        "x",
        "k",
        "positions",
        "size",
        "total size",
        "vs fixed",
        "just grown",
    ];
    let mut rows = vec![head.map(String::from)];
    let (mut total_cap, mut total_bits) = (0u64, 0u64);
    for i in 0..layers {
        let Ok(p) = spec.layer(i) else {
            writeln!(
                out,
                "(layer {i} cannot be sized: it would be too large or its rate too low)"
            )?;
            break;
        };
        let prior_cap = total_cap;
        total_cap = total_cap.saturating_add(p.capacity);
        total_bits = total_bits.saturating_add(p.layout.bits());
        // Space against a fixed filter sized exactly for the keys held:
        // with every layer full, and just after this layer was added.
        let vs = |n: u64| {
            sizing::plan(n, spec.target_fpp)
                .map(|f| format!("{:.2}x", total_bits as f64 / f.layout.bits() as f64))
                .unwrap_or_else(|_| "-".into())
        };
        rows.push([
            i.to_string(),
            HumanCount(p.capacity).to_string(),
            HumanCount(total_cap).to_string(),
            format!("{:.1e}", p.target_fpp),
            p.layout.blocks_per_key.to_string(),
            p.layout.k.to_string(),
            p.layout.scheme.name().to_string(),
            HumanBytes(p.layout.bytes()).to_string(),
            HumanBytes(total_bits / 8).to_string(),
            vs(total_cap),
            if i == 0 {
                "-".into()
            } else {
                vs(prior_cap + 1)
            },
        ]);
    }
    crate::report::columns(out, &rows)?;
    writeln!(
        out,
        "\nvs fixed: bits of all layers / bits of a fixed filter for `total cap` keys at \
         {:.1e};\njust grown: the same when the layer above is full and this one empty.",
        spec.target_fpp
    )?;
    Ok(())
}

/// The rows of a filter with a time window: the window, one slice, and the
/// space of the live slices against a filter that never forgets.
fn windowed(out: &mut dyn Write, spec: &Spec, w: Window, first: &Plan) -> Result<()> {
    let row = crate::report::field;
    let live = u64::from(w.live());
    row(
        out,
        "capacity",
        format!("{} per window", HumanCount(spec.capacity)),
    )?;
    row(
        out,
        "target fpp",
        format!(
            "{:.1e} (compound over the {live} slices a lookup tests)",
            spec.target_fpp
        ),
    )?;
    row(out, "window", crate::report::window_rule(w.secs, w.slices))?;
    row(
        out,
        "slice",
        format!(
            "{} lines at {:.1e}; {}",
            HumanCount(first.capacity),
            first.target_fpp,
            layout_text(first)
        ),
    )?;
    row(out, "slice size", size_text(first))?;
    let bits = first.layout.bits().saturating_mul(live);
    let vs = sizing::plan(spec.capacity, spec.target_fpp)
        .map(|f| format!("{:.2}x", bits as f64 / f.layout.bits() as f64))
        .unwrap_or_else(|_| "-".into());
    row(
        out,
        "size",
        format!(
            "{} for {live} live slices ({vs} a filter for {} lines at {:.1e} that never forgets)",
            HumanBytes(bits / 8),
            HumanCount(spec.capacity),
            spec.target_fpp
        ),
    )?;
    let fpp = sizing::any_of((0..live).map(|_| first.expected_fpp));
    row(
        out,
        "expected fpp",
        format!("{fpp:.3e} with every live slice at capacity"),
    )?;
    row(
        out,
        "growth",
        match spec.growth {
            Some(g) => format!(
                "a slice that gets more than {} lines grows (x{} capacity per layer, fpp \
                 ratio {}; the first layer above is sized for it)",
                HumanCount(first.capacity),
                g.factor,
                g.ratio
            ),
            None => format!(
                "fixed: a slice past {} lines raises the rate (warned on stderr)",
                HumanCount(first.capacity)
            ),
        },
    )?;
    Ok(())
}

/// What keys forgotten with `seen forget` cost a filter file.
fn forgetting(out: &mut dyn Write) -> Result<()> {
    crate::report::field(
        out,
        "forgetting",
        format!(
            "{} bytes a key forgotten (`seen forget`), in pages of {}; nothing until the \
             first; a run keeps about {:.0} bytes a key in memory beside them",
            crate::filter::forget::ENTRY_BYTES,
            HumanBytes(crate::format::ALIGN),
            crate::filter::forget::MEMORY_BYTES_PER_KEY
        ),
    )?;
    Ok(())
}

/// The textbook classic filter for the same capacity and rate (`--classic`).
fn classic(out: &mut dyn Write, spec: &Spec) -> Result<()> {
    let n = spec.capacity;
    let m = classic_bits(n, spec.target_fpp);
    let k = classic_k(m, n);
    crate::report::field(
        out,
        "classic filter",
        format!(
            "{} bits ({}, {:.2} bits per key), k = {k}, fpp {:.3e} at {} keys (textbook)",
            HumanCount(m),
            HumanBytes(m.div_ceil(8)),
            m as f64 / n as f64,
            classic_fpp(m, n, k),
            HumanCount(n)
        ),
    )?;
    Ok(())
}
