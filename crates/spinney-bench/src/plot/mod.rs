//! Charts of benchmark results: line charts and grouped bar charts, written as
//! SVG or PNG files.
//!
//! Shapes are drawn by `plotters`; text is this module's own work. It is
//! measured, and in a PNG drawn, with a subset of DejaVu Sans built into the
//! binary (`fonts/README.md`, licence `fonts/LICENSE-DejaVu.txt`), so a chart
//! comes out the same on a machine with no system fonts. An SVG keeps its text
//! as text, in the family `sans-serif`, and leaves drawing it to the viewer.
//! plotters' own `ab_glyph` text drawing is not used: it drops each glyph's
//! side bearing, which spaces letters unevenly ("tim e").
//!
//! Each chart is made in two steps. A pure function first turns the caller's
//! data into a plan: points and values that cannot be drawn (NaN, infinite,
//! beyond [`VALUE_ABS_MAX`]) are skipped, ranges are never empty, and the value
//! axis always includes 0. The plan is then drawn in memory and the file
//! written in one go, so a chart that fails to draw leaves no file behind.
//!
//! The parts: `scale` (what can be drawn, ranges, how numbers are
//! written), `lines` and `bars` (each chart kind, its plan and its
//! drawing), `frame` (title, legend, colours) and `text` (measuring and
//! drawing text); this file holds the public face, the style shared by
//! every chart, and the rendering to a file.
//!
//! Thread-safety: there is no shared state; both functions may be called from
//! any thread at once.

mod bars;
mod frame;
mod lines;
mod scale;
#[cfg(test)]
mod tests;
mod text;

use std::path::Path;

use ab_glyph::FontRef;
use plotters::coord::Shift;
use plotters::prelude::*;

use bars::plan_bars;
use lines::plan_lines;
use text::{TextDrawing, Typeset};

/// A line of a line chart: its name in the legend and its points, joined in
/// the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A bar of a grouped bar chart: `value` of `series` in `group`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub group: String,
    pub series: String,
    pub value: f64,
}

/// Line chart (e.g. ops/sec over time, one line per benchmark or per table kind).
/// The format follows the extension: .svg or .png. Errors are messages.
///
/// Points with a coordinate that is NaN, infinite or beyond ±1e300 are
/// skipped. The y axis starts at 0 (or below, for negative values).
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    render(path, &plan_lines(title, x_label, y_label, series))
}

/// Grouped bar chart: one group per distinct `group` (in first-seen order), one bar per `series` within it (consistent colours per series, a legend).
///
/// Series keep their first-seen order too. A later bar with the same group and
/// series replaces an earlier one; a value that is NaN, infinite or beyond
/// ±1e300 leaves its bar out.
pub fn bars(path: &Path, title: &str, y_label: &str, bars: &[Bar]) -> Result<(), String> {
    render(path, &plan_bars(title, y_label, bars))
}

/// The bundled font (see `fonts/README.md`).
const FONT_BYTES: &[u8] = include_bytes!("../../fonts/DejaVuSans-subset.ttf");
/// The family an SVG asks for, so that a viewer uses its own sans-serif font.
const FONT_FAMILY: &str = "sans-serif";
/// plotters-svg writes a text's size divided by this as its font-size in
/// pixels, that is as its em; PNG text is drawn the same size.
const EM_PER_SIZE_DIVISOR: f64 = 1.24;

const IMAGE_WIDTH_PX: u32 = 1000;
const IMAGE_HEIGHT_PX: u32 = 600;
const MARGIN_PX: u32 = 14;
/// Space around the chart proper, inside its share of the image.
const CHART_MARGIN_PX: u32 = 10;
/// Text sizes in plotters' unit, about the height of a line of text in
/// pixels; the em is the size over EM_PER_SIZE_DIVISOR.
const TITLE_FONT_SIZE: u32 = 24;
const AXIS_LABEL_FONT_SIZE: u32 = 17;
const TICK_FONT_SIZE: u32 = 14;
const LEGEND_FONT_SIZE: u32 = 15;
const BAR_VALUE_FONT_SIZE: u32 = 12;

