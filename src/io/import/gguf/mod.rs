//! GGUF v2/v3: the header reader (metadata and tensor infos, never tensor data) here, the value
//! types in [`value`], and the mapping from a header to a model in [`model`].
//!
//! Format: ggml `docs/gguf.md`. The checks follow llama.cpp's reader (`ggml/src/gguf.cpp`): magic,
//! version 2 or 3, known value and ggml types, at most 4 dims, names under 64 bytes, unique keys
//! and tensor names, rows a whole number of blocks, `general.alignment` a power of two, offsets
//! aligned. On top of it every count and length is bounded by what the rest of the file can hold
//! before anything is allocated, and every tensor must lie inside the file.

mod model;
mod value;

pub use model::{blk_index, to_model};

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

pub use value::{Array, Value, ValueType};

use crate::core::ggml::{GgmlType, ggml_type};

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
    let (version, tensor_count, kv_count) = read_preamble(&mut rd)?;
    let metadata = read_metadata(&mut rd, kv_count)?;
    let alignment = alignment_of(&metadata)?;
    let mut tensors: Vec<TensorInfo> = Vec::with_capacity(tensor_count.min(4096) as usize);
    let mut names: HashSet<String> = HashSet::with_capacity(tensor_count.min(4096) as usize);
    for _ in 0..tensor_count {
        let t = read_tensor_info(&mut rd, alignment)?;
        if !names.insert(t.name.clone()) {
            return Err(ImportError::invalid_at(
                t.header_offset,
                format!("duplicate tensor name '{}'", t.name),
            ));
        }
        tensors.push(t);
    }
    let header_end = rd.pos;
    let data_offset = header_end.div_ceil(alignment).saturating_mul(alignment);
    check_tensor_ends(&tensors, data_offset, file_len)?;
    Ok(GgufHeader {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        file_len,
    })
}

/// The magic, the version and the two counts, each checked against the file's length and
/// headroom's limits: (version, tensor count, metadata count).
fn read_preamble<R: Read>(rd: &mut Reader<R>) -> Result<(u32, u64, u64), ImportError> {
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
    // When the counts cannot fit, the first key may be what cannot (a key length of 2^63 in a
    // small file): that is then the error, not the counts that would fit without it.
    let first_key = |rd: &mut Reader<R>| -> Option<ImportError> {
        if kv_count == 0 {
            return None;
        }
        let n = rd.peek_u64()?;
        (n > rd.left().saturating_sub(8)).then(|| rd.too_large(rd.pos, "key length", n))
    };
    if tensor_count.saturating_mul(MIN_TENSOR_INFO_BYTES) > left {
        return Err(first_key(rd).unwrap_or_else(|| rd.too_large(8, "tensor count", tensor_count)));
    }
    if kv_count.saturating_mul(MIN_KV_BYTES) > left
        || kv_count
            .saturating_mul(MIN_KV_BYTES)
            .saturating_add(tensor_count * MIN_TENSOR_INFO_BYTES)
            > left
    {
        return Err(
            first_key(rd).unwrap_or_else(|| rd.too_large(16, "metadata key/value count", kv_count))
        );
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
    Ok((version, tensor_count, kv_count))
}

/// `kv_count` metadata entries; a key given twice is an error.
fn read_metadata<R: Read>(
    rd: &mut Reader<R>,
    kv_count: u64,
) -> Result<Vec<MetadataEntry>, ImportError> {
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
    Ok(metadata)
}

/// `general.alignment` (a power of two, as a u32), else the default.
fn alignment_of(metadata: &[MetadataEntry]) -> Result<u64, ImportError> {
    let Some(e) = metadata.iter().find(|e| e.key == "general.alignment") else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match e.value {
        Value::U32(a) if a != 0 && a.is_power_of_two() => Ok(a as u64),
        Value::U32(a) => Err(ImportError::invalid_at(
            e.offset,
            format!("general.alignment {a} is not a power of two"),
        )),
        ref v => Err(ImportError::invalid_at(
            e.offset,
            format!(
                "general.alignment has type {:?}, expected u32",
                v.value_type()
            ),
        )),
    }
}

/// One tensor info: name, dimensions, type and data offset, each checked as it is read.
fn read_tensor_info<R: Read>(
    rd: &mut Reader<R>,
    alignment: u64,
) -> Result<TensorInfo, ImportError> {
    let header_offset = rd.pos;
    let len = rd.u64("tensor name length")?;
    if len >= MAX_NAME {
        return Err(ImportError::invalid_at(
            header_offset,
            format!(
                "tensor name length {} exceeds ggml's limit of {} bytes",
                count_str(len),
                MAX_NAME - 1
            ),
        ));
    }
    let name = rd.utf8(len, "tensor name")?;
    let (dims, elements) = read_dims(rd, &name)?;
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
    let bytes = gt.checked_bytes(elements).unwrap_or(u64::MAX);
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
    Ok(TensorInfo {
        name,
        dims,
        ggml_type: gt,
        offset,
        elements,
        bytes,
        header_offset,
    })
}

/// A tensor's dimensions and its element count (at most 2^63, as ggml's int64 `ne`).
fn read_dims<R: Read>(rd: &mut Reader<R>, name: &str) -> Result<(Vec<u64>, u64), ImportError> {
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
    Ok((dims, elements))
}

/// Every tensor's data ends inside the file.
fn check_tensor_ends(
    tensors: &[TensorInfo],
    data_offset: u64,
    file_len: u64,
) -> Result<(), ImportError> {
    for t in tensors {
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
    Ok(())
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
    /// The next 8 bytes as a little-endian u64, without consuming them (when buffered).
    fn peek_u64(&mut self) -> Option<u64> {
        use std::io::BufRead as _;
        let b = self.r.fill_buf().ok()?;
        let b: [u8; 8] = b.get(..8)?.try_into().ok()?;
        Some(u64::from_le_bytes(b))
    }

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
