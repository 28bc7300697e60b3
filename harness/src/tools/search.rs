//! The search tool: a regex over the workspace's text files, walked through
//! the confined listing and open, every bound counted and said.

use super::*;

impl ToolBox<'_> {
    /// Search the workspace's text files under `path` for `pattern`.
    pub(super) fn search(&self, pattern: &str, path: &str) -> Observation {
        let re = match search_regex(pattern) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let mut w = SearchWalk::new(self.workspace, &re);
        // The path itself: a file is searched alone, a directory walked.
        // Results name files by their workspace-relative spelling (as
        // list_files does), whatever spelling the call used.
        let start = || {
            self.workspace
                .resolve(path)
                .ok()
                .and_then(|abs| crate::confined::rel_string(self.workspace, &abs))
                .unwrap_or_else(|| ".".into())
        };
        match crate::confined::list_dir(self.workspace, path) {
            Ok(_) => w.dir(&start(), 0),
            Err(crate::confined::FileError::NotADirectory { .. }) => w.file(&start()),
            Err(e) => return Observation::err(format!("search: {e}")),
        }
        Observation::ok(w.answer(pattern, path))
    }
}

/// The search pattern as a regex of bounded size (a pattern's compiled
/// size is the model's to choose, and the walk runs it on every line).
fn search_regex(pattern: &str) -> Result<regex::Regex, Observation> {
    if pattern.is_empty() {
        return Err(Observation::err("search: `pattern` is empty".into()));
    }
    if pattern.chars().count() > SEARCH_PATTERN_MAX_CHARS {
        return Err(Observation::err(format!(
            "search: the pattern is over {SEARCH_PATTERN_MAX_CHARS} characters"
        )));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(SEARCH_REGEX_MAX_BYTES)
        .dfa_size_limit(SEARCH_REGEX_MAX_BYTES)
        .build()
        .map_err(|e| {
            Observation::err(format!(
                "search: invalid pattern {:?}: {}",
                clip(pattern),
                clip(&e.to_string())
            ))
        })
}

/// One search call's walk: directories through the confined listing (no
/// symlink followed, .git skipped), files through the confined open (no
/// FIFO, device or symlink read), sorted, every bound counted.
struct SearchWalk<'a> {
    ws: &'a Workspace,
    re: &'a regex::Regex,
    matches: Vec<String>,
    more_matches: bool,
    files: usize,
    skipped_binary: usize,
    skipped_large: usize,
    skipped_other: usize,
    files_cut: bool,
    depth_cut: bool,
    /// File bytes read so far, and whether [`SEARCH_MAX_TOTAL_BYTES`] stopped the walk.
    bytes_read: u64,
    bytes_cut: bool,
}

impl<'a> SearchWalk<'a> {
    fn new(ws: &'a Workspace, re: &'a regex::Regex) -> SearchWalk<'a> {
        SearchWalk {
            ws,
            re,
            matches: Vec::new(),
            more_matches: false,
            files: 0,
            skipped_binary: 0,
            skipped_large: 0,
            skipped_other: 0,
            files_cut: false,
            depth_cut: false,
            bytes_read: 0,
            bytes_cut: false,
        }
    }

    /// The matches, then every bound that cut the walk and every file
    /// skipped, said: a search that stopped early never reads as complete.
    fn answer(&self, pattern: &str, path: &str) -> String {
        let mut out = if self.matches.is_empty() {
            format!(
                "no matches for {:?} in {path} ({} file(s) searched)",
                clip(pattern),
                self.files
            )
        } else {
            self.matches.join("\n")
        };
        if self.more_matches {
            out.push_str(&format!("\n[cut: more than {SEARCH_MAX_MATCHES} matches; only the first {SEARCH_MAX_MATCHES} are shown: narrow the pattern or the path]"));
        }
        if self.files_cut {
            out.push_str(&format!(
                "\n[cut: stopped after {SEARCH_MAX_FILES} files; narrow the path]"
            ));
        }
        if self.bytes_cut {
            out.push_str(&format!(
                "\n[cut: stopped after reading {SEARCH_MAX_TOTAL_BYTES} bytes of files; narrow the path]"
            ));
        }
        if self.depth_cut {
            out.push_str(&format!(
                "\n[cut: directories deeper than {SEARCH_MAX_DEPTH} levels were not searched]"
            ));
        }
        let skipped = self.skipped_binary + self.skipped_large + self.skipped_other;
        if skipped > 0 {
            out.push_str(&format!(
                "\n[skipped {skipped} file(s): {} binary or not UTF-8, {} over {SEARCH_FILE_MAX_BYTES} bytes, {} symlinks or special files]",
                self.skipped_binary, self.skipped_large, self.skipped_other
            ));
        }
        out
    }

    fn done(&self) -> bool {
        self.more_matches || self.files_cut || self.bytes_cut
    }

    fn dir(&mut self, rel: &str, depth: usize) {
        if self.done() {
            return;
        }
        let Ok(listing) = crate::confined::list_dir(self.ws, rel) else {
            self.skipped_other += 1;
            return;
        };
        let mut entries = listing.entries;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let prefix = match rel {
            "." => String::new(),
            p => format!("{p}/"),
        };
        for e in entries {
            if self.done() {
                return;
            }
            if e.name.eq_ignore_ascii_case(".git") {
                continue;
            }
            let child = format!("{prefix}{}", e.name);
            if e.is_symlink || (!e.is_dir && !e.is_file) {
                self.skipped_other += 1;
            } else if e.is_dir {
                if depth + 1 > SEARCH_MAX_DEPTH {
                    self.depth_cut = true;
                } else {
                    self.dir(&child, depth + 1);
                }
            } else {
                self.file(&child);
            }
        }
    }

    fn file(&mut self, rel: &str) {
        if self.done() {
            return;
        }
        if self.files >= SEARCH_MAX_FILES {
            self.files_cut = true;
            return;
        }
        let rf = match crate::confined::open_read(self.ws, rel) {
            Ok(f) => f,
            Err(_) => {
                self.skipped_other += 1;
                return;
            }
        };
        if rf.len > SEARCH_FILE_MAX_BYTES {
            self.skipped_large += 1;
            return;
        }
        if self.bytes_read + rf.len > SEARCH_MAX_TOTAL_BYTES {
            self.bytes_cut = true;
            return;
        }
        let mut buf = Vec::new();
        if rf
            .file
            .take(SEARCH_FILE_MAX_BYTES + 1)
            .read_to_end(&mut buf)
            .is_err()
        {
            self.skipped_other += 1;
            return;
        }
        if buf.len() as u64 > SEARCH_FILE_MAX_BYTES {
            self.skipped_large += 1;
            return;
        }
        self.bytes_read += buf.len() as u64;
        self.files += 1;
        if buf.contains(&0) {
            self.skipped_binary += 1;
            return;
        }
        let Ok(text) = String::from_utf8(buf) else {
            self.skipped_binary += 1;
            return;
        };
        for (i, line) in text.lines().enumerate() {
            if !self.re.is_match(line) {
                continue;
            }
            if self.matches.len() >= SEARCH_MAX_MATCHES {
                self.more_matches = true;
                return;
            }
            let shown = crate::text::clip_chars(line, SEARCH_LINE_MAX_CHARS);
            self.matches.push(format!("{rel}:{}: {shown}", i + 1));
        }
    }
}
