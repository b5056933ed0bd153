//! `racksweep top` and `racksweep pareto` as other programs and reviewers use them (issue 23):
//! `--format table|csv|json|markdown` with the row count on stderr, the columns that tell rows
//! apart, `--columns`, `--where` with `and`/`or`/parentheses, and a frontier's tie groups, on a
//! sweep whose frontier is all ties (tests/specs/ties.toml).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{
    assert_snapshot, column_labels, column_u32, column_u64, finished, read_parquet, root, run,
    stderr, stdout,
};

const TIES_OBJECTIVES: [&str; 4] = [
    "--objective",
    "max tokens_per_s_per_gpu",
    "--objective",
    "max tokens_per_s_per_user",
];

/// The hand-checked frontier of tests/specs/ties.toml. Its grid is racks (3) x tp (2) x batch
/// (2) x ownership (2), ownership fastest, so config_id = 8 racks_index + 4 tp_index +
/// 2 batch_index + ownership_index. Per-GPU objectives see neither racks nor ownership: tp 2 at
/// batch 8 is dominated (by tp 4 at batch 8: more tokens/s/GPU and per user), the other three
/// (tp, batch) points are on the frontier, each held by all 6 (racks, ownership) pairs.
fn ties_groups() -> [(u32, [u64; 6]); 3] {
    let ids = |tp: u64, batch: u64| {
        let mut v = [0; 6];
        for racks in 0..3 {
            for own in 0..2 {
                v[(racks * 2 + own) as usize] = 8 * racks + 4 * tp + 2 * batch + own;
            }
        }
        v
    };
    // Best tokens/s/GPU first: tp 2 at batch 64, tp 4 at batch 64, tp 4 at batch 8.
    [(0, ids(0, 1)), (1, ids(1, 1)), (2, ids(1, 0))]
}

#[test]
fn pareto_parquet_keeps_every_tie_with_its_group() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let (pareto, _) = read_parquet(&dir.join("pareto.parquet"));
    let ids = column_u64(&pareto, "config_id");
    let groups = column_u32(&pareto, "tie_group");
    assert_eq!(ids.len(), 18);
    let expected: Vec<(u32, u64)> = ties_groups()
        .iter()
        .flat_map(|(g, ids)| ids.iter().map(move |&id| (*g, id)))
        .collect();
    let got: Vec<(u32, u64)> = groups
        .iter()
        .zip(&ids)
        .map(|(g, &id)| (g.unwrap(), id))
        .collect();
    assert_eq!(got, expected);
    // Each group: racks 1-3 and both ownerships.
    let (racks, own) = (
        column_u32(&pareto, "racks"),
        column_labels(&pareto, "ownership"),
    );
    for g in 0..3 {
        let rows: Vec<usize> = (0..18).filter(|&i| groups[i] == Some(g)).collect();
        let r: BTreeSet<u32> = rows.iter().map(|&i| racks[i].unwrap()).collect();
        let o: BTreeSet<&str> = rows.iter().map(|&i| own[i].as_str()).collect();
        assert_eq!(r, BTreeSet::from([1, 2, 3]));
        assert_eq!(o, BTreeSet::from(["cloud", "owned"]));
    }
    // pareto.md: one row per group, what differs summarized.
    let md = std::fs::read_to_string(dir.join("pareto.md")).unwrap();
    assert!(md.contains("18 on the frontier; 3 rows below"), "{md}");
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| h100-sxm")).collect();
    assert_eq!(rows.len(), 3, "{md}");
    for r in rows {
        assert!(r.contains("| 1–3 | 4, 8, 12 | 32, 64, 96 |"), "{r}");
        assert!(r.contains("| cloud, owned | on-demand, - |"), "{r}");
    }
}

/// Each format of `pareto` and `top` on the ties run, as committed snapshots: the table and
/// Markdown print a tie group as one row, CSV and JSON every row with its tie_group; the row
/// count is on stderr.
#[test]
fn query_formats_snapshot() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    for format in ["table", "markdown", "csv", "json"] {
        let mut args = vec!["pareto", d, "--format", format];
        args.extend(TIES_OBJECTIVES);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let footer = match format {
            "table" | "markdown" => {
                "3 rows (18 configurations: rows equal on every objective are one row)\n"
            }
            _ => "18 rows\n",
        };
        assert_eq!(stderr(&o), footer, "{format}");
        assert_snapshot(
            &root().join(format!("tests/snapshots/query-pareto-ties.{format}")),
            &stdout(&o),
        );
        let o = run(&[
            "top",
            d,
            "--by",
            "min ttft_ms",
            "-n",
            "4",
            "--format",
            format,
            "--columns",
            "config_id,racks,ownership,pricing,ttft_ms,feasible,meets_slo",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stderr(&o), "4 rows\n", "{format}");
        assert_snapshot(
            &root().join(format!("tests/snapshots/query-top-ties.{format}")),
            &stdout(&o),
        );
    }
}

