#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| runnel_fuzz_targets::certificate(data));
