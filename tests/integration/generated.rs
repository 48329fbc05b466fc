//! Files generated from the clap definitions and committed to the repository:
//! the shell completion scripts under `completions/` and the man pages under
//! `man/`. The drift tests regenerate them in memory and fail when a committed
//! file differs, is missing, or is no longer generated. With `SEEN_BLESS=1` they
//! rewrite the committed files instead (and delete the stale ones):
//!
//! ```text
//! SEEN_BLESS=1 cargo test --test integration generated::
//! ```
//!
//! The smoke tests check that the binary prints the committed scripts and that
//! the shells that are installed accept them.

use crate::common::seen;
use clap::{CommandFactory, ValueEnum};
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, roman};
use seen::cli::Cli;
use seen::cmd::completions::{file_name, script};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The command that brings the committed files up to date.
const UPDATE: &str = "SEEN_BLESS=1 cargo test --test integration generated::";

/// Held while the committed files are read or rewritten, so that a blessing
/// run does not race the tests that read them (tests run in parallel threads).
static COMMITTED: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    COMMITTED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lock, for a test that reads the committed completion scripts; when
/// blessing, they are brought up to date first (whichever test runs first).
fn completions_lock() -> MutexGuard<'static, ()> {
    if blessing() {
        check_dir("completions", &completion_files());
    }
    lock()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn blessing() -> bool {
    std::env::var_os("SEEN_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Every completion script, by file name under `completions/`.
fn completion_files() -> BTreeMap<String, Vec<u8>> {
    Shell::value_variants()
        .iter()
        .map(|&shell| (file_name(shell), script(shell)))
        .collect()
}

/// Every man page, by file name under `man/`: `seen.1`, then `seen-SUB.1` for
/// each subcommand (not the automatic `help`).
fn man_files() -> BTreeMap<String, Vec<u8>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // Building names the subcommands for their pages: `seen-dedup`, run as `seen dedup`.
    cmd.build();
    let source = format!("seen {}", cmd.get_version().expect("seen has a version"));
    let mut pages = BTreeMap::new();
    for page in std::iter::once(&cmd).chain(cmd.get_subcommands().filter(|s| !s.is_hide_set())) {
        let (name, text) = man_page(page, &source);
        pages.insert(name, text.into_bytes());
    }
    pages
}

/// One man page: `clap_mangen`'s sections, except that the title has no date
/// (so the page is the same on every build) and the text after the options
/// (`after_help`) gets sections of its own instead of `clap_mangen`'s "EXTRA".
fn man_page(cmd: &clap::Command, source: &str) -> (String, String) {
    let man = Man::new(cmd.clone()).source(source);
    // Each clap_mangen section comes with roff's preamble (the apostrophe
    // string): keep the first one only.
    let preamble = Roff::new().render();
    let section = |render: &dyn Fn(&mut Vec<u8>) -> io::Result<()>| {
        let mut out = Vec::new();
        render(&mut out).expect("rendering to memory");
        let text = String::from_utf8(out).expect("man page is UTF-8");
        text.strip_prefix(&preamble)
            .expect("section starts with the preamble")
            .to_owned()
    };

    let title = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let mut head = Roff::new();
    // An empty but present date, so the source stays in its own (left) footer slot.
    head.control("TH", [title, "1", "\"\"", source]);
    let mut page = head.render();
    page += &section(&|w| man.render_name_section(w));
    page += &section(&|w| man.render_synopsis_section(w));
    page += &section(&|w| man.render_description_section(w));
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        page += &section(&|w| man.render_options_section(w));
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        page += &section(&|w| man.render_subcommands_section(w));
    }
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        let roff = after_help_sections(&after.to_string());
        page += roff.render().strip_prefix(&preamble).expect("preamble");
    }
    if cmd.get_version().is_some() {
        page += &section(&|w| man.render_version_section(w));
    }
    (man.get_filename(), page)
}

