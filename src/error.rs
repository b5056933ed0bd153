//! The error a user can fix (exit code 1), as opposed to an internal failure (exit code 2), and
//! an interrupted run (exit code 128 + signal).

use std::fmt;

/// A mistake in the user's input: a sweep file, a flag, an existing output directory.
/// Printed as `error: <message>` and, when there is one, `hint: <hint>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserError {
    pub message: String,
    pub hint: Option<String>,
}

impl UserError {
    pub fn new(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UserError {}

/// A run stopped by SIGINT or SIGTERM after committing what it could (exit code 128 + signal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    pub signal: i32,
    pub run_dir: std::path::PathBuf,
}

impl Interrupted {
    pub fn exit_code(&self) -> u8 {
        u8::try_from(128 + self.signal).unwrap_or(1)
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "interrupted; the committed parts are kept in {}\nhint: continue with the same command and --resume",
            self.run_dir.display()
        )
    }
}

impl std::error::Error for Interrupted {}
