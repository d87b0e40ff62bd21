//! The tools: each is a subcommand of the CLI. A call's JSON arguments become that subcommand's
//! command line (`{"model": "llama-3-8b", "context": 32768}` → `headroom estimate
//! --model=llama-3-8b --context=32768 --json`), parsed by the CLI's own clap grammar and run by
//! the CLI's own code, so the result is byte for byte what `headroom … --json` prints and a
//! refused argument is the one line the CLI prints to stderr.

use crate::cli::app::{Cli, CliError, run, usage_line};
use clap::{CommandFactory, Parser};
use serde_json::{Map, Value};

/// One tool: the subcommand it runs, the arguments always added, the options it does not offer.
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name in `tools/list` and `tools/call`.
    pub name: &'static str,
    /// The subcommand path: `["catalog", "list"]` for `headroom catalog list`.
    pub path: &'static [&'static str],
    /// Arguments always passed: the JSON output.
    pub fixed: &'static [&'static str],
    /// Argument ids not offered: the output switch the tool sets itself, and what writes files
    /// (`--save-scenario`, `--output`) or only changes the text output (`--launch`).
    pub hidden: &'static [&'static str],
    /// What the result is, after the subcommand's own description.
    pub result: &'static str,
}

/// Every tool, in the order `tools/list` gives them.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "estimate",
        path: &["estimate"],
        fixed: &["--json"],
        hidden: &["json", "save_scenario"],
        result: "The result is `headroom estimate --json`: memory by component, sizes in bytes.",
    },
    ToolSpec {
        name: "fit",
        path: &["fit"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom fit --json`: one object per machine (verdict, headroom, speed, cost). `machine: [\"local\"]` fits this machine.",
    },
    ToolSpec {
        name: "recommend",
        path: &["recommend"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom recommend --json`: picks per machine kind and this machine's upgrades; with `mode: \"image\"` and an image pipeline as `model`, the cheapest and fastest machine per group for it.",
    },
    ToolSpec {
        name: "serve",
        path: &["serve"],
        fixed: &["--json"],
        hidden: &["json", "launch"],
        result: "The result is `headroom serve --json`: one serving plan per machine (KV pool, users at the target, replicas, $ per 1M tokens).",
    },
    ToolSpec {
        name: "cluster",
        path: &["cluster"],
        fixed: &["--json"],
        hidden: &["json", "launch"],
        result: "The result is `headroom cluster --json`: per machine, the smallest and cheapest cluster and the curve against node count.",
    },
    ToolSpec {
        name: "quality",
        path: &["quality"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom quality --json`: every weight precision with its size, total, published quality (KLD, measured or carried over) and, with `machine`, whether it fits and the best-quality one that does.",
    },
    ToolSpec {
        name: "report",
        path: &["report"],
        fixed: &["--format=json", "--output=-"],
        hidden: &["format", "output"],
        result: "The result is `headroom report --format json`: the estimate, the fits, the scenario, settings and launch lines (nothing is written to disk); with `mode: \"image\"`, the image pipeline's components, picks and fits.",
    },
    ToolSpec {
        name: "detect",
        path: &["detect"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom detect --json`: RAM, CPU, GPUs, unified memory and disk of the machine the server runs on, sizes in bytes.",
    },
    ToolSpec {
        name: "catalog_models",
        path: &["catalog", "models"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom catalog models --json`: the preset ids the `model` argument of the other tools accepts.",
    },
    ToolSpec {
        name: "catalog_machines",
        path: &["catalog", "list"],
        fixed: &["--json"],
        hidden: &["json"],
        result: "The result is `headroom catalog list --json`: the catalog's machines (ids for the `machine` argument), sizes in bytes.",
    },
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The clap command of a tool's subcommand.
pub fn command(t: &ToolSpec) -> clap::Command {
    let mut c = Cli::command();
    c.build();
    for p in t.path {
        c = c
            .find_subcommand(p)
            .cloned()
            .unwrap_or_else(|| panic!("tool {}: no subcommand {p}", t.name));
    }
    c
}

/// The tool's description: the subcommand's help, what the result is, and how the arguments
/// map to the CLI's options.
pub fn description(t: &ToolSpec, cmd: &clap::Command) -> String {
    let about = cmd
        .get_long_about()
        .or_else(|| cmd.get_about())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let stop = if about.ends_with(['.', ')']) { "" } else { "." };
    format!(
        "{about}{stop} {} Each argument is the CLI option of the same name (`lora_rank` is `--lora-rank`); values as on the command line (\"32K\", \"7B\", \"q4_k_m\"). Only `hf` and `url` reach the network.",
        t.result
    )
}

/// What a call gives back: the CLI's JSON text (and its value), or the one-line error.
#[derive(Debug)]
pub enum Outcome {
    /// The JSON text the CLI prints, and its parsed value.
    Json(String, Value),
    /// Why the call was refused or failed: one line, as the CLI prints it after "headroom: ".
    Error(String),
}

/// The command line a call's arguments stand for (without the program name), or why the
/// arguments cannot be one.
pub fn argv(t: &ToolSpec, args: &Map<String, Value>) -> Result<Vec<String>, String> {
    let cmd = command(t);
    let mut out: Vec<String> = t.path.iter().map(|s| s.to_string()).collect();
    out.extend(t.fixed.iter().map(|s| s.to_string()));
    let offered: Vec<&clap::Arg> = super::schema::offered(&cmd, t.hidden).collect();
    for key in args.keys() {
        if !offered
            .iter()
            .any(|a| super::schema::property_name(a) == *key)
        {
            return Err(format!(
                "unknown argument '{}' for tool {} (its inputSchema lists the arguments)",
                crate::core::format::one_line(key),
                t.name
            ));
        }
    }
    let mut positional = Vec::new();
    for a in offered {
        let name = super::schema::property_name(a);
        let Some(v) = args.get(&name).filter(|v| !v.is_null()) else {
            continue;
        };
        if super::schema::is_flag(a) {
            match v {
                Value::Bool(true) => out.push(format!("--{}", long(a))),
                Value::Bool(false) => {}
                _ => return Err(format!("argument '{name}' must be true or false")),
            }
            continue;
        }
        let items: Vec<&Value> = match v {
            Value::Array(xs) if super::schema::is_repeated(a) => xs.iter().collect(),
            Value::Array(_) => return Err(format!("argument '{name}' takes one value")),
            x => vec![x],
        };
        for x in items {
            let text = scalar(a, x).ok_or_else(|| {
                format!("argument '{name}' must be a string, a number or a boolean")
            })?;
            match a.get_long() {
                // `--context=-1`: a value that starts with '-' stays a value.
                Some(l) => out.push(format!("--{l}={text}")),
                None => positional.push(text),
            }
        }
    }
    if !positional.is_empty() {
        out.push("--".into());
        out.extend(positional);
    }
    Ok(out)
}

fn long(a: &clap::Arg) -> &str {
    a.get_long().unwrap_or_else(|| a.get_id().as_str())
}

/// A JSON scalar as the command line writes it: strings as they are, numbers in JSON's own
/// spelling, booleans as `on`/`off` for an `on|off` option (else `true`/`false`).
fn scalar(a: &clap::Arg, v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => {
            let on_off = a.get_possible_values().iter().any(|p| p.get_name() == "on");
            Some(match (on_off, b) {
                (true, true) => "on".into(),
                (true, false) => "off".into(),
                (false, b) => b.to_string(),
            })
        }
        _ => None,
    }
}

/// Runs a call: the arguments as the subcommand's command line, parsed and run as the CLI does.
pub fn call(t: &ToolSpec, args: &Map<String, Value>) -> Outcome {
    let argv = match argv(t, args) {
        Ok(a) => a,
        Err(e) => return Outcome::Error(e),
    };
    let cli = match Cli::try_parse_from(std::iter::once("headroom".to_string()).chain(argv)) {
        Ok(c) => c,
        Err(e) => return Outcome::Error(usage_line(&e)),
    };
    match run(cli) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(v) => Outcome::Json(text, v),
            Err(e) => Outcome::Error(format!("{}: the output is not JSON ({e})", t.name)),
        },
        Err(CliError { message, .. }) => {
            Outcome::Error(crate::core::format::one_line(&message).into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_tool_has_its_subcommand_and_hidden_ids() {
        for t in TOOLS {
            let cmd = command(t);
            for h in t.hidden {
                assert!(
                    cmd.get_arguments().any(|a| a.get_id() == *h),
                    "tool {}: hides '{h}', which {:?} does not have",
                    t.name,
                    t.path
                );
            }
        }
    }

    #[test]
    fn arguments_become_the_command_line() {
        let t = find("fit").unwrap();
        let a = argv(
            t,
            &obj(json!({
                "model": "llama-3-8b",
                "context": 32768,
                "machine": ["desktop-rtx4090-64gb", "local"],
                "fits_only": true,
                "raise_gpu_limit": false,
                "flash_attention": false,
                "gpu_memory_utilization": 0.9,
                "kind": null,
            })),
        )
        .unwrap();
        let want = [
            "fit",
            "--json",
            "--model=llama-3-8b",
            "--context=32768",
            "--flash-attention=off",
            "--gpu-memory-utilization=0.9",
            "--fits-only",
            "--machine=desktop-rtx4090-64gb",
            "--machine=local",
        ];
        assert_eq!(a, want);
    }

    #[test]
    fn refused_arguments_say_why() {
        let t = find("estimate").unwrap();
        let e = argv(t, &obj(json!({"save_scenario": "/tmp/x.ron"}))).unwrap_err();
        assert!(e.contains("unknown argument 'save_scenario'"), "{e}");
        let e = argv(t, &obj(json!({"pure_bf16": "yes"}))).unwrap_err();
        assert_eq!(e, "argument 'pure_bf16' must be true or false");
        let e = argv(t, &obj(json!({"model": ["a", "b"]}))).unwrap_err();
        assert_eq!(e, "argument 'model' takes one value");
        let e = argv(t, &obj(json!({"context": {"n": 1}}))).unwrap_err();
        assert!(e.contains("must be a string, a number or a boolean"), "{e}");
    }

    #[test]
    fn a_call_is_the_cli() {
        let t = find("estimate").unwrap();
        match call(t, &obj(json!({"model": "llama-3-8b", "context": "16K"}))) {
            Outcome::Json(text, v) => {
                assert!(text.ends_with("}\n"), "{text}");
                assert_eq!(v["params"], json!(8030261248u64));
            }
            Outcome::Error(e) => panic!("{e}"),
        }
        match call(t, &obj(json!({"model": "llama3-8b"}))) {
            Outcome::Error(e) => assert!(
                e.starts_with("--model: unknown preset 'llama3-8b' (nearest: llama-3-8b"),
                "{e}"
            ),
            Outcome::Json(..) => panic!("an unknown preset ran"),
        }
        match call(t, &obj(json!({"weights": "q4km"}))) {
            Outcome::Error(e) => assert!(
                e.starts_with("invalid value 'q4km' for '--weights <PRECISION>'"),
                "{e}"
            ),
            Outcome::Json(..) => panic!("a bad precision ran"),
        }
    }

    /// Image generation goes through the same tools: `mode: "image"` with a pipeline preset.
    #[test]
    fn image_generation_through_report_and_recommend() {
        let args =
            obj(json!({"mode": "image", "model": "sdxl", "machine": ["desktop-rtx4090-64gb"]}));
        match call(find("report").unwrap(), &args) {
            // SDXL's UNet: 2,567,463,684 params × 2 B.
            Outcome::Json(_, v) => {
                assert_eq!(v["components"][0]["bytes"], json!(5_134_927_368_u64));
                assert_eq!(v["fits"][0]["machine"], json!("desktop-rtx4090-64gb"));
            }
            Outcome::Error(e) => panic!("{e}"),
        }
        let args = obj(json!({"mode": "image", "model": "flux.1-dev", "kind": ["cloud"]}));
        match call(find("recommend").unwrap(), &args) {
            Outcome::Json(_, v) => {
                assert_eq!(v["groups"][0]["group"], json!("cloud"));
                assert_eq!(v["groups"][0]["picks"][0]["role"], json!("cheapest"));
            }
            Outcome::Error(e) => panic!("{e}"),
        }
    }
}
