//! Secret canaries: fake key values set in the harness's environment or
//! planted as files, which must turn up nowhere the run wrote. Below the
//! audit so that `private_dirs` (which plants some) can use them without
//! naming the audit.

use std::collections::BTreeMap;
use std::path::Path;

/// Provider key variables the canary is set in, besides the spec's own
/// `api_key_env`: a key the harness was never told about must not leak either.
/// Bytes of one file scanned for canaries; a larger file is scanned up to
/// this and the audit says it was cut.
pub const CANARY_SCAN_FILE_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Files scanned per case-run at most.
pub const CANARY_SCAN_MAX_FILES: usize = 20_000;

/// One canary: a fake key value set in one environment variable.
#[derive(Debug, Clone)]
pub struct Canary {
    pub var: String,
    pub value: String,
    /// The value's searcher, built once: a case-run scans every file,
    /// request body and output line for every canary, and building the
    /// searcher for each scan was the bench's largest single cost (17% of
    /// its instructions per case-run, callgrind).
    finder: memchr::memmem::Finder<'static>,
    /// Set in the harness's environment (a key variable); false for a
    /// secret planted as a file (`private_dirs`).
    pub in_env: bool,
}

impl Canary {
    pub fn new(var: String, value: String) -> Canary {
        let finder = memchr::memmem::Finder::new(value.as_bytes()).into_owned();
        Canary {
            var,
            value,
            finder,
            in_env: true,
        }
    }

    /// A secret planted as a file, named by where it is (`$HOME/.netrc`).
    pub fn planted(place: String, value: String) -> Canary {
        Canary {
            in_env: false,
            ..Canary::new(place, value)
        }
    }

    pub fn found_in(&self, bytes: &[u8]) -> bool {
        self.finder.find(bytes).is_some()
    }
}

impl PartialEq for Canary {
    fn eq(&self, other: &Canary) -> bool {
        (&self.var, &self.value) == (&other.var, &other.value)
    }
}

impl Eq for Canary {}

/// Canary values for one case-run: distinct per variable, so a hit names the
/// variable that leaked; shaped like real keys (a filter that only looks for
/// key-like strings must still catch them), never a real key.
///
/// Every provider key variable (`harness::redact::PROVIDER_KEY_VARS`) and the
/// spec's `api_key_env` get one, except the `skip`ped (live: the variables the
/// proxy's key comes from). A case's own `harness_env` value for a variable
/// that looks like a secret is that variable's canary instead (the case chose
/// the value it wants to see never leak).
pub fn canaries(
    spec_key_env: Option<&str>,
    case_id: &str,
    run: u32,
    skip: &[String],
    harness_env: &BTreeMap<String, String>,
) -> Vec<Canary> {
    use sha2::{Digest, Sha256};
    let mut vars: Vec<String> = spec_key_env.map(str::to_string).into_iter().collect();
    vars.extend(
        harness::redact::PROVIDER_KEY_VARS
            .iter()
            .map(|s| s.to_string()),
    );
    vars.sort();
    vars.dedup();
    vars.retain(|v| !skip.contains(v) && !harness_env.contains_key(v));
    let mut out: Vec<Canary> = vars
        .into_iter()
        .map(|var| {
            let h = hex::encode(Sha256::digest(format!("canary|{case_id}|{run}|{var}")));
            Canary::new(var, format!("sk-canary-{}", &h[..40]))
        })
        .collect();
    out.extend(
        harness_env
            .iter()
            .filter(|(k, v)| {
                harness::redact::looks_secret(k) && v.len() >= harness::redact::SECRET_MIN_BYTES
            })
            .map(|(k, v)| Canary::new(k.clone(), v.clone())),
    );
    out
}

/// Where the canaries turned up: "<VAR> in <place>".
pub fn canary_hits_in(bytes: &[u8], canaries: &[Canary], place: &str) -> Vec<String> {
    canaries
        .iter()
        .filter(|c| c.found_in(bytes))
        .map(|c| format!("{} in {place}", c.var))
        .collect()
}

/// Scan every regular file under `root` (bounded) but those `skip` names,
/// returning the hits and a note when the scan was cut short.
pub fn scan_tree_for_canaries(
    root: &Path,
    canaries: &[Canary],
    skip: &dyn Fn(&Path) -> bool,
) -> (Vec<String>, Option<String>) {
    use std::io::Read;
    let mut hits = vec![];
    let mut stack = vec![root.to_path_buf()];
    let mut files = 0usize;
    let mut cut = None;
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && !skip(&p) {
                files += 1;
                if files > CANARY_SCAN_MAX_FILES {
                    cut = Some(format!("scan stopped after {CANARY_SCAN_MAX_FILES} files"));
                    return (hits, cut);
                }
                let mut buf = vec![];
                // Never open a FIFO or device: is_file() above excludes them.
                if std::fs::File::open(&p)
                    .and_then(|f| f.take(CANARY_SCAN_FILE_MAX_BYTES).read_to_end(&mut buf))
                    .is_ok()
                {
                    let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                    hits.extend(canary_hits_in(&buf, canaries, &rel));
                }
            }
        }
    }
    (hits, cut)
}
