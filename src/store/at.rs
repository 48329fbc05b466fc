//! Where a filter is: the one type a filter argument becomes ([`FilterAt`]),
//! parsed once by clap wherever a filter goes, so that no command tells a
//! file from a server itself.

use super::Place;
use crate::redis::{Location, is_location};
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// A filter's location, as a user wrote it: a file, or a Redis location
/// (`redis://…`, `redis+cluster://…`, and their TLS forms `rediss…`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterAt {
    /// A filter file (or a path where one is to be made).
    File(PathBuf),
    /// A filter in Redis or Valkey, standalone or Cluster.
    Redis(Location),
}

impl FilterAt {
    /// Parses a filter argument: a Redis location when it starts with one of
    /// the Redis schemes, else a path (any bytes).
    ///
    /// # Errors
    /// A malformed Redis location, saying what is wrong with it.
    pub fn parse(arg: &OsStr) -> anyhow::Result<FilterAt> {
        match arg.to_str() {
            Some(s) if is_location(s) => Location::parse(s).map(FilterAt::Redis),
            _ => Ok(FilterAt::File(PathBuf::from(arg))),
        }
    }

    /// The store's behaviour at this location: the one `match` on the kind
    /// of location (a new store adds its arm here).
    pub(crate) fn place(&self) -> &dyn Place {
        match self {
            FilterAt::File(p) => p,
            FilterAt::Redis(loc) => loc,
        }
    }

    /// The file, when the filter is one (checks that only a path can fail:
    /// the same file given twice, `--dups-out` onto the filter).
    pub fn path(&self) -> Option<&Path> {
        self.place().path()
    }

    /// Whether the location is `-`: standard input or output.
    pub fn is_stdio(&self) -> bool {
        self.path() == Some(Path::new("-"))
    }

    /// Whether a filter is there already: `None` when that cannot be told
    /// without reaching a server (the store finds out when it opens it).
    pub fn exists(&self) -> Option<bool> {
        self.place().exists()
    }

    /// What this location points at now (two paths to one file are one).
    pub(crate) fn identity(&self) -> Identity {
        self.place().identity()
    }
}

/// What a location points at, to tell when two arguments are one filter:
/// a file's device and inode, or a Redis location without its credentials.
#[derive(Debug, PartialEq)]
pub(crate) enum Identity {
    File(u64, u64),
    /// A location named without its credentials (a server's).
    Named(String),
    /// Nothing there yet.
    Absent,
}

/// The location as messages name it (a path as given; a Redis location
/// without its password).
impl fmt::Display for FilterAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterAt::File(p) => write!(f, "{}", p.display()),
            FilterAt::Redis(loc) => write!(f, "{loc}"),
        }
    }
}

/// The clap value parser of every filter argument (`value_parser =
/// FilterAtParser`): non-UTF-8 paths stay paths, a malformed Redis location
/// is a usage error naming the argument.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FilterAtParser;

impl clap::builder::TypedValueParser for FilterAtParser {
    type Value = FilterAt;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<FilterAt, clap::Error> {
        FilterAt::parse(value).map_err(|e| {
            let name = arg.map_or_else(|| "the filter".to_string(), ToString::to_string);
            let value = crate::redis::redact(&value.to_string_lossy());
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{value}' for '{name}': {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_locations() {
        let f = FilterAt::parse(OsStr::new("crawled.seen")).unwrap();
        assert_eq!(f, FilterAt::File("crawled.seen".into()));
        assert_eq!(f.exists(), Some(false));
        let r = FilterAt::parse(OsStr::new("redis://127.0.0.1:6379/crawl")).unwrap();
        assert!(matches!(&r, FilterAt::Redis(l) if l.name == "crawl"));
        assert_eq!(r.exists(), None);
        assert_eq!(r.path(), None);
        assert_eq!(r.to_string(), "redis://127.0.0.1:6379/crawl");
        let bad = FilterAt::parse(OsStr::new("redis://127.0.0.1:6379/")).unwrap_err();
        assert!(bad.to_string().contains("filter name"), "{bad}");
    }

    fn same(a: &Path, b: &Path) -> bool {
        let (a, b) = (
            FilterAt::parse(a.as_os_str()).unwrap().identity(),
            FilterAt::parse(b.as_os_str()).unwrap().identity(),
        );
        a == b && a != Identity::Absent
    }

    #[test]
    fn one_filter_under_two_names_is_one() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        let b = d.path().join("b");
        std::fs::hard_link(&a, &b).unwrap();
        assert!(same(&a, &b));
        assert!(same(&a, &d.path().join(".").join("a")));
        assert!(!same(&a, &d.path().join("nothing")));
        let with_pw = PathBuf::from("redis://u:pw@h:1/n");
        assert!(same(&with_pw, Path::new("redis://h:1/n")));
        assert!(!same(&with_pw, Path::new("redis://h:1/m")));
    }

    #[test]
    fn non_utf8_paths_stay_paths() {
        use std::os::unix::ffi::OsStrExt;
        let raw = OsStr::from_bytes(b"redis\xff.seen");
        assert_eq!(
            FilterAt::parse(raw).unwrap(),
            FilterAt::File(PathBuf::from(raw))
        );
    }
}
