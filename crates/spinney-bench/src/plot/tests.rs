//! The charts' tests: planning (ranges, skipped values, names in order),
//! number formatting, text fitting, and charts written as SVG and PNG.

use super::scale::{format_value, key_range, value_range, TickFormat};
use super::*;

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

fn sample_series() -> Vec<Series> {
    let ramp = |name: &str, rate: f64| Series {
        name: name.to_string(),
        points: (0..60)
            .map(|t| {
                let t = f64::from(t);
                (t, rate * (1.0 + 0.2 * (t / 7.0).sin()) + 1000.0 * t)
            })
            .collect(),
    };
    vec![
        ramp("lsm put", 1.2e6),
        ramp("btree put", 8.0e5),
        ramp("lsm get", 2.1e6),
    ]
}

fn sample_bars() -> Vec<Bar> {
    let mut bars = Vec::new();
    for (group, scale) in [
        ("fill-seq", 1.0),
        ("fill-random", 0.6),
        ("read-random", 1.8),
    ] {
        for (series, value) in [
            ("lsm", 950_000.0),
            ("btree", 610_000.0),
            ("lsm+wal", 420_000.0),
        ] {
            bars.push(Bar {
                group: group.to_string(),
                series: series.to_string(),
                value: value * scale,
            });
        }
    }
    bars
}

fn read_svg(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the chart was just written as SVG text")
}

/// The contents of an SVG's text elements, trimmed, still escaped.
fn svg_texts(svg: &str) -> Vec<&str> {
    svg.split("</text>")
        .filter(|part| part.contains("<text"))
        .filter_map(|part| part.rsplit_once('>').map(|(_, text)| text.trim()))
        .collect()
}

fn read_png(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("the chart was just written")
}

#[test]
fn lines_svg_holds_title_labels_and_names_as_text() {
    // Goal: an SVG line chart is a real file whose title, axis labels and
    // series names are text elements, not outlines. Method: draw the
    // sample and search the SVG source.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("lines.svg");
    lines(
        &path,
        "Puts per second",
        "time (s)",
        "ops/s",
        &sample_series(),
    )
    .expect("the sample draws");
    let svg = read_svg(&path);
    assert!(svg.len() > 5_000, "SVG is only {} bytes", svg.len());
    assert!(svg.starts_with("<svg"), "not an SVG");
    let texts = svg_texts(&svg);
    for text in [
        "Puts per second",
        "time (s)",
        "ops/s",
        "lsm put",
        "btree put",
        "lsm get",
    ] {
        assert!(texts.contains(&text), "no text {text:?} in {texts:?}");
    }
    assert!(
        texts.contains(&"1.5M"),
        "y ticks are not written with SI prefixes"
    );
}

#[test]
fn lines_png_is_a_png_with_pixels() {
    // Goal: a PNG line chart is a real PNG of the set size, and its text
    // renders. Method: draw the sample, check the magic, decode it, count
    // its colours, and look for the title's ink.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("lines.png");
    lines(
        &path,
        "Puts per second",
        "time (s)",
        "ops/s",
        &sample_series(),
    )
    .expect("the sample draws");
    let bytes = read_png(&path);
    assert!(bytes.starts_with(PNG_MAGIC));
    assert!(bytes.len() > 10_000, "PNG is only {} bytes", bytes.len());
    let rgb = decode_png(&bytes);
    // Lines are drawn without anti-aliasing; text is, in many shades.
    assert!(distinct_colours(&rgb) > 50, "too few colours: no text?");
    assert!(title_ink_pixels(&rgb) > 100, "the title left no ink");
}

/// Decodes a PNG written by this module into RGB bytes.
fn decode_png(bytes: &[u8]) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a valid PNG header");
    let mut rgb = vec![0; reader.output_buffer_size().expect("a sane image size")];
    let info = reader.next_frame(&mut rgb).expect("valid PNG data");
    assert_eq!((info.width, info.height), (IMAGE_WIDTH_PX, IMAGE_HEIGHT_PX));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    rgb
}

