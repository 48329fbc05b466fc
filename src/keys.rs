//! What part of a record is hashed: the *key*.
//!
//! By default the key is the whole record, byte for byte. Key options make it a
//! field of the record (`-k N`: fields are runs of blanks, as in awk; with
//! `-t C`: split on every byte C, as in `cut`), strip surrounding whitespace (`--trim`),
//! put a URL in canonical form (`--url`, `--url-sort-query`) or fold case
//! (`--ignore-case`), applied in that order. The record itself is always what is
//! printed. A filter file records its key options (header bytes 44–47, see
//! `docs/FORMAT.md`) so every later run normalises keys the same way.

use std::fmt;

/// How records become keys. The default is the whole, unchanged record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// The 1-based field to use (`None`: the whole record).
    pub field: Option<u16>,
    /// Byte that separates fields (`-t`); `None`: fields are runs of blanks
    /// (space, tab, newline), leading and trailing blanks ignored, as in awk.
    /// Only meaningful with `field` (`None` without one).
    pub delimiter: Option<u8>,
    /// Strip ASCII whitespace (space, tab, CR, LF, VT, FF) around the key.
    pub trim: bool,
    /// Put keys that parse as absolute URLs in canonical form.
    pub url: bool,
    /// With `url`: sort the query parameters.
    pub url_sort_query: bool,
    /// Fold case (Unicode lower case for UTF-8 keys, ASCII otherwise).
    pub ignore_case: bool,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec::RAW
    }
}

// Bit layout of the header's key options field (u32, little-endian).
const FIELD_MASK: u32 = 0xFFFF;
const DELIMITER_SHIFT: u32 = 16;
const IGNORE_CASE: u32 = 1 << 24;
const TRIM: u32 = 1 << 25;
const URL: u32 = 1 << 26;
const URL_SORT_QUERY: u32 = 1 << 27;
/// Fields are runs of blanks (no `-t`); format 1.5.
pub(crate) const BLANKS: u32 = 1 << 28;
const KNOWN: u32 = 0x1FFF_FFFF;

impl KeySpec {
    /// The whole record, unchanged.
    pub const RAW: KeySpec = KeySpec {
        field: None,
        delimiter: None,
        trim: false,
        url: false,
        url_sort_query: false,
        ignore_case: false,
    };

    /// The same options for input that is a key already: no field is
    /// selected; trimming, URL and case rules still apply (`query`'s items).
    pub fn without_field(self) -> KeySpec {
        KeySpec {
            field: None,
            delimiter: None,
            ..self
        }
    }

    /// Whether keys are the records themselves (the fast path).
    pub fn is_raw(&self) -> bool {
        self.field.is_none() && !self.trim && !self.url && !self.ignore_case
    }

    /// The header encoding: bits 0–15 the field (0 = whole record), bits 16–23
    /// the delimiter (0 without a field or with blanks), bit 24 ignore case,
    /// bit 25 trim, bit 26 URL, bit 27 sorted URL query, bit 28 fields are runs
    /// of blanks; bits 29–31 zero.
    pub fn to_bits(&self) -> u32 {
        let mut b = 0;
        if let Some(f) = self.field {
            b |= u32::from(f);
            match self.delimiter {
                Some(d) => b |= u32::from(d) << DELIMITER_SHIFT,
                None => b |= BLANKS,
            }
        }
        for (on, bit) in [
            (self.ignore_case, IGNORE_CASE),
            (self.trim, TRIM),
            (self.url, URL),
            (self.url && self.url_sort_query, URL_SORT_QUERY),
        ] {
            if on {
                b |= bit;
            }
        }
        b
    }

