//! Hugging Face config.json parser (`core::hf_config::parse_hf_config`): any text gives a spec or
//! a one-line error, never a panic; a spec's arithmetic never panics either, and its name and
//! architecture (the file's own strings) hold no control characters.
#![no_main]

use headroom::core::hf_config::parse_hf_config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_hf_config(text) {
        Ok(spec) => {
            assert!(!spec.name.contains(char::is_control), "{:?}", spec.name);
            assert!(!spec.arch.contains(char::is_control), "{:?}", spec.arch);
            let _ = spec.param_count();
            let _ = spec.kv_elements_per_token_layer();
            for i in 0..spec.layers.min(8) {
                let _ = spec.layer_params(i);
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg}");
        }
    }
});
