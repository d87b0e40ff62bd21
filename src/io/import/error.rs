//! The one error type of the importers: one line naming the file and where in it.

use crate::core::units::Bytes;
use std::fmt;

/// Where in a file the problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (cannot open it, a shard is missing, …).
    File,
    /// A byte offset from the start of a binary file.
    Offset(u64),
    /// A line and column (1-based) in a JSON text file.
    LineCol { line: usize, column: usize },
    /// Inside the JSON header of a safetensors file: the byte offset in the file, and the line
    /// and column inside the header text.
    HeaderJson {
        offset: u64,
        line: usize,
        column: usize,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Offset(o) => write!(f, "offset {o}: "),
            Location::LineCol { line, column } => write!(f, "line {line}:{column}: "),
            Location::HeaderJson {
                offset,
                line,
                column,
            } => write!(f, "offset {offset} (header JSON line {line}:{column}): "),
        }
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read: {0}")]
    Io(String),
    /// Not something headroom can import (wrong extension and no known magic, empty folder, …).
    #[error("{0}")]
    NotAModel(String),
    /// The file ends before a field that the header says is there.
    #[error("file ends inside the {what} (needs {needed} bytes, {left} left)")]
    Truncated {
        what: &'static str,
        needed: u64,
        left: u64,
    },
    #[error("not a GGUF file: it starts with {found} instead of \"GGUF\"")]
    BadMagic { found: String },
    #[error("{0}")]
    UnsupportedVersion(String),
    /// A count or length larger than the rest of the file could possibly hold.
    #[error("{what} {count} exceeds what a {file} file can hold")]
    TooLarge {
        what: &'static str,
        count: String,
        file: String,
    },
    #[error("{what} is not valid UTF-8")]
    InvalidUtf8 { what: String },
    #[error("unknown metadata value type {0}")]
    UnknownValueType(u32),
    #[error("tensor '{tensor}' has unknown ggml type {id}")]
    UnknownGgmlType { tensor: String, id: u32 },
    /// Bad JSON (the location says where).
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Any other violation of the format, explained.
    #[error("{0}")]
    Invalid(String),
}

/// An import failure. `Display` is one line: `model.gguf: offset 8: tensor count 2^60 exceeds
/// what a 5.00 GB file can hold`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{}", file_prefix(.file), .location, one_line(.kind))]
pub struct ImportError {
    /// The file's name (its last path component), empty while a reader does not know it.
    pub file: String,
    pub location: Location,
    pub kind: ErrorKind,
}

fn file_prefix(file: &str) -> String {
    if file.is_empty() {
        String::new()
    } else {
        format!("{file}: ")
    }
}

/// The message on one line whatever it quotes.
fn one_line(kind: &ErrorKind) -> String {
    kind.to_string().replace(['\n', '\r'], " ")
}

impl ImportError {
    pub fn new(location: Location, kind: ErrorKind) -> Self {
        ImportError {
            file: String::new(),
            location,
            kind,
        }
    }
    pub fn at(offset: u64, kind: ErrorKind) -> Self {
        Self::new(Location::Offset(offset), kind)
    }
    pub fn invalid_at(offset: u64, msg: impl Into<String>) -> Self {
        Self::at(offset, ErrorKind::Invalid(msg.into()))
    }
    /// Names the file (its last component) unless a reader already did.
    pub fn in_file(mut self, path: &std::path::Path) -> Self {
        if self.file.is_empty() {
            self.file = file_name(path);
        }
        self
    }
    pub fn io(path: &std::path::Path, e: &std::io::Error) -> Self {
        ImportError {
            file: file_name(path),
            location: Location::File,
            kind: ErrorKind::Io(e.to_string()),
        }
    }
    /// The byte offset, when the error has one.
    pub fn offset(&self) -> Option<u64> {
        match self.location {
            Location::Offset(o) | Location::HeaderJson { offset: o, .. } => Some(o),
            _ => None,
        }
    }
}

/// The last component of a path, for messages.
pub fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// "2^60" for large powers of two (what a hostile header usually claims), else the number.
pub fn count_str(n: u64) -> String {
    if n >= 1 << 16 && n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// A file size for messages, in decimal units as file managers show it ("5.00 GB", "120 B").
pub fn size_str(n: u64) -> String {
    Bytes(n).display_gb()
}

/// Line and column (1-based, column in bytes) of byte index `i` in `text`.
pub fn line_col(text: &[u8], i: usize) -> (usize, usize) {
    let i = i.min(text.len());
    let before = &text[..i];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = match before.iter().rposition(|&b| b == b'\n') {
        Some(p) => i - p,
        None => i + 1,
    };
    (line, col)
}

/// Byte index of a 1-based line and column (serde_json's convention: the column of the last
/// byte read; 0 when the error is at the start of a line).
pub fn index_of_line_col(text: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0usize;
    for _ in 1..line {
        match text[start..].iter().position(|&b| b == b'\n') {
            Some(p) => start += p + 1,
            None => return text.len(),
        }
    }
    (start + column.saturating_sub(1)).min(text.len())
}

/// serde_json's message without its trailing " at line L column C" (the location says it).
pub fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(p) => s[..p].to_string(),
        None => s,
    }
}
