//! Everything that touches the outside world: catalog files, model files, detection, export.
pub mod calibration;
pub mod catalog;
pub mod clock;
pub mod detect;
pub mod export;
pub mod hub;
pub mod import;
pub mod json;
pub mod verify;

use std::path::Path;

/// The largest files headroom reads whole. Real files are far smaller (a saved scenario is
/// ~2 KB, the built-in catalog ~230 KB, a `*.safetensors.index.json` of a 671B model ~9 MB,
/// llama-bench's JSON for a hundred tests ~100 KB, a Hugging Face token 37 bytes); a larger
/// file is refused before it is read, and a file whose size is not known in advance (a device,
/// a pipe, `/dev/zero`) stops one byte past the bound, so no file can make headroom allocate
/// more than this.
pub mod limits {
    pub const SCENARIO_FILE: u64 = 1 << 20;
    pub const CATALOG_FILE: u64 = 16 << 20;
    pub const JSON_FILE: u64 = 64 << 20;
    /// llama-bench output for `headroom calibrate` (`-o json`, `-o csv` or its table).
    pub const LLAMA_BENCH_FILE: u64 = 16 << 20;
    /// The Hugging Face token file (`$HF_TOKEN_PATH`, `$HF_HOME/token`).
    pub const TOKEN_FILE: u64 = 64 << 10;
    /// A Hub cache entry's manifest or saved repository listing.
    pub const CACHE_MANIFEST: u64 = 64 << 20;
}

/// Reads a whole file of at most `max` bytes. A larger one gives an error of kind
/// [`std::io::ErrorKind::FileTooLarge`] that says both sizes, without reading it; one whose size
/// is not known in advance (a device or a pipe) is read up to one byte past `max` and then
/// refused the same way.
pub fn read_limited(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let limit = crate::core::units::Bytes(max);
    let too_large = |len: Option<u64>| {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            match len {
                Some(len) => format!(
                    "the file is {}, more than the {limit} this kind of file can be",
                    crate::core::units::Bytes(len),
                ),
                None => format!(
                    "it goes on past the {limit} this kind of file can be (a device or a stream?), so it was not read further"
                ),
            },
        )
    };
    let f = std::fs::File::open(path)?;
    let md = f.metadata()?;
    if md.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a folder, not a file",
        ));
    }
    let len = md.len();
    if md.is_file() && len > max {
        return Err(too_large(Some(len)));
    }
    let mut buf = Vec::with_capacity(len.min(max) as usize);
    // `take`: a file that grows while it is read, or has no length (a device), still stops at
    // the bound.
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(too_large(None));
    }
    Ok(buf)
}

/// [`read_limited`] as UTF-8 text (an error of kind `InvalidData` when it is not).
pub fn read_text_limited(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_limited(path, max)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Whether files can be written in `dir` (created when missing): a probe file is created and
/// removed. The error says why not, in the system's words.
pub fn check_writable_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".headroom-write-test-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}
