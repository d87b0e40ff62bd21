//! Reading one JSON object of a `config.json`: whole numbers, flags, strings, per-layer lists,
//! with class defaults for omitted keys and one error naming the key.

use super::ConfigError;
use serde_json::{Map, Value};

/// One JSON object being read, with the prefix its keys get in error messages and the
/// defaults for keys it may omit.
pub(super) struct Obj<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) prefix: &'static str,
    pub(super) defaults: &'static [(&'static str, u64)],
}

pub(super) fn bad(key: String, message: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        key,
        message: message.into(),
    }
}

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string \"{}\"", s.chars().take(40).collect::<String>()),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A JSON value as a whole non-negative number (`4096` or `4096.0`).
pub(super) fn as_count(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Ok(u)
            } else if n.as_i64().is_some() {
                Err(format!("must not be negative, got {n}"))
            } else {
                match n.as_f64() {
                    Some(f) if f < 0.0 => Err(format!("must not be negative, got {n}")),
                    Some(f) if f.fract() == 0.0 && f <= 9_007_199_254_740_992.0 => Ok(f as u64),
                    _ => Err(format!("expected a whole number, got {n}")),
                }
            }
        }
        other => Err(format!("expected a number, got {}", describe(other))),
    }
}

impl<'a> Obj<'a> {
    pub(super) fn key(&self, k: &str) -> String {
        format!("{}{}", self.prefix, k)
    }

    /// The value of `k`; null counts as absent (transformers treats `None` as "use the default").
    pub(super) fn raw(&self, k: &str) -> Option<&'a Value> {
        match self.map.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    pub(super) fn default_of(&self, k: &str) -> Option<u64> {
        self.defaults.iter().find(|(n, _)| *n == k).map(|&(_, v)| v)
    }

    /// An optional count within `[min, max]` (the class default when absent, if there is one).
    pub(super) fn count(&self, k: &str, min: u64, max: u64) -> Result<Option<u64>, ConfigError> {
        let v = match self.raw(k) {
            None => return Ok(self.default_of(k)),
            Some(v) => as_count(v).map_err(|m| bad(self.key(k), m))?,
        };
        if v < min || v > max {
            return Err(bad(
                self.key(k),
                format!("must be between {min} and {max}, got {v}"),
            ));
        }
        Ok(Some(v))
    }

    /// A required count within `[min, max]`.
    pub(super) fn req(&self, k: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
        self.count(k, min, max)?
            .ok_or_else(|| ConfigError::MissingKey(self.key(k)))
    }

    /// `num_attention_heads` and `num_key_value_heads` (every head when the key is absent, as
    /// transformers' `PretrainedConfig`s default it), the KV heads dividing the heads.
    pub(super) fn attention_heads(&self) -> Result<(u64, u64), ConfigError> {
        let heads = self.req("num_attention_heads", 1, super::MAX_HEADS)?;
        let kv_heads = self
            .count("num_key_value_heads", 1, heads)?
            .unwrap_or(heads);
        self.kv_heads_divide(heads, kv_heads)?;
        Ok((heads, kv_heads))
    }
    /// Grouped-query attention needs the KV heads to divide the query heads.
    pub(super) fn kv_heads_divide(&self, heads: u64, kv_heads: u64) -> Result<(), ConfigError> {
        if heads.is_multiple_of(kv_heads) {
            Ok(())
        } else {
            Err(bad(
                self.key("num_key_value_heads"),
                format!("{kv_heads} does not divide the {heads} attention heads"),
            ))
        }
    }
    pub(super) fn flag(&self, k: &str) -> Result<Option<bool>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected true or false, got {}", describe(other)),
            )),
        }
    }

    pub(super) fn text(&self, k: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected a string, got {}", describe(other)),
            )),
        }
    }

    /// A nested object (absent or null → None).
    pub(super) fn object(&self, k: &str) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected an object, got {}", describe(other)),
            )),
        }
    }

    /// A list of layer indices, each below `layers`.
    pub(super) fn layer_list(&self, k: &str, layers: u64) -> Result<Vec<u64>, ConfigError> {
        match self.raw(k) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    let i = as_count(v).map_err(|m| bad(self.key(k), m))?;
                    if i >= layers {
                        return Err(bad(
                            self.key(k),
                            format!("layer {i} does not exist (the model has {layers} layers)"),
                        ));
                    }
                    Ok(i)
                })
                .collect(),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected a list of layer numbers, got {}", describe(other)),
            )),
        }
    }

    /// `layer_types` as "is this layer sliding?" flags, when present.
    pub(super) fn layer_types(&self, layers: u64) -> Result<Option<Vec<bool>>, ConfigError> {
        // transformers: "sliding_attention" / "full_attention"; any other kind attends fully as
        // far as the cache is concerned.
        Ok(self
            .layer_type_names(layers)?
            .map(|v| v.iter().map(|s| *s == "sliding_attention").collect()))
    }

    /// `layer_types`, one name per layer, when the config has it: a list of strings exactly
    /// `layers` long, else an error naming the key.
    pub(super) fn layer_type_names(
        &self,
        layers: u64,
    ) -> Result<Option<Vec<&'a str>>, ConfigError> {
        let k = "layer_types";
        let a = match self.raw(k) {
            None => return Ok(None),
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(bad(
                    self.key(k),
                    format!("expected a list, got {}", describe(other)),
                ));
            }
        };
        if a.len() as u64 != layers {
            return Err(bad(
                self.key(k),
                format!("has {} entries for {layers} layers", a.len()),
            ));
        }
        a.iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                other => Err(bad(
                    self.key(k),
                    format!("expected layer type names, got {}", describe(other)),
                )),
            })
            .collect::<Result<Vec<&str>, _>>()
            .map(Some)
    }
}
