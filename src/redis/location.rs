//! Where a Redis filter lives: the `redis://`, `redis+cluster://` locations a
//! user writes wherever a filter path goes, parsed without the password ever
//! reaching a message.

use anyhow::{Result, bail};
use std::fmt;

/// Marks the Redis part of a meta value (after the 4096 bytes of a header).
pub(super) const META_MAGIC: &[u8; 8] = b"SEENRDS1";
/// Bytes of a meta value, of either layout: a header, then 24 bytes.
pub(super) const META_LEN: usize = crate::format::HEADER_LEN + 24;

/// The schemes a filter location may start with.
pub(super) const SCHEMES: [&str; 4] = [
    "redis://",
    "rediss://",
    "redis+cluster://",
    "rediss+cluster://",
];

/// Environment variable holding the password when the location has none.
pub(crate) const PASSWORD_ENV: &str = "SEEN_REDIS_PASSWORD";

/// Whether `s` names a Redis filter rather than a file.
pub(crate) fn is_location(s: &str) -> bool {
    SCHEMES.iter().any(|p| s.starts_with(p))
}

/// A parsed filter location.
#[derive(Clone, PartialEq, Eq)]
pub struct Location {
    /// `host:port` of the server, or of the Cluster's seed nodes.
    pub nodes: Vec<(String, u16)>,
    /// The nodes are seeds of a Redis Cluster.
    pub cluster: bool,
    /// Connections use TLS (`rediss://`).
    pub tls: bool,
    /// Database number (standalone only).
    pub db: i64,
    /// ACL user, if any.
    pub user: Option<String>,
    /// Password (from the location, else [`PASSWORD_ENV`]); never printed.
    pub password: Option<String>,
    /// The filter's name: its keys are `seen:{NAME}:…`.
    pub name: String,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// The location as a user may write it again, without the password.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let cluster = if self.cluster { "+cluster" } else { "" };
        write!(f, "{scheme}{cluster}://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|(h, p)| {
                if h.contains(':') {
                    format!("[{h}]:{p}")
                } else {
                    format!("{h}:{p}")
                }
            })
            .collect();
        write!(f, "{}", nodes.join(","))?;
        if self.db != 0 {
            write!(f, "/{}", self.db)?;
        }
        write!(f, "/{}", self.name)
    }
}

/// Characters a filter name may hold: it goes inside key names and hash tags.
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

impl Location {
    /// Parses a location; the password comes from the location, else from
    /// the `SEEN_REDIS_PASSWORD` environment variable.
    ///
    /// # Errors
    /// A malformed location, with the form it should have.
    pub fn parse(s: &str) -> Result<Location> {
        Location::parse_with(s, std::env::var(PASSWORD_ENV).ok())
    }

    fn parse_with(s: &str, env_password: Option<String>) -> Result<Location> {
        const FORM: &str = "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]/NAME or \
                            redis+cluster://HOST:PORT[,HOST:PORT...]/NAME (rediss:// and \
                            rediss+cluster:// for TLS)";
        let Some((scheme, rest)) = s.split_once("://") else {
            bail!("{}: not a Redis location: write {FORM}", redact(s));
        };
        let (tls, cluster) = match scheme {
            "redis" => (false, false),
            "rediss" => (true, false),
            "redis+cluster" => (false, true),
            "rediss+cluster" => (true, true),
            _ => bail!("{}: not a Redis location: write {FORM}", redact(s)),
        };
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
                None => ((!a.is_empty()).then(|| a.to_string()), None),
            },
        };
        let password = password.or(env_password.filter(|p| !p.is_empty()));
        let parts: Vec<&str> = rest.split('/').collect();
        let (hosts, db, name) = match parts.as_slice() {
            [h, n] => (*h, 0, *n),
            [h, d, n] if !cluster => match d.parse::<i64>() {
                Ok(db) if db >= 0 => (*h, db, *n),
                _ => bail!(
                    "{}: database `{d}` is not a number: write {FORM}",
                    redact(s)
                ),
            },
            _ => bail!("{}: no filter name: write {FORM}", redact(s)),
        };
        if !name_ok(name) {
            bail!(
                "{}: filter name `{name}` must be 1 to 200 letters, digits, `-`, `_` or `.`",
                redact(s)
            );
        }
        let mut nodes = Vec::new();
        for h in hosts.split(',') {
            // An IPv6 address goes in brackets, as in a URL: [::1]:6379.
            let (host, port) = match h.strip_prefix('[') {
                Some(v6) => match v6.split_once(']') {
                    Some((host, "")) => (host, Some("6379")),
                    Some((host, p)) if p.starts_with(':') => (host, Some(&p[1..])),
                    _ => bail!(
                        "{}: `{h}` is not an IPv6 address in brackets with an optional \
                         port: write [::1]:6379",
                        redact(s)
                    ),
                },
                None => match h.rsplit_once(':') {
                    Some((host, p)) => (host, Some(p)),
                    None => (h, None),
                },
            };
            let port = match port.map(str::parse::<u16>) {
                None => 6379,
                Some(Ok(port)) if port > 0 => port,
                Some(_) => bail!(
                    "{}: port `{}` is not a port number",
                    redact(s),
                    port.unwrap_or_default()
                ),
            };
            if host.is_empty() {
                bail!("{}: no host: write {FORM}", redact(s));
            }
            nodes.push((host.to_string(), port));
        }
        if nodes.len() > 1 && !cluster {
            bail!(
                "{}: several hosts are seeds of a Cluster: write {scheme}+cluster://{hosts}/{name}",
                redact(s)
            );
        }
        Ok(Location {
            nodes,
            cluster,
            tls,
            db,
            user,
            password,
            name: name.to_string(),
        })
    }

    /// Key of the filter's meta data (the header).
    pub fn meta_key(&self) -> String {
        format!("seen:{{{}}}:meta", self.name)
    }

    /// Key of the filter's counters (a hash in the meta key's slot).
    pub fn count_key(&self) -> String {
        format!("seen:{{{}}}:count", self.name)
    }

    /// Key of shard `j` of layer `layer` (its own hash tag, so a Cluster
    /// spreads the shards over its slots).
    pub fn shard_key(&self, layer: usize, j: u64) -> String {
        format!("seen:{{{}:{layer}:{j}}}:b", self.name)
    }
}

