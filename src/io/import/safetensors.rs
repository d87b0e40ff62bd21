//! safetensors header reader: the 8-byte little-endian header length and the JSON header, never
//! the tensor data.
//!
//! Checks follow the reference implementation (huggingface/safetensors `Metadata::validate`):
//! header at most 100 MB and inside the file, a JSON object, known dtypes, `data_offsets` that
//! match shape × dtype, tensors packed back to back from 0 and ending exactly at the end of the
//! file (a shorter file is truncated, a longer one has trailing data the format forbids).

use super::error::{
    ErrorKind, ImportError, Location, count_str, index_of_line_col, json_message, line_col,
    size_str,
};
use std::collections::BTreeMap;
use std::io::Read;

/// The reference implementation's `MAX_HEADER_SIZE`.
pub const MAX_HEADER: u64 = 100_000_000;

/// A safetensors dtype (safetensors `Dtype`).
#[allow(non_camel_case_types)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

impl Dtype {
    pub const ALL: [Dtype; 20] = [
        Dtype::BOOL,
        Dtype::F4,
        Dtype::F6_E2M3,
        Dtype::F6_E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8_E5M2,
        Dtype::F8_E4M3,
        Dtype::F8_E8M0,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::BOOL => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6_E2M3 => "F6_E2M3",
            Dtype::F6_E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8_E5M2 => "F8_E5M2",
            Dtype::F8_E4M3 => "F8_E4M3",
            Dtype::F8_E8M0 => "F8_E8M0",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
    /// Bits per element (`Dtype::bitsize`).
    pub const fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3
            | Dtype::F8_E8M0 => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }
}

/// One tensor of the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    /// `data_offsets`: from the start of the data (after the header).
    pub begin: u64,
    pub end: u64,
    pub elements: u64,
}

impl Tensor {
    pub const fn bytes(&self) -> u64 {
        self.end - self.begin
    }
}

/// What a safetensors file says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafetensorsHeader {
    /// Length of the JSON header (the data starts at `8 + header_len`).
    pub header_len: u64,
    /// `__metadata__` (string → string).
    pub metadata: BTreeMap<String, String>,
    /// Sorted by data offset.
    pub tensors: Vec<Tensor>,
    pub file_len: u64,
}

impl SafetensorsHeader {
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
    /// Sum of the tensors' bytes (= the data section).
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors.iter().map(Tensor::bytes).sum()
    }
}

/// Reads the header of a safetensors file of `file_len` bytes from `r`. Reads 8 + header
/// length bytes; never touches tensor data. Errors carry the byte offset (and for JSON errors the
/// line:column in the header); the caller adds the file name ([`ImportError::in_file`]).
pub fn read_header<R: Read>(mut r: R, file_len: u64) -> Result<SafetensorsHeader, ImportError> {
    let n = read_header_len(&mut r, file_len)?;
    let buf = read_header_bytes(&mut r, n)?;
    let text = std::str::from_utf8(&buf).map_err(|e| {
        ImportError::at(
            8 + e.valid_up_to() as u64,
            ErrorKind::InvalidUtf8 {
                what: "the JSON header".into(),
            },
        )
    })?;
    check_header_json(text, &buf)?;
    let data_len = file_len - 8 - n;
    let json = HeaderText { text, buf: &buf };
    let (metadata, mut tensors) = read_entries(&json)?;
    tensors.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
    check_layout(&json, &tensors, n, data_len)?;
    Ok(SafetensorsHeader {
        header_len: n,
        metadata,
        tensors,
        file_len,
    })
}

