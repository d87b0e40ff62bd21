//! A tool's JSON Schema, read off the clap grammar of its subcommand (`cli::args`): one property
//! per option (the long name with `_` for `-`), its help as the description, its possible values
//! as an `enum`, its default, a flag as a boolean and a repeatable option as an array. Nothing is
//! written twice: a new option of `headroom fit` is a new property of the `fit` tool.

use clap::{Arg, ArgAction};
use serde_json::{Map, Value, json};
use std::any::TypeId;

/// The property name of an argument: `--lora-rank` → `lora_rank`; a positional one by its id.
pub fn property_name(a: &Arg) -> String {
    match a.get_long() {
        Some(l) => l.replace('-', "_"),
        None => a.get_id().as_str().to_string(),
    }
}

/// Whether an argument is a flag (`--fits-only`): a boolean property, given as `true`.
pub fn is_flag(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::SetTrue)
}

/// Whether an argument may be given more than once (`--machine A --machine B`): an array.
pub fn is_repeated(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::Append)
}

/// The arguments a tool offers: every argument of `cmd` but help, version and `hidden` (ids).
pub fn offered<'a>(cmd: &'a clap::Command, hidden: &'a [&str]) -> impl Iterator<Item = &'a Arg> {
    cmd.get_arguments().filter(move |a| {
        let id = a.get_id().as_str();
        !matches!(a.get_action(), ArgAction::Help | ArgAction::Version)
            && !hidden.contains(&id)
            && !a.is_hide_set()
    })
}

/// The `inputSchema` of a tool: an object of the offered arguments, none other allowed.
pub fn input_schema(cmd: &clap::Command, hidden: &[&str]) -> Map<String, Value> {
    let mut props = Map::new();
    let mut required = Vec::new();
    for a in offered(cmd, hidden) {
        let name = property_name(a);
        if a.is_required_set() {
            required.push(Value::String(name.clone()));
        }
        props.insert(name, property(a));
    }
    let mut o = Map::new();
    o.insert("type".into(), json!("object"));
    o.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        o.insert("required".into(), Value::Array(required));
    }
    o.insert("additionalProperties".into(), json!(false));
    o
}

/// One argument's schema.
fn property(a: &Arg) -> Value {
    let mut p = if is_flag(a) {
        json!({ "type": "boolean" })
    } else {
        value_schema(a)
    };
    if is_repeated(a) {
        p = json!({ "type": "array", "items": p });
    }
    let Some(o) = p.as_object_mut() else {
        return p;
    };
    if let Some(h) = a.get_long_help().or_else(|| a.get_help()) {
        o.insert("description".into(), json!(h.to_string()));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if let [d] = defaults.as_slice()
        && !is_flag(a)
    {
        o.insert("default".into(), json!(d));
    }
    p
}

/// The schema of one value: its possible values as an enum (with `A/B` pairs where the value
/// name says so, as `--kv q8_0/q4_0`), else the type the value parser yields. Numbers may also
/// come as strings, since the parsers read "32K", "7B" and "1,000".
fn value_schema(a: &Arg) -> Value {
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    let paired = a
        .get_value_names()
        .is_some_and(|n| n.iter().any(|n| n.contains("[/")));
    if !values.is_empty() && paired {
        let alt = values.join("|");
        return json!({
            "type": "string",
            "anyOf": [
                { "enum": values },
                { "pattern": format!("^({alt})/({alt})$") }
            ]
        });
    }
    if !values.is_empty() {
        return json!({ "type": "string", "enum": values });
    }
    let t = a.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<u8>(),
        TypeId::of::<usize>(),
        TypeId::of::<i64>(),
    ];
    if integers.iter().any(|i| t == *i) {
        json!({ "type": ["integer", "string"] })
    } else if t == TypeId::of::<f64>() {
        json!({ "type": ["number", "string"] })
    } else {
        json!({ "type": "string" })
    }
}