/// The `after_help` text as man sections. Its paragraphs (separated by blank
/// lines) are of three kinds:
/// - `Examples:` alone on a line, then indented lines: a section EXAMPLES
///   with those lines as they are (no filling);
/// - `Exit status: text...`: a section EXIT STATUS with the text filled;
/// - anything else: a paragraph of the section NOTES.
///
/// Sections keep the order in which they first appear.
fn after_help_sections(text: &str) -> Roff {
    enum Body<'a> {
        Verbatim(Vec<&'a str>),
        Filled(Vec<&'a str>),
    }
    let mut sections: Vec<(String, Vec<Body>)> = Vec::new();
    let mut add = |title: String, body| match sections.iter_mut().find(|(t, _)| *t == title) {
        Some((_, bodies)) => bodies.push(body),
        None => sections.push((title, vec![body])),
    };

    let lines: Vec<&str> = text.lines().collect();
    for para in lines
        .split(|l| l.trim().is_empty())
        .filter(|p| !p.is_empty())
    {
        let first = para[0];
        let indented = |l: &&str| l.starts_with(char::is_whitespace);
        if let Some(title) = first.strip_suffix(':').filter(|t| is_title(t))
            && para.len() > 1
            && para[1..].iter().all(indented)
        {
            let indent = para[1..]
                .iter()
                .map(|l| l.len() - l.trim_start().len())
                .min()
                .unwrap_or(0);
            let body = para[1..].iter().map(|l| &l[indent..]).collect();
            add(title.to_uppercase(), Body::Verbatim(body));
        } else if let Some((title, rest)) = first.split_once(": ").filter(|(t, _)| is_title(t)) {
            let mut body = vec![rest];
            body.extend(&para[1..]);
            add(title.to_uppercase(), Body::Filled(body));
        } else {
            add("NOTES".to_owned(), Body::Filled(para.to_vec()));
        }
    }

    let mut roff = Roff::new();
    for (title, bodies) in &sections {
        roff.control("SH", [title.as_str()]);
        for (i, body) in bodies.iter().enumerate() {
            if i > 0 {
                roff.control("PP", []);
            }
            match body {
                Body::Verbatim(lines) => {
                    roff.control("nf", []);
                    for line in lines {
                        roff.text([roman(*line)]);
                    }
                    roff.control("fi", []);
                }
                Body::Filled(lines) => {
                    for line in lines {
                        roff.text([roman(line.trim())]);
                    }
                }
            }
        }
    }
    roff
}

/// Whether `s` reads as a section title: one to three words of letters,
/// the first capitalized ("Examples", "Exit status").
fn is_title(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.split(' ').count() <= 3
        && s.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
}

// ---------------------------------------------------------------------------
// Drift check
// ---------------------------------------------------------------------------

/// Compares the files under `dir` (relative to the crate) with `want`, and
/// rewrites them when blessing. Hidden files (such as `.gitkeep`) are ignored.
fn check_dir(dir: &str, want: &BTreeMap<String, Vec<u8>>) {
    let path = root().join(dir);
    let guard = lock();
    let mut have: BTreeMap<String, PathBuf> = BTreeMap::new();
    if path.exists() {
        for entry in fs::read_dir(&path).unwrap_or_else(|e| panic!("{dir}/: {e}")) {
            let entry = entry.unwrap_or_else(|e| panic!("{dir}/: {e}"));
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') {
                have.insert(name, entry.path());
            }
        }
    }

    let mut problems = Vec::new();
    let mut to_write = Vec::new();
    for (name, bytes) in want {
        match have.get(name) {
            None => {
                problems.push(format!("{dir}/{name}: missing"));
                to_write.push(name);
            }
            Some(file) => {
                let committed = fs::read(file).unwrap_or_else(|e| panic!("{dir}/{name}: {e}"));
                if committed != *bytes {
                    let why = first_difference(&committed, bytes);
                    problems.push(format!("{dir}/{name}: differs ({why})"));
                    to_write.push(name);
                }
            }
        }
    }
    let stale: Vec<_> = have
        .iter()
        .filter(|(n, _)| !want.contains_key(*n))
        .collect();
    for (name, _) in &stale {
        problems.push(format!("{dir}/{name}: no longer generated"));
    }
    if problems.is_empty() {
        return;
    }

    if blessing() {
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{dir}/: {e}"));
        for name in to_write {
            fs::write(path.join(name), &want[name]).unwrap_or_else(|e| panic!("{dir}/{name}: {e}"));
        }
        for (name, file) in stale {
            fs::remove_file(file)
                .unwrap_or_else(|e| panic!("{dir}/{name}: {e} (remove it by hand)"));
        }
        eprintln!("SEEN_BLESS: updated\n  {}", problems.join("\n  "));
        return;
    }
    drop(guard);
    panic!(
        "the committed files under {dir}/ are out of date with the clap definitions:\n  {}\n\
         Regenerate them with\n    {UPDATE}\nthen review and commit the changes.",
        problems.join("\n  ")
    );
}

