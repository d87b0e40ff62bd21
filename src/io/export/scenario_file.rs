//! Scenarios saved as RON (`*.ron`): everything the user chose, readable and editable by hand.
//! Missing fields take their defaults (`#[serde(default)]` on `Scenario`), so files written by
//! older versions keep loading.

use super::ExportError;
use crate::core::scenario::Scenario;
use ron::ser::PrettyConfig;
use std::path::Path;

/// The first lines of every saved scenario.
const HEADER: &str =
    "// headroom scenario (RON). Edit any value; fields left out take their defaults.\n";

/// The scenario as pretty RON, with a header comment.
pub fn save_scenario(s: &Scenario) -> String {
    let cfg = PrettyConfig::new()
        .indentor("    ".to_string())
        .separate_tuple_members(false)
        .enumerate_arrays(false);
    match ron::ser::to_string_pretty(s, cfg) {
        Ok(body) => format!("{HEADER}{body}\n"),
        // Serialising plain data cannot fail; keep a loadable file if it ever does.
        Err(_) => format!("{HEADER}()\n"),
    }
}

/// Parses a scenario file. Errors read `file:line:col: message` (1-based line and column).
/// A misspelt field is an error too (serde would silently drop it and use the default).
pub fn load_scenario(file_name: &str, text: &str) -> Result<Scenario, ExportError> {
    let s = ron::Options::default()
        .from_str::<Scenario>(text)
        .map_err(|e| ExportError::Scenario {
            file: file_name.to_string(),
            line: e.span.start.line.max(1),
            col: e.span.start.col.max(1),
            message: e.code.to_string(),
        })?;
    if let Some((field, known)) = unknown_field(text) {
        let (line, col) = position_of_key(text, &field);
        return Err(ExportError::Scenario {
            file: file_name.to_string(),
            line,
            col,
            message: format!("unknown field '{field}' (fields: {})", known.join(", ")),
        });
    }
    Ok(s)
}

/// Read and parse a scenario file; errors name the file (and line and column when it parses
/// badly).
pub fn read_scenario(path: &Path) -> Result<Scenario, ExportError> {
    let text =
        crate::io::read_text_limited(path, crate::io::limits::SCENARIO_FILE).map_err(|e| {
            ExportError::Read {
                path: path.display().to_string(),
                reason: match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    std::io::ErrorKind::InvalidData => "it is not UTF-8 text".to_string(),
                    _ => e.to_string(),
                },
            }
        })?;
    load_scenario(&path.display().to_string(), &text)
}

/// Save a scenario to `path` atomically (see [`super::write_atomic`]).
pub fn write_scenario(path: &Path, s: &Scenario) -> Result<(), ExportError> {
    super::write_atomic(path, save_scenario(s).as_bytes())
}

/// The field names of a value serialised as a RON struct.
fn field_names<T: serde::Serialize>(v: &T) -> Vec<String> {
    let Ok(text) = ron::to_string(v) else {
        return Vec::new();
    };
    match ron::from_str::<ron::Value>(&text) {
        Ok(ron::Value::Map(m)) => m
            .keys()
            .filter_map(|k| match k {
                ron::Value::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The first field of the file (top level, or inside `model`) that `Scenario` does not have.
fn unknown_field(text: &str) -> Option<(String, Vec<String>)> {
    let ron::Value::Map(top) = ron::from_str::<ron::Value>(text).ok()? else {
        return None;
    };
    let check = |m: &ron::Map, known: Vec<String>| -> Option<(String, Vec<String>)> {
        if known.is_empty() {
            return None;
        }
        m.keys().find_map(|k| match k {
            ron::Value::String(s) if !known.contains(s) => Some((s.clone(), known.clone())),
            _ => None,
        })
    };
    if let Some(u) = check(&top, field_names(&every_scenario_field())) {
        return Some(u);
    }
    match top.get(&ron::Value::String("model".into())) {
        Some(ron::Value::Map(m)) => check(m, field_names(&every_model_field())),
        _ => None,
    }
}

/// A scenario with every field that is left out of a saved file at its default (the image
/// settings) set, so that each is a known field.
fn every_scenario_field() -> Scenario {
    Scenario {
        image: crate::core::diffusion::ImageSettings {
            steps: 1,
            ..Default::default()
        },
        ..Scenario::default()
    }
}

/// A model with every field that is left out of a saved file when empty (recurrent layers, an
/// encoder, the gated attention output) set, so that each is a known field.
fn every_model_field() -> crate::core::model::ModelSpec {
    crate::core::model::ModelSpec {
        attn_output_gate: true,
        recurrent: Some(Default::default()),
        encoder: Some(Default::default()),
        gemma3n: Some(Default::default()),
        kv_shared_layers: 1,
        ..Default::default()
    }
}

/// Line and column (1-based) of `key:` in the text, skipping `//` comments; (1, 1) if absent.
fn position_of_key(text: &str, key: &str) -> (usize, usize) {
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut from = 0;
        while let Some(j) = code[from..].find(key) {
            let at = from + j;
            let before_ok = code[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let after = code[at + key.len()..].trim_start();
            if before_ok && after.starts_with(':') {
                return (i + 1, code[..at].chars().count() + 1);
            }
            from = at + key.len();
        }
    }
    (1, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_round_trips() {
        let s = Scenario::default();
        let text = save_scenario(&s);
        assert!(text.starts_with("// headroom scenario"));
        assert_eq!(load_scenario("a.ron", &text).unwrap(), s);
    }

    #[test]
    fn encoder_and_hybrid_models_round_trip() {
        let cat = crate::io::catalog::builtin();
        for id in ["bge-m3", "qwen3-next-80b-a3b"] {
            let s = Scenario {
                model: cat.model(id).unwrap().spec.clone(),
                model_id: Some(id.into()),
                mode: crate::core::scenario::Mode::Embed,
                ..Scenario::default()
            };
            let text = save_scenario(&s);
            assert_eq!(load_scenario("a.ron", &text).unwrap(), s, "{id}");
        }
    }

    #[test]
    fn misspelt_fields_are_errors() {
        let e = load_scenario("t.ron", "(\n    context: 4096,\n    contxt: 32768,\n)").unwrap_err();
        assert_eq!(
            e.to_string().split(": unknown").next(),
            Some("t.ron:3:5"),
            "{e}"
        );
        let e = load_scenario("t.ron", "(model: (name: \"x\", layerz: 3))").unwrap_err();
        assert!(e.to_string().contains("layerz"), "{e}");
        // Every field a saved scenario has is known.
        assert!(unknown_field(&save_scenario(&Scenario::default())).is_none());
        assert!(!field_names(&Scenario::default()).is_empty());
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = load_scenario("mine.ron", "(\n    context: \"long\",\n)").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("mine.ron:2:"), "{msg}");
    }
}
