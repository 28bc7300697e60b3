//! The one style sheet of the morning pages (the run's and the bench's
//! suite page), inlined into each page: no file, font or script is fetched.
//! System fonts only; readable on a phone (tables scroll sideways inside
//! their own box, plots scale to the width) and printed (no backgrounds
//! needed to read a verdict: each is also a word).

pub const CSS: &str = r#"
:root { color-scheme: light; --ok: #17663a; --warn: #8a5a00; --bad: #b3261e; --muted: #5f6368; --line: #d7dbe0; }
* { box-sizing: border-box; }
body { font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #1f2328; margin: 0 auto; padding: 1rem; max-width: 70rem; }
h1 { font-size: 1.6rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.2rem; margin: 1.8rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
p, li { max-width: 48rem; }
.verdict { border: 2px solid var(--line); border-left-width: .6rem; border-radius: .4rem; padding: .8rem 1rem; margin: .5rem 0 1rem; }
.verdict.success { border-color: var(--ok); }
.verdict.partial { border-color: var(--warn); }
.verdict.failure { border-color: var(--bad); }
.verdict .name { font-size: 1.5rem; font-weight: 700; letter-spacing: .02em; overflow-wrap: break-word; }
.tag { display: inline-block; font-size: .85rem; font-weight: 600; padding: .05rem .45rem; border-radius: .3rem; border: 1px solid currentColor; margin: 0 .3rem .2rem 0; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); } .muted { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; min-width: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f5f7; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, .mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .88em; }
code, td, dd, li, p, summary, h3 { overflow-wrap: break-word; }
pre { margin: .3rem 0; padding: .4rem .6rem; background: #f6f8fa; border-radius: .3rem; overflow-x: auto; }
pre.wrap, pre.diff, pre.cmd { white-space: pre-wrap; overflow-wrap: anywhere; }
pre.cmd { background: #eef4ff; border: 1px solid #b6c8ef; font-size: .95rem; user-select: all; }
pre.cmd code { font-size: 1em; }
pre.diff .add { color: var(--ok); } pre.diff .del { color: var(--bad); } pre.diff .hunk { color: var(--muted); }
.verdict .when { color: var(--muted); margin: .2rem 0; }
ol.next > li { margin-bottom: .6rem; } ol.next p { margin: .2rem 0; }
div.trail { margin: .6rem 0 1rem; } div.trail h3 { font-size: 1rem; margin: .8rem 0 .3rem; }
div.trail ol > li { margin-bottom: .5rem; }
figure { margin: .5rem 0 1rem; }
figure svg { width: 100%; height: auto; max-width: 60rem; display: block; }
figcaption { color: var(--muted); font-size: .9rem; }
.note { background: #fff8e1; border: 1px solid #f0d48a; padding: .4rem .7rem; border-radius: .3rem; }
[hidden] { display: none !important; }
form#filters { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; margin: .5rem 0 1rem; padding: .5rem .7rem; background: #f3f5f7; border-radius: .3rem; }
form#filters input, form#filters select { font: inherit; padding: .1rem .3rem; }
form#filters output { color: var(--muted); }
footer { margin-top: 2rem; color: var(--muted); font-size: .85rem; }
@media print { body { max-width: none; padding: 0; } .scroll { overflow: visible; } h2 { break-after: avoid; } tr, figure { break-inside: avoid; } }
"#;
