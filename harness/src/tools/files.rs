//! The file tools: read_file (whole, or by line range), write_file,
//! list_files and edit_file. Every path goes through the workspace's
//! confined layer (crate::confined): no symlink followed, no FIFO or device
//! opened, no write through a hard link.

use super::*;

impl ToolBox<'_> {
    pub(super) fn read_file(&self, path: &str) -> Observation {
        // Opened O_NONBLOCK|O_NOFOLLOW and checked on the descriptor: a FIFO
        // or device is refused, never read (it could block the run forever).
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("{e}; use list_files to list it"))
            }
            Err(e) => return Observation::err(e.to_string()),
        };
        if rf.len > READ_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is {} bytes, over the {READ_MAX_BYTES}-byte read limit",
                rf.len
            ));
        }
        let mut buf = Vec::new();
        // take(): the size was checked above, but the file could be growing.
        if let Err(e) = rf.file.take(READ_MAX_BYTES + 1).read_to_end(&mut buf) {
            return Observation::err(format!("cannot read {path:?}: {e}"));
        }
        if buf.len() as u64 > READ_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is over the {READ_MAX_BYTES}-byte read limit"
            ));
        }
        match String::from_utf8(buf) {
            Ok(s) => Observation::ok(s),
            Err(_) => Observation::err(format!(
                "{path:?} is not UTF-8 text; read_file only returns text files"
            )),
        }
    }

    pub(super) fn write_file(&self, path: &str, content: &str) -> Observation {
        if content.len() > WRITE_MAX_BYTES {
            return Observation::err(format!(
                "content is {} bytes, over the {WRITE_MAX_BYTES}-byte write limit",
                content.len()
            ));
        }
        // A temp file in the same directory renamed over the target: never
        // through an existing inode (a hard link could lead outside), durable
        // like the harness's own writes through the layer the chaos bench
        // logs (a task the report lists as verified must survive a power cut).
        self.write_through(
            path,
            content,
            format!("wrote {} bytes to {path}", content.len()),
        )
    }

    /// Write `content` as the whole of `path` through the confined atomic
    /// write (write_file and edit_file): `done` on success, the write's
    /// failure (with what may have changed) otherwise.
    pub(super) fn write_through(&self, path: &str, content: &str, done: String) -> Observation {
        match crate::confined::write(self.workspace, path, content.as_bytes()) {
            Ok(rel) => Observation::ok(done).wrote(vec![rel]),
            Err(f) => {
                let mut o = match &f.error {
                    crate::confined::FileError::IsDir { .. } => {
                        Observation::err(format!("{}; give a file path", f.error))
                    }
                    crate::confined::FileError::Io { .. } => {
                        Observation::err(format!("cannot write {path:?}: {}", f.error))
                    }
                    e => Observation::err(e.to_string()),
                };
                o.side_effect = f.side_effect;
                o.wrote = f.replaced.clone().into_iter().collect();
                o.in_doubt = f.replaced.into_iter().collect();
                o
            }
        }
    }

    pub(super) fn list_files(&self, path: &str) -> Observation {
        let listing = match crate::confined::list_dir(self.workspace, path) {
            Ok(l) => l,
            Err(crate::confined::FileError::NotFound { .. }) => {
                return Observation::err(format!("{path:?} does not exist"))
            }
            Err(crate::confined::FileError::NotADirectory { .. }) => {
                return Observation::err(format!("{path:?} is a file; use read_file to read it"))
            }
            Err(e) => return Observation::err(format!("cannot list {path:?}: {e}")),
        };
        // Entries are shown relative to the workspace root so they can be
        // passed straight back to read_file.
        let prefix = match self
            .workspace
            .resolve(path)
            .ok()
            .and_then(|abs| crate::confined::rel_string(self.workspace, &abs))
        {
            Some(p) => format!("{p}/"),
            None => String::new(),
        };
        let mut names: Vec<String> = Vec::new();
        let mut more = 0usize;
        for entry in listing.entries {
            if entry.name.eq_ignore_ascii_case(".git") {
                continue;
            }
            // Hold at most 4x the limit: a huge directory must not be read
            // into memory whole. Past that, the listing is still sorted but
            // may not be the alphabetically first names; the count says so.
            if names.len() >= LIST_MAX_ENTRIES * 4 {
                more += 1;
                continue;
            }
            names.push(if entry.is_dir {
                format!("{prefix}{}/", entry.name)
            } else {
                format!("{prefix}{}", entry.name)
            });
        }
        names.sort();
        if names.len() > LIST_MAX_ENTRIES {
            more += names.len() - LIST_MAX_ENTRIES;
            names.truncate(LIST_MAX_ENTRIES);
        }
        let mut out = if names.is_empty() {
            format!("{path} is empty")
        } else {
            names.join("\n")
        };
        if more > 0 {
            out.push_str(&format!("\n... and {more} more entries not shown"));
        }
        if listing.truncated {
            out.push_str(&format!(
                "\n... the directory holds more than {} entries; only that many were looked at",
                crate::confined::DIR_SCAN_MAX_ENTRIES
            ));
        }
        Observation::ok(out)
    }

    /// read_file with a line range: 1-based, inclusive, at most
    /// [`READ_RANGE_MAX_LINES`] lines and [`READ_MAX_BYTES`] bytes returned,
    /// from a file of up to [`READ_RANGE_FILE_MAX_BYTES`]. The first line of
    /// the result says which lines of how many came back.
    pub(super) fn read_range(
        &self,
        path: &str,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Observation {
        let start = start.unwrap_or(1);
        if let Err(o) = check_range(start, end) {
            return o;
        }
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("{e}; use list_files to list it"))
            }
            Err(e) => return Observation::err(e.to_string()),
        };
        if rf.len > READ_RANGE_FILE_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is {} bytes, over the {READ_RANGE_FILE_MAX_BYTES}-byte limit of a ranged read",
                rf.len
            ));
        }
        // The last line asked for, within the per-call line bound.
        let wanted_end = end
            .unwrap_or(u64::MAX)
            .min(start.saturating_add(READ_RANGE_MAX_LINES - 1));
        let reader = std::io::BufReader::new(rf.file.take(READ_RANGE_FILE_MAX_BYTES + 1));
        let got = match read_lines(reader, path, start, wanted_end) {
            Ok(got) => got,
            Err(o) => return o,
        };
        if start > got.n {
            return Observation::err(format!(
                "read_file: start_line {start} is past the end of {path:?}, which has {} line(s)",
                got.n
            ));
        }
        let head = got.head(path, start, end);
        let text = match String::from_utf8(got.out) {
            Ok(t) => t,
            Err(_) => {
                return Observation::err(format!(
                    "lines {start}-{} of {path:?} are not UTF-8 text; read_file only returns text",
                    got.last_returned
                ))
            }
        };
        Observation::ok(head + &text)
    }

    /// Replace the one occurrence of `old` in `path` by `new`, through the
    /// same confined atomic write as write_file. Zero or several occurrences
    /// (overlapping ones counted) change nothing.
    pub(super) fn edit_file(&self, path: &str, old: &str, new: &str) -> Observation {
        if old.is_empty() {
            return Observation::err(
                "edit_file: `old` is empty; give the exact text to replace".into(),
            );
        }
        if old == new {
            return Observation::err(
                "edit_file: `old` and `new` are the same; nothing to change".into(),
            );
        }
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("edit_file: {e}; give a file path"))
            }
            Err(e) => return Observation::err(format!("edit_file: {e}")),
        };
        let max = EDIT_FILE_MAX_BYTES as u64;
        if rf.len > max {
            return Observation::err(format!(
                "edit_file: {path:?} is {} bytes, over the {max}-byte edit limit",
                rf.len
            ));
        }
        let mut buf = Vec::new();
        if let Err(e) = rf.file.take(max + 1).read_to_end(&mut buf) {
            return Observation::err(format!("edit_file: cannot read {path:?}: {e}"));
        }
        if buf.len() as u64 > max {
            return Observation::err(format!(
                "edit_file: {path:?} is over the {max}-byte edit limit"
            ));
        }
        let Ok(text) = String::from_utf8(buf) else {
            return Observation::err(format!(
                "edit_file: {path:?} is not UTF-8 text; edit_file only edits text files"
            ));
        };
        let at = occurrences(&text, old);
        if at.len() != 1
            && !(at.len() > 1 && crate::mutants::active(crate::mutants::Mutant::EditFirstOfMany))
        {
            let n = at.len();
            return Observation::err(if n == 0 {
                format!("edit_file: `old` occurs 0 times in {path:?} (it must match exactly, whitespace and line breaks included); nothing was changed")
            } else {
                format!("edit_file: `old` occurs {n} times in {path:?}; it must occur exactly once: include more of the surrounding text; nothing was changed")
            });
        }
        let i = at[0];
        let mut out = String::with_capacity(text.len() - old.len() + new.len());
        out.push_str(&text[..i]);
        out.push_str(new);
        out.push_str(&text[i + old.len()..]);
        if out.len() > EDIT_FILE_MAX_BYTES {
            return Observation::err(format!(
                "edit_file: the edited file would be {} bytes, over the {EDIT_FILE_MAX_BYTES}-byte limit; nothing was changed",
                out.len()
            ));
        }
        let line = text[..i].matches('\n').count() + 1;
        self.write_through(
            path,
            &out,
            format!(
                "edit_file: replaced 1 occurrence in {path} at line {line}; wrote {} bytes",
                out.len()
            ),
        )
    }
}

