//! `audit.page_safe`: the case-run's morning page (state/report.html),
//! parsed as a browser parses it (html5ever, through scraper), holds no
//! markup that came from the model or the workspace. The harness's page is
//! static: no script, no embedded or fetched content, no event handler, one
//! style sheet, a Content-Security-Policy that allows no script. So any
//! active element, handler, `javascript:` URL or second style sheet on it
//! came from text that was not escaped; and any control character (ESC,
//! BEL) is text that was not made printable.

use scraper::{Html, Selector};

/// Elements the harness's page never has: each is markup that got in.
pub const FOREIGN_ELEMENTS: [&str; 20] = [
    "script", "iframe", "frame", "frameset", "object", "embed", "img", "image", "form", "input",
    "button", "textarea", "select", "link", "base", "audio", "video", "source", "template",
    "noscript",
];

/// Every way `html` shows markup or bytes that did not come from the page's
/// own template (empty: safe).
pub fn problems(html: &str) -> Vec<String> {
    let doc = Html::parse_document(html);
    let mut out = vec![];
    let all = Selector::parse("*").expect("a valid selector");
    let mut styles = 0;
    let mut csp = false;
    for el in doc.select(&all) {
        let v = el.value();
        let name = v.name();
        if FOREIGN_ELEMENTS.contains(&name) {
            out.push(format!("a <{name}> element"));
        }
        if name == "style" {
            styles += 1;
        }
        if name == "meta"
            && v.attr("http-equiv")
                .is_some_and(|h| h.eq_ignore_ascii_case("content-security-policy"))
            && v.attr("content")
                .is_some_and(|c| c.contains("default-src 'none'"))
        {
            csp = true;
        }
        for (attr, value) in v.attrs() {
            if attr.to_ascii_lowercase().starts_with("on") {
                out.push(format!("an event handler {attr}= on <{name}>"));
            }
            if value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("javascript:")
            {
                out.push(format!("a javascript: URL in {attr}= on <{name}>"));
            }
        }
    }
    if styles > 1 {
        out.push(format!("{styles} <style> elements (the page has one)"));
    }
    if !csp {
        out.push("no Content-Security-Policy meta with default-src 'none'".into());
    }
    if let Some(c) = html
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        out.push(format!(
            "a control character U+{:04X} in the page",
            c as u32
        ));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::problems;

    const PAGE: &str = "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"><style>p{}</style></head><body><p>BODY</p></body></html>";

    #[test]
    fn escaped_text_is_safe_and_markup_is_not() {
        assert_eq!(problems(PAGE), Vec::<String>::new());
        let escaped = PAGE.replace("BODY", "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(problems(&escaped), Vec::<String>::new());
        for (raw, found) in [
            ("<script>alert(1)</script>", "a <script> element"),
            ("<img src=x onerror=alert(1)>", "a <img> element"),
            (
                "<b onclick=alert(1)>x</b>",
                "an event handler onclick= on <b>",
            ),
            (
                "<a href=\"javascript:alert(1)\">x</a>",
                "a javascript: URL in href= on <a>",
            ),
            (
                "</p></body><style>*{}</style>",
                "2 <style> elements (the page has one)",
            ),
            ("\u{1b}[31m", "a control character U+001B in the page"),
        ] {
            let p = problems(&PAGE.replace("BODY", raw));
            assert!(p.iter().any(|x| x == found), "{raw}: {p:?}");
        }
        let no_csp = PAGE.replace("Content-Security-Policy", "x");
        assert!(!problems(&no_csp).is_empty());
    }
}
