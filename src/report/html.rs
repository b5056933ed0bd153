//! `report.html`: one self-contained page. Charts are inline SVG, styles inline, no script; a
//! Content-Security-Policy forbids every fetch, so the page cannot reach the network.

use std::fmt::Write as _;

use super::document::{Block, Document};
use super::svg::escape;
use crate::output::table::Align;

/// Screen: a page up to 1,400 px wide; tables take the page's width and wrap headers (after
/// `_` and `/`) and labels (at hyphens) rather than scroll; numbers stay whole. Type is small
/// enough (.75em) that a sized run's widest table fits a 1,280 px window; narrower windows
/// break headers and labels anywhere, never numbers, and below 1,024 px the type is .7em
/// (checked at 800, 1,024 and 1,280 px by scripts/report/render-check.sh). Print: landscape
/// suggested, 7 pt tables whose cells wrap anywhere as a last resort, so every column is on the
/// page in portrait too; no table row, chart or heading split from what follows it.
const STYLE: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222;line-height:1.4}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-bottom:.3em}\
p,dl,figcaption{max-width:1100px}dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1.2em}dt{color:#555}dd{margin:0}\
table{border-collapse:collapse;font-size:.75em;margin:.5em 0 1em;width:100%}\
th,td{border:1px solid #ddd;padding:.2em .25em;overflow-wrap:break-word}@media screen and (max-width:1279px){th,td{overflow-wrap:anywhere}}@media screen and (max-width:1023px){table{font-size:.7em}}th{background:#f3f3f3;text-align:left;vertical-align:bottom}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr:nth-child(even) td{background:#fafafa}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}figcaption{color:#444;font-size:.9em}\
pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85em}nav a{margin-right:1em}\
@page{size:landscape;margin:12mm}\
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}nav{display:none}\
table{font-size:7pt}th,td{padding:.15em .25em}th,td,td.n{white-space:normal;overflow-wrap:anywhere}thead{display:table-header-group}tr,figure,dl{break-inside:avoid}\
h2,h3{break-after:avoid}h2{margin-top:1.2em}tr:nth-child(even) td{background:none}\
figure svg{max-height:16cm;width:auto}pre{font-size:7pt}}";

/// A column header, escaped, that may break after `_` and `/` (`tokens/s/GPU`,
/// `attention_dp`) rather than anywhere.
fn breakable(header: &str) -> String {
    escape(header).replace('_', "_<wbr>").replace('/', "/<wbr>")
}

pub fn render(doc: &Document) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&doc.title),
        escape(&doc.title)
    );
    let sections: Vec<_> = doc
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Section { id, title } => Some((id, title)),
            _ => None,
        })
        .collect();
    s.push_str("<nav>");
    for (id, title) in sections {
        let _ = write!(s, "<a href=\"#{id}\">{}</a>", escape(title));
    }
    s.push_str("</nav>\n");
    for block in &doc.blocks {
        match block {
            Block::Section { id, title } => {
                let _ = writeln!(s, "<h2 id=\"{id}\">{}</h2>", escape(title));
            }
            Block::Subheading(t) => {
                let _ = writeln!(s, "<h3>{}</h3>", escape(t));
            }
            Block::Paragraph(t) => {
                let _ = writeln!(s, "<p>{}</p>", escape(t));
            }
            Block::Facts(facts) => {
                s.push_str("<dl>");
                for (k, v) in facts {
                    let _ = write!(s, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
                }
                s.push_str("</dl>\n");
            }
            Block::Table(t) => {
                s.push_str("<table><thead><tr>");
                for c in &t.columns {
                    let _ = write!(s, "<th>{}</th>", breakable(&c.title()));
                }
                s.push_str("</tr></thead><tbody>");
                for row in &t.rows {
                    s.push_str("<tr>");
                    for (cell, c) in row.iter().zip(&t.columns) {
                        let class = match c.align {
                            Align::Right => " class=\"n\"",
                            Align::Left => "",
                        };
                        let _ = write!(s, "<td{class}>{}</td>", escape(cell));
                    }
                    s.push_str("</tr>");
                }
                s.push_str("</tbody></table>\n");
            }
            Block::Figure { chart, caption, .. } => {
                let _ = writeln!(
                    s,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    chart.render(),
                    escape(caption)
                );
            }
            Block::Code(text) => {
                let _ = writeln!(s, "<pre>{}</pre>", escape(text));
            }
        }
    }
    s.push_str("</body>\n</html>\n");
    s
}