/// `s` with any password between `:` and `@` replaced by `***`.
pub(crate) fn redact(s: &str) -> String {
    let Some((scheme, rest)) = s.split_once("://") else {
        return s.to_string();
    };
    match rest.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => s.to_string(),
        },
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_go_in_brackets() {
        let l = Location::parse_with("redis://[::1]:7000/x", None).unwrap();
        assert_eq!(l.nodes, vec![("::1".to_string(), 7000)]);
        assert_eq!(l.to_string(), "redis://[::1]:7000/x");
        let l = Location::parse_with("redis+cluster://[fe80::2]/x", None).unwrap();
        assert_eq!(l.nodes, vec![("fe80::2".to_string(), 6379)]);
        for bad in ["redis://[::1/x", "redis://[::1]7000/x", "redis://[::1]:0/x"] {
            assert!(Location::parse_with(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_standalone_and_cluster() {
        let l = Location::parse_with("redis://h:7000/3/crawl", None).unwrap();
        assert_eq!(l.nodes, vec![("h".to_string(), 7000)]);
        assert_eq!((l.db, l.cluster, l.name.as_str()), (3, false, "crawl"));
        let l = Location::parse_with("redis://localhost/crawl", None).unwrap();
        assert_eq!(l.nodes, vec![("localhost".to_string(), 6379)]);
        let l = Location::parse_with("redis+cluster://a:1,b:2/x.y", None).unwrap();
        assert!(l.cluster);
        assert_eq!(l.nodes.len(), 2);
        assert_eq!(l.to_string(), "redis+cluster://a:1,b:2/x.y");
        assert_eq!(l.shard_key(0, 17), "seen:{x.y:0:17}:b");
        assert_eq!(l.meta_key(), "seen:{x.y}:meta");
        assert!(!l.tls);
        let l = Location::parse_with("rediss://h:6380/crawl", None).unwrap();
        assert!(l.tls && !l.cluster);
        assert_eq!(l.to_string(), "rediss://h:6380/crawl");
        let l = Location::parse_with("rediss+cluster://a:1,b:2/c", None).unwrap();
        assert!(l.tls && l.cluster);
        assert_eq!(l.to_string(), "rediss+cluster://a:1,b:2/c");
    }

    #[test]
    fn passwords_never_show() {
        let l = Location::parse_with("redis://u:s3cret@h:1/n", None).unwrap();
        assert_eq!(l.password.as_deref(), Some("s3cret"));
        assert_eq!(l.user.as_deref(), Some("u"));
        assert!(!l.to_string().contains("s3cret"));
        assert!(!format!("{l:?}").contains("s3cret"));
        let l = Location::parse_with("redis://h/n", Some("envpw".into())).unwrap();
        assert_eq!(l.password.as_deref(), Some("envpw"));
        let e = Location::parse_with("redis://u:s3cret@h:x/n", None).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(e.to_string().contains("***"), "{e}");
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        for bad in [
            "redis://h",
            "redis://h/",
            "redis://h/a b",
            "redis://h/x/n",
            "redis://a:1,b:2/n",
            "redis://h:0/n",
            "redis-cluster://h:1/n",
            "rediss+cluster://",
            "redis+cluster://h:1/0/n",
        ] {
            assert!(Location::parse_with(bad, None).is_err(), "{bad}");
        }
    }
}