/// Values of a larger magnitude are skipped like NaN: the span between two of
/// them, plus headroom, must stay finite, because plotters' search for tick
/// positions never ends on an infinite span.
const VALUE_ABS_MAX: f64 = 1e300;
/// Space left above the highest value (and below the lowest negative one), as
/// a share of the value range. Bars need more, for the value written on top.
const HEADROOM_LINES: f64 = 0.05;
const HEADROOM_BARS: f64 = 0.12;
/// Text longer than this is cut before it is measured, because fitting text
/// to a width measures it once per character removed.
const TEXT_CHARS_MAX: usize = 200;
/// A series with at most this many points gets a marker on each point, so
/// that a single point shows; denser series are drawn as lines only.
const MARKER_POINTS_MAX: usize = 50;
/// The share of the width the legend may take; longer names are cut with "…".
const LEGEND_WIDTH_SHARE: f64 = 0.3;
/// How many tick labels plotters may put on an axis.
const TICKS_X_MAX: usize = 10;
const TICKS_Y_MAX: usize = 8;
/// Faint grid lines between two ticks; plotters' default of 10 is busy.
const LIGHT_LINES_MAX: usize = 4;
/// The part of a group's slot the bars fill, and of a bar's slot the bar.
const BAR_GROUP_FILL: f64 = 0.8;
const BAR_FILL: f64 = 0.88;

/// Matplotlib's "tab10" colours, distinct and familiar to readers of plots.
/// Series past the tenth take colours from plotters' 99-colour palette, some
/// of them pale; a chart with that many series is hard to read anyway.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GRID_BOLD: RGBColor = RGBColor(215, 215, 215);
const GRID_LIGHT: RGBColor = RGBColor(240, 240, 240);
const TEXT_MUTED: RGBColor = RGBColor(90, 90, 90);

/// A chart plan that can draw itself on any plotters backend.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

impl Format {
    fn of(path: &Path) -> Result<Self, String> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("svg") => Ok(Self::Svg),
            Some("png") => Ok(Self::Png),
            _ => Err(format!(
                "cannot write chart {}: unknown format; the file name must end in .svg or .png",
                path.display()
            )),
        }
    }
}

fn render(path: &Path, chart: &impl Chart) -> Result<(), String> {
    let format = Format::of(path)?;
    let font = FontRef::try_from_slice(FONT_BYTES)
        .map_err(|_| "the bundled font fonts/DejaVuSans-subset.ttf is not valid".to_string())?;
    let size = (IMAGE_WIDTH_PX, IMAGE_HEIGHT_PX);
    let failed = |e: String| format!("cannot draw chart {}: {e}", path.display());
    let bytes = match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let backend = SVGBackend::with_string(&mut svg, size);
                let root = Typeset::new(backend, font, TextDrawing::Viewer).into_drawing_area();
                chart.draw(&root).map_err(failed)?;
                root.present().map_err(|e| failed(e.to_string()))?;
            }
            svg.into_bytes()
        }
        Format::Png => {
            let mut rgb = vec![0_u8; IMAGE_WIDTH_PX as usize * IMAGE_HEIGHT_PX as usize * 3];
            {
                let backend = BitMapBackend::with_buffer(&mut rgb, size);
                let root = Typeset::new(backend, font, TextDrawing::Glyphs).into_drawing_area();
                chart.draw(&root).map_err(failed)?;
                root.present().map_err(|e| failed(e.to_string()))?;
            }
            encode_png(&rgb).map_err(failed)?
        }
    };
    std::fs::write(path, bytes).map_err(|e| format!("cannot write chart {}: {e}", path.display()))
}

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, String> {
    let failed = |e: png::EncodingError| format!("encoding PNG: {e}");
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, IMAGE_WIDTH_PX, IMAGE_HEIGHT_PX);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(png_bytes)
}
