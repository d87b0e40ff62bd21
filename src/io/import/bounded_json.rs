//! JSON read with a bound on how many values it may hold, for config.json files.
//!
//! `serde_json::Value` takes some 30–80 bytes per value (a number written in two bytes becomes a
//! 32-byte `Value`, an object entry adds its key and a B-tree slot), so a 62 MB config.json of
//! small numbers grows to a gigabyte as a tree. A real config.json holds a few hundred values
//! (DeepSeek-V3's: ~70; a multimodal wrapper with its vision config: a few hundred); this reader
//! counts them as it builds the tree and stops at the first key past the bound, with an error at
//! that point in the file, so no file holds more than about [`MAX_VALUES`] values in memory.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The most values (numbers, strings, booleans, nulls, arrays, objects) one top-level key of a
/// config.json may hold: a per-layer list of 2^16 layers is far beyond any model.
pub const MAX_PER_KEY: u64 = 1 << 16;
/// The most values a whole config.json may hold.
pub const MAX_VALUES: u64 = 1 << 18;

/// Bounds for a `*.safetensors.index.json`: its `weight_map` has one entry per tensor
/// (DeepSeek-V3: 91,991), so an index may hold some millions of values.
pub const INDEX_BOUNDS: Bounds = Bounds {
    per_key: 1 << 22,
    total: 1 << 22,
};
/// Bounds for a config.json.
pub const CONFIG_BOUNDS: Bounds = Bounds {
    per_key: MAX_PER_KEY,
    total: MAX_VALUES,
};

/// How many values one top-level key, and the whole document, may hold.
#[derive(Copy, Clone, Debug)]
pub struct Bounds {
    pub per_key: u64,
    pub total: u64,
}

/// Parses a config.json `text` into a [`Value`], refusing one that holds more than
/// [`CONFIG_BOUNDS`]. Errors carry the line and column as serde_json's do.
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    from_str_within(text, CONFIG_BOUNDS)
}

/// [`from_str`] within other bounds.
pub fn from_str_within(text: &str, bounds: Bounds) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut total = 0u64;
    let v = Root {
        total: &mut total,
        bounds,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// The document: a top-level object is counted key by key (to name the key past the bound);
/// anything else as one value.
struct Root<'a> {
    total: &'a mut u64,
    bounds: Bounds,
}

impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let Bounds { per_key, total } = self.bounds;
        while let Some(key) = map.next_key::<String>()? {
            let mut left = per_key;
            let v = map
                .next_value_seed(Counted { left: &mut left })
                .map_err(|e| {
                    if left == 0 {
                        A::Error::custom(format!(
                            "key \"{}\" holds more than {} values: not a model config",
                            crate::core::format::one_line(&key),
                            crate::core::format::group_digits(per_key)
                        ))
                    } else {
                        e
                    }
                })?;
            *self.total = self.total.saturating_add(per_key - left);
            if *self.total > total {
                return Err(A::Error::custom(format!(
                    "the file holds more than {} values: not a model config",
                    crate::core::format::group_digits(total)
                )));
            }
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        let mut left = self.bounds.total;
        Counted { left: &mut left }.visit_seq(seq)
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// One value and what it holds, each counted against `left`; an error once it runs out.
struct Counted<'a> {
    left: &'a mut u64,
}

impl Counted<'_> {
    fn take<E: serde::de::Error>(&mut self) -> Result<(), E> {
        if *self.left == 0 {
            return Err(E::custom("too many values"));
        }
        *self.left -= 1;
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Counted<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counted<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(Counted {
                left: &mut *self.left,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Counted {
            left: &mut *self.left,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_bool<E: serde::de::Error>(mut self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(mut self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(mut self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(mut self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_str<E: serde::de::Error>(mut self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(mut self, v: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(mut self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_tree_as_serde_json_within_the_bounds() {
        let t = r#"{"a": [1, -2, 3.5, "x", null, true], "b": {"c": {"d": []}}, "e": 18446744073709551615}"#;
        assert_eq!(
            from_str(t).unwrap(),
            serde_json::from_str::<Value>(t).unwrap()
        );
        assert_eq!(from_str("[1,2]").unwrap(), serde_json::json!([1, 2]));
        assert!(from_str("{\"a\": 1} x").is_err());
    }

    #[test]
    fn a_key_past_the_bound_is_named() {
        let big = format!(
            "{{\"hidden_size\": 1, \"junk\": [{}]}}",
            vec!["1"; MAX_PER_KEY as usize + 1].join(",")
        );
        let e = from_str(&big).unwrap_err().to_string();
        assert!(e.contains("\"junk\"") && e.contains("line 1"), "{e}");
        let many = format!(
            "{{{}}}",
            (0..MAX_VALUES + 1)
                .map(|i| format!("\"k{i}\": 0"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let e = from_str(&many).unwrap_err().to_string();
        assert!(e.contains("more than 262,144 values"), "{e}");
    }
}
