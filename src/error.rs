//! The error a user can fix (exit code 1), as opposed to an internal failure (exit code 2), and
//! an interrupted run (exit code 128 + signal); and how any error is told to the user
//! ([`describe`]).

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

/// What to print for `e` and the exit code: 1 for a user's mistake and for the machine's
/// (a full disk, a missing or unwritable file: an I/O error, possibly wrapped by the Parquet
/// writer), 128 + signal for an interrupted run, 2 only for racksweep's own failures.
pub fn describe(e: &anyhow::Error) -> (String, u8) {
    if let Some(user) = e.downcast_ref::<UserError>() {
        return (format!("error: {user}"), 1);
    }
    if let Some(stopped) = e.downcast_ref::<Interrupted>() {
        return (format!("error: {stopped}"), stopped.exit_code());
    }
    if let Some(io) = io_cause(e) {
        let mut message = format!("error: {e:#}");
        if let Some(hint) = io_hint(io.kind()) {
            message.push_str(&format!("\nhint: {hint}"));
        }
        return (message, 1);
    }
    (format!("error: internal: {e:#}"), 2)
}

/// The I/O error behind `e`, if one is (possibly wrapped by the Parquet writer).
fn io_cause(e: &anyhow::Error) -> Option<&std::io::Error> {
    e.chain().find_map(|c| {
        c.downcast_ref::<std::io::Error>().or_else(|| {
            match c.downcast_ref::<parquet::errors::ParquetError>()? {
                parquet::errors::ParquetError::External(inner) => {
                    inner.downcast_ref::<std::io::Error>()
                }
                _ => None,
            }
        })
    })
}

fn io_hint(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind;
    match kind {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(
            "free space on that file system, or pass --out to write elsewhere; the committed parts are kept (--resume continues)",
        ),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            Some("write where you may: pass --out with a writable directory")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    /// A full disk is the machine's doing, not racksweep's: exit 1, said once, with a hint,
    /// also when the Parquet writer wraps it; a bug stays exit 2.
    #[test]
    fn exit_codes_tell_whose_fault() {
        let full = || std::io::Error::from(std::io::ErrorKind::StorageFull);
        let e = Err::<(), _>(full()).context("writing part-0").unwrap_err();
        let (message, code) = describe(&e);
        assert_eq!(code, 1);
        assert_eq!(message.matches("writing part-0").count(), 1, "{message}");
        assert!(message.contains("hint: free space"), "{message}");
        let wrapped =
            anyhow::Error::from(parquet::errors::ParquetError::External(Box::new(full())));
        assert_eq!(describe(&wrapped).1, 1);
        let user = anyhow::Error::from(UserError::new("bad key"));
        assert_eq!(describe(&user), ("error: bad key".to_string(), 1));
        assert_eq!(describe(&anyhow::anyhow!("a bug")).1, 2);
        let stopped = anyhow::Error::from(Interrupted {
            signal: 15,
            run_dir: "r".into(),
        });
        assert_eq!(describe(&stopped).1, 143);
    }
}
