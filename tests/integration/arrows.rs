//! The import arrows between the rooms of `src/` run one way, top down (see
//! docs/ARCHITECTURE.md): each room may use only rooms on a lower floor. A
//! room that reaches up (or a new room without a floor) fails here, naming
//! the file and the import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each room (a top-level module of `src/`) and its floor: a room uses only
/// rooms on lower floors. Rooms on one floor do not use each other.
const FLOORS: &[(&str, u32)] = &[
    ("main", 100),
    ("cmd", 90),
    ("cli", 80),
    ("job", 80),
    ("store", 75),
    ("report", 70),
    ("redis", 65),
    ("file", 60),
    ("format", 55),
    ("pipeline", 50),
    ("input", 40),
    ("filter", 30),
    ("clock", 10),
    ("hash", 10),
    ("keys", 10),
    ("memory", 10),
    ("output", 10),
    ("progress", 10),
    ("scan", 10),
    ("signals", 10),
    ("units", 10),
    ("prefetch", 5),
    ("tuning", 5),
];

fn floor(room: &str) -> Option<u32> {
    FLOORS.iter().find(|(r, _)| *r == room).map(|&(_, f)| f)
}

/// Every `.rs` file under `dir`.
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

/// The rooms a file's code (not its unit tests) names, as `crate::ROOM`
/// (and `seen::{…}` in `main.rs`); `crate::say!` is the progress room's macro.
fn uses(code: &str) -> Vec<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or("");
    let mut rooms = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let name: String = code[at + 7..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        rooms.push(if name == "say" {
            "progress".into()
        } else {
            name
        });
    }
    if let Some(at) = code.find("use seen::{") {
        let list = &code[at + 11..];
        let list = &list[..list.find('}').unwrap()];
        rooms.extend(list.split(',').map(|r| r.trim().to_string()));
    }
    rooms
}

#[test]
fn imports_run_one_way_down_the_floors() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        let room = first.to_str().unwrap().trim_end_matches(".rs");
        if room == "lib" {
            continue;
        }
        let Some(mine) = floor(room) else {
            wrong.insert(
                rel.display().to_string(),
                format!("room `{room}` has no floor"),
            );
            continue;
        };
        for used in uses(&std::fs::read_to_string(file).unwrap()) {
            if used == room {
                continue;
            }
            match floor(&used) {
                Some(theirs) if theirs < mine => {}
                Some(theirs) => {
                    wrong.insert(
                        format!("{} uses {used}", rel.display()),
                        format!("floor {theirs} is not below {room}'s {mine}"),
                    );
                }
                None => {
                    wrong.insert(
                        format!("{} uses {used}", rel.display()),
                        "a room with no floor".into(),
                    );
                }
            }
        }
    }
    assert!(wrong.is_empty(), "arrows that do not run down: {wrong:#?}");
    assert!(files.len() > 30, "found only {} files", files.len());
}

/// The check itself sees an arrow that runs up.
#[test]
fn an_arrow_up_is_seen() {
    let code =
        "use crate::cmd::dedup;\nfn f() { crate::say!(\"x\"); }\n#[cfg(test)]\nuse crate::job;";
    assert_eq!(uses(code), ["cmd", "progress"]);
    assert!(floor("cmd").unwrap() > floor("filter").unwrap());
    assert_eq!(uses("use seen::{cli, cmd};"), ["cli", "cmd"]);
}