/// The 8-byte length of the JSON header, checked against the file and the format's limits.
fn read_header_len<R: Read>(r: &mut R, file_len: u64) -> Result<u64, ImportError> {
    if file_len < 8 {
        return Err(ImportError::at(
            0,
            ErrorKind::Truncated {
                what: "header length",
                needed: 8,
                left: file_len,
            },
        ));
    }
    let mut len8 = [0u8; 8];
    r.read_exact(&mut len8)
        .map_err(|e| ImportError::at(0, ErrorKind::Io(e.to_string())))?;
    let n = u64::from_le_bytes(len8);
    if n > file_len - 8 {
        return Err(ImportError::at(
            0,
            ErrorKind::TooLarge {
                what: "header length",
                count: count_str(n),
                file: size_str(file_len),
            },
        ));
    }
    if n > MAX_HEADER {
        return Err(ImportError::invalid_at(
            0,
            format!("header length {n} exceeds the format's limit of {MAX_HEADER} bytes"),
        ));
    }
    if n < 2 {
        return Err(ImportError::invalid_at(
            0,
            format!("header length {n} is too short for a JSON object"),
        ));
    }
    Ok(n)
}

/// The `n` bytes of the JSON header (an error when the stream ends before them).
fn read_header_bytes<R: Read>(r: &mut R, n: u64) -> Result<Vec<u8>, ImportError> {
    let mut buf = Vec::with_capacity(n.min(1 << 20) as usize);
    let got = r
        .take(n)
        .read_to_end(&mut buf)
        .map_err(|e| ImportError::at(8, ErrorKind::Io(e.to_string())))?;
    if got as u64 != n {
        return Err(ImportError::at(
            8 + got as u64,
            ErrorKind::Io("the stream ended inside the header, before the file's length".into()),
        ));
    }
    Ok(buf)
}

