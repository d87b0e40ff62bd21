//! safetensors header reader and the shape inferred from it.
#![no_main]

use headroom::io::import::safetensors;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match safetensors::read_header(data, data.len() as u64) {
        Ok(h) => {
            assert_eq!(8 + h.header_len + h.tensor_bytes(), data.len() as u64);
            match safetensors::to_model(&h, "fuzz.safetensors", "fuzz") {
                Ok(m) => {
                    let fw = m.spec.file_weights.as_ref().expect("file weights");
                    assert_eq!(fw.total_bytes, h.tensor_bytes());
                    assert!(fw.layer_bytes <= fw.total_bytes);
                    let _ = m.spec.param_count();
                }
                // Only an implausible inferred shape may fail.
                Err(e) => assert!(e.to_string().contains("is not plausible"), "{e}"),
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "{s}");
            assert!(e.offset().is_some_and(|o| o <= data.len() as u64), "{s}");
        }
    }
});