/// The JSON and CSV of one query hold the same rows; JSON's values are typed.
#[test]
fn csv_and_json_agree_and_json_is_typed() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    let query = |format: &str| {
        let mut args = vec!["pareto", d, "--format", format];
        args.extend(TIES_OBJECTIVES);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let json: serde_json::Value = serde_json::from_str(&query("json")).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 18);
    let first = &rows[0];
    assert_eq!(first["config_id"], 2);
    assert_eq!(first["hardware"], "h100-sxm");
    assert_eq!(first["ownership"], "cloud");
    assert_eq!(first["pricing"], "on-demand");
    assert!(rows[1]["pricing"].is_null(), "owned: no pricing");
    assert!(first["tokens_per_s_per_gpu"].is_f64());
    assert_eq!(first["tie_group"], 0);
    let csv = query("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        header.iter().collect::<BTreeSet<_>>(),
        keys.into_iter().collect::<BTreeSet<_>>()
    );
    for (record, row) in reader.records().zip(rows) {
        let record = record.unwrap();
        for (name, field) in header.iter().zip(record.iter()) {
            assert_eq!(field, json_text(&row[name.as_str()]), "{name}");
        }
    }
}

/// A JSON value as the CSV writes it.
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => n.as_f64().unwrap().to_string(),
        other => other.to_string(),
    }
}