    /// Decodes the header field.
    ///
    /// # Errors
    /// Unknown bits, a delimiter without a field, blanks with a delimiter, or
    /// a sorted query without URL.
    pub fn from_bits(b: u32) -> Result<KeySpec, String> {
        if b & !KNOWN != 0 {
            return Err(format!("= {b:#x} has unknown bits set"));
        }
        let field = (b & FIELD_MASK) as u16;
        let delimiter = (b >> DELIMITER_SHIFT) as u8;
        let blanks = b & BLANKS != 0;
        if field == 0 && (delimiter != 0 || blanks) {
            return Err(format!("= {b:#x} sets a delimiter but no field"));
        }
        if blanks && delimiter != 0 {
            return Err(format!("= {b:#x} splits on blanks and on a delimiter"));
        }
        if b & URL_SORT_QUERY != 0 && b & URL == 0 {
            return Err(format!("= {b:#x} sorts URL queries without URL keys"));
        }
        Ok(KeySpec {
            field: (field != 0).then_some(field),
            delimiter: (field != 0 && !blanks).then_some(delimiter),
            trim: b & TRIM != 0,
            url: b & URL != 0,
            url_sort_query: b & URL_SORT_QUERY != 0,
            ignore_case: b & IGNORE_CASE != 0,
        })
    }

    /// The flags that give this spec, e.g. `-k 2 -t ',' --trim` (`--raw-keys`
    /// for the whole record).
    pub fn flags(&self) -> String {
        if self.is_raw() {
            return "--raw-keys".into();
        }
        let mut parts = Vec::new();
        if let Some(f) = self.field {
            parts.push(format!("-k {f}"));
            if let Some(d) = self.delimiter {
                parts.push(format!("-t {}", show_byte(d)));
            }
        }
        if self.trim {
            parts.push("--trim".into());
        }
        if self.url {
            parts.push("--url".into());
        }
        if self.url && self.url_sort_query {
            parts.push("--url-sort-query".into());
        }
        if self.ignore_case {
            parts.push("--ignore-case".into());
        }
        parts.join(" ")
    }
}

impl fmt::Display for KeySpec {
    /// Plain words, e.g. `field 2 (','-separated), trimmed, case-folded`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_raw() {
            return f.write_str("whole record");
        }
        let mut parts = Vec::new();
        match self.field {
            Some(n) => parts.push(match self.delimiter {
                Some(d) => format!("field {n} ({}-separated)", show_byte(d)),
                None => format!("field {n} (blank-separated)"),
            }),
            None => parts.push("whole record".into()),
        }
        if self.trim {
            parts.push("trimmed".into());
        }
        if self.url {
            parts.push(if self.url_sort_query {
                "canonical URL with sorted query".into()
            } else {
                "canonical URL".into()
            });
        }
        if self.ignore_case {
            parts.push("case-folded".into());
        }
        f.write_str(&parts.join(", "))
    }
}

/// A byte as a person would type it after `-t`: `','`, `'\t'`, `0x1f`.
fn show_byte(b: u8) -> String {
    match b {
        b'\t' => "'\\t'".into(),
        b'\'' => "\"'\"".into(),
        0x21..=0x7e | b' ' => format!("'{}'", b as char),
        _ => format!("{b:#04x}"),
    }
}

