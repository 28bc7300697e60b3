//! The errors of loading a cassette or a recordings tree: each names the
//! file, the JSON field path and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of thing is wrong with a cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CassetteErrorKind {
    Io,
    TooLarge,
    BadJson,
    MissingField,
    UnknownField,
    InvalidValue,
    Duplicate,
    Secret,
    Limit,
}

/// An error that names the file, the field (a JSON path like
/// `runs[0].interactions[2].role`) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassetteError {
    pub file: PathBuf,
    /// JSON path of the offending field; None when the whole file is at fault.
    pub field: Option<String>,
    pub kind: CassetteErrorKind,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl CassetteError {
    pub(super) fn new(
        file: &Path,
        field: Option<String>,
        kind: CassetteErrorKind,
        message: impl Into<String>,
    ) -> Self {
        CassetteError {
            file: file.to_path_buf(),
            field,
            kind,
            line: None,
            column: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for CassetteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, " (line {l}, column {c})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for CassetteError {}

/// Every error found while loading a recordings tree (all files are checked,
/// so one run of `bench serve` shows every broken cassette).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingsError {
    pub errors: Vec<CassetteError>,
}

impl fmt::Display for RecordingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        write!(f, "{n} cassette error{}:", if n == 1 { "" } else { "s" })?;
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RecordingsError {}
