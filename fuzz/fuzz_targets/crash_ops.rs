#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| spinney::fuzzing::crash_ops(data));