/// The header is one JSON object (errors at line:column). Checked in one pass that keeps
/// nothing (`IgnoredAny`), before any entry is looked at, so a syntax error anywhere is the
/// error whatever the entries before it hold.
fn check_header_json(text: &str, buf: &[u8]) -> Result<(), ImportError> {
    if !text.starts_with('{') {
        let (line, column) = line_col(buf, 0);
        return Err(ImportError::new(
            Location::HeaderJson {
                offset: 8,
                line,
                column,
            },
            ErrorKind::Invalid("the header is not a JSON object (it must start with '{')".into()),
        ));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(|_| ())
        .map_err(|e| json_error(buf, &e))
}

fn json_error(buf: &[u8], e: &serde_json::Error) -> ImportError {
    let i = index_of_line_col(buf, e.line(), e.column());
    ImportError::new(
        Location::HeaderJson {
            offset: 8 + i as u64,
            line: e.line(),
            column: e.column(),
        },
        ErrorKind::Json(json_message(e)),
    )
}

/// The entries of the header, read one at a time: each tensor's small JSON value becomes a
/// [`Tensor`] and is dropped before the next is read, so a header of a million tensors never
/// stands in memory as a JSON tree (a 100 MB header then takes about its own size again, not
/// twenty times it). A name given twice is refused (JSON leaves duplicate keys undefined;
/// serde would keep the last silently).
fn read_entries(json: &HeaderText) -> Result<(BTreeMap<String, String>, Vec<Tensor>), ImportError> {
    use serde::de::{Deserializer as _, MapAccess, Visitor};
    struct Entries<'j, 'a> {
        json: &'j HeaderText<'a>,
        failed: &'j mut Option<ImportError>,
    }
    type Out = (BTreeMap<String, String>, Vec<Tensor>);
    impl<'de> Visitor<'de> for Entries<'_, '_> {
        type Value = Out;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object of tensors")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Out, A::Error> {
            let mut metadata = BTreeMap::new();
            let mut tensors = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1 << 16));
            let mut seen_metadata = false;
            let mut fail = |e: ImportError| -> A::Error {
                *self.failed = Some(e);
                serde::de::Error::custom("entry refused")
            };
            while let Some(name) = map.next_key::<String>()? {
                if name == "__metadata__" {
                    let v: serde_json::Value = map.next_value()?;
                    if seen_metadata {
                        return Err(fail(
                            self.json.bad(&name, "__metadata__ is given twice".into()),
                        ));
                    }
                    seen_metadata = true;
                    read_metadata(self.json, &v, &mut metadata).map_err(&mut fail)?;
                } else {
                    let fields: Fields = map.next_value()?;
                    tensors.push(read_tensor(self.json, name, fields).map_err(&mut fail)?);
                }
            }
            Ok((metadata, tensors))
        }
    }
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(json.text);
    let got = (&mut de).deserialize_map(Entries {
        json,
        failed: &mut failed,
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // A name given twice is refused where the tensors are gathered (`hf_model::build`).
    got.map_err(|e| json_error(json.buf, &e))
}

/// One tensor entry's fields as the header gives them: only the three the format defines are kept, each as its small JSON value, so
/// [`read_tensor`] words its errors as it always has without a map per tensor.
#[derive(Default)]
struct Fields {
    /// The entry was a JSON object (anything else is refused by [`read_tensor`]).
    object: bool,
    dtype: Option<serde_json::Value>,
    shape: Option<serde_json::Value>,
    offsets: Option<serde_json::Value>,
}

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tensor object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Fields, A::Error> {
                let mut f = Fields {
                    object: true,
                    ..Fields::default()
                };
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    // The last of a key given twice wins, as in a JSON object read whole.
                    match k.as_ref() {
                        "dtype" => f.dtype = Some(m.next_value()?),
                        "shape" => f.shape = Some(m.next_value()?),
                        "data_offsets" => f.offsets = Some(m.next_value()?),
                        _ => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(f)
            }
            // Anything else is read through and marked as not an object.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut q: A) -> Result<Fields, A::Error> {
                while q.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Fields::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Fields, E> {
                Ok(Fields::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Fields, E> {
                Ok(Fields::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Fields, E> {
                Ok(Fields::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Fields, E> {
                Ok(Fields::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Fields, E> {
                Ok(Fields::default())
            }
            fn visit_unit<E>(self) -> Result<Fields, E> {
                Ok(Fields::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The header's text, to point messages at the key they are about.
struct HeaderText<'a> {
    text: &'a str,
    buf: &'a [u8],
}

impl HeaderText<'_> {
    /// Where `key` sits in the file.
    fn at(&self, key: &str) -> Location {
        let quoted = serde_json::to_string(key).unwrap_or_default();
        let i = self.text.find(&quoted).unwrap_or(0);
        let (line, column) = line_col(self.buf, i);
        Location::HeaderJson {
            offset: 8 + i as u64,
            line,
            column,
        }
    }
    /// An invalid-header error at `key`.
    fn bad(&self, key: &str, msg: String) -> ImportError {
        ImportError::new(self.at(key), ErrorKind::Invalid(msg))
    }
}

/// `__metadata__`: an object of strings.
fn read_metadata(
    json: &HeaderText,
    v: &serde_json::Value,
    metadata: &mut BTreeMap<String, String>,
) -> Result<(), ImportError> {
    let serde_json::Value::Object(m) = v else {
        return Err(json.bad(
            "__metadata__",
            "__metadata__ is not an object of strings".into(),
        ));
    };
    for (k, v) in m {
        let serde_json::Value::String(s) = v else {
            return Err(json.bad(k, format!("__metadata__ value '{k}' is not a string")));
        };
        metadata.insert(k.clone(), s.clone());
    }
    Ok(())
}

/// One tensor entry: its dtype, shape and data offsets, which must hold exactly its bytes.
fn read_tensor(json: &HeaderText, name: String, info: Fields) -> Result<Tensor, ImportError> {
    let bad = |msg: String| json.bad(&name, msg);
    if !info.object {
        return Err(bad(format!(
            "tensor '{name}' is not an object with dtype, shape and data_offsets"
        )));
    }
    let dtype_s = info
        .dtype
        .as_ref()
        .and_then(|d| d.as_str())
        .ok_or_else(|| bad(format!("tensor '{name}' has no dtype string")))?;
    let dtype = Dtype::parse(dtype_s)
        .ok_or_else(|| bad(format!("tensor '{name}' has unknown dtype \"{dtype_s}\"")))?;
    let shape_v = info
        .shape
        .as_ref()
        .and_then(|s| s.as_array())
        .ok_or_else(|| bad(format!("tensor '{name}' has no shape array")))?;
    let mut shape = Vec::with_capacity(shape_v.len());
    let mut elements: u64 = 1;
    for d in shape_v {
        let d = d.as_u64().ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has a shape entry that is not a non-negative integer: {d}"
            ))
        })?;
        elements = elements
            .checked_mul(d)
            .ok_or_else(|| bad(format!("tensor '{name}' has more than 2^64 elements")))?;
        shape.push(d);
    }
    let (begin, end) = info
        .offsets
        .as_ref()
        .and_then(|o| o.as_array())
        .filter(|o| o.len() == 2)
        .and_then(|o| Some((o[0].as_u64()?, o[1].as_u64()?)))
        .ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has no data_offsets [begin, end] of non-negative integers"
            ))
        })?;
    let bits = elements
        .checked_mul(dtype.bits())
        .ok_or_else(|| bad(format!("tensor '{name}' is larger than 2^64 bits")))?;
    if bits % 8 != 0 {
        return Err(bad(format!(
            "tensor '{name}' of {elements} {} elements does not fill whole bytes",
            dtype.name()
        )));
    }
    if end < begin {
        return Err(bad(format!(
            "tensor '{name}' has data_offsets [{begin}, {end}] that end before they begin"
        )));
    }
    if end - begin != bits / 8 {
        return Err(bad(format!(
            "tensor '{name}' has data_offsets [{begin}, {end}] ({} bytes) but shape {shape:?} of {} needs {} bytes",
            end - begin,
            dtype.name(),
            bits / 8
        )));
    }
    Ok(Tensor {
        name,
        dtype,
        shape,
        begin,
        end,
        elements,
    })
}

/// The tensors (sorted by offset) fill the data section exactly: no overlap, no gap, nothing
/// missing or after the last.
fn check_layout(
    json: &HeaderText,
    tensors: &[Tensor],
    header_len: u64,
    data_len: u64,
) -> Result<(), ImportError> {
    let mut at = 0u64;
    for t in tensors {
        if t.begin != at {
            let msg = if t.begin < at {
                format!(
                    "tensor '{}' at data bytes [{}, {}] overlaps the previous tensor, which ends at {at}",
                    t.name, t.begin, t.end
                )
            } else {
                format!(
                    "tensor '{}' starts at data byte {} but the previous tensor ends at {at} (a gap)",
                    t.name, t.begin
                )
            };
            return Err(json.bad(&t.name, msg));
        }
        at = t.end;
    }
    if at > data_len {
        let last = tensors.last().map(|t| t.name.as_str()).unwrap_or("");
        return Err(json.bad(
            last,
            format!(
                "the tensors need {at} data bytes but the file holds {data_len} after the header (truncated? {} short)",
                size_str(at - data_len)
            ),
        ));
    }
    if at < data_len {
        return Err(ImportError::invalid_at(
            8 + header_len + at,
            format!(
                "{} bytes after the last tensor: the format forbids trailing data",
                data_len - at
            ),
        ));
    }
    Ok(())
}

/// Reads the header of the safetensors file at `path`.
pub fn read_file(path: &std::path::Path) -> Result<SafetensorsHeader, ImportError> {
    let f = std::fs::File::open(path).map_err(|e| ImportError::io(path, &e))?;
    let len = f.metadata().map_err(|e| ImportError::io(path, &e))?.len();
    read_header(std::io::BufReader::new(f), len).map_err(|e| e.in_file(path))
}

/// The imported model of one header without a config.json beside it (the shape inferred from
/// the tensor names and shapes). `source` is the path shown for provenance.
pub fn to_model(
    header: &SafetensorsHeader,
    source: &str,
    name: &str,
) -> Result<super::ImportedModel, ImportError> {
    let shards = [(std::path::PathBuf::from(source), header.clone())];
    super::hf_model::build(&shards, None, source, name, Vec::new())
}
