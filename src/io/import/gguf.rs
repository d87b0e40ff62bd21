//! GGUF v2/v3 header reader: metadata and tensor infos, never tensor data.
//!
//! Format: ggml `docs/gguf.md`. The checks follow llama.cpp's reader (`ggml/src/gguf.cpp`): magic,
//! version 2 or 3, known value and ggml types, at most 4 dims, names under 64 bytes, unique keys
//! and tensor names, rows a whole number of blocks, `general.alignment` a power of two, offsets
//! aligned. On top of it every count and length is bounded by what the rest of the file can hold
//! before anything is allocated, and every tensor must lie inside the file.

use super::error::{ErrorKind, ImportError, count_str, size_str};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};

pub const MAGIC: [u8; 4] = *b"GGUF";
/// `GGUF_DEFAULT_ALIGNMENT`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Arrays longer than this are counted and skipped, not kept (vocabularies, merges, scores).
pub const MAX_KEPT_ARRAY: u64 = 4096;
/// All kept array items together, so a header of many short arrays cannot blow up memory.
pub const MAX_KEPT_ITEMS: u64 = 1 << 20;
/// Arrays may nest (gguf.md allows arrays of arrays); deeper than this is refused.
pub const MAX_ARRAY_DEPTH: u32 = 8;
/// `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;
/// `GGML_MAX_NAME`: a tensor name has at most 63 bytes.
pub const MAX_NAME: u64 = 64;
/// Most metadata entries and tensors accepted: real files have under 100 entries and a few
/// thousand tensors; the caps keep a hostile multi-GB header from costing many times its size.
pub const MAX_KV_COUNT: u64 = 1 << 20;
pub const MAX_TENSOR_COUNT: u64 = 1 << 20;
/// Smallest possible metadata key/value: key length (8) + type (4) + a 1-byte value.
const MIN_KV_BYTES: u64 = 13;
/// Smallest possible tensor info: name length (8) + n_dims (4) + type (4) + offset (8).
const MIN_TENSOR_INFO_BYTES: u64 = 24;

/// A metadata value type (`gguf_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub const fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => ValueType::U8,
            1 => ValueType::I8,
            2 => ValueType::U16,
            3 => ValueType::I16,
            4 => ValueType::U32,
            5 => ValueType::I32,
            6 => ValueType::F32,
            7 => ValueType::Bool,
            8 => ValueType::String,
            9 => ValueType::Array,
            10 => ValueType::U64,
            11 => ValueType::I64,
            12 => ValueType::F64,
            _ => return None,
        })
    }
    pub const fn id(self) -> u32 {
        match self {
            ValueType::U8 => 0,
            ValueType::I8 => 1,
            ValueType::U16 => 2,
            ValueType::I16 => 3,
            ValueType::U32 => 4,
            ValueType::I32 => 5,
            ValueType::F32 => 6,
            ValueType::Bool => 7,
            ValueType::String => 8,
            ValueType::Array => 9,
            ValueType::U64 => 10,
            ValueType::I64 => 11,
            ValueType::F64 => 12,
        }
    }
    /// Size of a fixed-size value; `None` for strings and arrays.
    pub const fn fixed_size(self) -> Option<u64> {
        match self {
            ValueType::U8 | ValueType::I8 | ValueType::Bool => Some(1),
            ValueType::U16 | ValueType::I16 => Some(2),
            ValueType::U32 | ValueType::I32 | ValueType::F32 => Some(4),
            ValueType::U64 | ValueType::I64 | ValueType::F64 => Some(8),
            ValueType::String | ValueType::Array => None,
        }
    }
    /// The fewest bytes one value of this type takes in a file.
    pub const fn min_size(self) -> u64 {
        match self.fixed_size() {
            Some(n) => n,
            None => match self {
                ValueType::String => 8,
                _ => 12, // item type (4) + length (8)
            },
        }
    }
}

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Array),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// An array value. Its items are kept when it has at most [`MAX_KEPT_ARRAY`] of them (and the
/// header's budget of kept items is not spent); longer arrays are read through and only counted.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub item_type: ValueType,
    pub len: u64,
    /// The items, or empty when the array was only counted (`len > 0`, `kept == false`).
    pub items: Vec<Value>,
    pub kept: bool,
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }
    /// A non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// A ggml storage type: `type_traits[]` in ggml.c (block size, bytes per block).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GgmlType {
    pub id: u32,
    pub name: &'static str,
    /// Elements per block; 0 for ids removed from GGUF files.
    pub block_size: u64,
    /// Bytes per block.
    pub type_size: u64,
}

impl GgmlType {
    pub fn bits_per_weight(self) -> f64 {
        if self.block_size == 0 {
            0.0
        } else {
            self.type_size as f64 * 8.0 / self.block_size as f64
        }
    }
    pub const fn is_removed(self) -> bool {
        self.block_size == 0
    }
    pub const fn is_quantized(self) -> bool {
        self.block_size > 1
    }
    /// Bytes of a tensor of `elements` elements whose rows are whole blocks.
    pub const fn bytes_for(self, elements: u64) -> Option<u64> {
        if self.block_size == 0 {
            return None;
        }
        (elements / self.block_size).checked_mul(self.type_size)
    }
}

const fn t(id: u32, name: &'static str, block_size: u64, type_size: u64) -> GgmlType {
    GgmlType {
        id,
        name,
        block_size,
        type_size,
    }
}