/// A ranged read's line numbers count from 1, and the range runs forward:
/// said before the file is opened.
fn check_range(start: u64, end: Option<u64>) -> Result<(), Observation> {
    if start == 0 || end == Some(0) {
        return Err(Observation::err(
            "read_file: start_line and end_line count from 1 (the first line is line 1)".into(),
        ));
    }
    if let Some(e) = end {
        if e < start {
            return Err(Observation::err(format!(
                "read_file: end_line {e} is before start_line {start}"
            )));
        }
    }
    Ok(())
}

/// What a ranged read collected: the range's bytes, the file's line count
/// (every line is read, so the head can say "of n"), the last line
/// returned, and whether the byte limit cut the range short.
struct RangeRead {
    out: Vec<u8>,
    n: u64,
    last_returned: u64,
    cut_by_bytes: bool,
}

impl RangeRead {
    /// The result's first line: which lines of how many came back, and
    /// where to continue when a limit cut the range.
    fn head(&self, path: &str, start: u64, end: Option<u64>) -> String {
        let (n, last_returned) = (self.n, self.last_returned);
        let mut head = format!("[lines {start}-{last_returned} of {n} in {path}");
        if self.cut_by_bytes {
            head.push_str(&format!(
                "; cut at the {READ_MAX_BYTES}-byte read limit, continue with start_line {}",
                last_returned + 1
            ));
        } else if last_returned < end.unwrap_or(n).min(n) {
            head.push_str(&format!(
                "; at most {READ_RANGE_MAX_LINES} lines per call, continue with start_line {}",
                last_returned + 1
            ));
        }
        head.push_str("]\n");
        head
    }
}

