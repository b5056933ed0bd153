//! `racksweep validate`: predict a measurements file and print the errors.

use anyhow::{Context as _, Result};

use crate::cli::ValidateArgs;
use crate::validate;

pub fn run(args: ValidateArgs) -> Result<String> {
    let (cases, catalog) = validate::validate(&args.measurements, args.calibration.as_deref())?;
    let threads = args.threads.map_or(0, |t| t as usize);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting worker threads")?;
    let results = pool.install(|| validate::predict_all(&cases, &catalog));
    if let Some(path) = &args.out {
        results.write_parquet(path)?;
    }
    if args.json {
        Ok(serde_json::to_string_pretty(&results.summary())? + "\n")
    } else if args.markdown {
        Ok(results.markdown())
    } else {
        Ok(results.text())
    }
}
