//! The configuration's tests: db_bench's syntax, the flags' checks and
//! their messages, and a configuration given back by its flags.

use super::*;

fn parse(args: &[&str]) -> Result<Config, clap::Error> {
    Config::from_args(std::iter::once("spinney-bench").chain(args.iter().copied()))
}

#[test]
fn db_bench_syntax_with_equals_and_with_a_space() {
    // Goal: `--num=5` and `--num 5` both work, with db_bench's snake_case names.
    let c = parse(&[
        "--num=5",
        "--key_size",
        "8",
        "--benchmarks=fillseq,readrandom",
    ])
    .expect("parse");
    assert_eq!(c.num, 5);
    assert_eq!(c.key_size, 8);
    assert_eq!(c.benchmarks, [Benchmark::FillSeq, Benchmark::ReadRandom]);
    assert_eq!(c.reads(), 5);
    let c = parse(&["--reads", "-1", "--histogram"]).expect("parse");
    assert_eq!(c.reads, None);
    assert!(c.histogram);
}

#[test]
fn table_kind_flags_agree_or_fail() {
    // Goal: --use_lsm and --table_kind are one setting; a contradiction
    // is a usage error, not a silent choice.
    assert_eq!(
        parse(&["--use_lsm=0"]).expect("parse").engine,
        Engine::SpinneyBtree
    );
    assert_eq!(
        parse(&["--table_kind=btree", "--use_lsm=0"])
            .expect("parse")
            .engine,
        Engine::SpinneyBtree
    );
    assert_eq!(
        parse(&["--engine=spinney-btree", "--use_lsm=0"])
            .expect("parse")
            .engine,
        Engine::SpinneyBtree
    );
    let err = parse(&["--engine=spinney-lsm", "--use_lsm=0"]).expect_err("conflict");
    assert!(err.to_string().contains("disagree"), "{err}");
    let err = parse(&["--table_kind=btree", "--use_lsm=1"]).expect_err("conflict");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("disagree"), "{err}");
}

#[test]
fn bad_flags_are_usage_errors() {
    // Goal: every kind of bad flag gives clap's exit code 2 and names the problem.
    for (args, needle) in [
        (vec!["--no_such_flag=1"], "no_such_flag"),
        (vec!["--num=abc"], "abc"),
        (vec!["--compression_type=snappy"], "snappy"),
        (vec!["--benchmarks=fillseq,frobnicate"], "frobnicate"),
        (vec!["--sync=1", "--disable_wal=1"], "contradict"),
        (vec!["--num=100000", "--key_size=4"], "does not fit"),
        (vec!["--threads=0"], "--threads"),
    ] {
        let err = parse(&args).expect_err("bad flag");
        assert_eq!(err.exit_code(), 2, "{args:?}");
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
    }
    let err = parse(&["--benchmarks=nope"]).expect_err("unknown");
    assert!(err.to_string().contains("fillseq, fillseqbatch"), "{err}");
}

#[test]
fn durability_mapping() {
    // Goal: --sync and --disable_wal select the strongest and weakest durability.
    assert_eq!(parse(&[]).expect("parse").durability, Durability::Normal);
    assert_eq!(
        parse(&["--sync=1"]).expect("parse").durability,
        Durability::Full
    );
    assert_eq!(
        parse(&["--disable_wal=1"]).expect("parse").durability,
        Durability::Off
    );
}

#[test]
fn other_build_runs_only_the_engines_of_a_comparison_this_build_lacks() {
    // Goal: `--other_build` lets a comparison name an engine this build
    // lacks (its child runs from the other build), and nothing else: a
    // run on one engine, a scenario or a missing program is refused.
    let Some(missing) = Engine::ALL.into_iter().find(|e| !e.is_built()) else {
        return; // every engine is built: nothing to route elsewhere
    };
    let program = std::env::current_exe().expect("this test's program");
    let other = format!("--other_build={}", program.display());
    let compare = format!("--compare=spinney-lsm,{}", missing.name());
    let c = parse(&[&compare, &other]).expect("a comparison with the other build");
    assert_eq!(c.other_build.as_deref(), Some(program.as_path()));
    assert_eq!(
        Config::from_args(std::iter::once("x".to_string()).chain(c.to_args()))
            .ok()
            .map(|c| c.other_build),
        Some(Some(program.clone()))
    );
    let err = parse(&[&compare]).expect_err("not built, no other build");
    assert!(err.to_string().contains(missing.name()), "{err}");
    let one = format!("--engine={}", missing.name());
    assert!(parse(&[&one, &other]).is_err());
    let err = parse(&[&compare, "--other_build=/no/such/program"]).expect_err("missing");
    assert!(err.to_string().contains("no such program"), "{err}");
    let err = parse(&["--compare=spinney-lsm", "--scenario=btree-vs-lsm", &other])
        .expect_err("a scenario");
    assert!(err.to_string().contains("--other_build"), "{err}");
}