fn distinct_colours(rgb: &[u8]) -> usize {
    let mut colours: Vec<&[u8]> = rgb.chunks_exact(3).collect();
    colours.sort_unstable();
    colours.dedup();
    colours.len()
}

/// Dark pixels in the band of rows where the title is drawn, and nothing
/// else: if text renders, the title leaves ink there.
fn title_ink_pixels(rgb: &[u8]) -> usize {
    let row_bytes = IMAGE_WIDTH_PX as usize * 3;
    rgb.chunks_exact(row_bytes)
        .skip(MARGIN_PX as usize)
        .take(TITLE_FONT_SIZE as usize)
        .flat_map(|row| row.chunks_exact(3))
        .filter(|pixel| pixel.iter().all(|&channel| channel < 100))
        .count()
}

#[test]
fn bars_svg_holds_title_groups_and_series_as_text() {
    // Goal: an SVG bar chart names its groups under the axis and its
    // series in the legend, as text. Method: draw the sample and search.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bars.svg");
    bars(&path, "Throughput by workload", "ops/s", &sample_bars()).expect("the sample draws");
    let svg = read_svg(&path);
    assert!(svg.len() > 5_000, "SVG is only {} bytes", svg.len());
    for text in [
        "Throughput by workload",
        "ops/s",
        "fill-seq",
        "fill-random",
        "read-random",
        "lsm",
        "btree",
        "lsm+wal",
    ] {
        assert!(svg_texts(&svg).contains(&text), "no text {text:?}");
    }
    // One bar per (group, series), each a filled rectangle in its colour.
    let lsm_fill = "fill=\"#1F77B4\"";
    assert!(
        svg.matches(lsm_fill).count() >= 3,
        "the lsm bars are not all blue"
    );
}

#[test]
fn bars_png_is_a_png_with_pixels() {
    // Goal: a PNG bar chart is a real PNG whose text renders, whatever
    // the case of its extension. Method: as for lines.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bars.PNG");
    bars(&path, "Throughput by workload", "ops/s", &sample_bars()).expect("the sample draws");
    let bytes = read_png(&path);
    assert!(bytes.starts_with(PNG_MAGIC));
    let rgb = decode_png(&bytes);
    assert!(distinct_colours(&rgb) > 50, "too few colours: no text?");
    assert!(title_ink_pixels(&rgb) > 100, "the title left no ink");
}

#[test]
fn charts_without_data_draw_an_empty_frame() {
    // Goal: no series, series without points, and no bars all give a chart
    // saying "no data" rather than an error or a panic.
    let dir = tempfile::tempdir().expect("a temporary directory");
    for extension in ["svg", "png"] {
        let path = dir.path().join(format!("empty-lines.{extension}"));
        lines(&path, "Empty", "x", "y", &[]).expect("no series draws");
        let path = dir.path().join(format!("pointless.{extension}"));
        let pointless = Series {
            name: "nothing yet".to_string(),
            points: Vec::new(),
        };
        lines(&path, "", "", "", &[pointless]).expect("a series without points draws");
        let path = dir.path().join(format!("empty-bars.{extension}"));
        bars(&path, "Empty", "y", &[]).expect("no bars draws");
    }
    for name in ["empty-lines.svg", "pointless.svg", "empty-bars.svg"] {
        let svg = read_svg(&dir.path().join(name));
        assert!(
            svg_texts(&svg).contains(&"no data"),
            "{name} does not say so"
        );
    }
}

