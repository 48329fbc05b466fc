//! Rooms stay small and their files do not lean on each other in a circle
//! (docs/ARCHITECTURE.md, "Small rooms"): no source file over 900 lines
//! before its unit tests, no function over 120 lines, and no two files of
//! one directory that import each other. A file or function that grows past
//! the limit fails here, naming it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 900;
const MAX_FN_LINES: usize = 120;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The lines of a file before its unit tests (`#[cfg(test)]`, or a test
/// module only for some targets: `#[cfg(all(test, …))]`).
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]") && !l.starts_with("#[cfg(all(test,"))
        .collect()
}

/// Each function (name, first line, length in lines): from its `fn` line
/// to the closing brace at the same indent.
fn functions<'a>(lines: &[&'a str]) -> Vec<(&'a str, usize, usize)> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let body = l.trim_start();
        let indent = &l[..l.len() - body.len()];
        let mut words = body.split_whitespace().peekable();
        while words
            .peek()
            .is_some_and(|w| w.starts_with("pub") || ["const", "unsafe", "async"].contains(w))
        {
            words.next();
        }
        if words.next() != Some("fn") || l.trim_end().ends_with(';') {
            continue;
        }
        let name = words
            .next()
            .and_then(|w| w.split(['(', '<']).next())
            .unwrap_or("?");
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|m| *m == close) {
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

#[test]
fn no_file_or_function_outgrows_its_limit() {
    let mut over = Vec::new();
    for (path, text) in all_sources() {
        let lines = code_lines(&text);
        if lines.len() > MAX_FILE_LINES {
            over.push(format!(
                "{}: {} lines before its unit tests (at most {MAX_FILE_LINES})",
                path.display(),
                lines.len()
            ));
        }
        for (name, at, len) in functions(&lines) {
            if len > MAX_FN_LINES {
                over.push(format!(
                    "{}:{at}: fn {name} is {len} lines (at most {MAX_FN_LINES})",
                    path.display()
                ));
            }
        }
    }
    assert!(over.is_empty(), "split these:\n{}", over.join("\n"));
}

#[test]
fn the_function_counter_sees_functions() {
    // The check above is only as good as this counter.
    let text = "fn a() {\n    x();\n}\n    pub(crate) fn b<T>(\n        t: T,\n    ) {\n        y();\n    }\nfn c();\n";
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(functions(&lines), vec![("a", 1, 3), ("b", 4, 5)]);
}

/// The sibling files (of one directory) a file's code names, as
/// `super::NAME` or `crate::ROOM::NAME`.
fn siblings(path: &Path, code: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let dir = path.parent().unwrap();
    let room = dir.file_name().unwrap().to_string_lossy().to_string();
    let mut found = BTreeSet::new();
    for prefix in ["super::".to_string(), format!("crate::{room}::")] {
        for (at, _) in code.match_indices(&prefix) {
            let rest = &code[at + prefix.len()..];
            let mut word: Vec<String> = vec![
                rest.chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect(),
            ];
            if rest.starts_with('{') {
                let list = &rest[1..rest.find('}').unwrap_or(rest.len())];
                word = list
                    .split(',')
                    .map(|w| w.trim().split("::").next().unwrap_or("").to_string())
                    .collect();
            }
            found.extend(word.into_iter().filter(|w| names.contains(w)));
        }
    }
    found
}

#[test]
fn no_two_files_of_a_room_import_each_other() {
    let files = all_sources();
    let mut circles = Vec::new();
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for (p, _) in &files {
        dirs.insert(p.parent().unwrap().to_path_buf());
    }
    for dir in dirs {
        let here: Vec<(String, &str)> = files
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir.as_path()))
            .filter(|(p, _)| !p.ends_with("mod.rs") && !p.ends_with("lib.rs"))
            .map(|(p, t)| {
                let stem = p.file_stem().unwrap().to_string_lossy().to_string();
                (stem, t.split("#[cfg(test)]").next().unwrap_or(""))
            })
            .collect();
        let names: BTreeSet<String> = here.iter().map(|(n, _)| n.clone()).collect();
        let uses: Vec<(String, BTreeSet<String>)> = here
            .iter()
            .map(|(n, code)| {
                (
                    n.clone(),
                    siblings(&dir.join(format!("{n}.rs")), code, &names),
                )
            })
            .collect();
        for (a, ua) in &uses {
            for (b, ub) in &uses {
                if a < b && ua.contains(b) && ub.contains(a) {
                    circles.push(format!("{}: {a}.rs <-> {b}.rs", dir.display()));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_check_sees_sibling_imports() {
    let names: BTreeSet<String> = ["memory", "layers", "map"].map(String::from).into();
    let path = Path::new("src/file/layers.rs");
    let code = "use super::memory::MemFilter;\nuse crate::file::{map::anon, other};\nuse crate::filter::x;";
    let found = siblings(path, code, &names);
    assert_eq!(found, ["map", "memory"].map(String::from).into());
}