/// Parses the `-t` value: one byte, or `\t`, `\0`, `\\`, or `0xHH`.
///
/// # Errors
/// Anything longer than one byte that is none of those.
pub fn parse_delimiter(s: &str) -> Result<u8, String> {
    match s {
        "\\t" | "tab" | "TAB" => return Ok(b'\t'),
        "\\0" => return Ok(0),
        "\\\\" => return Ok(b'\\'),
        _ => {}
    }
    if s.len() == 1 {
        return Ok(s.as_bytes()[0]);
    }
    if let Some(hex) = s
        .strip_prefix("0x")
        .filter(|h| (1..=2).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
        && let Ok(b) = u8::from_str_radix(hex, 16)
    {
        return Ok(b);
    }
    Err(format!(
        "`{s}` is not a single-byte delimiter: use e.g. ',' or ';', '\\t' for tab, or 0x1f"
    ))
}

/// Turns records into keys, reusing one buffer, and counts the records whose
/// key options did not apply.
#[derive(Debug, Clone)]
pub struct Keyer {
    spec: KeySpec,
    buf: Vec<u8>,
    /// Records without the asked field (their key is empty, as in awk).
    pub missing_field: u64,
    /// Keys that are not absolute URLs (with `--url`: hashed as they are).
    pub not_url: u64,
}

impl Keyer {
    /// A keyer for `spec`.
    pub fn new(spec: KeySpec) -> Keyer {
        Keyer {
            spec,
            buf: Vec::new(),
            missing_field: 0,
            not_url: 0,
        }
    }

    /// The key of `record` (without its terminator).
    pub fn key<'a>(&'a mut self, record: &'a [u8]) -> &'a [u8] {
        let s = self.spec;
        let mut k = record;
        if let Some(n) = s.field {
            let f = match s.delimiter {
                Some(d) => field(k, n, d),
                None => blank_field(k, n),
            };
            k = match f {
                Some(f) => f,
                None => {
                    self.missing_field += 1;
                    &[]
                }
            };
        }
        if s.trim {
            k = trim(k);
        }
        let mut owned = false;
        if s.url {
            let plain = plain_url(k);
            match plain {
                // Already canonical: hash it where it lies.
                Some((body, false)) if !s.url_sort_query || query_sorted(body) => k = body,
                _ => {
                    self.buf.clear();
                    if canonical_url_into(k, plain, s.url_sort_query, &mut self.buf) {
                        owned = true;
                    } else {
                        self.not_url += 1;
                    }
                }
            }
        }
        if s.ignore_case {
            if !owned {
                self.buf.clear();
                self.buf.extend_from_slice(k);
                owned = true;
            }
            fold_case(&mut self.buf);
        }
        if owned { &self.buf } else { k }
    }
}

/// Field `n` (1-based) of `record` split on `delimiter`; field 1 of a record
/// without delimiter is the record; `None` when there are fewer than `n` fields.
fn field(record: &[u8], n: u16, delimiter: u8) -> Option<&[u8]> {
    let mut start = 0;
    let mut seen = 1u16;
    for d in memchr::memchr_iter(delimiter, record) {
        if seen == n {
            return Some(&record[start..d]);
        }
        seen += 1;
        start = d + 1;
    }
    (seen == n).then(|| &record[start..])
}

/// Field `n` (1-based) of `record` where fields are runs of anything but
/// blanks (space, tab, newline), as awk splits by default: leading and
/// trailing blanks are ignored; `None` when there are fewer than `n` fields
/// (a blank or empty record has none).
fn blank_field(record: &[u8], n: u16) -> Option<&[u8]> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n');
    let mut rest = record;
    let mut seen = 0u16;
    loop {
        let start = rest.iter().position(|b| !blank(b))?;
        rest = &rest[start..];
        let end = rest.iter().position(blank).unwrap_or(rest.len());
        seen += 1;
        if seen == n {
            return Some(&rest[..end]);
        }
        rest = &rest[end..];
    }
}

/// `key` without whitespace (space, tab, LF, VT, FF, CR) at either end.
fn trim(key: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = key.iter().position(|b| !space(b)).unwrap_or(key.len());
    let end = key.iter().rposition(|b| !space(b)).map_or(start, |e| e + 1);
    &key[start..end]
}

/// The canonical form of an absolute URL (WHATWG parsing by the `url` crate:
/// scheme and host lower-cased, IDNA hosts in punycode, default port dropped,
/// `.`/`..` segments resolved, an empty path made `/`), without its fragment,
/// and with its query parameters sorted when `sort_query` (whole `name=value`
/// strings in byte order: `?b=2&a=1` = `?a=1&b=2`, and also `?a=2&a=1` = `?a=1&a=2`).
/// `None` when `key` is not UTF-8 or not an absolute URL.
pub fn canonical_url(key: &[u8], sort_query: bool) -> Option<String> {
    let mut out = Vec::new();
    canonical_url_into(key, plain_url(key), sort_query, &mut out)
        .then(|| String::from_utf8(out).expect("URLs serialize to ASCII"))
}

