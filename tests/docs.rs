//! Documentation that must not drift from the code: the README's column table is generated from
//! the schema (`RACKSWEEP_BLESS=1` rewrites it), every command in --help is documented,
//! docs/model.md lists every infeasibility reason, and docs/sweep-format.md's worked examples
//! evaluate as their text says.

mod common;

use common::{root, run, stdout};

const START: &str = "| column | unit | meaning |";

#[test]
fn readme_column_table_matches_the_schema() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let table =
        racksweep::columns::Schema::get(racksweep::columns::Mode::Inference).markdown_table();
    let (before, rest) = readme
        .split_once(START)
        .expect("README.md has a column table");
    // The table runs to the first blank line.
    let after = rest.split_once("\n\n").map_or("", |(_, a)| a);
    let expected = format!("{before}{table}\n{after}");
    if std::env::var_os("RACKSWEEP_BLESS").is_some() {
        // Atomic, so the other test never reads a half-written README.
        let tmp = path.with_extension("md.tmp");
        std::fs::write(&tmp, &expected).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        return;
    }
    assert!(
        readme == expected,
        "README.md column table is stale; RACKSWEEP_BLESS=1 cargo test --release --test docs rewrites it"
    );
}

#[test]
fn readme_shows_every_subcommand() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let help = stdout(&run(&["--help"]));
    let cli = <racksweep::cli::Cli as clap::CommandFactory>::command();
    for cmd in cli.get_subcommands().map(|c| c.get_name()) {
        assert!(help.contains(&format!("  {cmd} ")), "--help lists {cmd}");
        assert!(
            readme.contains(&format!("racksweep {cmd} ")),
            "README shows racksweep {cmd}"
        );
    }
}

/// docs/validation.md's tables are `racksweep validate --markdown` on the committed measurements
/// (`scripts/validation-report.sh` regenerates them).
#[test]
fn validation_doc_matches_the_model() {
    let o = run(&[
        "validate",
        "reference/measurements-calibration.csv",
        "--markdown",
    ]);
    assert!(o.status.success());
    let doc = std::fs::read_to_string(root().join("docs/validation.md")).unwrap();
    let start = "<!-- generated:start -->\n";
    let inside = doc
        .split_once(start)
        .and_then(|(_, r)| r.split_once("<!-- generated:end -->"))
        .map(|(t, _)| t);
    assert_eq!(
        inside,
        Some(stdout(&o).as_str()),
        "docs/validation.md is stale: run scripts/validation-report.sh"
    );
}

/// docs/schema.md's column tables are the Parquet schemas of both modes (`RACKSWEEP_BLESS=1`
/// rewrites them).
#[test]
fn schema_doc_matches_the_writer() {
    use racksweep::columns::Mode;
    let path = root().join("docs/schema.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut expected = doc.clone();
    for (mode, marker) in [
        (Mode::Inference, "generated"),
        (Mode::Training, "generated:training"),
    ] {
        let (start, end) = (
            format!("<!-- {marker}:start -->\n"),
            format!("<!-- {marker}:end -->"),
        );
        let (before, rest) = expected
            .split_once(&start)
            .unwrap_or_else(|| panic!("docs/schema.md has {start}"));
        let (_, after) = rest
            .split_once(&end)
            .unwrap_or_else(|| panic!("docs/schema.md has {end}"));
        expected = format!(
            "{before}{start}{}{end}{after}",
            racksweep::output::parquet::schema_markdown(mode)
        );
    }
    if std::env::var_os("RACKSWEEP_BLESS").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    assert!(
        doc == expected,
        "docs/schema.md is stale; RACKSWEEP_BLESS=1 cargo test --release --test docs rewrites it"
    );
}

/// docs/schema.md describes pareto.parquet's `tie_group` column as the code declares it.
#[test]
fn schema_doc_describes_the_tie_group() {
    let doc = std::fs::read_to_string(root().join("docs/schema.md")).unwrap();
    let (name, meaning) = racksweep::pareto::TIE_GROUP;
    let row = format!("| `{name}` | uint32 | never | - | {meaning} |");
    assert!(doc.contains(&row), "docs/schema.md lacks {row}");
}

/// docs/model.md §4 lists the reasons a serving layout is invalid, in the order they are checked,
/// which is `Reason::ALL`'s; the reasons of cluster sizing, which come after, are described where
/// they arise.
#[test]
fn model_doc_lists_every_inference_reason() {
    use racksweep::perf::Reason;
    let doc = std::fs::read_to_string(root().join("docs/model.md")).unwrap();
    let (_, rules) = doc
        .split_once("**Validity rules, checked in this order**")
        .expect("docs/model.md §4 has the validity rules");
    // "1. `[ep_needs_moe]` ..." up to the next paragraph.
    let documented: Vec<&str> = rules
        .lines()
        .take_while(|l| !l.starts_with("**"))
        .filter_map(|l| {
            let (number, rest) = l.split_once(". `[")?;
            number.parse::<u32>().ok()?;
            Some(rest.split_once("]`")?.0)
        })
        .collect();
    let names = Reason::ALL.map(Reason::as_str);
    assert!(
        documented.len() > 1,
        "docs/model.md §4 lists {documented:?}"
    );
    assert_eq!(documented, names[..documented.len()], "docs/model.md §4");
    for name in &names[documented.len()..] {
        assert!(
            doc.contains(&format!("`infeasible_reason = {name}`")),
            "docs/model.md describes {name}"
        );
    }
}

/// docs/model.md's table of training reasons ("Infeasible layouts") has one row per
/// `train::Infeasible`.
#[test]
fn model_doc_lists_every_training_reason() {
    use racksweep::train::Infeasible;
    let doc = std::fs::read_to_string(root().join("docs/model.md")).unwrap();
    let (_, table) = doc
        .split_once("(`train::Infeasible::as_str`):")
        .expect("docs/model.md has the table of training reasons");
    // "| `zero_degree` | ... |" rows up to the blank line after the table.
    let mut documented: Vec<&str> = table
        .trim_start()
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(name, _)| name))
        .collect();
    documented.sort_unstable();
    let mut names = Infeasible::ALL.map(Infeasible::as_str);
    names.sort_unstable();
    assert_eq!(documented, names, "docs/model.md, \"Infeasible layouts\"");
}

