//! Everything that touches the outside world: catalog files, model files, detection, export.
pub mod calibration;
pub mod catalog;
pub mod clock;
pub mod detect;
pub mod export;
pub mod hub;
pub mod import;
pub mod json;

use std::path::Path;

/// The largest text files headroom reads whole. Real files are far smaller (a saved scenario is
/// ~2 KB, the built-in catalog ~230 KB, a `*.safetensors.index.json` of a 671B model ~9 MB); a
/// larger file is refused before it is read, so no file (a model dropped on the window where a
/// scenario was expected, a sparse file) can make headroom allocate more than this.
pub mod limits {
    pub const SCENARIO_FILE: u64 = 1 << 20;
    pub const CATALOG_FILE: u64 = 16 << 20;
    pub const JSON_FILE: u64 = 64 << 20;
}

/// Reads a whole file of at most `max` bytes. A larger one gives an error of kind
/// [`std::io::ErrorKind::FileTooLarge`] that says both sizes, without reading it.
pub fn read_limited(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let too_large = |len: u64| {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "the file is {}, more than the {} this kind of file can be",
                crate::core::units::Bytes(len),
                crate::core::units::Bytes(max)
            ),
        )
    };
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len > max {
        return Err(too_large(len));
    }
    let mut buf = Vec::with_capacity(len as usize);
    // `take`: a file that grows while it is read still stops at the bound.
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(too_large(buf.len() as u64));
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