#[test]
fn single_points_zeros_and_unplottable_values_draw() {
    // Goal: degenerate data draws without panicking: one point, all-zero
    // values, and NaN, infinities and values beyond VALUE_ABS_MAX, which
    // are skipped. Method: draw each as SVG and PNG.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let weird = [
        vec![(3.0, 5.0)],
        vec![(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)],
        vec![(0.0, 0.0)],
        vec![
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
            (2.0, f64::NEG_INFINITY),
        ],
        vec![(1.0, f64::MAX), (f64::MIN, 1.0), (2.0, 1e301), (3.0, 2.0)],
        vec![(1e300, 1e300), (-1e300, -1e300)],
        vec![(1e15, 1e-12), (1e15 + 1.0, 3e-12)],
        vec![(-5.0, -2.0), (5.0, -7.0)],
    ];
    for (index, points) in weird.into_iter().enumerate() {
        for extension in ["svg", "png"] {
            let path = dir.path().join(format!("lines-{index}.{extension}"));
            let series = [Series {
                name: format!("case {index}"),
                points: points.clone(),
            }];
            lines(&path, "Odd", "x", "y", &series)
                .unwrap_or_else(|e| panic!("case {index} as {extension}: {e}"));
        }
    }
    let bar = |group: &str, value: f64| Bar {
        group: group.to_string(),
        series: "s".to_string(),
        value,
    };
    let odd_bars = [
        vec![bar("only", 0.0)],
        vec![bar("a", 0.0), bar("b", 0.0)],
        vec![
            bar("nan", f64::NAN),
            bar("inf", f64::INFINITY),
            bar("max", f64::MAX),
        ],
        vec![bar("one", 1.0)],
        vec![bar("neg", -4.0e9), bar("pos", 2.5e9)],
        vec![bar("huge", 1e300)],
    ];
    for (index, bars_case) in odd_bars.iter().enumerate() {
        for extension in ["svg", "png"] {
            let path = dir.path().join(format!("bars-{index}.{extension}"));
            bars(&path, "Odd", "y", bars_case)
                .unwrap_or_else(|e| panic!("case {index} as {extension}: {e}"));
        }
    }
}

#[test]
fn long_names_are_cut_with_an_ellipsis() {
    // Goal: names far too long for the legend, the axis or the title are
    // cut to fit, with "…" in the middle, rather than overflowing or
    // failing; names that differ only at the end stay apart.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let long = "a-very-long-benchmark-name-".repeat(40);
    let series = [Series {
        name: long.clone(),
        points: vec![(0.0, 1.0), (1.0, 2.0)],
    }];
    let path = dir.path().join("long.svg");
    lines(&path, &long, &long, &long, &series).expect("long names draw");
    let svg = read_svg(&path);
    assert!(!svg.contains(&long), "a long name was drawn whole");
    let cut = svg_texts(&svg)
        .into_iter()
        .filter(|t| t.starts_with("a-very-long") && t.contains('…'))
        .count();
    // The title, both axis labels and the legend.
    assert_eq!(cut, 4, "names were not cut with an ellipsis");
    let many_groups: Vec<Bar> = (0..40)
        .map(|i| Bar {
            group: format!("{long}{i}"),
            series: format!("{long}-{}", i % 3),
            value: f64::from(i),
        })
        .collect();
    for extension in ["svg", "png"] {
        let path = dir.path().join(format!("long-bars.{extension}"));
        bars(&path, &long, &long, &many_groups).expect("long group names draw");
    }
    let svg = read_svg(&dir.path().join("long-bars.svg"));
    let texts = svg_texts(&svg);
    for end in ["-0", "-1", "-2"] {
        let found = texts.iter().any(|t| t.contains('…') && t.ends_with(end));
        assert!(found, "no legend entry ends in {end:?}: {texts:?}");
    }
}

#[test]
fn many_series_fill_the_legend_and_say_how_many_are_left_out() {
    // Goal: more series than legend rows draws, and the legend says how
    // many it could not show.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let series: Vec<Series> = (0..60)
        .map(|i| Series {
            name: format!("run {i}"),
            points: vec![(0.0, f64::from(i)), (1.0, f64::from(i) * 2.0)],
        })
        .collect();
    let path = dir.path().join("many.svg");
    lines(&path, "Many", "x", "y", &series).expect("many series draw");
    let svg = read_svg(&path);
    let texts = svg_texts(&svg);
    let shown = texts.iter().filter(|t| t.starts_with("run ")).count();
    let more = format!("… and {} more", 60 - shown);
    assert!(texts.contains(&more.as_str()), "no {more:?} in {texts:?}");
}

