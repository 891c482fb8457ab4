//! Whole-SST tests: build, read back, seek, get, verify, corruption.
