//! The report as one self-contained HTML file: inline CSS, an inline SVG chart, no script and
//! no external resource (a Content-Security-Policy says so to the browser too). Every piece of
//! text is escaped: model names read from files are untrusted.

use super::chart;
use super::report::{
    RECOMMEND_COLUMNS, ReportInput, fit_columns, fit_row, placement_label, recommend_rows,
    recommend_unmet, scenario_rows, settings_rows, totals,
};
use super::text::{gib_exact, html};
use crate::core::estimate::ComponentKind;
use crate::core::fit::Verdict;
use crate::core::format::group_digits;
use crate::core::units::display_signed_gib;
use std::fmt::Write as _;

pub(super) const CSS: &str = r#"
:root { color-scheme: light; --fg: #1d1d1f; --muted: #5f6368; --line: #e2e4e8; --bg: #ffffff; --panel: #f6f7f9; --accent: #2f5d8a; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 28px 32px 48px; }
header h1 { margin: 0; font-size: 24px; letter-spacing: -0.01em; }
header .subtitle { margin: 4px 0 0; font-size: 17px; color: var(--accent); font-weight: 600; overflow-wrap: anywhere; }
header .meta { margin: 6px 0 0; color: var(--muted); font-size: 13px; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 20px; }
.card { flex: 1 1 200px; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; }
.card .v { font-size: 20px; font-weight: 650; margin-top: 2px; }
.card .x { color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.label { color: var(--muted); white-space: nowrap; width: 1%; }
td { overflow-wrap: break-word; }
td.hw { min-width: 180px; }
td.name { min-width: 120px; }
.table-wrap { overflow-x: auto; }
.formula { color: var(--muted); font-size: 12px; margin-top: 2px; }
.prov { display: inline-block; font-size: 11px; padding: 0 6px; border-radius: 9px; border: 1px solid var(--line); color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.v-gpu { background: #e3f3e6; color: #1e6b2d; }
.v-unified { background: #e0f2f1; color: #00695c; }
.v-offload { background: #fff3dc; color: #8a5300; }
.v-cpu { background: #e8eef7; color: #2f4f7a; }
.v-none { background: #fde7e7; color: #a11d1d; }
.neg { color: #a11d1d; }
.chart-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px; margin: 8px 0 12px; }
svg.chart { display: block; max-width: 100%; height: auto; }
ul.notes { margin: 6px 0 12px; padding-left: 20px; }
ul.notes li { margin: 2px 0; }
pre { background: #f3f4f6; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.note { color: var(--muted); font-size: 13px; margin: 4px 0 14px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding-top: 10px; }
@media print { main { padding: 0; max-width: none; } pre { white-space: pre-wrap; } h2 { break-after: avoid; } table, .chart-wrap { break-inside: avoid; } }
"#;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Gpu => "v-gpu",
        Verdict::Unified => "v-unified",
        Verdict::Offload => "v-offload",
        Verdict::Cpu => "v-cpu",
        Verdict::Disk => "v-disk",
        Verdict::None => "v-none",
    }
}

fn card(o: &mut String, k: &str, v: &str, x: &str) {
    let _ = write!(
        o,
        r#"<div class="card"><div class="k">{}</div><div class="v">{}</div><div class="x">{}</div></div>"#,
        html(k),
        html(v),
        html(x)
    );
}

pub(crate) fn render(input: &ReportInput) -> String {
    let mut o = String::with_capacity(64 * 1024);
    head(&mut o, input);
    recommendations(&mut o, input);
    summary_cards(&mut o, input);
    memory(&mut o, input);
    fit(&mut o, input);
    scenario(&mut o, input);
    o.push_str(&super::report_serving::html(input));
    o.push_str(&super::report_cluster::html(input));
    launch(&mut o, input);
    constants(&mut o, input);
    footer(&mut o, input);
    o
}

/// The document head (styles, security policy) and the page header.
fn head(o: &mut String, input: &ReportInput) {
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n<meta name=\"generator\" content=\"headroom {}\">\n<title>Sizing report: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        html(input.version),
        html(&input.title())
    );
    let _ = writeln!(
        o,
        "<header><h1>Sizing report</h1><p class=\"subtitle\">{}</p><p class=\"meta\">Generated {} by headroom {}. Memory in GiB (2<sup>30</sup> bytes) with exact bytes; bandwidth in GB/s (10<sup>9</sup> bytes/s).</p></header>",
        html(&input.title()),
        html(&input.generated),
        html(input.version)
    );
}

/// What to buy or rent, first: the picks, what no machine satisfies, and this machine.
fn recommendations(o: &mut String, input: &ReportInput) {
    // What to buy or rent: first.
    o.push_str("<section id=\"recommendations\">\n<h2>Recommendations</h2>\n");
    let rec = input.recommendations();
    let rows = recommend_rows(&rec);
    if rows.is_empty() {
        o.push_str("<p class=\"note\">No catalog machine runs this workload.</p>\n");
    } else {
        o.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
        for (i, c) in RECOMMEND_COLUMNS.iter().enumerate() {
            let num = if i == 3 || i == 5 {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(o, "<th{num}>{}</th>", html(c));
        }
        o.push_str("</tr></thead>\n<tbody>\n");
        for r in &rows {
            o.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let class = match i {
                    2 => " class=\"name\"",
                    3 | 5 => " class=\"num\"",
                    _ => "",
                };
                let _ = write!(o, "<td{class}>{}</td>", html(c));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody>\n</table></div>\n");
    }
    let unmet = recommend_unmet(&rec);
    if !unmet.is_empty() {
        o.push_str("<ul class=\"notes\">\n");
        for u in unmet {
            let _ = writeln!(o, "<li>{}</li>", html(&u));
        }
        o.push_str("</ul>\n");
    }
    if let Some(t) = &rec.this_machine {
        let _ = writeln!(
            o,
            "<p><strong>{}</strong>: {}.</p>",
            html(&t.title()),
            html(&t.summary().to_string())
        );
        if !t.upgrades.is_empty() {
            o.push_str("<ol class=\"notes\">\n");
            for u in &t.upgrades {
                let _ = writeln!(o, "<li>{}</li>", html(&u.to_string()));
            }
            o.push_str("</ol>\n");
        }
    }
    o.push_str("</section>\n");
}

/// The summary cards: what the GPU and host need, the parameters, the verdict on the first machine.
fn summary_cards(o: &mut String, input: &ReportInput) {
    let s = input.scenario;
    let e = input.estimate;
    // Summary cards.
    o.push_str("<section class=\"cards\">");
    if e.gpus > 0 {
        card(
            o,
            if e.gpus > 1 {
                "Each GPU needs"
            } else {
                "The GPU needs"
            },
            &e.per_gpu_total().display_gib(),
            &format!(
                "{} B{}",
                group_digits(e.per_gpu_total().0),
                if e.gpus > 1 {
                    format!(", × {} GPUs", e.gpus)
                } else {
                    String::new()
                }
            ),
        );
    }
    card(
        o,
        "Host RAM",
        &e.host_total().display_gib(),
        &format!("{} B", group_digits(e.host_total().0)),
    );
    card(
        o,
        "Parameters",
        &crate::core::format::params(e.params.total),
        &format!(
            "{} {}",
            group_digits(e.params.total),
            if s.model.is_estimated() {
                "(shape estimated)"
            } else {
                "(exact shape)"
            }
        ),
    );
    if let Some(f) = input.fits.first() {
        let verdict = if f.runs() {
            f.verdict_text()
        } else {
            "does not fit".to_string()
        };
        card(
            o,
            &format!("On {}", f.name),
            &verdict,
            &format!("headroom {}", display_signed_gib(f.headroom_bytes)),
        );
    }
    o.push_str("</section>\n");
}

/// The memory chart, the components with their formulas, the totals and the notes.
fn memory(o: &mut String, input: &ReportInput) {
    let e = input.estimate;
    // Memory.
    o.push_str("<section id=\"memory\">\n<h2>Memory</h2>\n<div class=\"chart-wrap\">");
    o.push_str(&chart::svg(input));
    o.push_str("</div>\n");
    let lines_cut = input.fits.len() > chart::MAX_LINES;
    let _ = writeln!(
        o,
        "<p class=\"note\">Dashed lines: usable memory of each machine (per GPU for the GPU bar, RAM minus the OS reserve for the host bar); green when the scenario fits there entirely, amber when layers are offloaded or the CPU runs it, red when it does not fit. A machine with a different GPU count needs a different amount per GPU: the fit table gives each machine's own need.{}</p>",
        if lines_cut {
            format!(
                " Lines are drawn for the first {} machines.",
                chart::MAX_LINES
            )
        } else {
            String::new()
        }
    );
    o.push_str("<table>\n<thead><tr><th>Component</th><th>Where</th><th class=\"num\">Per device</th><th class=\"num\">Total</th><th class=\"num\">Total bytes</th><th>Provenance</th></tr></thead>\n<tbody>\n");
    for c in &e.components {
        let _ = writeln!(
            o,
            "<tr><td><span style=\"color:{}\">■</span> {}{}<div class=\"formula\">{}</div></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            chart::color(c.kind),
            html(&c.name),
            if c.name == c.kind.label() {
                String::new()
            } else {
                format!(" <span class=\"prov\">{}</span>", html(c.kind.label()))
            },
            html(&c.formula),
            placement_label(c.placement),
            c.per_device.display_gib(),
            c.bytes.display_gib(),
            group_digits(c.bytes.0),
            c.provenance.label()
        );
    }
    o.push_str("</tbody>\n</table>\n<table>\n<tbody>\n");
    for (l, v) in totals(input) {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
            html(&l),
            html(&v)
        );
    }
    o.push_str("</tbody>\n</table>\n");
    if !e.notes.is_empty() {
        o.push_str("<h3>Notes</h3>\n<ul class=\"notes\">\n");
        for n in &e.notes {
            let _ = writeln!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

/// The fit table on the chosen machines and their notes.
fn fit(o: &mut String, input: &ReportInput) {
    // Fit.
    o.push_str("<section id=\"fit\">\n<h2>Fit on the chosen machines</h2>\n");
    if input.fits.is_empty() {
        o.push_str("<p class=\"note\">No machines were chosen.</p>\n");
    } else {
        o.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
        for (i, c) in fit_columns(input.scenario.mode).iter().enumerate() {
            let _ = write!(
                o,
                "<th{}>{}</th>",
                if i >= 3 { " class=\"num\"" } else { "" },
                html(c)
            );
        }
        o.push_str("</tr></thead>\n<tbody>\n");
        for f in input.fits {
            o.push_str("<tr>");
            for (i, cell) in fit_row(input, f, input.scenario.mode).iter().enumerate() {
                match i {
                    0 => {
                        let _ =
                            write!(o, "<td class=\"name\"><strong>{}</strong></td>", html(cell));
                    }
                    1 => {
                        let _ = write!(o, "<td class=\"hw\">{}</td>", html(cell));
                    }
                    2 => {
                        let _ = write!(
                            o,
                            "<td><span class=\"badge {}\">{}</span></td>",
                            verdict_class(f.verdict),
                            html(cell)
                        );
                    }
                    5 => {
                        let neg = if f.headroom_bytes < 0 { " neg" } else { "" };
                        let _ = write!(o, "<td class=\"num{neg}\">{}</td>", html(cell));
                    }
                    i if i >= 3 => {
                        let _ = write!(o, "<td class=\"num\">{}</td>", html(cell));
                    }
                    _ => {
                        let _ = write!(o, "<td>{}</td>", html(cell));
                    }
                }
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody>\n</table></div>\n<p class=\"note\">GPU need / usable is per GPU; headroom is usable minus needed in the memory that binds (VRAM, or RAM when layers are offloaded or the CPU runs the model).</p>\n");
        let with_notes: Vec<_> = input.fits.iter().filter(|f| !f.notes.is_empty()).collect();
        if !with_notes.is_empty() {
            o.push_str("<ul class=\"notes\">\n");
            for f in with_notes {
                let notes: Vec<String> = f.notes.iter().map(|n| html(&n.to_string())).collect();
                let _ = writeln!(
                    o,
                    "<li><strong>{}</strong>: {}</li>",
                    html(&f.name),
                    notes.join("; ")
                );
            }
            o.push_str("</ul>\n");
        }
    }
    o.push_str("</section>\n");
}

/// Every input of the scenario.
fn scenario(o: &mut String, input: &ReportInput) {
    // Scenario.
    o.push_str("<section id=\"scenario\">\n<h2>Scenario</h2>\n<table>\n<tbody>\n");
    for r in scenario_rows(input) {
        let _ = writeln!(
            o,
            "<tr><td class=\"label\">{}</td><td>{}</td></tr>",
            html(r.label),
            html(&r.value)
        );
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}

/// The launch settings for the first machine that runs it.
fn launch(o: &mut String, input: &ReportInput) {
    // Launch settings.
    if let Some(first) = input.launch_fit() {
        let _ = writeln!(
            o,
            "<section id=\"launch\">\n<h2>Launch settings for {}</h2>",
            html(&first.name)
        );
        for l in input.launch() {
            launch_block(o, &l, true);
        }
        o.push_str("</section>\n");
    }
}

/// One launch file: its title, the text to copy and (with `note`) what to replace.
pub(super) fn launch_block(o: &mut String, l: &super::launch::LaunchSetting, note: bool) {
    let _ = writeln!(
        o,
        "<h3>{}</h3>\n<pre><code>{}</code></pre>",
        html(&l.title),
        html(l.text.trim_end())
    );
    if note && !l.note.is_empty() {
        let _ = writeln!(o, "<p class=\"note\">{}</p>", html(&l.note));
    }
}

/// A plain table of text cells (escaped here).
pub(super) fn text_table(o: &mut String, head: &[&str], rows: &[Vec<String>]) {
    o.push_str("<table>\n<thead><tr>\n");
    for c in head {
        let _ = write!(o, "<th>{}</th>", html(c));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", html(c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
}

/// The speed model's constants.
fn constants(o: &mut String, input: &ReportInput) {
    // Constants.
    o.push_str("<section id=\"constants\">\n<h2>Speed model constants</h2>\n<table>\n<thead><tr><th>Constant</th><th class=\"num\">Value</th><th>Meaning</th></tr></thead>\n<tbody>\n");
    for (n, v, m) in settings_rows(input.settings) {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            html(n),
            html(&v),
            html(m)
        );
    }
    o.push_str("</tbody>\n</table>\n</section>\n");
}

/// The footer and the end of the document.
fn footer(o: &mut String, input: &ReportInput) {
    let e = input.estimate;
    let weights = e.per_gpu_kind(ComponentKind::Weights);
    let _ = write!(
        o,
        "<footer>headroom {} · generated {} · weights {} per GPU · host RAM {}</footer>\n</main>\n</body>\n</html>\n",
        html(input.version),
        html(&input.generated),
        weights.display_gib(),
        html(&gib_exact(e.host_total()))
    );
}
