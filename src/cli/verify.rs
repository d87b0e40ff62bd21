//! `headroom verify`: run llama-bench on this machine with the settings headroom recommends for
//! the scenario, and print the prediction beside the measurement (speed and the buffers llama.cpp
//! allocated); `--save-calibration` stores the run as this machine's calibration, as `headroom
//! calibrate` would. Finding and running llama-bench: `io::verify`; the comparison:
//! `core::verify`.

use super::app::CliError;
use super::args::ScenarioArgs;
use crate::core::catalog::Catalog;
use crate::core::fit::{FitSettings, fit_all};
use crate::core::format;
use crate::core::verify::Row;
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::io::verify::{DEFAULT_REPETITIONS, DEFAULT_TIMEOUT_S, N_GEN};

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// The llama-bench to run [default: llama-bench on PATH].
    #[arg(long, value_name = "PATH")]
    pub llama_bench: Option<PathBuf>,
    /// The GGUF llama-bench runs, when the scenario's model is not one (--model, --config)
    /// [default: the --gguf file].
    #[arg(long, value_name = "FILE")]
    pub bench_model: Option<PathBuf>,
    /// The machine the prediction is for [default: local, this machine].
    #[arg(long, value_name = "ID")]
    pub machine: Option<String>,
    /// Stop llama-bench after this many seconds, 1 … 86,400 [default: 600].
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<u64>,
    /// Times llama-bench repeats each test (`-r`), 1 … 20 [default: 3].
    #[arg(long, value_name = "N", value_parser = parse_repetitions)]
    pub repetitions: Option<u32>,
    /// Store the run as this machine's calibration (as `headroom calibrate` does).
    #[arg(long)]
    pub save_calibration: bool,
    /// Print the comparison as JSON (sizes in bytes, rates in tokens/s; null where not measured).
    #[arg(long)]
    pub json: bool,
}

fn parse_timeout(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=86_400).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a number of seconds in 1 … 86,400")),
    }
}

fn parse_repetitions(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=20).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a repetition count in 1 … 20")),
    }
}

/// Runs `headroom verify`.
pub fn run(a: &VerifyArgs, cat: &mut Catalog) -> Result<String, CliError> {
    let merged = super::launch_line::merge(&a.scenario)?;
    let s = super::scenario::build_scenario(&a.scenario, cat)?;
    if s.mode.is_training() {
        return Err(CliError::usage(
            "verify runs llama-bench, which measures inference: drop --mode",
        ));
    }
    let model = a.bench_model.clone().or_else(|| merged.gguf.clone()).ok_or_else(|| {
        CliError::usage(
            "verify needs the GGUF llama-bench runs: --gguf FILE (or --bench-model FILE beside --model)",
        )
    })?;
    let program =
        crate::io::verify::find_llama_bench(a.llama_bench.as_deref()).map_err(CliError::input)?;
    let id = a.machine.clone().unwrap_or_else(|| "local".into());
    let m = super::fit::select_machines(cat, std::slice::from_ref(&id), None)?.remove(0);
    // The model's own constants: a stored calibration would compare the run with itself.
    let st = FitSettings::default();
    let fit = fit_all(&s, [&m], cat, &st).remove(0);
    if !fit.fits() {
        return Err(CliError::input(format!(
            "the scenario does not fit on {}: nothing to run (`headroom fit --machine {id}` says why)",
            m.name
        )));
    }
    let reps = a.repetitions.unwrap_or(DEFAULT_REPETITIONS);
    let plan = crate::io::verify::plan(&s, &fit, &model, N_GEN, reps);
    let timeout = Duration::from_secs(a.timeout.unwrap_or(DEFAULT_TIMEOUT_S));
    eprintln!(
        "headroom: running {} {} (at most {}; Ctrl-C stops it)",
        program.display(),
        plan.args.join(" "),
        format::duration(timeout.as_secs_f64())
    );
    let out = crate::io::verify::run(
        &program,
        &plan.args,
        timeout,
        Duration::from_secs(15),
        |line| eprintln!("headroom: llama-bench: {}", format::one_line(line)),
    )
    .map_err(CliError::input)?;
    let c = crate::io::verify::compare(&s, &m, cat, &st, &plan, &out).map_err(CliError::input)?;
    let (runs, logged, n_ctx, table) = (&c.runs, &c.logged, c.n_ctx, &c.rows);
    let stored = if a.save_calibration {
        let dir = crate::io::calibration::config_dir().ok_or_else(|| {
            CliError::input("no config directory on this system (set HEADROOM_CONFIG_DIR)")
        })?;
        let today = crate::io::clock::today_utc();
        let shown = format!("llama-bench run by headroom verify ({})", program.display());
        Some(
            crate::io::calibration::calibrate_runs(runs, &shown, &m, cat, &dir, &today)
                .map_err(CliError::input)?,
        )
    } else {
        None
    };
    let build = c.build.clone();
    if a.json {
        let rows_json: Vec<serde_json::Value> = table
            .iter()
            .map(|r| {
                serde_json::json!({
                    "quantity": r.quantity.json_name(),
                    "predicted": r.predicted,
                    "measured": r.measured,
                    "error": r.error(),
                })
            })
            .collect();
        let v = serde_json::json!({
            "machine": m.id.to_string(),
            "llama_bench": program.display().to_string(),
            "args": plan.args,
            "n_prompt": plan.n_prompt,
            "n_gen": plan.n_gen,
            "n_ctx": logged.n_ctx,
            "build": build,
            "tests": runs.len(),
            "rows": rows_json,
            "calibration": stored.as_ref().map(|c| serde_json::json!({
                "path": c.path.display().to_string(),
                "bandwidth_factor": c.calibration.tuning.bandwidth_factor,
                "prefill_factor": c.calibration.tuning.prefill_factor,
            })),
        });
        return Ok(super::app::json_text(&v));
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {} on {} — llama-bench {} ({} tests), n_ctx {}",
        format::one_line(&s.model.name),
        s.weights.label(),
        m.name,
        format::one_line(&build),
        runs.len(),
        format::group_digits(n_ctx)
    );
    o.push_str(&table_text(table, plan.n_prompt, plan.n_gen));
    if logged.is_empty() {
        o.push_str("no buffer sizes in llama-bench's log (a build without -v logging?)\n");
    }
    match &stored {
        Some(c) => {
            o.push_str(&super::calibrate::describe(&m, c));
        }
        None => o.push_str(
            "to store this run as the machine's calibration: the same command with --save-calibration\n",
        ),
    }
    Ok(o)
}

/// The comparison as a table: predicted, measured, error per row.
pub fn table_text(rows: &[Row], n_prompt: u64, n_gen: u64) -> String {
    let w = rows
        .iter()
        .map(|r| r.label(n_prompt, n_gen).chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<w$}  {:>14}  {:>14}  {:>6}",
        "", "predicted", "measured", "error"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:<w$}  {:>14}  {:>14}  {:>6}",
            r.label(n_prompt, n_gen),
            r.show(Some(r.predicted)),
            r.show(r.measured),
            r.show_error()
        );
    }
    o
}