/// Every `ggml_type` id llama.cpp has defined (ggml/include/ggml.h `enum ggml_type`), with the
/// block layouts of ggml-common.h (`sizeof(block_q4_K)` = 144, …). Ids 4, 5, 31–33 and 36–38
/// were removed from GGUF files: llama.cpp refuses them (block size 0 here).
pub const GGML_TYPES: [GgmlType; 43] = [
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 18),   // fp16 d + 16 nibble bytes
    t(3, "Q4_1", 32, 20),   // fp16 d, m + 16
    t(4, "Q4_2", 0, 0),     // removed
    t(5, "Q4_3", 0, 0),     // removed
    t(6, "Q5_0", 32, 22),   // fp16 d + 4 qh + 16
    t(7, "Q5_1", 32, 24),   // fp16 d, m + 4 qh + 16
    t(8, "Q8_0", 32, 34),   // fp16 d + 32
    t(9, "Q8_1", 32, 36),   // fp16 d, s + 32
    t(10, "Q2_K", 256, 84), // 16 scales + 64 qs + 2 fp16
    t(11, "Q3_K", 256, 110),
    t(12, "Q4_K", 256, 144),
    t(13, "Q5_K", 256, 176),
    t(14, "Q6_K", 256, 210),
    t(15, "Q8_K", 256, 292),   // f32 d + 256 + 16 int16 bsums
    t(16, "IQ2_XXS", 256, 66), // fp16 d + 32 uint16
    t(17, "IQ2_XS", 256, 74),
    t(18, "IQ3_XXS", 256, 98),
    t(19, "IQ1_S", 256, 50),
    t(20, "IQ4_NL", 32, 18),
    t(21, "IQ3_S", 256, 110),
    t(22, "IQ2_S", 256, 82),
    t(23, "IQ4_XS", 256, 136),
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", 256, 56),
    t(30, "BF16", 1, 2),
    t(31, "Q4_0_4_4", 0, 0), // removed (repacked at load time now)
    t(32, "Q4_0_4_8", 0, 0),
    t(33, "Q4_0_8_8", 0, 0),
    t(34, "TQ1_0", 256, 54),
    t(35, "TQ2_0", 256, 66),
    t(36, "IQ4_NL_4_4", 0, 0),
    t(37, "IQ4_NL_4_8", 0, 0),
    t(38, "IQ4_NL_8_8", 0, 0),
    t(39, "MXFP4", 32, 17), // E8M0 scale + 16
    t(40, "NVFP4", 64, 36), // 4 UE4M3 scales + 32
    t(41, "Q1_0", 128, 18), // fp16 d + 16
    t(42, "Q2_0", 64, 18),  // fp16 d + 16
];

/// The ggml type with this id, removed ones included (check [`GgmlType::is_removed`]).
pub fn ggml_type(id: u32) -> Option<GgmlType> {
    GGML_TYPES.get(id as usize).copied()
}

/// llama.cpp's `llama_ftype` names (`general.file_type`), e.g. 15 → "Q4_K_M".
pub fn file_type_name(ftype: u64) -> Option<&'static str> {
    // LLAMA_FTYPE_GUESSED (1024) marks a type guessed by llama.cpp, not written by a converter.
    Some(match ftype & !1024 {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        4 => "Q4_1_SOME_F16",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        33 => "Q4_0_4_4",
        34 => "Q4_0_4_8",
        35 => "Q4_0_8_8",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

/// One metadata key/value, with the offset of its key in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataEntry {
    pub key: String,
    pub value: Value,
    pub offset: u64,
}

/// One tensor info.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// `ne[0..n_dims]`: ne[0] is the row length.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    pub elements: u64,
    /// Exact bytes of the data (`ggml_nbytes`), without alignment padding.
    pub bytes: u64,
    /// Where this tensor info starts in the file (for messages).
    pub header_offset: u64,
}

/// What a GGUF file says about itself, without its tensor data.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufHeader {
    pub version: u32,
    pub metadata: Vec<MetadataEntry>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Where the data section starts (the end of the header, aligned).
    pub data_offset: u64,
    pub file_len: u64,
}

impl GgufHeader {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }
    /// Sum of the tensors' bytes.
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.bytes))
    }
}

