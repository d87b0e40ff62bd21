//! Saved scenarios (RON, `io::export::load_scenario`): any text gives a scenario or a one-line
//! `file:line:col: message` error, never a panic. A scenario that loads estimates without panic,
//! its total is the sum of its components, and saving it again gives a file that loads to the
//! same text.
#![no_main]

use headroom::core::estimate::estimate;
use headroom::io::export::{load_scenario, save_scenario};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_scenario("fuzz.ron", text) {
        Ok(s) => {
            let e = estimate(&s);
            let sum = e
                .components
                .iter()
                .fold(0u128, |a, c| a + c.bytes.0 as u128);
            assert_eq!(e.total().0 as u128, sum.min(u64::MAX as u128));
            let saved = save_scenario(&s);
            let again = load_scenario("saved.ron", &saved).expect("a saved scenario loads");
            assert_eq!(save_scenario(&again), saved);
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg}");
            assert!(msg.starts_with("fuzz.ron:"), "{msg}");
        }
    }
});
