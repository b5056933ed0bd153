//! `racksweep validate`: predict a measurements file and print the errors.

use anyhow::Result;

use crate::cli::ValidateArgs;
use crate::pipeline;
use crate::validate;

pub fn run(args: ValidateArgs) -> Result<String> {
    let (cases, catalog) = validate::validate(&args.measurements, args.calibration.as_deref())?;
    let threads = args.threads.map_or(0, |t| t as usize);
    let results = pipeline::workers(threads)?.install(|| validate::predict_all(&cases, &catalog));
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