#[test]
fn markup_in_names_is_escaped_in_svg() {
    // Goal: a name with XML's special characters cannot break the SVG.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("markup.svg");
    let series = [Series {
        name: "get <k> & \"v\"".to_string(),
        points: vec![(0.0, 1.0)],
    }];
    lines(&path, "a < b", "x", "y", &series).expect("the chart draws");
    let svg = read_svg(&path);
    assert!(
        svg.contains("get &lt;k&gt; &amp;"),
        "the name is not escaped"
    );
    assert!(!svg.contains("<k>"));
}

#[test]
fn unknown_extension_is_a_clear_error() {
    // Goal: a path whose extension names no format we write fails before
    // anything is drawn, with a message that says what would work.
    let dir = tempfile::tempdir().expect("a temporary directory");
    for name in ["chart.jpg", "chart", "chart.svg.txt"] {
        let path = dir.path().join(name);
        let error = lines(&path, "t", "x", "y", &sample_series())
            .expect_err("an unknown format is refused");
        assert!(error.contains(".svg or .png"), "unhelpful error: {error}");
        assert!(
            error.contains(name),
            "the error does not name the file: {error}"
        );
        let error = bars(&path, "t", "y", &sample_bars()).expect_err("refused too");
        assert!(error.contains(".svg or .png"), "unhelpful error: {error}");
        assert!(!path.exists());
    }
}

#[test]
fn unwritable_path_is_an_error_naming_it() {
    // Goal: a path that cannot be written (missing directory, or a
    // directory itself) gives an error naming the path, not a panic.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = dir.path().join("no-such-dir").join("chart.png");
    let error = lines(&missing, "t", "x", "y", &sample_series()).expect_err("cannot write");
    assert!(
        error.contains("no-such-dir"),
        "the error does not name the path: {error}"
    );
    let directory = dir.path().join("is-a-dir.svg");
    std::fs::create_dir(&directory).expect("a directory named like a chart");
    let error = bars(&directory, "t", "y", &sample_bars()).expect_err("cannot write");
    assert!(
        error.contains("is-a-dir.svg"),
        "the error does not name the path: {error}"
    );
}

#[test]
fn charts_draw_from_several_threads_at_once() {
    // Goal: charts can be drawn concurrently (nothing is shared).
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::thread::scope(|scope| {
        for i in 0..4 {
            let path = dir.path().join(format!("thread-{i}.png"));
            scope.spawn(move || {
                bars(&path, "t", "y", &sample_bars()).expect("draws from any thread")
            });
        }
    });
}

#[test]
fn ticks_use_si_prefixes_with_the_decimals_the_step_needs() {
    // Goal: tick labels stay short at any magnitude and neighbours differ.
    let ticks = TickFormat::new((0.0, 1.4e6), 7);
    assert_eq!(ticks.format(0.0), "0");
    assert_eq!(ticks.format(200_000.0), "200k");
    assert_eq!(ticks.format(1_200_000.0), "1.2M");
    assert_eq!(ticks.format(1e-17), "0");
    let ticks = TickFormat::new((0.0, 0.0021), 7);
    assert_eq!(ticks.format(0.0005), "500µ");
    assert_eq!(ticks.format(0.0015), "0.0015");
    let ticks = TickFormat::new((-5e9, 5e9), 8);
    assert_eq!(ticks.format(-2.5e9), "-2.5G");
    let ticks = TickFormat::new((0.0, 1e300), 8);
    assert_eq!(ticks.format(5e299), "5.0e299");
    let ticks = TickFormat::new((0.0, 10.0), 8);
    assert_eq!(ticks.format(2.5), "2.5");
    assert_eq!(ticks.format(10.0), "10");
}

#[test]
fn values_are_written_in_three_significant_digits() {
    // Goal: the numbers on bars are short and precise enough to compare.
    assert_eq!(format_value(1_234_567.0), "1.23M");
    assert_eq!(format_value(45_678.0), "45.7k");
    assert_eq!(format_value(999.0), "999");
    assert_eq!(format_value(0.5), "0.5");
    assert_eq!(format_value(0.0), "0");
    assert_eq!(format_value(-2_000_000.0), "-2M");
    assert_eq!(format_value(3.2e-5), "32µ");
}

