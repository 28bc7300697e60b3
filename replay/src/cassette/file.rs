//! A cassette on disk: bounded, strict reading and atomic writing, both
//! through the same checks.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::canonical::body_sha256;
use super::error::{CassetteError, CassetteErrorKind};
use super::format::{Cassette, MAX_CASSETTE_BYTES};
use super::json_path::cassette_error;

impl Cassette {
    /// Read and check one cassette file.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let path = path.as_ref();
        let io_err = |e: std::io::Error| {
            CassetteError::new(
                path,
                None,
                CassetteErrorKind::Io,
                format!("cannot read: {e}"),
            )
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.len() > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!(
                    "file is {} bytes; the limit is {MAX_CASSETTE_BYTES}",
                    meta.len()
                ),
            ));
        }
        let bytes = std::fs::read(path).map_err(io_err)?;
        // The file may have grown between metadata() and read().
        if bytes.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!("file exceeds {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            CassetteError::new(
                path,
                None,
                CassetteErrorKind::BadJson,
                format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
            )
        })?;
        Cassette::from_json_str(&text, path)
    }

    /// Parse and check a cassette from text; `source` is only used in errors.
    pub fn from_json_str(text: &str, source: &Path) -> Result<Cassette, CassetteError> {
        if text.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                source,
                None,
                CassetteErrorKind::TooLarge,
                format!("more than {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let mut cassette: Cassette =
            strict::from_str(strict::Format::Json, text).map_err(|e| cassette_error(source, &e))?;
        cassette.check(source)?;
        cassette.fill_hashes();
        Ok(cassette)
    }

    /// Fill in `body_sha256` where a body is present but the hash is not
    /// (derivable, so a hand-edited body does not need a hand-computed hash).
    pub(super) fn fill_hashes(&mut self) {
        for run in &mut self.runs {
            for it in &mut run.interactions {
                if let (Some(body), None) = (&it.request.body, &it.request.body_sha256) {
                    it.request.body_sha256 = Some(body_sha256(body));
                }
            }
        }
    }

    /// Write the cassette pretty-printed, atomically (temp file in the same
    /// directory, fsync, rename, fsync the directory), after the same checks
    /// `load` makes: a cassette that would be refused is never written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CassetteError> {
        let path = path.as_ref();
        self.check(path)?;
        let mut text = serde_json::to_string_pretty(self).map_err(|e| {
            CassetteError::new(path, None, CassetteErrorKind::InvalidValue, e.to_string())
        })?;
        text.push('\n');
        if text.len() as u64 > MAX_CASSETTE_BYTES {
            return Err(CassetteError::new(
                path,
                None,
                CassetteErrorKind::TooLarge,
                format!("would exceed {MAX_CASSETTE_BYTES} bytes"),
            ));
        }
        let io = |what: &str, e: std::io::Error| {
            CassetteError::new(path, None, CassetteErrorKind::Io, format!("{what}: {e}"))
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cassette.json".into());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        // Hidden and not *.json, so load_dir never picks up a half-written temp.
        let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            Ok(())
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("writing temp file", e));
        }
        if let Err(e) = std::fs::rename(&tmp, path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("renaming temp file into place", e));
        }
        // Make the rename itself durable; best effort where directories
        // cannot be opened for sync.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}