/// [`canonical_url`] appended to `out`; false (and `out` unchanged) when `key`
/// is not a URL. `plain` is [`plain_url`]`(key)`, computed by the caller: plain
/// URLs, which parsing would return as they are, skip the parser.
fn canonical_url_into(
    key: &[u8],
    plain: Option<(&[u8], bool)>,
    sort_query: bool,
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    match plain {
        Some((body, slash)) => {
            out.extend_from_slice(body);
            if slash {
                out.push(b'/');
            }
        }
        None => match parsed_url(key) {
            Some(u) => out.extend_from_slice(u.as_bytes()),
            None => return false,
        },
    }
    if sort_query {
        sort_query_params(out, start);
    }
    true
}

/// The canonical form by the `url` crate, without the fragment.
fn parsed_url(key: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(key).ok()?;
    let mut u = url::Url::parse(s).ok()?;
    u.set_fragment(None);
    Some(u.into())
}

/// Sorts the `&`-separated parameters of the query of the serialized URL in
/// `out[start..]` (the text after its first `?`: a canonical URL has no
/// fragment, and `?` cannot appear before its query).
fn sort_query_params(out: &mut Vec<u8>, start: usize) {
    if query_sorted(&out[start..]) {
        return;
    }
    let Some(q) = out[start..].iter().position(|&b| b == b'?') else {
        return;
    };
    let q = start + q + 1;
    let mut params: Vec<&[u8]> = out[q..].split(|&b| b == b'&').collect();
    params.sort_unstable();
    let sorted = params.join(&b'&');
    out.truncate(q);
    out.extend_from_slice(&sorted);
}

/// Whether the parameters of the query of a canonical `url` (after its first
/// `?`; none is sorted too) are in sorted order already.
fn query_sorted(url: &[u8]) -> bool {
    let Some(q) = memchr::memchr(b'?', url) else {
        return true;
    };
    let mut params = url[q + 1..].split(|&b| b == b'&');
    let Some(mut prev) = params.next() else {
        return true;
    };
    for p in params {
        if p < prev {
            return false;
        }
        prev = p;
    }
    true
}

/// `key` without its fragment, and whether `/` must be appended (an empty
/// path), when `key` is an `http`/`https` URL so plain that WHATWG parsing
/// would serialize it unchanged: lower-case scheme and host (letters, digits,
/// `-`, `.`; no port, no user, no IDNA or numeric host), a path and query of
/// printable ASCII that needs no percent-encoding, no `.`/`..` segment (nor
/// `%2e`), no backslash. `None` for anything else: the parser decides. A
/// property test checks this against the parser on generated URLs.
fn plain_url(key: &[u8]) -> Option<(&[u8], bool)> {
    let body = match memchr::memchr(b'#', key) {
        // A key that is not UTF-8 is not a URL, fragment included.
        Some(i) if std::str::from_utf8(&key[i + 1..]).is_err() => return None,
        Some(i) => &key[..i],
        None => key,
    };
    let rest = body
        .strip_prefix(b"https://")
        .or_else(|| body.strip_prefix(b"http://"))?;
    // One pass over the host, then the path, then the query.
    let mut i = 0;
    let mut label = 0; // start of the current host label
    while i < rest.len() && rest[i] != b'/' {
        match rest[i] {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            // An empty label (leading, trailing or doubled dot) is not plain.
            b'.' if i > label => label = i + 1,
            _ => return None,
        }
        if i == label && rest[i..].starts_with(b"xn--") {
            return None; // IDNA: the parser validates it
        }
        i += 1;
    }
    // A non-empty host whose last label starts with a letter (a number would
    // make it an IPv4 address).
    if i == label || !rest[label].is_ascii_lowercase() {
        return None;
    }
    let empty_path = i == rest.len();
    let (path, query) = match memchr::memchr(b'?', &rest[i..]) {
        Some(q) => (&rest[i..i + q], Some(&rest[i + q + 1..])),
        None => (&rest[i..], None),
    };
    if !path.iter().all(|&b| PATH_PLAIN[b as usize]) {
        return None;
    }
    // Rare in real URLs, so looked for only when a '.' or '%' is there.
    if memchr::memchr(b'.', path).is_some() && path.split(|&b| b == b'/').any(is_dots) {
        return None;
    }
    if memchr::memchr(b'%', path).is_some()
        && path
            .windows(3)
            .any(|w| w[0] == b'%' && w[1] == b'2' && w[2] | 0x20 == b'e')
    {
        return None; // %2e counts as a dot in dot segments
    }
    if !query.is_none_or(|q| q.iter().all(|&b| QUERY_PLAIN[b as usize])) {
        return None;
    }
    Some((body, empty_path))
}

