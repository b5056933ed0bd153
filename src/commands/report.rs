//! `racksweep report`: write a finished run's planning-review report (`report::write`) and say
//! where it is.

use anyhow::Result;

use crate::cli::ReportArgs;
use crate::output::run_dir::RunDir;
use crate::report;

pub fn run(args: ReportArgs) -> Result<String> {
    let written = report::write(&args.run_dir, args.top as usize, args.allow_incomplete)
        .map_err(|e| RunDir::new(args.run_dir.clone()).explain(e, args.allow_incomplete))?;
    Ok(format!(
        "wrote {} and {} ({} charts)",
        written.html.display(),
        written.markdown.display(),
        written.charts
    ))
}
