#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| spinney::fuzzing::batch_record(data));
