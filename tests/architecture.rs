//! The code map at the top of `src/lib.rs` holds in the code: no module uses a module of a later
//! layer, and no command uses another command. Reads the sources, not the compiled crate: every
//! `crate::` (or `racksweep::`) path outside comments and `#[cfg(test)]` items, whether in a
//! `use` line or written in full. Test code may reach up (to run a sweep, say) and is not read.

use std::fs;
use std::path::{Path, PathBuf};

/// The layers of the code map, lowest first, each the names of its modules.
fn layers(lib: &str) -> Vec<Vec<String>> {
    let mut layers: Vec<Vec<String>> = Vec::new();
    let mut in_map = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            if in_map {
                break;
            }
            continue;
        };
        let doc = doc.trim();
        if !in_map {
            in_map = doc == "# Code map";
            continue;
        }
        if doc.starts_with('#') {
            break;
        }
        if doc
            .split_once(". ")
            .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        {
            layers.push(Vec::new());
        } else if let Some(item) = doc.strip_prefix("- ") {
            let name = item
                .trim_start_matches('[')
                .strip_prefix('`')
                .and_then(|rest| rest.split_once('`'))
                .map(|(name, _)| name)
                .unwrap_or_else(|| panic!("code map item without a `module`: {item}"));
            layers
                .last_mut()
                .unwrap_or_else(|| panic!("code map item before its layer: {item}"))
                .push(name.to_string());
        }
    }
    layers
}

/// The source as the library and binary build it: comments and `#[cfg(test)]` items removed.
/// An item ends at its closing brace at the attribute's indentation (rustfmt's layout), or on
/// its first line when that ends with `;` (`mod tests;`).
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed == "#[cfg(test)]" {
            let end = format!("{}}}", &line[..line.len() - trimmed.len()]);
            for item in lines.by_ref() {
                if item == end || (item.trim_start().starts_with("mod ") && item.ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push_str(line.split_once("//").map_or(line, |(code, _)| code));
        out.push('\n');
    }
    out
}

/// The top-level modules a piece of code names through `crate::` or `racksweep::`, with the
/// name after `commands::` when it names a command: `("commands", Some("run"))`.
fn uses(code: &str) -> Vec<(String, Option<String>)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for root in ["crate::", "racksweep::"] {
        for (at, _) in code.match_indices(root) {
            // `racksweep::` inside a longer name is not the crate.
            if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + root.len()..];
            let paths: Vec<&str> = match rest.strip_prefix('{') {
                // `crate::{a, b::c}`: each top-level entry of the group.
                Some(group) => {
                    let (mut depth, mut start, mut entries) = (0, 0, Vec::new());
                    for (i, c) in group.char_indices() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => {
                                entries.push(&group[start..i]);
                                break;
                            }
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                entries.push(&group[start..i]);
                                start = i + 1;
                            }
                            _ => {}
                        }
                    }
                    entries
                }
                None => vec![rest],
            };
            for path in paths {
                let module = ident(path);
                if module.is_empty() {
                    continue;
                }
                let command = (module == "commands")
                    .then(|| path.trim_start()["commands".len()..].strip_prefix("::"))
                    .flatten()
                    .map(ident)
                    .filter(|c| !c.is_empty());
                found.push((module, command));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("src/ entry reads").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn modules_use_only_their_layer_and_those_below_and_no_command_uses_another() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let layers = layers(&lib);
    let layer_of = |module: &str| layers.iter().position(|l| l.iter().any(|m| m == module));

    // Every module is on the map, once.
    let mut declared: Vec<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_string())
        .collect();
    declared.push("main".into());
    let mut mapped: Vec<String> = layers.concat();
    declared.sort();
    mapped.sort();
    assert_eq!(
        mapped, declared,
        "the code map in src/lib.rs lists every module once"
    );

    let commands: Vec<String> = fs::read_dir(src.join("commands"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let stem = name.strip_suffix(".rs")?;
            (stem != "mod").then(|| stem.to_string())
        })
        .collect();

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        if relative == Path::new("lib.rs") {
            continue;
        }
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs");
        let own = layer_of(module).unwrap_or_else(|| panic!("{module} is not on the code map"));
        let text = code(&fs::read_to_string(path).unwrap());
        let command = relative
            .starts_with("commands")
            .then(|| relative.file_stem().unwrap().to_str().unwrap())
            .filter(|&c| c != "mod");
        for (used, named_command) in uses(&text) {
            let Some(layer) = layer_of(&used) else {
                wrong.push(format!(
                    "{}: uses `{used}`, not on the code map",
                    relative.display()
                ));
                continue;
            };
            if layer > own {
                wrong.push(format!(
                    "{}: `{module}` (layer {}) uses `{used}` (layer {})",
                    relative.display(),
                    own + 1,
                    layer + 1
                ));
            }
            if let (Some(me), Some(other)) = (command, named_command)
                && other != me
            {
                wrong.push(format!(
                    "{}: the `{me}` command uses the `{other}` command",
                    relative.display()
                ));
            }
        }
        // A command reaching a sibling through `super::`.
        if let Some(me) = command {
            for (at, _) in text.match_indices("super::") {
                let other: String = text[at + "super::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if other != me && commands.contains(&other) {
                    wrong.push(format!(
                        "{}: the `{me}` command uses the `{other}` command",
                        relative.display()
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the code map in src/lib.rs:\n{}",
        wrong.join("\n")
    );
}

/// The reader sees what it must: grouped imports, full paths, commands, and not comments or
/// test code.
#[test]
fn reader_finds_uses_outside_comments_and_tests() {
    let text = "\
use crate::{grid::Point, perf};
// use crate::report;
/// Docs naming `crate::analyze`.
fn f() { crate::commands::run::run(x); racksweep::spec::load(); my_racksweep::x(); }

#[cfg(test)]
mod tests {
    use crate::cli;
}
";
    let found = uses(&code(text));
    let names: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|(m, c)| (m.as_str(), c.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("grid", None),
            ("perf", None),
            ("commands", Some("run")),
            ("spec", None)
        ]
    );
    let map = "//! # Code map\n//!\n//! 1. Low\n//!    - [`a`]: job.\n//! 2. High\n//!    - `main` (`src/main.rs`): job.\n\npub mod a;\n";
    assert_eq!(
        layers(map),
        [vec!["a".to_string()], vec!["main".to_string()]]
    );
}
