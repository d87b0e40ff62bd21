//! GGUF header reader and the spec built from it: any bytes give a header or a one-line error
//! carrying an offset inside the file, never a panic or an allocation the bytes do not back.
#![no_main]

use headroom::io::import::gguf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match gguf::read_header(data, data.len() as u64) {
        Ok(h) => {
            assert!(h.data_offset <= data.len() as u64 || h.tensors.is_empty());
            for t in &h.tensors {
                assert!(h.data_offset + t.offset + t.bytes <= data.len() as u64);
            }
            match gguf::to_model(&h, "fuzz.gguf", "fuzz") {
                Ok(m) => {
                    let fw = m.spec.file_weights.as_ref().expect("file weights");
                    assert!(fw.total_bytes <= h.tensor_bytes());
                    assert!(fw.layer_bytes <= fw.total_bytes);
                    let _ = m.spec.param_count();
                    assert!(!m.summary.contains('\n'));
                }
                Err(e) => assert!(!e.to_string().contains('\n')),
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "{s}");
            assert!(e.offset().is_some_and(|o| o <= data.len() as u64), "{s}");
        }
    }
});