/// `.` or `..`: a dot segment, which parsing resolves.
fn is_dots(segment: &[u8]) -> bool {
    segment == b"." || segment == b".."
}

/// Printable ASCII that parsing leaves as it is in a path of an http(s) URL
/// (and a few more excluded to stay on the safe side: `\\ ^ |`).
const PATH_PLAIN: [bool; 256] = plain_set(b"\"<>`{}\\^|?");
/// The same for a query (`'` is percent-encoded in special URLs' queries).
const QUERY_PLAIN: [bool; 256] = plain_set(b"\"<>'`{}\\^|");

const fn plain_set(excluded: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0x21;
    while b <= 0x7e {
        t[b] = true;
        b += 1;
    }
    let mut i = 0;
    while i < excluded.len() {
        t[excluded[i] as usize] = false;
        i += 1;
    }
    t
}

/// Lower-cases `buf` in place: Unicode lower case when it is UTF-8 with
/// non-ASCII letters, ASCII lower case otherwise.
fn fold_case(buf: &mut Vec<u8>) {
    match std::str::from_utf8(buf) {
        Ok(s) if !s.is_ascii() => *buf = s.to_lowercase().into_bytes(),
        _ => buf.make_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> KeySpec {
        KeySpec::RAW
    }

    #[test]
    fn bits_round_trip() {
        let specs = [
            spec(),
            KeySpec {
                field: Some(3),
                delimiter: Some(b','),
                ..spec()
            },
            KeySpec {
                field: Some(u16::MAX),
                delimiter: Some(0),
                trim: true,
                ignore_case: true,
                ..spec()
            },
            KeySpec {
                url: true,
                url_sort_query: true,
                ..spec()
            },
            KeySpec {
                field: Some(2),
                ..spec()
            },
        ];
        for s in specs {
            assert_eq!(KeySpec::from_bits(s.to_bits()), Ok(s), "{s}");
        }
        assert_eq!(spec().to_bits(), 0);
        // Blanks are bit 28, with no delimiter byte; a tab is byte 9.
        let blanks = KeySpec {
            field: Some(2),
            ..spec()
        };
        assert_eq!(blanks.to_bits(), 2 | 1 << 28);
        let tab = KeySpec {
            delimiter: Some(b'\t'),
            ..blanks
        };
        assert_eq!(tab.to_bits(), 2 | 9 << 16);
        assert_eq!(blanks.flags(), "-k 2");
        assert_eq!(tab.flags(), "-k 2 -t '\\t'");
        assert_eq!(blanks.to_string(), "field 2 (blank-separated)");
        assert!(KeySpec::from_bits(1 << 29).is_err());
        assert!(
            KeySpec::from_bits(1 << 28).is_err(),
            "blanks without a field"
        );
        assert!(KeySpec::from_bits(2 | 1 << 28 | 9 << 16).is_err());
        assert!(KeySpec::from_bits((b',' as u32) << 16).is_err());
        assert!(KeySpec::from_bits(URL_SORT_QUERY).is_err());
    }

    #[test]
    fn fields_follow_awk() {
        assert_eq!(field(b"a,b,c", 1, b','), Some(&b"a"[..]));
        assert_eq!(field(b"a,b,c", 3, b','), Some(&b"c"[..]));
        assert_eq!(field(b"a,b,c", 4, b','), None);
        assert_eq!(field(b"abc", 1, b','), Some(&b"abc"[..]));
        assert_eq!(field(b"a,,c", 2, b','), Some(&b""[..]));
        assert_eq!(field(b"", 1, b','), Some(&b""[..]));
    }

    /// Without `-t`, fields are what awk's default splitting gives.
    #[test]
    fn blank_fields_follow_awk() {
        assert_eq!(blank_field(b"x 1", 2), Some(&b"1"[..]));
        assert_eq!(blank_field(b"  x \t  1  ", 1), Some(&b"x"[..]));
        assert_eq!(blank_field(b"  x \t  1  ", 2), Some(&b"1"[..]));
        assert_eq!(blank_field(b"  x \t  1  ", 3), None);
        assert_eq!(blank_field(b"a\tb c\nd", 4), Some(&b"d"[..]));
        assert_eq!(blank_field(b"abc", 1), Some(&b"abc"[..]));
        assert_eq!(blank_field(b"", 1), None);
        assert_eq!(blank_field(b" \t ", 1), None);
        assert_eq!(blank_field(b"a,b", 1), Some(&b"a,b"[..]));
    }

    #[test]
    fn keys_in_order_field_trim_url_case() {
        let mut k = Keyer::new(KeySpec {
            field: Some(2),
            delimiter: Some(b'\t'),
            trim: true,
            url: true,
            ignore_case: true,
            ..spec()
        });
        assert_eq!(
            k.key(b"1\t  HTTP://Example.COM:80/A/./b/../C#x \t9"),
            b"http://example.com/a/c"
        );
        assert_eq!(k.key(b"only"), b"");
        assert_eq!(k.missing_field, 1);
        assert_eq!(k.key(b"1\t Not A Url "), b"not a url");
        assert_eq!(k.not_url, 2); // the empty key and "Not A Url"
    }

    /// Golden vectors: filters on disk hold keys made this way, so a change
    /// here (or in the `url` crate's serialization) breaks them.
    #[test]
    fn canonical_url_golden_vectors() {
        let cases: &[(&str, bool, Option<&str>)] = &[
            (
                "HTTP://Example.COM:80/a/./b/../c#frag",
                false,
                Some("http://example.com/a/c"),
            ),
            (
                "https://example.com:443",
                false,
                Some("https://example.com/"),
            ),
            (
                "https://example.com:8443/",
                false,
                Some("https://example.com:8443/"),
            ),
            (
                "https://BÜCHER.example/ä b",
                false,
                Some("https://xn--bcher-kva.example/%C3%A4%20b"),
            ),
            (
                "https://x.org/p?b=2&a=1&a=0#f",
                false,
                Some("https://x.org/p?b=2&a=1&a=0"),
            ),
            (
                "https://x.org/p?b=2&a=1&a=0#f",
                true,
                Some("https://x.org/p?a=0&a=1&b=2"),
            ),
            ("https://x.org/P/%7e", false, Some("https://x.org/P/%7e")),
            (
                "mailto:Someone@Example.com",
                false,
                Some("mailto:Someone@Example.com"),
            ),
            ("example.com/path", false, None),
            ("/relative", false, None),
            ("", false, None),
        ];
        for &(input, sort, want) in cases {
            assert_eq!(
                canonical_url(input.as_bytes(), sort).as_deref(),
                want,
                "{input:?} sort {sort}"
            );
        }
        assert_eq!(canonical_url(b"http://a.com/\xff", false), None);
        // Not UTF-8 after the '#' either: not a URL (the shortcut must agree).
        assert_eq!(canonical_url(b"http://a.com/#\xff", false), None);
        assert_eq!(canonical_url(b"http://a.com/x#\xc3", false), None);
        assert_eq!(plain_url(b"http://a.com/#\xff"), None);
    }

    /// The parser-free path for plain URLs gives exactly what the parser
    /// gives, on URLs generated from the characters and shapes that parsing
    /// changes (case, ports, users, IDNA and numeric hosts, dot segments,
    /// `%2e`, characters it percent-encodes, backslashes, fragments).
    #[test]
    fn plain_urls_serialize_as_the_parser_does() {
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: usize) -> usize {
                self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.0;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) % n as u64) as usize
            }
            /// An entry of `list`; with `clean`, one of its first `plain` entries.
            fn pick(&mut self, list: &[&'static str], plain: usize, clean: bool) -> &'static str {
                list[self.below(if clean { plain } else { list.len() })]
            }
        }
        let mut r = Rng(0x5EE);
        // Each list starts with the entries a plain URL may have.
        let schemes = [
            "http://", "https://", "HTTP://", "ftp://", "http:/", "https:",
        ];
        let labels = [
            "a",
            "example",
            "com",
            "org",
            "b-c",
            "a1",
            "-x",
            "x-",
            "xn--bcher-kva",
            "xn--a",
            "1",
            "127",
            "0x7f",
            "EX",
            "",
            "ü",
            "a_b",
            "9z",
        ];
        let ports = ["", ":80", ":443", ":8080", ":"];
        let users = ["", "u@", "u:p@"];
        let segments = ["a", "", "b.c", ".", "..", "%2e", ".%2E"];
        let chars = [
            "a", "Z", "0", "9", ".", "-", "_", "~", "%", "%2e", "%2E", "%41", "!", "$", "&", "'",
            "(", ")", "*", "+", ",", ";", "=", ":", "@", "\"", "<", ">", "`", "{", "}", "|", "\\",
            "^", " ", "\t", "/", "?", "é", "[", "]", "#",
        ];
        let (mut plain, total) = (0, 100_000);
        for i in 0..total {
            // Every other URL draws from the plain-looking entries, but for
            // one hostile character now and then.
            let clean = i % 2 == 0;
            let rare = if clean { 12 } else { 3 };
            let mut u = String::new();
            u += r.pick(&schemes, 2, clean);
            u += r.pick(&users, 1, clean);
            let n = 1 + r.below(4);
            let host: Vec<&str> = (0..n).map(|_| r.pick(&labels, 6, clean)).collect();
            u += &host.join(".");
            u += r.pick(&ports, 1, clean);
            for _ in 0..r.below(5) {
                u.push('/');
                if r.below(3) == 0 {
                    u += r.pick(&segments, 3, clean);
                } else {
                    for _ in 0..r.below(6) {
                        u += if r.below(rare) == 0 {
                            r.pick(&chars, 0, false)
                        } else {
                            "a"
                        };
                    }
                }
            }
            if r.below(2) == 0 {
                u.push('?');
                for _ in 0..r.below(8) {
                    u += if r.below(rare) == 0 {
                        r.pick(&chars, 0, false)
                    } else {
                        "k=v&"
                    };
                }
            }
            if r.below(4) == 0 {
                u.push('#');
                u += r.pick(&chars, 0, false);
            }
            if let Some((body, slash)) = plain_url(u.as_bytes()) {
                plain += 1;
                let mut fast = body.to_vec();
                if slash {
                    fast.push(b'/');
                }
                let parsed = parsed_url(u.as_bytes());
                assert_eq!(Some(String::from_utf8(fast).unwrap()), parsed, "{u:?}");
            }
        }
        // The generator must reach the fast path often enough to test it.
        println!("{plain} of {total} URLs were plain");
        assert!(
            plain > total / 20,
            "only {plain} of {total} URLs were plain"
        );
    }

    #[test]
    fn delimiters() {
        assert_eq!(parse_delimiter(","), Ok(b','));
        assert_eq!(parse_delimiter("\\t"), Ok(b'\t'));
        assert_eq!(parse_delimiter("0x1f"), Ok(0x1f));
        assert!(parse_delimiter(",,").is_err());
        assert!(parse_delimiter("").is_err());
        assert!(parse_delimiter("0x+f").is_err());
        assert_eq!(trim(b"\x0b\x0c a b\r\n\t"), b"a b");
        assert_eq!(trim(b" \t "), b"");
        assert_eq!(show_byte(b'\t'), "'\\t'");
        assert_eq!(show_byte(0x1f), "0x1f");
    }

    #[test]
    fn case_folding() {
        let mut k = Keyer::new(KeySpec {
            ignore_case: true,
            ..spec()
        });
        assert_eq!(k.key("ÉCOLE Straße".as_bytes()), "école straße".as_bytes());
        assert_eq!(k.key(b"A\xffB"), b"a\xffb");
    }
}
