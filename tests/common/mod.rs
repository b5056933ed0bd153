//! Helpers shared by the integration tests: run the binary, read Parquet back, compare snapshots.

#![allow(
    dead_code,
    reason = "each test crate uses its own part of these helpers; an #[expect] would fail in the crates that use them all"
)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_racksweep"))
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs racksweep with `args` from `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("racksweep runs")
}

pub fn run(args: &[&str]) -> Output {
    run_in(&root(), args)
}

/// A finished run of `sweep` (named `name`) in a temporary directory.
pub fn finished(sweep: &str, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&[
        "run",
        sweep,
        "--quiet",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join(name);
    (tmp, dir)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The grid size `racksweep check` reports.
pub fn configurations(sweep: &str) -> u64 {
    let o = run(&["check", sweep]);
    assert!(o.status.success(), "check {sweep}: {}", stderr(&o));
    stdout(&o)
        .lines()
        .find_map(|l| l.strip_prefix("configurations: "))
        .expect("check prints configurations")
        .parse()
        .expect("a number")
}

/// All record batches of a Parquet file, and its key/value metadata.
pub fn read_parquet(path: &Path) -> (Vec<RecordBatch>, Vec<(String, String)>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).expect("file exists"))
        .expect("valid parquet");
    let metadata = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let batches = builder
        .build()
        .expect("reader")
        .map(|b| b.expect("batch"))
        .collect();
    (batches, metadata)
}

/// Column `name` of every batch, each turned into values by `read`, concatenated.
fn column<T>(
    batches: &[RecordBatch],
    name: &str,
    read: impl Fn(&arrow_array::ArrayRef) -> Vec<T>,
) -> Vec<T> {
    batches
        .iter()
        .flat_map(|b| {
            read(
                b.column_by_name(name)
                    .unwrap_or_else(|| panic!("column {name}")),
            )
        })
        .collect()
}

/// A u64 column of `batches`, concatenated.
pub fn column_u64(batches: &[RecordBatch], name: &str) -> Vec<u64> {
    use arrow_array::cast::AsArray;
    column(batches, name, |c| {
        c.as_primitive::<arrow_array::types::UInt64Type>()
            .values()
            .to_vec()
    })
}

/// A u32 (count) column of `batches`, concatenated, nulls as `None`.
pub fn column_u32(batches: &[RecordBatch], name: &str) -> Vec<Option<u32>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    column(batches, name, |c| {
        let c = c.as_primitive::<arrow_array::types::UInt32Type>();
        (0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i)))
            .collect()
    })
}

/// A float64 column of `batches`, concatenated, nulls as `None`.
pub fn column_f64(batches: &[RecordBatch], name: &str) -> Vec<Option<f64>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    column(batches, name, |c| {
        let c = c.as_primitive::<arrow_array::types::Float64Type>();
        (0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i)))
            .collect()
    })
}

/// A boolean column of `batches`, concatenated, nulls as false.
pub fn column_flags(batches: &[RecordBatch], name: &str) -> Vec<bool> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    column(batches, name, |c| {
        let c = c.as_boolean();
        (0..c.len()).map(|i| c.is_valid(i) && c.value(i)).collect()
    })
}

/// A label (dictionary) column of `batches` as text, concatenated.
pub fn column_labels(batches: &[RecordBatch], name: &str) -> Vec<String> {
    use arrow_array::cast::AsArray;
    column(batches, name, |c| {
        let d = c.as_dictionary::<arrow_array::types::UInt16Type>();
        let values = d.values().as_string::<i32>();
        d.keys()
            .values()
            .iter()
            .map(|&k| values.value(k as usize).to_string())
            .collect()
    })
}

/// The config_ids of the `n` best `(value, config_id)` pairs, highest first when `maximize`,
/// ties broken by the lower config_id (the ranking `top` and the report use).
pub fn best_ids(mut rows: Vec<(f64, u64)>, n: usize, maximize: bool) -> Vec<u64> {
    rows.sort_by(|a, b| {
        let by_value = if maximize {
            b.0.total_cmp(&a.0)
        } else {
            a.0.total_cmp(&b.0)
        };
        by_value.then(a.1.cmp(&b.1))
    });
    rows.into_iter().take(n).map(|(_, id)| id).collect()
}

/// The rows of a run directory: every `configs/part-K-of-N.parquet`, in part order.
pub fn read_configs(run_dir: &Path) -> Vec<RecordBatch> {
    part_files(&run_dir.join("configs"), ".parquet")
        .iter()
        .flat_map(|p| read_parquet(p).0)
        .collect()
}

/// `part-K-of-N<suffix>` files of `dir`, sorted by K.
pub fn part_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut parts: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .expect("directory exists")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let k = name.strip_prefix("part-")?.strip_suffix(suffix)?;
            let k: u64 = k.split_once("-of-")?.0.parse().ok()?;
            Some((k, p))
        })
        .collect();
    parts.sort();
    parts.into_iter().map(|(_, p)| p).collect()
}

/// Every row of `batches` as its own one-row batch, to compare tables split differently.
pub fn single_rows(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |i| b.slice(i, 1)))
        .collect()
}

/// Compares `actual` to the snapshot file, or rewrites it when RACKSWEEP_BLESS=1.
pub fn assert_snapshot(path: &Path, actual: &str) {
    if std::env::var_os("RACKSWEEP_BLESS").is_some() {
        std::fs::write(path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with RACKSWEEP_BLESS=1 to create it",
            path.display()
        )
    });
    assert_eq!(
        expected,
        actual,
        "snapshot {} differs (RACKSWEEP_BLESS=1 rewrites it)",
        path.display()
    );
}
