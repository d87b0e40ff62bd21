//! The report's serving section: for each reported machine that can serve the model, the users
//! it holds at the target, their latency and speed, the replicas an asked load needs, the cost
//! per 1M tokens at that load, and the engine's launch line. Rows are the same for Markdown,
//! HTML and JSON.

use super::launch_serving::serving_launch;
use super::report::ReportInput;
use super::text::{self, md};
use crate::core::format;
use crate::core::serving::{ServingPlan, load_text, plan_all};
use serde_json::Value;

/// The plans of the reported machines (none for a training scenario).
pub fn plans(input: &ReportInput) -> Vec<ServingPlan> {
    if input.scenario.mode.is_training() {
        return Vec::new();
    }
    plan_all(input.scenario, input.fits, input.catalog, input.settings)
}

pub const COLUMNS: [&str; 9] = [
    "Machine",
    "Engine",
    "GPUs/replica × replicas",
    "KV pool",
    "Users at target",
    "TTFT p95",
    "tok/s per user",
    "$ / 1M output",
    "For the asked load",
];

/// One row per plan: the cells under [`COLUMNS`].
pub fn rows(plans: &[ServingPlan]) -> Vec<Vec<String>> {
    plans
        .iter()
        .map(|p| {
            if let Some(b) = p.blocker {
                let mut r = vec![
                    p.name.to_string(),
                    p.engine.label().to_string(),
                    b.to_string(),
                ];
                r.resize(COLUMNS.len(), String::new());
                return r;
            }
            let shown = p.asked.map(|a| a.per_replica).or(p.best).or(p.single);
            let asked = p.asked.map(|a| a.to_string()).unwrap_or_default();
            vec![
                p.name.to_string(),
                p.engine.label().to_string(),
                format!("{} × {}", p.tp, p.replicas_per_machine),
                p.pool
                    .as_ref()
                    .map(|k| format!("{} tokens", format::tokens_short(k.tokens)))
                    .unwrap_or_default(),
                p.machine_users()
                    .map(format::group_digits)
                    .unwrap_or_else(|| "none".into()),
                shown
                    .map(|x| format::duration(x.ttft_p95_s))
                    .unwrap_or_default(),
                shown
                    .map(|x| format::rate(x.tokens_per_s_per_user))
                    .unwrap_or_default(),
                format::usd(p.cost.map(|c| c.usd_per_million_output)),
                asked,
            ]
        })
        .collect()
}

/// The sentence under the table: which load the figures are for.
pub fn caption(input: &ReportInput) -> String {
    format!(
        "Serving many users {}: users in flight one machine holds, the p95 time to first token and per-user decode speed at that load, and the machine's hour over its output tokens (owned machines: power plus purchase over 3 years). Prompt {} tokens, output {} tokens.",
        load_text(input.scenario),
        format::group_digits(input.scenario.prompt_tokens.min(input.scenario.context)),
        format::group_digits(input.scenario.serving.clamped().output_tokens)
    )
}

/// The Markdown section (empty when nothing is served).
pub fn markdown(input: &ReportInput) -> String {
    use std::fmt::Write;
    let plans = plans(input);
    if plans.is_empty() {
        return String::new();
    }
    let mut o = String::from("## Serving many users\n\n");
    let _ = writeln!(o, "{}\n", md(&caption(input)));
    let cells: Vec<Vec<String>> = rows(&plans)
        .iter()
        .map(|r| r.iter().map(|c| md(c)).collect())
        .collect();
    super::markdown::table(&mut o, &COLUMNS, &[], &cells);
    if input.scenario.speculative.is_some() {
        let _ = writeln!(
            o,
            "{}\n",
            md(&crate::core::serving::speculative_text(&plans))
        );
    }
    if let Some(l) = plans.iter().find_map(|p| serving_launch(input.scenario, p)) {
        let _ = writeln!(
            o,
            "### {}\n\n```sh\n{}\n```\n",
            md(&l.title),
            l.text.trim_end()
        );
        if !l.note.is_empty() {
            let _ = writeln!(o, "{}\n", md(&l.note));
        }
    }
    o
}

/// The HTML section (empty when nothing is served).
pub fn html(input: &ReportInput) -> String {
    use std::fmt::Write;
    let plans = plans(input);
    if plans.is_empty() {
        return String::new();
    }
    let mut o = String::from("<section id=\"serving\">\n<h2>Serving many users</h2>\n");
    let _ = writeln!(o, "<p>{}</p>", text::html(&caption(input)));
    super::html::text_table(&mut o, &COLUMNS, &rows(&plans));
    if input.scenario.speculative.is_some() {
        let _ = writeln!(
            o,
            "<p>{}</p>",
            text::html(&crate::core::serving::speculative_text(&plans))
        );
    }
    if let Some(l) = plans.iter().find_map(|p| serving_launch(input.scenario, p)) {
        super::html::launch_block(&mut o, &l, false);
    }
    o.push_str("</section>\n");
    o
}

/// The JSON report's `"serving"`: the `serve --json` object per reported machine.
pub fn json(input: &ReportInput) -> Value {
    Value::Array(
        plans(input)
            .iter()
            .map(crate::io::json::serving_json)
            .collect(),
    )
}