/// Reads a GGUF header from `r`, a stream of a file of `file_len` bytes. Reads the metadata and
/// tensor infos only; never reads (or allocates for) tensor data. Errors carry the byte offset;
/// the caller adds the file name ([`ImportError::in_file`]).
pub fn read_header<R: Read>(r: R, file_len: u64) -> Result<GgufHeader, ImportError> {
    let mut rd = Reader {
        r: BufReader::with_capacity(64 * 1024, r),
        pos: 0,
        len: file_len,
        kept_budget: MAX_KEPT_ITEMS,
    };

    let magic: [u8; 4] = rd.bytes("magic")?;
    if magic != MAGIC {
        return Err(ImportError::at(
            0,
            ErrorKind::BadMagic {
                found: show_magic(&magic),
            },
        ));
    }
    let version = rd.u32("version")?;
    if version != 2 && version != 3 {
        let msg = if version & 0xFFFF == 0 && version != 0 {
            format!(
                "GGUF version {version} (0x{version:08x}) looks byte-swapped: a big-endian GGUF file, which llama.cpp does not read"
            )
        } else if version == 1 {
            "GGUF version 1 is not supported (llama.cpp reads versions 2 and 3)".to_string()
        } else {
            format!("unknown GGUF version {version} (llama.cpp reads versions 2 and 3)")
        };
        return Err(ImportError::at(4, ErrorKind::UnsupportedVersion(msg)));
    }
    let tensor_count = rd.u64("tensor count")?;
    let kv_count = rd.u64("metadata count")?;
    let left = rd.left();
    if tensor_count.saturating_mul(MIN_TENSOR_INFO_BYTES) > left {
        return Err(rd.too_large(8, "tensor count", tensor_count));
    }
    if kv_count.saturating_mul(MIN_KV_BYTES) > left
        || kv_count
            .saturating_mul(MIN_KV_BYTES)
            .saturating_add(tensor_count * MIN_TENSOR_INFO_BYTES)
            > left
    {
        return Err(rd.too_large(16, "metadata key/value count", kv_count));
    }

    if tensor_count > MAX_TENSOR_COUNT {
        return Err(ImportError::invalid_at(
            8,
            format!(
                "tensor count {} exceeds headroom's limit of 2^20",
                count_str(tensor_count)
            ),
        ));
    }
    if kv_count > MAX_KV_COUNT {
        return Err(ImportError::invalid_at(
            16,
            format!(
                "metadata key/value count {} exceeds headroom's limit of 2^20",
                count_str(kv_count)
            ),
        ));
    }

    // Metadata.
    let mut metadata: Vec<MetadataEntry> = Vec::with_capacity(kv_count.min(256) as usize);
    let mut keys: HashSet<String> = HashSet::with_capacity(kv_count.min(256) as usize);
    for _ in 0..kv_count {
        let offset = rd.pos;
        let key = rd.string("metadata key", "key length")?;
        let type_at = rd.pos;
        let id = rd.u32("value type")?;
        let ty = ValueType::from_id(id)
            .ok_or_else(|| ImportError::at(type_at, ErrorKind::UnknownValueType(id)))?;
        let value = rd.value(ty, 0)?;
        if !keys.insert(key.clone()) {
            return Err(ImportError::invalid_at(
                offset,
                format!("duplicate metadata key '{key}'"),
            ));
        }
        metadata.push(MetadataEntry { key, value, offset });
    }
    let alignment = match metadata.iter().find(|e| e.key == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(e) => match e.value {
            Value::U32(a) if a != 0 && a.is_power_of_two() => a as u64,
            Value::U32(a) => {
                return Err(ImportError::invalid_at(
                    e.offset,
                    format!("general.alignment {a} is not a power of two"),
                ));
            }
            ref v => {
                return Err(ImportError::invalid_at(
                    e.offset,
                    format!(
                        "general.alignment has type {:?}, expected u32",
                        v.value_type()
                    ),
                ));
            }
        },
    };

    // Tensor infos.
    let mut tensors: Vec<TensorInfo> = Vec::with_capacity(tensor_count.min(4096) as usize);
    let mut names: HashSet<String> = HashSet::with_capacity(tensor_count.min(4096) as usize);
    for _ in 0..tensor_count {
        let header_offset = rd.pos;
        let len_at = rd.pos;
        let len = rd.u64("tensor name length")?;
        if len >= MAX_NAME {
            return Err(ImportError::invalid_at(
                len_at,
                format!(
                    "tensor name length {} exceeds ggml's limit of {} bytes",
                    count_str(len),
                    MAX_NAME - 1
                ),
            ));
        }
        let name = rd.utf8(len, "tensor name")?;
        let dims_at = rd.pos;
        let n_dims = rd.u32("tensor dimension count")?;
        if n_dims > MAX_DIMS {
            return Err(ImportError::invalid_at(
                dims_at,
                format!("tensor '{name}' has {n_dims} dimensions (ggml allows at most {MAX_DIMS})"),
            ));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        let mut elements: u64 = 1;
        for _ in 0..n_dims {
            let at = rd.pos;
            let d = rd.u64("tensor dimension")?;
            if d > i64::MAX as u64 {
                return Err(ImportError::invalid_at(
                    at,
                    format!("tensor '{name}' has a negative dimension ({})", d as i64),
                ));
            }
            elements = match elements.checked_mul(d) {
                Some(e) if e <= i64::MAX as u64 => e,
                _ => {
                    return Err(ImportError::invalid_at(
                        at,
                        format!("tensor '{name}' has more than 2^63 elements"),
                    ));
                }
            };
            dims.push(d);
        }
        let type_at = rd.pos;
        let id = rd.u32("tensor type")?;
        let gt = match ggml_type(id) {
            Some(g) if !g.is_removed() => g,
            Some(g) => {
                return Err(ImportError::invalid_at(
                    type_at,
                    format!(
                        "tensor '{name}' has ggml type {id} ({}), which was removed from GGUF files",
                        g.name
                    ),
                ));
            }
            None => {
                return Err(ImportError::at(
                    type_at,
                    ErrorKind::UnknownGgmlType { tensor: name, id },
                ));
            }
        };
        let ne0 = dims.first().copied().unwrap_or(1);
        if ne0 % gt.block_size != 0 {
            return Err(ImportError::invalid_at(
                type_at,
                format!(
                    "tensor '{name}' of type {} has rows of {ne0} elements, not a multiple of the block size {}",
                    gt.name, gt.block_size
                ),
            ));
        }
        let bytes = gt.bytes_for(elements).unwrap_or(u64::MAX);
        let off_at = rd.pos;
        let offset = rd.u64("tensor data offset")?;
        if offset % alignment != 0 {
            return Err(ImportError::invalid_at(
                off_at,
                format!(
                    "tensor '{name}' has data offset {offset}, not a multiple of the alignment {alignment}"
                ),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(ImportError::invalid_at(
                header_offset,
                format!("duplicate tensor name '{name}'"),
            ));
        }
        tensors.push(TensorInfo {
            name,
            dims,
            ggml_type: gt,
            offset,
            elements,
            bytes,
            header_offset,
        });
    }
    let header_end = rd.pos;
    let data_offset = header_end.div_ceil(alignment).saturating_mul(alignment);
    for t in &tensors {
        let end = data_offset.saturating_add(t.offset).saturating_add(t.bytes);
        if end > file_len {
            return Err(ImportError::invalid_at(
                t.header_offset,
                format!(
                    "tensor '{}' ({} bytes at data offset {}) ends at byte {}, past the end of the {}-byte file (truncated?)",
                    t.name,
                    t.bytes,
                    t.offset,
                    if end == u64::MAX {
                        "2^64".to_string()
                    } else {
                        end.to_string()
                    },
                    file_len
                ),
            ));
        }
    }
    Ok(GgufHeader {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        file_len,
    })
}

/// Reads the header of the GGUF file at `path`.
pub fn read_file(path: &std::path::Path) -> Result<GgufHeader, ImportError> {
    let f = std::fs::File::open(path).map_err(|e| ImportError::io(path, &e))?;
    let len = f.metadata().map_err(|e| ImportError::io(path, &e))?.len();
    read_header(f, len).map_err(|e| e.in_file(path))
}

fn show_magic(m: &[u8]) -> String {
    if m.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(m))
    } else {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct Reader<R: Read> {
    r: BufReader<R>,
    pos: u64,
    len: u64,
    kept_budget: u64,
}

impl<R: Read> Reader<R> {
    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn need(&self, n: u64, what: &'static str) -> Result<(), ImportError> {
        if n > self.left() {
            Err(ImportError::at(
                self.pos,
                ErrorKind::Truncated {
                    what,
                    needed: n,
                    left: self.left(),
                },
            ))
        } else {
            Ok(())
        }
    }

    fn eof(&self, e: std::io::Error, what: &'static str) -> ImportError {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            ImportError::at(
                self.pos,
                ErrorKind::Io(format!(
                    "the stream ended inside the {what}, before the file's length"
                )),
            )
        } else {
            ImportError::at(self.pos, ErrorKind::Io(e.to_string()))
        }
    }

    fn too_large(&self, at: u64, what: &'static str, n: u64) -> ImportError {
        ImportError::at(
            at,
            ErrorKind::TooLarge {
                what,
                count: count_str(n),
                file: size_str(self.len),
            },
        )
    }

    fn bytes<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ImportError> {
        self.need(N as u64, what)?;
        let mut b = [0u8; N];
        self.r.read_exact(&mut b).map_err(|e| self.eof(e, what))?;
        self.pos += N as u64;
        Ok(b)
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, ImportError> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, ImportError> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    /// Skips `n` bytes (checked against the rest of the file first).
    fn skip(&mut self, n: u64, what: &'static str) -> Result<(), ImportError> {
        self.need(n, what)?;
        let mut left = n;
        while left > 0 {
            let avail = match self.r.fill_buf() {
                Ok(b) => b.len(),
                Err(e) => return Err(self.eof(e, what)),
            };
            if avail == 0 {
                return Err(self.eof(std::io::ErrorKind::UnexpectedEof.into(), what));
            }
            let k = (avail as u64).min(left) as usize;
            self.r.consume(k);
            left -= k as u64;
            self.pos += k as u64;
        }
        Ok(())
    }

    /// `n` bytes as UTF-8. Allocates only as the bytes actually arrive.
    fn utf8(&mut self, n: u64, what: &'static str) -> Result<String, ImportError> {
        let at = self.pos;
        self.need(n, what)?;
        let mut v = Vec::with_capacity(n.min(64 * 1024) as usize);
        let got = (&mut self.r)
            .take(n)
            .read_to_end(&mut v)
            .map_err(|e| self.eof(e, what))?;
        if got as u64 != n {
            self.pos += got as u64;
            return Err(self.eof(std::io::ErrorKind::UnexpectedEof.into(), what));
        }
        self.pos += n;
        String::from_utf8(v).map_err(|e| {
            ImportError::at(
                at + e.utf8_error().valid_up_to() as u64,
                ErrorKind::InvalidUtf8 {
                    what: what.to_string(),
                },
            )
        })
    }

    /// A gguf_string: u64 length + bytes.
    fn string(
        &mut self,
        what: &'static str,
        len_what: &'static str,
    ) -> Result<String, ImportError> {
        let at = self.pos;
        let n = self.u64(len_what)?;
        if n > self.left() {
            return Err(self.too_large(at, len_what, n));
        }
        self.utf8(n, what)
    }

    fn value(&mut self, ty: ValueType, depth: u32) -> Result<Value, ImportError> {
        const W: &str = "metadata value";
        Ok(match ty {
            ValueType::U8 => Value::U8(self.bytes::<1>(W)?[0]),
            ValueType::I8 => Value::I8(self.bytes::<1>(W)?[0] as i8),
            ValueType::Bool => Value::Bool(self.bytes::<1>(W)?[0] != 0),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.bytes(W)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.bytes(W)?)),
            ValueType::U32 => Value::U32(u32::from_le_bytes(self.bytes(W)?)),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.bytes(W)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.bytes(W)?)),
            ValueType::U64 => Value::U64(u64::from_le_bytes(self.bytes(W)?)),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.bytes(W)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.bytes(W)?)),
            ValueType::String => Value::String(self.string("string value", "string length")?),
            ValueType::Array => Value::Array(self.array(depth)?),
        })
    }

    fn array(&mut self, depth: u32) -> Result<Array, ImportError> {
        let type_at = self.pos;
        let id = self.u32("array item type")?;
        let item_type = ValueType::from_id(id)
            .ok_or_else(|| ImportError::at(type_at, ErrorKind::UnknownValueType(id)))?;
        if item_type == ValueType::Array && depth + 1 >= MAX_ARRAY_DEPTH {
            return Err(ImportError::invalid_at(
                type_at,
                format!("arrays nested deeper than {MAX_ARRAY_DEPTH} levels"),
            ));
        }
        let len_at = self.pos;
        let len = self.u64("array length")?;
        if len.saturating_mul(item_type.min_size()) > self.left() {
            return Err(self.too_large(len_at, "array length", len));
        }
        if len <= MAX_KEPT_ARRAY && len <= self.kept_budget {
            self.kept_budget -= len;
            let mut items = Vec::with_capacity(len as usize);
            for _ in 0..len {
                items.push(self.value(item_type, depth + 1)?);
            }
            return Ok(Array {
                item_type,
                len,
                items,
                kept: true,
            });
        }
        // Count and skip.
        match item_type.fixed_size() {
            Some(sz) => self.skip(len * sz, "array items")?,
            None if item_type == ValueType::String => {
                for _ in 0..len {
                    let at = self.pos;
                    let n = self.u64("string length")?;
                    if n > self.left() {
                        return Err(self.too_large(at, "string length", n));
                    }
                    self.skip(n, "string value")?;
                }
            }
            None => {
                for _ in 0..len {
                    self.array(depth + 1)?;
                }
            }
        }
        Ok(Array {
            item_type,
            len,
            items: Vec::new(),
            kept: false,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// From a header to a model.

use super::{ImportedModel, bytes_by_type_sorted, implausible, nearest_precision, summary_line};
use crate::core::model::{
    FileWeights, MlaSpec, MlpKind, ModelSpec, MoeSpec, ShapeSource, SlidingWindow,
};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Architectures without an output head (encoders): llama.cpp creates no `output` for them.
const ENCODER_ARCHES: [&str; 7] = [
    "bert",
    "nomic-bert",
    "nomic-bert-moe",
    "jina-bert-v2",
    "neo-bert",
    "modern-bert",
    "t5encoder",
];

/// The layer index of a `blk.N.…` tensor.
pub fn blk_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("blk.")?;
    let (n, tail) = rest.split_once('.')?;
    if n.is_empty() || tail.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// (min, max) of a per-model or per-layer integer value (`head_count_kv` may be an array).
fn per_layer(v: Option<&Value>) -> Option<(u64, u64)> {
    match v? {
        Value::Array(a) if a.kept && !a.items.is_empty() => {
            let xs: Vec<u64> = a.items.iter().filter_map(Value::as_u64).collect();
            if xs.len() != a.items.len() {
                return None;
            }
            Some((*xs.iter().min()?, *xs.iter().max()?))
        }
        v => v.as_u64().map(|x| (x, x)),
    }
}

/// Layers `il` of `n` that llama.cpp's `set_swa_pattern(p)` marks as sliding: `il % p < p - 1`.
fn swa_local_layers(n: u64, p: u64) -> u64 {
    if p == 0 {
        return n;
    }
    (n / p) * (p - 1) + (n % p).min(p - 1)
}

/// Layers without a router (`ffn_gate_inp`) between the first and the last MoE layer: the dense
/// ones an interleaved MoE keeps (llama4, Qwen-MoE `mlp_only_layers`).
fn dense_between(moe: &BTreeSet<u64>, layers: u64) -> Vec<u64> {
    let (Some(&first), Some(&last)) = (moe.first(), moe.last()) else {
        return Vec::new();
    };
    let last = last.min(layers.saturating_sub(1));
    if last < first || last - first > 1 << 16 {
        return Vec::new();
    }
    (first..=last).filter(|i| !moe.contains(i)).collect()
}

/// llama.cpp file type → the preset headroom models it with (exact where one exists).
fn precision_for_file_type(ftype: u64) -> Option<WeightPrecision> {
    use WeightPrecision as W;
    Some(match ftype & !1024 {
        0 => W::Fp32,
        1 => W::Fp16,
        2 => W::Q4_0,
        7 => W::Q8_0,
        8 => W::Q5_0,
        10 | 21 => W::Q2K,
        11..=13 => W::Q3KM,
        14 | 15 => W::Q4KM,
        16 | 17 => W::Q5KM,
        18 => W::Q6K,
        32 => W::Bf16,
        38 => W::Mxfp4,
        _ => return None,
    })
}

/// The preset for a file without `general.file_type`, from its dominant tensor type.
fn precision_for_ggml_type(name: &str) -> Option<WeightPrecision> {
    use WeightPrecision as W;
    Some(match name {
        "F32" => W::Fp32,
        "F16" => W::Fp16,
        "BF16" => W::Bf16,
        "Q8_0" => W::Q8_0,
        "Q6_K" => W::Q6K,
        "Q5_K" => W::Q5KM,
        "Q5_0" => W::Q5_0,
        "Q4_K" => W::Q4KM,
        "Q4_0" => W::Q4_0,
        "Q3_K" => W::Q3KM,
        "Q2_K" => W::Q2K,
        "MXFP4" => W::Mxfp4,
        _ => return None,
    })
}

/// Builds the imported model from a header (split files merged into one header first).
/// `source` is the path shown for provenance, `name_hint` the name used without `general.name`.
/// Fails when the architecture holds an implausible value (a block count of 2^40, …); the error
/// points at its metadata entry.
pub fn to_model(
    h: &GgufHeader,
    source: &str,
    name_hint: &str,
) -> Result<ImportedModel, ImportError> {
    let mut notes: Vec<String> = Vec::new();
    let arch = h.get_str("general.architecture").unwrap_or("").to_string();
    let k = |s: &str| format!("{arch}.{s}");
    let get = |s: &str| h.get(&k(s));
    let get_u = |s: &str| get(s).and_then(Value::as_u64);

    // Tensor statistics.
    let mut total: u64 = 0;
    let mut params: u64 = 0;
    let mut layer_bytes: u64 = 0;
    let mut max_blk: Option<u64> = None;
    let mut by_type: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut matrix_by_type: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut suffixes: HashSet<&str> = HashSet::new();
    let mut moe_layers: BTreeSet<u64> = BTreeSet::new();
    let mut expert_bytes_by_layer: Vec<u64> = Vec::new();
    // Multi-token-prediction layers (blk.N for N ≥ block_count − nextn_predict_layers): llama.cpp
    // creates them with TENSOR_SKIP and does not load them unless asked to (load_mtp).
    let mtp_layers = get_u("nextn_predict_layers").unwrap_or(0);
    let main_layers = get_u("block_count").map(|b| b.saturating_sub(mtp_layers));
    let (mut mtp_bytes, mut mtp_count) = (0u64, 0u64);
    for t in &h.tensors {
        if let (Some(i), Some(m)) = (blk_index(&t.name), main_layers)
            && mtp_layers > 0
            && i >= m
        {
            mtp_bytes = mtp_bytes.saturating_add(t.bytes);
            mtp_count += 1;
            continue;
        }
        total = total.saturating_add(t.bytes);
        params = params.saturating_add(t.elements);
        *by_type.entry(t.ggml_type.name).or_default() += t.bytes;
        if t.dims.len() >= 2 {
            *matrix_by_type.entry(t.ggml_type.name).or_default() += t.bytes;
        }
        if let Some(i) = blk_index(&t.name) {
            layer_bytes = layer_bytes.saturating_add(t.bytes);
            if crate::core::experts::is_routed_expert_tensor(&t.name)
                && let Ok(slot) = usize::try_from(i)
                && slot < super::MAX_LAYERS as usize
            {
                if expert_bytes_by_layer.len() <= slot {
                    expert_bytes_by_layer.resize(slot + 1, 0);
                }
                expert_bytes_by_layer[slot] = expert_bytes_by_layer[slot].saturating_add(t.bytes);
            }
            max_blk = Some(max_blk.map_or(i, |m: u64| m.max(i)));
            if let Some((_, suffix)) = t.name[4..].split_once('.') {
                suffixes.insert(suffix);
                if suffix == "ffn_gate_inp.weight" {
                    moe_layers.insert(i);
                }
            }
        }
    }
    let has = |s: &str| suffixes.contains(s);
    // The type holding most bytes among the matrices (norms and biases stay F32 in every mix).
    let pool = if matrix_by_type.is_empty() {
        &by_type
    } else {
        &matrix_by_type
    };
    let dominant = pool
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(n, _)| *n);
    let tensor = |n: &str| h.tensor(n);
    let tok_embd = tensor("token_embd.weight");
    let blk0 = |s: &str| tensor(&format!("blk.0.{s}"));

    // Architecture.
    let mut exact = !arch.is_empty();
    if arch.is_empty() {
        notes.push("general.architecture is missing (llama.cpp would refuse this file): shape inferred from the tensors".into());
    }
    if mtp_layers > 0 {
        notes.push(format!(
            "{mtp_layers} multi-token-prediction layer(s) ({mtp_count} tensors, {}) are in the file but llama.cpp skips them at load: not counted",
            Bytes(mtp_bytes).display_gib()
        ));
    }
    let layers = match main_layers {
        Some(n) => n,
        None => {
            exact = false;
            max_blk.map_or(0, |m| m.saturating_add(1))
        }
    };
    let hidden = match get_u("embedding_length") {
        Some(n) => n,
        None => {
            exact = false;
            tok_embd.and_then(|t| t.dims.first().copied()).unwrap_or(0)
        }
    };
    let (_, heads) = per_layer(get("attention.head_count")).unwrap_or_else(|| {
        exact = false;
        (0, 0)
    });
    let (kv_min, kv_heads) = per_layer(get("attention.head_count_kv")).unwrap_or((heads, heads));
    if kv_min != kv_heads {
        notes.push(format!("attention.head_count_kv varies per layer ({kv_min}–{kv_heads}): the KV cache is sized with {kv_heads} on every layer, an upper bound"));
    }
    let head_dim = get_u("attention.key_length").unwrap_or(hidden.checked_div(heads).unwrap_or(0));
    let intermediate = match per_layer(get("feed_forward_length")) {
        Some((lo, hi)) => {
            if lo != hi {
                notes.push(format!("feed_forward_length varies per layer ({lo}–{hi}); the exact bytes come from the tensors"));
            }
            hi
        }
        None => blk0("ffn_up.weight")
            .and_then(|t| t.dims.get(1).copied())
            .unwrap_or(0),
    };
    let vocab_tokens = h
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .map(|a| a.len);
    let vocab = match (tok_embd.and_then(|t| t.dims.get(1).copied()), vocab_tokens) {
        (Some(v), Some(n)) => {
            if v != n {
                notes.push(format!(
                    "token_embd has {v} rows but the tokenizer lists {n} tokens: using {v}"
                ));
            }
            v
        }
        (Some(v), None) => v,
        (None, Some(n)) => n,
        (None, None) => 0,
    };
    let norms_per_layer = {
        let n = h
            .tensors
            .iter()
            .filter(|t| {
                t.name.starts_with("blk.0.")
                    && t.name.contains("norm")
                    && !t.name.contains("attn_q_norm")
                    && !t.name.contains("attn_k_norm")
                    && t.dims.len() == 1
                    && t.elements == hidden
            })
            .count() as u64;
        if n == 0 && blk0("attn_norm.weight").is_none() {
            2
        } else {
            n
        }
    };
    let gated = has("ffn_gate.weight")
        || has("ffn_gate_exps.weight")
        || has("ffn_gate_up_exps.weight")
        || has("ffn_gate_shexp.weight");
    let plain = has("ffn_up.weight") || has("ffn_up_exps.weight");
    let mlp = if gated || !plain {
        MlpKind::Gated
    } else {
        MlpKind::Plain
    };

    let moe = match get_u("expert_count") {
        Some(e) if e > 0 => {
            let first = |s: &str| {
                h.tensors
                    .iter()
                    .find(|t| t.name.starts_with("blk.") && t.name.ends_with(s))
            };
            let expert_ffn = get_u("expert_feed_forward_length")
                .or_else(|| {
                    first(".ffn_gate_exps.weight")
                        .or_else(|| first(".ffn_up_exps.weight"))
                        .and_then(|t| t.dims.get(1).copied())
                })
                .unwrap_or(0);
            let shexp = first(".ffn_up_shexp.weight");
            let shared = get_u("expert_shared_count").unwrap_or(u64::from(shexp.is_some()));
            let shared_ffn = get_u("expert_shared_feed_forward_length")
                .or_else(|| {
                    shexp
                        .and_then(|t| t.dims.get(1).copied())
                        .map(|w| w / shared.max(1))
                })
                .unwrap_or(0);
            let active = get_u("expert_used_count").unwrap_or(0);
            if active == 0 {
                notes.push(format!(
                    "{arch}.expert_used_count is missing: speed assumes every expert is active"
                ));
            }
            Some(MoeSpec {
                experts: e,
                active_experts: if active == 0 { e } else { active },
                expert_ffn,
                shared_experts: shared,
                shared_ffn,
                shared_expert_gate: has("ffn_gate_inp_shexp.weight"),
                first_dense_layers: get_u("leading_dense_block_count")
                    .unwrap_or_else(|| moe_layers.first().copied().unwrap_or(0).min(layers)),
                dense_layers: dense_between(&moe_layers, layers),
                router_bias: has("exp_probs_b.bias") || has("ffn_gate_inp.bias"),
                sparse_step: get_u("interleave_moe_layer_step").unwrap_or(0),
            })
        }
        _ => None,
    };
    let mla = match get_u("attention.kv_lora_rank") {
        Some(r) if r > 0 => {
            let rope = get_u("rope.dimension_count").unwrap_or(0);
            let key_len = get_u("attention.key_length_mla")
                .or(get_u("attention.key_length"))
                .unwrap_or(0);
            let v_len = get_u("attention.value_length_mla")
                .or(get_u("attention.value_length"))
                .unwrap_or(0);
            Some(MlaSpec {
                kv_lora_rank: r,
                q_lora_rank: get_u("attention.q_lora_rank").unwrap_or(0),
                qk_rope_head_dim: rope,
                qk_nope_head_dim: key_len.saturating_sub(rope),
                v_head_dim: v_len,
            })
        }
        _ => None,
    };
    let sliding = match get_u("attention.sliding_window") {
        Some(w) if w > 0 => {
            // (local layers, period): llama.cpp's set_swa_pattern(p) makes layer il local when
            // il % p < p - 1, i.e. global when (il + 1) % p == 0 (SlidingWindow::period).
            let periodic = |p: u64| (swa_local_layers(layers, p), p);
            let (local, period) = match get("attention.sliding_window_pattern") {
                Some(Value::Array(a)) if a.kept => {
                    let n = a
                        .items
                        .iter()
                        .filter(|v| {
                            v.as_bool()
                                .unwrap_or_else(|| v.as_u64().is_some_and(|x| x != 0))
                        })
                        .count() as u64;
                    notes.push(format!("attention.sliding_window_pattern marks {n} of {} layers as sliding; modelled as the last {n}", a.len));
                    (n, 0)
                }
                Some(v) if v.as_u64().is_some() => periodic(v.as_u64().unwrap_or(0)),
                _ => match arch.as_str() {
                    // set_swa_pattern() per architecture in llama-model.cpp.
                    "gemma2" | "gpt-oss" => periodic(2),
                    "gemma3" | "gemma3n" => periodic(6),
                    "cohere2" => periodic(4),
                    _ => {
                        notes.push(format!("attention.sliding_window {w}: no pattern in the file, assumed on every layer"));
                        (layers, 0)
                    }
                },
            };
            Some(SlidingWindow {
                window: w,
                local_layers: local.min(layers),
                period,
            })
        }
        _ => None,
    };

    // Tied embeddings: llama.cpp creates the output from token_embd with TENSOR_DUPLICATED
    // (llama-model.cpp). The input layer always stays on the CPU; the output layer goes to the GPU
    // with -ngl, so there the same matrix is loaded a second time.
    let is_encoder = ENCODER_ARCHES.contains(&arch.as_str());
    let tied = tensor("output.weight").is_none() && tok_embd.is_some() && !is_encoder;
    let mut runtime_extra = 0;
    if let (true, Some(te)) = (tied, tok_embd) {
        runtime_extra = te.bytes;
        notes.push(format!(
            "output.weight is absent (tied embeddings): llama.cpp builds the output matrix from token_embd ({}); with the output layer on a GPU it loads that copy there while token_embd stays in host memory: +{} ({} bytes) beyond the file",
            te.ggml_type.name,
            Bytes(te.bytes).display_gib(),
            te.bytes
        ));
    }

    // Precision and format.
    let ftype = h.get_u64("general.file_type");
    let ftype_name = ftype.map(|f| {
        file_type_name(f)
            .map(str::to_string)
            .unwrap_or_else(|| format!("file type {f}"))
    });
    let bpw = if params > 0 {
        total as f64 * 8.0 / params as f64
    } else {
        0.0
    };
    let weights = match ftype.and_then(precision_for_file_type).or_else(|| {
        if ftype.is_none() {
            dominant.and_then(precision_for_ggml_type)
        } else {
            None
        }
    }) {
        Some(p) => Some(p),
        None if params > 0 => {
            let p = nearest_precision(bpw, true);
            if let Some(p) = p {
                notes.push(format!(
                    "{} has no preset of its own: the nearest is {} by bits per weight ({bpw:.2}); the exact bytes come from the file",
                    ftype_name.clone().unwrap_or_else(|| dominant.unwrap_or("this mix").to_string()),
                    p.label()
                ));
            }
            p
        }
        None => None,
    };
    let format = match (&ftype_name, dominant) {
        (Some(f), Some(d)) => format!("GGUF {f} (mostly {d})"),
        (Some(f), None) => format!("GGUF {f}"),
        (None, Some(d)) => format!("GGUF (mostly {d})"),
        (None, None) => "GGUF (no tensors)".to_string(),
    };
    if h.tensors.is_empty() {
        notes.push("the file has no tensors (a vocabulary-only GGUF?)".into());
    }
    if !exact && !arch.is_empty() {
        notes.push(format!("some of {arch}.block_count / embedding_length / attention.head_count are missing: the shape is partly inferred"));
    }

    let name = h
        .get_str("general.name")
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(name_hint)
        .to_string();
    let spec = ModelSpec {
        name,
        arch: if arch.is_empty() {
            "unknown".into()
        } else {
            arch.clone()
        },
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab,
        tied_embeddings: tied,
        qkv_bias: has("attn_q.bias") || has("attn_qkv.bias"),
        o_bias: has("attn_output.bias"),
        mlp_bias: has("ffn_up.bias") || has("ffn_up_exps.bias") || has("ffn_down.bias"),
        qk_norm: has("attn_q_norm.weight") || has("attn_k_norm.weight"),
        attn_sinks: has("attn_sinks.weight") || has("attn_sinks"),
        norms_per_layer,
        mlp,
        moe,
        mla,
        sliding,
        max_context: get_u("context_length").unwrap_or(0),
        source: if exact {
            ShapeSource::Exact
        } else {
            ShapeSource::Estimated
        },
        nominal_params: None,
        mtp_layers,
        file_weights: Some(FileWeights {
            path: source.to_string(),
            total_bytes: total,
            params,
            layer_bytes,
            runtime_extra_bytes: runtime_extra,
            format: format.clone(),
            expert_bytes_by_layer,
        }),
        ..ModelSpec::default()
    };
    if spec.max_context == 0 {
        notes.push(format!("{arch}.context_length is missing"));
    }
    if let Some((what, v, max)) = implausible(&spec) {
        // Point at the metadata entry the value came from, else at the tensors it was read from.
        let key = match what {
            "block count" => "block_count",
            "multi-token-prediction layer count" => "nextn_predict_layers",
            "embedding length" => "embedding_length",
            "attention head count" => "attention.head_count",
            "KV head count" => "attention.head_count_kv",
            "head dimension" => "attention.key_length",
            "feed-forward length" => "feed_forward_length",
            "context length" => "context_length",
            "expert count" => "expert_count",
            "experts used" => "expert_used_count",
            "expert feed-forward length" => "expert_feed_forward_length",
            "shared expert count" => "expert_shared_count",
            "leading dense block count" => "leading_dense_block_count",
            "kv_lora_rank" => "attention.kv_lora_rank",
            "q_lora_rank" => "attention.q_lora_rank",
            "RoPE head dimension" => "rope.dimension_count",
            "sliding window" => "attention.sliding_window",
            _ => "",
        };
        let at = h
            .metadata
            .iter()
            .find(|e| !key.is_empty() && e.key == k(key))
            .map(|e| e.offset)
            .or(tok_embd.map(|t| t.header_offset))
            .unwrap_or(8);
        return Err(ImportError::invalid_at(
            at,
            format!("{what} {} is not plausible (over {max})", count_str(v)),
        ));
    }
    let summary = summary_line(&spec, &format, total);
    Ok(ImportedModel {
        spec,
        weights,
        summary,
        notes,
        bytes_by_type: bytes_by_type_sorted(by_type.into_iter().map(|(k, v)| (k.to_string(), v))),
    })
}
