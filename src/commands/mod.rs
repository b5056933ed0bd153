//! One module per subcommand.

pub mod analytics;
pub mod catalog;
pub mod check;
pub mod completions;
pub mod merge;
pub mod report;
pub mod run;
pub mod validate;
