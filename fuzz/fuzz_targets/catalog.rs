//! User catalog files (RON, `io::catalog::parse_file`): any text gives a catalog or an error
//! naming the file, never a panic. A catalog that loads is usable: the default scenario fits on
//! each of its machines and each of its models estimates, with finite, consistent numbers.
#![no_main]

use headroom::core::estimate::estimate;
use headroom::core::fit::{FitSettings, fit_all};
use headroom::core::scenario::Scenario;
use headroom::io::catalog::{builtin, parse_file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_file("fuzz.ron", text) {
        Ok(file) => {
            let mut all = builtin().clone();
            all.merge(file.clone());
            let s = Scenario::default();
            for f in fit_all(&s, &file.machines, &all, &FitSettings::default()) {
                assert!(f.decode_tokens_per_s.is_finite() && f.decode_tokens_per_s >= 0.0);
                assert!(f.prefill_tokens_per_s.is_finite() && f.prefill_tokens_per_s >= 0.0);
                assert!(f.gpu_layers <= f.total_layers);
                if f.fits() {
                    assert!(f.headroom_bytes >= 0, "{f:?}");
                }
            }
            for m in file.models.iter().take(4) {
                let e = estimate(&Scenario {
                    model: m.spec.clone(),
                    ..Scenario::default()
                });
                let sum = e
                    .components
                    .iter()
                    .fold(0u128, |a, c| a + c.bytes.0 as u128);
                assert_eq!(e.total().0 as u128, sum.min(u64::MAX as u128));
            }
        }
        Err(e) => {
            // One line per problem, each naming the file.
            for line in e.to_string().lines() {
                assert!(line.starts_with("fuzz.ron"), "{line}");
            }
        }
    }
});
