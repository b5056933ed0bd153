//! `racksweep validate`: predict a measurements file and print the errors, or, with
//! `--fit`, the global factors fitted to it, or with `--leave-one-out`, the in- and
//! out-of-sample errors of that fit.

use anyhow::Result;

use crate::cli::ValidateArgs;
use crate::output::table::{Markdown, Text};
use crate::pipeline;
use crate::validate;

#[expect(
    clippy::print_stderr,
    reason = "a fit's progress (each fit's objective, runs and seconds) is a log line, not data"
)]
pub fn run(args: ValidateArgs) -> Result<String> {
    let (cases, catalog) = validate::validate(&args.measurements, args.calibration.as_deref())?;
    let threads = args.threads.map_or(0, |t| t as usize);
    let workers = pipeline::workers(threads)?;
    let render = |json: serde_json::Value,
                  text: &dyn Fn(&dyn crate::output::table::Exporter) -> String|
     -> Result<String> {
        Ok(if args.json {
            serde_json::to_string_pretty(&json)? + "\n"
        } else if args.markdown {
            text(&Markdown)
        } else {
            text(&Text)
        })
    };
    if args.fit {
        let fit = workers.install(|| validate::fit::all_rows(&cases, &catalog, args.quick));
        return render(fit.json(), &|e| fit.render(e));
    }
    if args.leave_one_out {
        let families = validate::loo::Families::builtin();
        let log = |line: &str| eprintln!("{line}");
        let loo = workers.install(|| {
            validate::loo::leave_one_out(
                &cases,
                &args.measurements.display().to_string(),
                &catalog,
                &families,
                args.quick,
                &log,
            )
        })?;
        return render(loo.json(), &|e| loo.render(e));
    }
    let results = workers.install(|| validate::predict_all(&cases, &catalog));
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
