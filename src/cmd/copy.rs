//! `seen copy`: a filter from a file to Redis, from Redis to a file, or
//! between two Redis locations, byte for byte.

use super::redis_location;
use crate::cli::CopyArgs;
use crate::file::format::Header;
use crate::file::{NewFilter, ReadFilter};
use crate::progress::Progress;
use crate::redis::RedisFilter;
use anyhow::Result;
use std::process::ExitCode;

/// Runs `seen copy`.
///
/// # Errors
/// A source that is not a usable filter, a target that may not be written,
/// or a server that cannot be reached.
pub fn run(a: CopyArgs) -> Result<ExitCode> {
    let link = a.lock.redis();
    let to_redis = redis_location(&a.to)?;
    // Refuse a target that may not be written before reading anything.
    if to_redis.is_none() {
        super::check_new_filter_path(&a.to, a.force, "")?;
    } else if let Some(loc) = &to_redis {
        if redis_location(&a.from)?.is_none() {
            // Only the header is read here (a filter Redis cannot keep).
            RedisFilter::refuse_header(loc, ReadFilter::open(&a.from)?.header())?;
        }
        if !a.force {
            RedisFilter::refuse_existing(loc, link)?;
        }
    }
    let (header, bits): (Header, Vec<Vec<u8>>) = match redis_location(&a.from)? {
        Some(loc) => {
            let mut f = RedisFilter::open(&loc, link, false)?;
            let header = f.header().clone();
            let progress = Progress::start(a.progress.into(), Some(header.bit_bytes()), "", false);
            let bits = f
                .read_all(&mut |b| crate::progress::advance(b, 0))?
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect();
            drop(progress);
            (header, bits)
        }
        None => {
            let f = ReadFilter::open(&a.from)?;
            let header = f.header().clone();
            let bits = (0..header.layers.len())
                .map(|i| f.layer_bits(i).to_vec())
                .collect();
            (header, bits)
        }
    };
    let bits: Vec<&[u8]> = bits.iter().map(Vec::as_slice).collect();
    match to_redis {
        Some(loc) => RedisFilter::upload(&loc, link, &header, &bits, a.force)?,
        None => NewFilter::copy_of(&a.to, &header, &bits)?.finish(a.force)?,
    }
    Ok(ExitCode::SUCCESS)
}