/// Lines `start..=wanted_end` of the file, within [`READ_MAX_BYTES`]; the
/// whole file is read (up to its bound) to count its lines. A first line
/// alone over the byte limit, or a file past its bound, is an error.
fn read_lines(
    mut reader: impl std::io::BufRead,
    path: &str,
    start: u64,
    wanted_end: u64,
) -> Result<RangeRead, Observation> {
    let mut got = RangeRead {
        out: Vec::new(),
        n: 0,
        last_returned: 0,
        cut_by_bytes: false,
    };
    let mut line: Vec<u8> = Vec::new();
    let mut read: u64 = 0;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(k) => read += k as u64,
            Err(e) => return Err(Observation::err(format!("cannot read {path:?}: {e}"))),
        }
        if read > READ_RANGE_FILE_MAX_BYTES {
            return Err(Observation::err(format!(
                "{path:?} is over the {READ_RANGE_FILE_MAX_BYTES}-byte limit of a ranged read"
            )));
        }
        got.n += 1;
        let n = got.n;
        if n < start || n > wanted_end || got.cut_by_bytes {
            continue;
        }
        if got.out.len() + line.len() > READ_MAX_BYTES as usize {
            if n == start {
                return Err(Observation::err(format!(
                    "line {n} of {path:?} alone is over the {READ_MAX_BYTES}-byte read limit"
                )));
            }
            got.cut_by_bytes = true;
            continue;
        }
        got.out.extend_from_slice(&line);
        got.last_returned = n;
    }
    Ok(got)
}

/// Byte offsets of every occurrence of `needle` in `hay`, overlapping ones
/// included ("aa" occurs twice in "aaa": an edit of it is ambiguous).
pub(super) fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while from <= hay.len() {
        let Some(i) = hay[from..].find(needle) else {
            break;
        };
        let at = from + i;
        out.push(at);
        // Next start: one character on (a char boundary).
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    out
}