/// docs/sweep-format.md's worked examples state what `racksweep run` makes of them ("evaluates
/// it: 1,548 feasible, ... 180 `does_not_fit`"): each example is run, and its manifest must
/// give the feasible count, every infeasibility count and the frontier size the sentence
/// names (they had drifted by up to 18 rows before this test).
#[test]
fn sweep_format_examples_evaluate_as_stated() {
    let text = std::fs::read_to_string(root().join("docs/sweep-format.md")).unwrap();
    let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    // "evaluates it" introduces the sweep that follows; "evaluates them" and "evaluates the"
    // speak of the one just shown.
    let runs = text
        .match_indices("evaluates ")
        .map(|(at, _)| at)
        .filter(|&at| text[..at].trim_end().ends_with("`racksweep run`"));
    for at in runs {
        let claim = &text[at..text[at..].find("\n\n").map_or(text.len(), |e| at + e)];
        let words: Vec<&str> = claim
            .split(|c: char| c.is_whitespace() || "():".contains(c))
            .map(|w| w.trim_end_matches([',', '.']))
            .filter(|w| !w.is_empty())
            .collect();
        let feasible = words
            .windows(2)
            .find(|w| w[1] == "feasible")
            .map(|w| number(w[0]))
            .expect("the sentence states the feasible count");
        let infeasible: Vec<(String, u64)> = words
            .windows(2)
            .filter(|w| {
                w[1].starts_with('`') && w[0].chars().all(|c| c.is_ascii_digit() || c == ',')
            })
            .map(|w| (w[1].trim_matches('`').to_string(), number(w[0])))
            .collect();
        let block = if text[at..].starts_with("evaluates it") {
            at + text[at..].find("```toml\n").unwrap()
        } else {
            text[..at].rfind("```toml\n").unwrap()
        } + "```toml\n".len();
        let sweep = &text[block..block + text[block..].find("```").unwrap()];
        let file = tmp.path().join(format!("example-{checked}.toml"));
        std::fs::write(&file, sweep).unwrap();
        let parsed: toml::Value = toml::from_str(sweep).unwrap();
        let name = parsed["sweep"]["name"].as_str().unwrap();
        let (_runs, dir) = common::finished(file.to_str().unwrap(), name);
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(m["feasible"], feasible, "{claim}");
        for (reason, count) in infeasible {
            assert_eq!(m["infeasible"][&reason], count, "{reason}: {claim}");
        }
        if let Some(w) = words.windows(3).find(|w| w[..2] == ["frontier", "of"]) {
            assert_eq!(m["frontier_size"], number(w[2]), "{claim}");
        }
        checked += 1;
    }
    assert_eq!(checked, 5, "five worked examples state their counts");
}
