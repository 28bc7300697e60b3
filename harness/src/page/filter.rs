//! The filter and text search of the bench's pages (the suite page and
//! `bench index`): a form over the rows marked `data-row`, by status
//! (failed, flaky, passed), category and the words a row holds. It works
//! from a file (no server, nothing fetched): one inline script, allowed by
//! its SHA-256 in the page's Content-Security-Policy and by nothing else,
//! so any other script (one a case title smuggled in, were escaping ever
//! to fail) is still refused by the browser.
//!
//! The form is `hidden` until the script shows it: without script the page
//! shows every row and no dead control. The filter can be given in the
//! address (`report.html#status=failed&q=timeout`): a filtered view can be
//! linked, and the browser check loads one.

use maud::{html, Markup, PreEscaped};
use sha2::{Digest, Sha256};

/// The script. Rows: `[data-row]` with `data-status` (space-separated
/// words) and `data-category`; the form `#filters` with `q`, `status` and
/// `category`; `#shown` counts what shows.
pub const SCRIPT: &str = r#"(function () {
  var f = document.getElementById('filters');
  if (!f) return;
  f.hidden = false;
  var q = f.elements.q, st = f.elements.status, cat = f.elements.category;
  var rows = document.querySelectorAll('[data-row]');
  var shown = document.getElementById('shown');
  function apply() {
    var t = q.value.trim().toLowerCase(), s = st.value, c = cat.value, n = 0;
    rows.forEach(function (r) {
      var ok = (!s || (' ' + r.dataset.status + ' ').indexOf(' ' + s + ' ') >= 0)
        && (!c || r.dataset.category === c)
        && (!t || r.textContent.toLowerCase().indexOf(t) >= 0);
      r.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = n + ' of ' + rows.length + ' shown';
  }
  var h = new URLSearchParams(location.hash.slice(1));
  if (h.has('q')) q.value = h.get('q');
  if (h.has('status')) st.value = h.get('status');
  if (h.has('category')) cat.value = h.get('category');
  f.addEventListener('input', apply);
  f.addEventListener('change', apply);
  f.addEventListener('submit', function (e) { e.preventDefault(); });
  apply();
})();"#;

/// The page's CSP: the run page's, plus this one script by its hash.
pub fn csp() -> String {
    format!(
        "{}; script-src 'sha256-{}'",
        super::CSP,
        base64(&Sha256::digest(SCRIPT.as_bytes()))
    )
}

/// The form over the rows, for these categories.
pub fn form(categories: &[&str]) -> Markup {
    html! {
        form #filters hidden role="search" {
            label { "Search " input type="search" name="q" placeholder="case, cause, ending"; }
            " "
            label { "Show " select name="status" {
                option value="" { "all" }
                option value="failed" { "failed" }
                option value="flaky" { "flaky" }
                option value="passed" { "passed" }
            } }
            " "
            label { "Category " select name="category" {
                option value="" { "all" }
                @for c in categories { option value=(c) { (c) } }
            } }
            " " output #shown {}
        }
    }
}

/// The script element (its text is the hashed one, byte for byte).
pub fn script() -> Markup {
    html! { script { (PreEscaped(SCRIPT)) } }
}

/// Standard base64 with padding (the CSP hash source's encoding).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_one() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_csp_allows_the_script_by_its_hash_and_nothing_else() {
        let csp = csp();
        assert!(csp.starts_with("default-src 'none';"), "{csp}");
        assert!(
            !csp.contains("unsafe-inline'; script") && !csp.contains("script-src 'unsafe"),
            "{csp}"
        );
        // The SHA-256 of the script, as `openssl dgst -sha256 -binary | base64` gives it.
        let hash = csp
            .rsplit("'sha256-")
            .next()
            .unwrap()
            .trim_end_matches('\'');
        assert_eq!(hash.len(), 44, "{hash}");
    }
}