/// Where two texts first differ, for the failure message.
fn first_difference(committed: &[u8], generated: &[u8]) -> String {
    let (c, g) = (
        String::from_utf8_lossy(committed),
        String::from_utf8_lossy(generated),
    );
    for (i, (a, b)) in c.lines().zip(g.lines()).enumerate() {
        if a != b {
            return format!("line {}: committed {a:?}, generated {b:?}", i + 1);
        }
    }
    format!(
        "committed has {} lines, generated {}",
        c.lines().count(),
        g.lines().count()
    )
}

#[test]
fn completion_scripts_are_up_to_date() {
    check_dir("completions", &completion_files());
}

#[test]
fn man_pages_are_up_to_date() {
    check_dir("man", &man_files());
}

// ---------------------------------------------------------------------------
// What the generated man pages hold
// ---------------------------------------------------------------------------

#[test]
fn man_pages_are_named_per_subcommand_and_have_their_examples() {
    let pages = man_files();
    let text = |name: &str| {
        String::from_utf8(pages[name].clone()).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let version = env!("CARGO_PKG_VERSION");

    let top = text("seen.1");
    assert!(
        top.contains(&format!(".TH seen 1 \"\" \"seen {version}\"\n")),
        "{top}"
    );
    assert!(top.contains(".SH \"EXIT STATUS\"\n"), "{top}");
    assert!(
        !top.contains("seen\\-help"),
        "the help subcommand has no page:\n{top}"
    );

    let subcommands: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    assert!(subcommands.iter().any(|s| s == "dedup"), "{subcommands:?}");
    for sub in &subcommands {
        let name = format!("seen-{sub}.1");
        assert!(pages.contains_key(&name), "no {name} in {:?}", pages.keys());
        let page = text(&name);
        assert!(
            page.contains(&format!(".TH seen-{sub} 1 \"\" \"seen {version}\"\n")),
            "{name}:\n{page}"
        );
        assert!(
            page.contains(&format!(".SH NAME\nseen\\-{sub} \\- ")),
            "{name}:\n{page}"
        );
        assert!(
            page.contains(&format!("\\fBseen {sub}\\fR")),
            "{name}:\n{page}"
        );
        assert!(page.contains(".SH EXAMPLES\n.nf\n"), "{name}:\n{page}");
        assert!(!page.contains(".SH EXTRA"), "{name}:\n{page}");
        assert!(
            top.contains(&format!("seen\\-{sub}(1)")),
            "seen.1 does not list {sub}"
        );
    }
    assert_eq!(pages.len(), subcommands.len() + 1, "{:?}", pages.keys());
    assert_eq!(pages, man_files(), "man pages are not deterministic");
}

#[test]
fn man_pages_format_without_warnings() {
    if !installed("groff") {
        println!("note: groff is not installed; man pages not formatted");
        return;
    }
    for (name, page) in man_files() {
        let tmp = tempfile::NamedTempFile::new().expect("temporary file");
        fs::write(tmp.path(), &page).expect("write temporary file");
        let out = run(Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(tmp.path()));
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "groff on {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

#[test]
fn binary_prints_the_committed_completion_scripts() {
    for &shell in Shell::value_variants() {
        let out = seen(root(), ["completions", &shell.to_string()]);
        assert_eq!(out.code, 0, "seen completions {shell}: {}", out.ctx());
        assert!(
            out.stderr.is_empty(),
            "seen completions {shell}: {}",
            out.ctx()
        );
        assert!(
            out.stdout == script(shell),
            "seen completions {shell} is not script({shell:?})"
        );
        if shell == Shell::Bash {
            let _guard = completions_lock();
            let committed = fs::read(root().join("completions/seen.bash"))
                .unwrap_or_else(|e| panic!("completions/seen.bash: {e}; run {UPDATE}"));
            assert!(
                out.stdout == committed,
                "`seen completions bash` differs from completions/seen.bash; run {UPDATE}"
            );
        }
    }
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let out = seen(root(), ["completions", "nosuchshell"]);
    assert_eq!(out.code, 2, "{}", out.ctx());
    assert!(out.stdout.is_empty(), "{}", out.ctx());
    let stderr = &out.stderr;
    assert!(stderr.contains("nosuchshell"), "{stderr}");
}

// ---------------------------------------------------------------------------
// The shells accept the scripts (each only where it is installed)
// ---------------------------------------------------------------------------

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `shell args... completions/FILE` with the committed file, or prints a
/// note and returns `None` when `shell` is not installed.
fn with_shell(shell: &str, args: &[&str], file: &str) -> Option<Output> {
    if !installed(shell) {
        println!("note: {shell} is not installed; completions/{file} not checked");
        return None;
    }
    let _guard = completions_lock();
    Some(run(Command::new(shell)
        .args(args)
        .arg(root().join("completions").join(file))))
}

fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bash_loads_the_completion_script() {
    let Some(out) = with_shell("bash", &["-n"], "seen.bash") else {
        return;
    };
    assert_ok("bash -n completions/seen.bash", &out);

    // Source it in a non-interactive bash, then complete as bash would on
    // `seen de<TAB>` and `seen dedup --ur<TAB>`.
    let check = r#"
        set -u
        source "$1"
        spec=$(complete -p seen)
        echo "spec: $spec"
        func=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
        [ -n "$func" ] || { echo "no completion function" >&2; exit 1; }
        try() {
            COMP_WORDS=("$@")
            COMP_CWORD=$(( $# - 1 ))
            COMP_LINE="$*"
            COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            "$func" seen "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            echo "$*: ${COMPREPLY[*]}"
        }
        try seen de
        try seen dedup --ur
        try seen completions p
    "#;
    let guard = completions_lock();
    let out = run(Command::new("bash")
        .args(["-c", check, "bash"])
        .arg(root().join("completions/seen.bash")));
    drop(guard);
    assert_ok("sourcing completions/seen.bash", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let spec = stdout.lines().next().unwrap_or_default();
    assert!(
        spec.starts_with("spec: complete ") && spec.contains(" -F ") && spec.ends_with(" seen"),
        "no completion function for seen: {stdout}"
    );
    for want in [
        "\nseen de: dedup\n",
        "\nseen dedup --ur: --url --url-sort-query\n",
        "\nseen completions p: powershell\n",
    ] {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}");
    }
}

#[test]
fn zsh_parses_the_completion_script() {
    if let Some(out) = with_shell("zsh", &["-n"], "_seen") {
        assert_ok("zsh -n completions/_seen", &out);
    }
}

#[test]
fn fish_parses_the_completion_script() {
    if let Some(out) = with_shell("fish", &["-n"], "seen.fish") {
        assert_ok("fish -n completions/seen.fish", &out);
    }
}