#[test]
fn to_args_gives_the_configuration_back() {
    // Goal: a comparison's child process gets exactly the parent's
    // configuration, every field included, through its flags.
    let c = parse(&[
        "--benchmarks=fillrandom,readrandom,compact0",
        "--num=1234",
        "--reads=77",
        "--threads=3",
        "--duration=1.5",
        "--key_size=10",
        "--key_format=binary",
        "--value_size=33",
        "--batch_size=9",
        "--writes_per_second=100",
        "--engine=spinney-btree",
        "--cache_size=1000000",
        "--bloom_bits=7",
        "--compression_type=lz4",
        "--compaction_style=tiered",
        "--background_threads=1",
        "--background_nice=3",
        "--write_buffer_size=1048576",
        "--max_write_buffer_number=3",
        "--page_size=16384",
        "--checkpoint_log_bytes=33554432",
        "--db=/tmp/x y",
        "--mmap_read=1",
        "--use_direct_io_for_flush_and_compaction=1",
        "--sync=1",
        "--seek_nexts=4",
        "--range_tombstone_width=7",
        "--histogram=1",
        "--stats_interval=10",
        "--stats_interval_seconds=0.25",
        "--report_interval_seconds=2",
        "--seed=42",
        "--report=/tmp/r.csv",
        "--plot=/tmp/p.svg",
        "--progress=0",
        "--scenario=iibench",
        "--scale=0.5",
        "--iibench_writes=rmw,blind",
        "--rounds=5",
        "--child_timeout=90.5",
        "--results_file=/tmp/res",
    ])
    .expect("parse");
    let args = c.to_args();
    let back = Config::from_args(std::iter::once("spinney-bench".to_string()).chain(args))
        .expect("parse back");
    assert_eq!(back, c);
    assert!(c.mmap_read && c.db_options().mmap_reads);
    assert!(c.direct_writes && c.db_options().direct_writes && !c.direct_reads);
    let c = parse(&["--use_direct_reads"]).expect("parse");
    assert!(c.direct_reads && c.db_options().direct_reads && !c.direct_writes);
    let both = parse(&["--use_direct_reads=1", "--mmap_read=1"])
        .expect_err("mmap and direct reads")
        .to_string();
    assert!(both.contains("contradict"), "{both}");
    // The -mmap rows read through maps without the flag; the others only
    // with it.
    for (engine, maps) in [
        ("spinney-btree-mmap", true),
        ("spinney-lsm-mmap", true),
        ("spinney-btree", false),
        ("spinney-lsm-mapped", false),
    ] {
        let c = parse(&[&format!("--engine={engine}")]).expect("parse");
        assert_eq!(c.db_options().mmap_reads, maps, "{engine}");
        assert_eq!(c.engine.direct_io(), !maps, "{engine}");
        assert_eq!(
            c.db_options().log_writes == spinney::LogWrites::Write,
            engine != "spinney-lsm-mapped",
            "{engine}"
        );
    }
    let c = parse(&["--compare=spinney-btree,spinney-lsm", "--disable_wal=1"]).expect("parse");
    let back =
        Config::from_args(std::iter::once("x".to_string()).chain(c.to_args())).expect("parse back");
    assert_eq!(back, c);
    assert_eq!(
        parse(&[]).expect("parse").to_args().len(),
        c.to_args().len()
    );
}

#[test]
fn engines_and_comparisons_are_checked() {
    // Goal: --engine and --compare take known names only, a comparison
    // names each engine once, and an engine this build lacks says which
    // feature brings it in.
    let c = parse(&["--compare=spinney-lsm,spinney-btree", "--rounds=2"]).expect("parse");
    assert_eq!(c.compare, [Engine::SpinneyLsm, Engine::SpinneyBtree]);
    assert_eq!(c.rounds, 2);
    for (args, needle) in [
        (vec!["--engine=oracle"], "unknown engine 'oracle'"),
        (vec!["--compare=spinney-lsm,nope"], "unknown engine 'nope'"),
        (vec!["--compare=spinney-lsm,spinney-lsm"], "twice"),
        (vec!["--compare=,"], "names no engine"),
        (vec!["--compare=spinney-lsm", "--use_lsm=1"], "leave out"),
        (vec!["--compare=spinney-lsm", "--rounds=0"], "--rounds"),
        (
            vec!["--iibench_writes=blind,sideways"],
            "unknown --iibench_writes",
        ),
        (vec!["--iibench_writes=rmw,rmw"], "twice"),
        (vec!["--iibench_writes=,"], "names no way"),
    ] {
        let err = parse(&args).expect_err("bad");
        assert_eq!(err.exit_code(), 2, "{args:?}");
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
    }
    for e in Engine::ALL.into_iter().filter(|e| !e.is_built()) {
        let err = parse(&[&format!("--engine={}", e.name())]).expect_err("not built");
        assert!(err.to_string().contains("--features"), "{err}");
    }
}

#[test]
fn seed_zero_draws_a_new_seed_and_a_fixed_seed_stays() {
    // Goal: db_bench's --seed semantics: 0 draws a new (non-zero) seed
    // each time, anything else is kept.
    let c = parse(&[]).expect("parse");
    assert_eq!(c.seed, 0);
    let a = c.resolve_seed();
    std::thread::sleep(Duration::from_millis(2));
    let b = c.resolve_seed();
    assert!(a != 0 && b != 0);
    assert_ne!(a, b);
    assert_eq!(parse(&["--seed=5"]).expect("parse").resolve_seed(), 5);
}

#[test]
fn batch_sizes() {
    // Goal: fillbatch is always 1000 per batch, fillseqbatch 1000 unless
    // --batch_size says otherwise, the others 1 unless it does.
    let c = parse(&[]).expect("parse");
    assert_eq!(c.batch_size_for(Benchmark::FillBatch), 1000);
    assert_eq!(c.batch_size_for(Benchmark::FillSeqBatch), 1000);
    assert_eq!(c.batch_size_for(Benchmark::FillRandom), 1);
    let c = parse(&["--batch_size=10"]).expect("parse");
    assert_eq!(c.batch_size_for(Benchmark::FillBatch), 1000);
    assert_eq!(c.batch_size_for(Benchmark::FillSeqBatch), 10);
    assert_eq!(c.batch_size_for(Benchmark::FillRandom), 10);
}