/// Without --columns, the columns that tell the printed rows apart are shown: racks and
/// ownership where they differ, not where they do not.
#[test]
fn columns_that_vary_are_shown() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    let header = |wheres: &[&str]| {
        let mut args = vec!["top", d, "--by", "tokens_per_s_per_gpu", "-n", "6"];
        for w in wheres {
            args.extend(["--where", w]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let header: Vec<String> = out
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect();
        header
    };
    let all = header(&[]);
    for c in ["racks", "gpus", "servers", "ownership", "pricing"] {
        assert!(all.iter().any(|h| h == c), "{c} in {all:?}");
    }
    // One ownership among the rows: its column goes (pricing with it); racks still differ.
    let owned = header(&["tp == 4 and batch == 8 and ownership == owned"]);
    assert!(owned.iter().any(|h| h == "ownership"), "named by --where");
    assert!(!owned.iter().any(|h| h == "pricing"), "{owned:?}");
    assert!(owned.iter().any(|h| h == "servers"), "{owned:?}");
    let one_rack = header(&["racks == 1 and ownership == owned"]);
    assert!(!one_rack.iter().any(|h| h == "servers"), "{one_rack:?}");
}

#[test]
fn columns_are_chosen_and_checked() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    let o = run(&[
        "top",
        d,
        "--by",
        "tokens_per_s_per_gpu",
        "-n",
        "2",
        "--columns",
        "ownership,config_id",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "ownership,config_id\ncloud,2\nowned,3\n");
    for (columns, expected) in [
        (
            "config_id,ownershp",
            "error: --columns: unknown inference column \"ownershp\"\nhint: did you mean \"ownership\"? (docs/schema.md lists the columns)\n",
        ),
        (
            "racks,racks",
            "error: --columns: \"racks\" is named twice\n",
        ),
    ] {
        let o = run(&[
            "top",
            d,
            "--by",
            "tokens_per_s_per_gpu",
            "--columns",
            columns,
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(stderr(&o), expected);
        assert!(stdout(&o).is_empty());
    }
}

/// `--where` errors name the flag, the text and what is wrong with it.
#[test]
fn where_errors_are_clear() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    for (filter, message) in [
        (
            "(racks == 1 or racks == 2",
            "error: --where \"(racks == 1 or racks == 2\": a \"(\" is not closed\n",
        ),
        (
            "racks == 1 or",
            "error: --where \"racks == 1 or\": nothing after \"or\"\n",
        ),
    ] {
        let o = run(&["top", d, "--by", "tokens_per_s_per_gpu", "--where", filter]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).starts_with(message), "{}", stderr(&o));
        assert!(stderr(&o).contains("hint: write e.g."), "{}", stderr(&o));
    }
}

/// A part damaged in place after a reader checksummed it, keeping its size and modification
/// time (bit rot, or a copy tool that keeps times), passes the checksum cache and fails only
/// when its rows are read. `top`, `pareto` and `report` then checksum every file again and name
/// the damaged one as the user's to fix (exit 1), not as racksweep's own failure (exit 2).
#[test]
fn a_part_damaged_in_place_is_named() {
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    let top = ["top", d, "--by", "tokens_per_s_per_gpu"];
    let o = run(&top);
    assert!(o.status.success(), "{}", stderr(&o));
    let part = dir.join("configs/part-0-of-1.parquet");
    let modified = std::fs::metadata(&part).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&part).unwrap();
    // The footer's length (the 4 bytes before the closing magic) now points past the file.
    let n = bytes.len();
    bytes[n - 8..n - 4].copy_from_slice(&0x7fff_ffff_u32.to_le_bytes());
    std::fs::write(&part, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&part)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let objective = ["--objective", "max tokens_per_s_per_gpu"];
    for args in [
        top.to_vec(),
        [&["pareto", d][..], &objective[..]].concat(),
        vec!["report", d],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: part 0/1: ")
                && stderr(&o).contains("part-0-of-1.parquet does not match its commit record"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// A part changed together with its record's checksum (a forged record) passes every checksum
/// and fails only when decoded. Racksweep wrote both files, so that is the user's to fix too:
/// `top`, `pareto` and `report` decode every file and name the one that does not decode,
/// `merge` names it from its footer (exit 1), never racksweep's own failure (exit 2). Two
/// forgeries: a footer that does not decode, and a column's pages that do not, whose footer
/// does (only a reader of that column sees it; `report` reads every column).
#[test]
fn a_part_forged_with_its_checksum_is_named() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use sha2::{Digest, Sha256};
    let (_tmp, dir) = finished("tests/specs/ties.toml", "ties");
    let d = dir.to_str().unwrap();
    let part = dir.join("configs/part-0-of-1.parquet");
    let frontier = dir.join("parts/part-0-of-1.pareto.parquet");
    let record = dir.join("parts/part-0-of-1.json");
    let original = (
        std::fs::read(&part).unwrap(),
        std::fs::read(&frontier).unwrap(),
        std::fs::read(&record).unwrap(),
    );
    // `file` rewritten as `bytes`, the record's checksum `key` with it (the other file intact).
    let forge = |file: &Path, key: &str, bytes: &[u8]| {
        std::fs::write(&part, &original.0).unwrap();
        std::fs::write(&frontier, &original.1).unwrap();
        std::fs::write(file, bytes).unwrap();
        let mut r: serde_json::Value = serde_json::from_slice(&original.2).unwrap();
        r[key] = format!("{:x}", Sha256::digest(bytes)).into();
        std::fs::write(&record, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    };
    // The footer's length (the 4 bytes before the closing magic) points past the file.
    let footer_broken = |file: &[u8]| {
        let mut bytes = file.to_vec();
        let n = bytes.len();
        bytes[n - 8..n - 4].copy_from_slice(&0x7fff_ffff_u32.to_le_bytes());
        bytes
    };
    let merge_names = |file: &Path| {
        let o = run(&["merge", d]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let expected = format!(
            "error: part 0/1: {} binds {} by its checksum, a file that is not readable Parquet (",
            record.display(),
            file.display()
        );
        assert!(stderr(&o).starts_with(&expected), "{}", stderr(&o));
    };
    let not_readable = format!(
        "error: {} matches its commit record but is not readable Parquet (",
        part.display()
    );
    let objective = ["--objective", "max tokens_per_s_per_gpu"];
    let readers = [
        vec!["top", d, "--by", "tokens_per_s_per_gpu"],
        [&["pareto", d][..], &objective[..]].concat(),
        vec!["report", d],
    ];

    forge(&part, "configs_sha256", &footer_broken(&original.0));
    for args in &readers {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with(&not_readable),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("hint: the run directory was altered"));
    }
    merge_names(&part);

    // The middle half of the largest column chunk (zstd pages) flipped; the footer intact.
    let meta = SerializedFileReader::new(bytes::Bytes::from(original.0.clone()))
        .unwrap()
        .metadata()
        .clone();
    let chunk = meta
        .row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .max_by_key(|c| c.compressed_size())
        .unwrap();
    let start = usize::try_from(chunk.data_page_offset()).unwrap();
    let len = usize::try_from(chunk.compressed_size()).unwrap();
    let mut bytes = original.0.clone();
    for b in &mut bytes[start + len / 4..start + 3 * len / 4] {
        *b ^= 0x5a;
    }
    forge(&part, "configs_sha256", &bytes);
    let o = run(&readers[2]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with(&not_readable), "{}", stderr(&o));
    let o = run(&["merge", d]);
    assert!(o.status.success(), "the footer decodes: {}", stderr(&o));

    // The part's own frontier forged the same way: merge reads its config_ids.
    forge(&frontier, "pareto_sha256", &footer_broken(&original.1));
    merge_names(&frontier);
}