#[test]
fn text_is_measured_with_the_bundled_font() {
    // Goal: text metrics come from the bundled font at the em plotters-svg
    // writes, so that SVG and PNG layouts agree. Method: measure against
    // DejaVu Sans' known proportions (x-height 0.55 em, "x" advance 0.59
    // em, line height 1.16 em).
    let font = FontRef::try_from_slice(FONT_BYTES).expect("the bundled font parses");
    let mut svg = String::new();
    let typeset = Typeset::new(
        SVGBackend::with_string(&mut svg, (10, 10)),
        font,
        TextDrawing::Viewer,
    );
    let x_height = typeset.x_height_em();
    assert!((0.5..0.6).contains(&x_height), "x-height {x_height} em");
    let layout = typeset.layout("xxxxxxxxxx", 124.0);
    assert!((layout.em_px - 100.0).abs() < 1e-3);
    assert!(
        (580.0..600.0).contains(&layout.width_px),
        "width {}",
        layout.width_px
    );
    assert!(
        (110.0..120.0).contains(&layout.height_px),
        "height {}",
        layout.height_px
    );
    assert_eq!(layout.glyphs.len(), 10);
}

#[test]
fn value_ranges_start_at_zero_and_are_never_empty() {
    // Goal: the value axis always shows 0, all values and some headroom,
    // and degenerate data still gives a usable range.
    assert_eq!(value_range([], 0.1), (0.0, 1.0));
    assert_eq!(value_range([0.0, 0.0], 0.1), (0.0, 1.0));
    assert_eq!(value_range([5.0, 10.0], 0.1), (0.0, 11.0));
    assert_eq!(value_range([-10.0], 0.1), (-11.0, 0.0));
    assert_eq!(key_range([]), (0.0, 1.0));
    assert_eq!(key_range([0.0]), (-1.0, 1.0));
    assert_eq!(key_range([100.0]), (95.0, 105.0));
    assert_eq!(key_range([3.0, -1.0, 2.0]), (-1.0, 3.0));
}

#[test]
fn bar_plan_keeps_first_seen_order_and_the_last_duplicate() {
    // Goal: groups and series keep the order they were first seen in; a
    // repeated (group, series) replaces the earlier value; unplottable
    // values leave a gap but keep their group and series.
    let bar = |group: &str, series: &str, value: f64| Bar {
        group: group.to_string(),
        series: series.to_string(),
        value,
    };
    let plan = plan_bars(
        "t",
        "y",
        &[
            bar("b", "x", 1.0),
            bar("a", "y", 2.0),
            bar("b", "y", 3.0),
            bar("b", "x", 4.0),
            bar("c", "z", f64::NAN),
        ],
    );
    assert_eq!(plan.groups, ["b", "a", "c"]);
    assert_eq!(plan.series, ["x", "y", "z"]);
    assert_eq!(
        plan.values,
        [
            vec![Some(4.0), Some(3.0), None],
            vec![None, Some(2.0), None],
            vec![None, None, None],
        ]
    );
    assert_eq!(plan.y_range.0, 0.0);
}

#[test]
fn line_plan_skips_points_it_cannot_draw() {
    // Goal: NaN, infinite and over-large coordinates are dropped point by
    // point, and the ranges come from the points that remain.
    let series = [Series {
        name: "s".to_string(),
        points: vec![
            (0.0, 1.0),
            (f64::NAN, 5.0),
            (2.0, f64::INFINITY),
            (4.0, 2.0),
            (1e301, 9.0),
        ],
    }];
    let plan = plan_lines("t", "x", "y", &series);
    assert_eq!(plan.lines, [vec![(0.0, 1.0), (4.0, 2.0)]]);
    assert_eq!(plan.x_range, (0.0, 4.0));
    assert_eq!(plan.y_range.0, 0.0);
}
