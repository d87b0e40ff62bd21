//! The report's cluster section: when no reported machine runs the scenario on its own (or the
//! scenario asks for a node count), the cheapest clusters of the catalog's machines that do —
//! nodes, parallel layout, memory per GPU, speed, time and cost, the cheapest node count — and
//! the launch files of the first. Rows are the same for Markdown, HTML and JSON.

use super::launch::LaunchSetting;
use super::launch_cluster::cluster_launch;
use super::report::ReportInput;
use crate::core::cluster::{ClusterPick, PointCells, cluster_picks};
use crate::core::format;
use serde_json::Value;

/// Clusters the section lists at most (the cheapest first).
pub const SHOWN: usize = 5;

/// Whether the report has a cluster section: the scenario names a node count, or it has
/// reported machines and none of them runs it without the disk.
pub fn wanted(input: &ReportInput) -> bool {
    input.scenario.cluster.nodes.is_some()
        || (!input.fits.is_empty() && !input.fits.iter().any(|f| f.fits()))
}

/// The cheapest [`SHOWN`] clusters (none when the section is not [`wanted`]).
pub fn picks(input: &ReportInput) -> Vec<ClusterPick> {
    if !wanted(input) {
        return Vec::new();
    }
    let s = input.scenario;
    let mut p = cluster_picks(s, input.catalog, &s.cluster, input.settings);
    p.truncate(SHOWN);
    p
}

/// The column titles.
pub fn columns(training: bool) -> [&'static str; 8] {
    let [rate, time, cost] = PointCells::headers(training);
    [
        "Machine", "Nodes", "Layout", "Per GPU", rate, time, cost, "Cheapest",
    ]
}

/// One row per pick: the smallest cluster's cells and the cheapest node count.
pub fn rows(picks: &[ClusterPick]) -> Vec<Vec<String>> {
    picks
        .iter()
        .filter_map(|p| {
            let sm = p.smallest.as_ref()?;
            let c = sm.cells();
            Some(vec![
                p.name.to_string(),
                format::group_digits(sm.nodes),
                c.layout,
                c.per_gpu,
                c.rate,
                c.time,
                c.cost,
                p.cheapest_text(),
            ])
        })
        .collect()
}

/// The sentence above the table.
pub fn caption(input: &ReportInput, picks: &[ClusterPick]) -> String {
    let s = input.scenario;
    let why = if s.cluster.nodes.is_some() {
        "The scenario asks for several machines"
    } else {
        "No reported machine runs this scenario on its own"
    };
    let what = if s.mode.is_training() {
        format!(
            "a run of {} tokens at a global batch of {} tokens",
            format::params(s.train_tokens),
            format::tokens_short(
                s.cluster
                    .global_batch
                    .unwrap_or_else(|| crate::core::cluster::train::default_global_batch(s.context))
                    .saturating_mul(s.context)
            )
        )
    } else {
        "serving it across the nodes (vLLM tensor × pipeline parallel over Ray, or llama.cpp's RPC backend)".to_string()
    };
    let network = picks
        .first()
        .map(|p| {
            format!(
                " Network of {}: {}{}.",
                p.name,
                p.network,
                if p.network_assumed {
                    " (assumed for this kind of machine)"
                } else {
                    ""
                }
            )
        })
        .unwrap_or_default();
    format!(
        "{why}: the cheapest clusters of one catalog machine that do, for {what}. Nodes and layout are the smallest cluster that fits; Cheapest is the node count that costs least.{network}"
    )
}

/// The launch files of the first pick's cheapest (else smallest) cluster.
pub fn launch(input: &ReportInput, picks: &[ClusterPick]) -> Vec<LaunchSetting> {
    let Some(p) = picks.first() else {
        return Vec::new();
    };
    let (Some(point), Some(m)) = (
        p.cheapest.as_ref().or(p.smallest.as_ref()),
        input.catalog.machine(&p.machine),
    ) else {
        return Vec::new();
    };
    cluster_launch(input.scenario, m, p, point)
}

/// The Markdown section (empty when there is none).
pub fn markdown(input: &ReportInput, md: fn(&str) -> String) -> String {
    use std::fmt::Write;
    if !wanted(input) {
        return String::new();
    }
    let picks = picks(input);
    let mut o = String::from("## When one machine is not enough\n\n");
    if picks.is_empty() {
        let _ = writeln!(
            o,
            "No cluster of up to {} catalog machines fits this scenario.\n",
            format::group_digits(crate::core::cluster::MAX_NODES)
        );
        return o;
    }
    let _ = writeln!(o, "{}\n", md(&caption(input, &picks)));
    let cols = columns(input.scenario.mode.is_training());
    let _ = writeln!(o, "| {} |", cols.join(" | "));
    let _ = writeln!(o, "|{}", " --- |".repeat(cols.len()));
    for r in rows(&picks) {
        let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
    for l in launch(input, &picks) {
        let f = super::markdown::fence(&l.text);
        let _ = writeln!(o, "### {}\n", md(&l.title));
        let _ = writeln!(
            o,
            "{f}{}\n{}\n{f}\n",
            l.runtime.language(),
            l.text.trim_end()
        );
        if !l.note.is_empty() {
            let _ = writeln!(o, "{}\n", md(&l.note));
        }
    }
    o
}

/// The HTML section (empty when there is none).
pub fn html(input: &ReportInput, esc: fn(&str) -> String) -> String {
    use std::fmt::Write;
    if !wanted(input) {
        return String::new();
    }
    let picks = picks(input);
    let mut o = String::from("<section id=\"cluster\">\n<h2>When one machine is not enough</h2>\n");
    if picks.is_empty() {
        let _ = writeln!(
            o,
            "<p>No cluster of up to {} catalog machines fits this scenario.</p>\n</section>",
            format::group_digits(crate::core::cluster::MAX_NODES)
        );
        return o;
    }
    let _ = writeln!(
        o,
        "<p>{}</p>\n<table>\n<thead><tr>",
        esc(&caption(input, &picks))
    );
    for c in columns(input.scenario.mode.is_training()) {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for r in rows(&picks) {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    for l in launch(input, &picks) {
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<pre><code>{}</code></pre>",
            esc(&l.title),
            esc(l.text.trim_end())
        );
    }
    o.push_str("</section>\n");
    o
}

/// The JSON report's `"cluster"`: the `cluster --json` object per listed machine (`[]` when
/// the report has no cluster section).
pub fn json(input: &ReportInput) -> Value {
    Value::Array(
        picks(input)
            .iter()
            .map(crate::io::json::cluster_json)
            .collect(),
    )
}
