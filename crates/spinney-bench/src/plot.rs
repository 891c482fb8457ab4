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
//! Thread-safety: there is no shared state; both functions may be called from
//! any thread at once.

use std::collections::HashMap;
use std::path::Path;

use ab_glyph::{Font, FontRef, Glyph, PxScale, ScaleFont};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
// BackendStyle is named by path: in scope, its stroke_width would clash with
// plotters' Color::stroke_width.
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};

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
const FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");
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

fn series_colour(index: usize) -> RGBColor {
    match PALETTE.get(index) {
        Some(colour) => *colour,
        None => {
            let (r, g, b) = Palette99::pick(index).rgb();
            RGBColor(r, g, b)
        }
    }
}

/// Whether a coordinate or value can be drawn.
fn plottable(v: f64) -> bool {
    v.is_finite() && v.abs() <= VALUE_ABS_MAX
}

/// The range shown on a value axis: it includes 0 and every value, with
/// `headroom` (a share of the range) beyond the extremes, and is never empty.
fn value_range(values: impl IntoIterator<Item = f64>, headroom: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0_f64, 0.0_f64);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo == hi {
        return (0.0, 1.0);
    }
    let pad = (hi - lo) * headroom;
    (
        if lo < 0.0 { lo - pad } else { 0.0 },
        if hi > 0.0 { hi + pad } else { 0.0 },
    )
}

/// The range shown on the x axis of a line chart: from the least to the
/// greatest x, widened around a single x so that the range is never empty.
fn key_range(keys: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let mut range: Option<(f64, f64)> = None;
    for k in keys {
        range = Some(match range {
            None => (k, k),
            Some((lo, hi)) => (lo.min(k), hi.max(k)),
        });
    }
    match range {
        None => (0.0, 1.0),
        Some((lo, hi)) if lo == hi => {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
            (lo - pad, hi + pad)
        }
        Some(range) => range,
    }
}

/// SI prefixes for large magnitudes, largest first.
const PREFIXES_LARGE: [(f64, &str); 6] = [
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
];
/// SI prefixes for magnitudes below 1e-3, which plain decimals write poorly.
const PREFIXES_SMALL: [(f64, &str); 2] = [(1e-6, "µ"), (1e-9, "n")];

/// The scale and SI prefix a number of magnitude `abs` is written with, or
/// None for magnitudes that only scientific notation writes well.
fn si_prefix(abs: f64) -> Option<(f64, &'static str)> {
    if abs == 0.0 || (1e-3..1e3).contains(&abs) {
        return Some((1.0, ""));
    }
    if !(1e-9..1e21).contains(&abs) {
        return None;
    }
    PREFIXES_LARGE
        .iter()
        .chain(PREFIXES_SMALL.iter())
        .find(|(scale, _)| abs >= *scale)
        .copied()
}

/// Writes `v` with an SI prefix and `decimals(scale)` decimals, trailing
/// zeros dropped: 1.25M, 200k, 0.5, 350µ.
fn format_si(v: f64, decimals: impl Fn(f64) -> usize) -> String {
    let Some((scale, prefix)) = si_prefix(v.abs()) else {
        return format!("{v:.1e}");
    };
    let mut text = format!("{:.*}", decimals(scale), v / scale);
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    if text == "-0" {
        text = "0".to_string();
    }
    text.push_str(prefix);
    text
}

/// Tick labels of an axis: SI prefixes, with as many decimals as the spacing
/// of ticks needs, so that neighbouring labels differ.
struct TickFormat {
    /// A bound below plotters' tick spacing: the range over twice the most
    /// ticks. Decimals it asks for beyond the real spacing are zeros, and
    /// trimmed.
    step: f64,
}

impl TickFormat {
    fn new((lo, hi): (f64, f64), ticks_max: usize) -> Self {
        let ticks = ticks_max.max(1) as f64;
        Self {
            step: (hi - lo) / (2.0 * ticks),
        }
    }

    fn format(&self, v: f64) -> String {
        // A tick meant to be 0 can come out as 1e-17 after rounding.
        if v.abs() < self.step * 1e-6 {
            return "0".to_string();
        }
        format_si(v, |scale| decimals_for(self.step / scale))
    }
}

/// The decimals that tell apart numbers `step` apart, at most 6.
fn decimals_for(step: f64) -> usize {
    if !(step > 0.0 && step.is_finite()) {
        return 0;
    }
    let decimals = (-step.log10()).ceil();
    if decimals <= 0.0 {
        0
    } else {
        decimals.min(6.0) as usize
    }
}

/// A value written in three significant digits: 1.23M, 45.7k, 0.5.
fn format_value(v: f64) -> String {
    format_si(v, |scale| {
        let digits_before_point = (v.abs() / scale).log10().floor();
        if digits_before_point.is_finite() && digits_before_point < 2.0 {
            (2.0 - digits_before_point.max(0.0)) as usize
        } else {
            0
        }
    })
}

/// A line chart ready to draw: drawable points only, ranges decided.
struct LinePlan {
    title: String,
    x_label: String,
    y_label: String,
    names: Vec<String>,
    lines: Vec<Vec<(f64, f64)>>,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

fn plan_lines(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> LinePlan {
    let lines: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|&(x, y)| plottable(x) && plottable(y))
                .collect()
        })
        .collect();
    let points = || lines.iter().flatten();
    LinePlan {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        names: series.iter().map(|s| s.name.clone()).collect(),
        x_range: key_range(points().map(|p| p.0)),
        y_range: value_range(points().map(|p| p.1), HEADROOM_LINES),
        lines,
    }
}

/// A grouped bar chart ready to draw.
struct BarPlan {
    title: String,
    y_label: String,
    groups: Vec<String>,
    series: Vec<String>,
    /// `values[group][series]`; None where no drawable value was given.
    values: Vec<Vec<Option<f64>>>,
    y_range: (f64, f64),
}

fn plan_bars(title: &str, y_label: &str, bars: &[Bar]) -> BarPlan {
    let mut groups = Names::default();
    let mut series = Names::default();
    let mut cells: Vec<(usize, usize, Option<f64>)> = Vec::with_capacity(bars.len());
    for bar in bars {
        let group = groups.index_of(&bar.group);
        let series = series.index_of(&bar.series);
        cells.push((group, series, Some(bar.value).filter(|&v| plottable(v))));
    }
    let mut values = vec![vec![None; series.names.len()]; groups.names.len()];
    for (group, series, value) in cells {
        if let Some(cell) = values.get_mut(group).and_then(|row| row.get_mut(series)) {
            *cell = value;
        }
    }
    let y_range = value_range(values.iter().flatten().flatten().copied(), HEADROOM_BARS);
    BarPlan {
        title: title.to_string(),
        y_label: y_label.to_string(),
        groups: groups.names,
        series: series.names,
        values,
        y_range,
    }
}

/// Distinct names in first-seen order.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Names {
    /// The position of `name`, which is appended if it is new.
    fn index_of(&mut self, name: &str) -> usize {
        if let Some(&index) = self.index.get(name) {
            return index;
        }
        let index = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), index);
        index
    }
}

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

/// Who draws the glyphs of a text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextDrawing {
    /// The file keeps the text as text (SVG), for its viewer to draw.
    Viewer,
    /// The text is drawn here, pixel by pixel (bitmaps).
    Glyphs,
}

/// A plotters backend that measures text with the bundled font and, for
/// bitmaps, draws it too; everything else passes through to `inner`.
///
/// Text is placed as plotters-svg places it, so that an SVG and a PNG of the
/// same chart agree: the em is the style's size over [`EM_PER_SIZE_DIVISOR`];
/// the anchor's horizontal part picks the start, middle or end of the advance
/// width; its vertical part puts the baseline 0.76 em below the anchor (top),
/// half an x-height below it (centre) or half an x-height above it (bottom).
/// The rotation turns the text about the anchor.
struct Typeset<B> {
    inner: B,
    font: FontRef<'static>,
    drawing: TextDrawing,
}

/// A line of text laid out on a baseline at y = 0, starting at x = 0.
struct TextLayout {
    glyphs: Vec<Glyph>,
    width_px: f32,
    height_px: f32,
    em_px: f32,
}

impl<B: DrawingBackend> Typeset<B> {
    fn new(inner: B, font: FontRef<'static>, drawing: TextDrawing) -> Self {
        Self {
            inner,
            font,
            drawing,
        }
    }

    fn layout(&self, text: &str, size: f64) -> TextLayout {
        let em_px = (size / EM_PER_SIZE_DIVISOR) as f32;
        let units_per_em = self
            .font
            .units_per_em()
            .unwrap_or_else(|| self.font.height_unscaled());
        // ab_glyph scales by the height from descent to ascent, not by the em.
        let scale = PxScale::from(em_px * self.font.height_unscaled() / units_per_em);
        let scaled = self.font.as_scaled(scale);
        let mut glyphs = Vec::with_capacity(text.len());
        let mut caret = 0.0_f32;
        let mut previous = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(previous) = previous {
                caret += scaled.kern(previous, id);
            }
            glyphs.push(id.with_scale_and_position(scale, ab_glyph::point(caret, 0.0)));
            caret += scaled.h_advance(id);
            previous = Some(id);
        }
        TextLayout {
            glyphs,
            width_px: caret,
            height_px: scaled.height(),
            em_px,
        }
    }

    /// The x-height as a share of the em ("ex" in CSS).
    fn x_height_em(&self) -> f32 {
        let units_per_em = self.font.units_per_em().unwrap_or(1.0);
        match self.font.outline(self.font.glyph_id('x')) {
            // ab_glyph's unscaled bounds hold the top (font y_max) in min.y.
            Some(outline) => (outline.bounds.max.y - outline.bounds.min.y).abs() / units_per_em,
            None => 0.5,
        }
    }

    fn draw_glyphs<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (anchor_x, anchor_y): BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let layout = self.layout(text, style.size());
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -layout.width_px / 2.0,
            HPos::Right => -layout.width_px,
        };
        let half_ex = self.x_height_em() * layout.em_px / 2.0;
        let baseline = match anchor.v_pos {
            VPos::Top => 0.76 * layout.em_px,
            VPos::Center => half_ex,
            VPos::Bottom => -half_ex,
        };
        let transform = style.transform();
        for glyph in layout.glyphs {
            // A space has no outline; a character the font lacks draws as
            // its empty box.
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            let inner = &mut self.inner;
            let mut result = Ok(());
            outline.draw(|x, y, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                let text_x = (bounds.min.x + x as f32 + dx).round() as i32;
                let text_y = (bounds.min.y + y as f32 + baseline).round() as i32;
                let (x, y) = transform.transform(text_x, text_y);
                let pixel = BackendColor {
                    alpha: colour.alpha * f64::from(coverage.min(1.0)),
                    rgb: colour.rgb,
                };
                result = inner.draw_pixel((anchor_x + x, anchor_y + y), pixel);
            });
            result?;
        }
        Ok(())
    }
}

impl<B: DrawingBackend> DrawingBackend for Typeset<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        colour: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, colour)
    }

    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        centre: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(centre, radius, style, fill)
    }

    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vertices, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        anchor: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        match self.drawing {
            TextDrawing::Viewer => self.inner.draw_text(text, style, anchor),
            TextDrawing::Glyphs => self.draw_glyphs(text, style, anchor),
        }
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let layout = self.layout(text, style.size());
        Ok((
            layout.width_px.ceil() as u32,
            layout.height_px.ceil() as u32,
        ))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

fn draw_error(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn text_style(size: u32) -> TextStyle<'static> {
    (FONT_FAMILY, size).into_font().color(&BLACK)
}

/// `text` without control characters, with its middle cut out and replaced
/// by "…" until it is at most `width_px_max` wide (or is "…" alone). The
/// middle goes because benchmark names tend to share a start and differ at
/// the end ("fill-random-4k-lsm", "fill-random-4k-btree").
fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    width_px_max: u32,
) -> Result<String, String> {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
    let whole: String = chars.iter().collect();
    if chars.len() <= TEXT_CHARS_MAX && text_width_px(area, &whole, style)? <= width_px_max {
        return Ok(whole);
    }
    let mut kept = chars.len().min(TEXT_CHARS_MAX);
    loop {
        let head: String = chars.iter().take(kept.div_ceil(2)).collect();
        let tail: String = chars.iter().skip(chars.len() - kept / 2).collect();
        let candidate = format!("{}…{}", head.trim_end(), tail.trim_start());
        if kept == 0 || text_width_px(area, &candidate, style)? <= width_px_max {
            return Ok(candidate);
        }
        kept -= 1;
    }
}

fn text_width_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
) -> Result<u32, String> {
    Ok(area.estimate_text_size(text, style).map_err(draw_error)?.0)
}

/// Fills the background, draws the title and returns the area below it.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(draw_error)?;
    let inner = root.margin(MARGIN_PX, MARGIN_PX, MARGIN_PX, MARGIN_PX);
    let style = text_style(TITLE_FONT_SIZE);
    let title = fit_text(&inner, title, &style, inner.dim_in_pixel().0)?;
    let body = inner.titled(&title, style).map_err(draw_error)?;
    // Room between the title and the top of the chart.
    Ok(body.margin(8, 0, 0, 0))
}

#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Block,
}

/// A legend to the right of the chart, so that it never hides data.
struct Legend<DB: DrawingBackend> {
    area: DrawingArea<DB, Shift>,
    /// The names shown, fitted to the legend's width, one row each.
    names: Vec<String>,
    /// "… and N more", when there are more names than rows.
    more: Option<String>,
}

const LEGEND_SWATCH_PX: u32 = 26;
const LEGEND_GAP_PX: u32 = 8;
const LEGEND_ROW_PX: u32 = LEGEND_FONT_SIZE * 8 / 5;

/// Splits `body` into the chart's area and a legend's just wide enough for
/// the names (none at all without names).
fn split_legend<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    names: &[String],
) -> Result<(DrawingArea<DB, Shift>, Legend<DB>), String> {
    if names.is_empty() {
        let legend = Legend {
            area: body.clone(),
            names: Vec::new(),
            more: None,
        };
        return Ok((body.clone(), legend));
    }
    let style = text_style(LEGEND_FONT_SIZE);
    let (body_width_px, body_height_px) = body.dim_in_pixel();
    let rows = (body_height_px / LEGEND_ROW_PX).max(1) as usize;
    let (shown, more) = if names.len() > rows {
        let shown = rows - 1;
        (shown, Some(format!("… and {} more", names.len() - shown)))
    } else {
        (names.len(), None)
    };
    let decoration_px = LEGEND_SWATCH_PX + LEGEND_GAP_PX * 3;
    let text_width_px_max =
        ((f64::from(body_width_px) * LEGEND_WIDTH_SHARE) as u32).saturating_sub(decoration_px);
    let mut fitted = Vec::with_capacity(shown);
    let mut width_px = match &more {
        Some(more) => text_width_px(body, more, &style)? + LEGEND_GAP_PX * 2,
        None => 0,
    };
    for name in names.iter().take(shown) {
        let name = fit_text(body, name, &style, text_width_px_max)?;
        width_px = width_px.max(text_width_px(body, &name, &style)? + decoration_px);
        fitted.push(name);
    }
    let (chart, area) = body.split_horizontally(body_width_px.saturating_sub(width_px));
    let legend = Legend {
        area,
        names: fitted,
        more,
    };
    Ok((chart, legend))
}

impl<DB: DrawingBackend> Legend<DB> {
    fn draw(&self, swatch: Swatch) -> Result<(), String> {
        let style = text_style(LEGEND_FONT_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        let x0 = LEGEND_GAP_PX as i32;
        let x1 = x0 + LEGEND_SWATCH_PX as i32;
        let text_x = x1 + LEGEND_GAP_PX as i32;
        let row_y = |row: usize| (LEGEND_ROW_PX as usize * row + LEGEND_ROW_PX as usize / 2) as i32;
        for (row, name) in self.names.iter().enumerate() {
            let y = row_y(row);
            let colour = series_colour(row);
            match swatch {
                Swatch::Line => {
                    self.area
                        .draw(&PathElement::new(
                            vec![(x0, y), (x1, y)],
                            colour.stroke_width(3),
                        ))
                        .map_err(draw_error)?;
                    self.area
                        .draw(&Circle::new(((x0 + x1) / 2, y), 3, colour.filled()))
                        .map_err(draw_error)?;
                }
                Swatch::Block => {
                    self.area
                        .draw(&Rectangle::new([(x0, y - 7), (x1, y + 7)], colour.filled()))
                        .map_err(draw_error)?;
                }
            }
            self.area
                .draw_text(name, &style, (text_x, y))
                .map_err(draw_error)?;
        }
        if let Some(more) = &self.more {
            let style = style.color(&TEXT_MUTED);
            self.area
                .draw_text(more, &style, (x0, row_y(self.names.len())))
                .map_err(draw_error)?;
        }
        Ok(())
    }
}

/// The width of the y axis' label area: the widest tick label, tick marks,
/// and the rotated axis label.
fn y_label_area_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    ticks: &TickFormat,
    (lo, hi): (f64, f64),
) -> Result<u32, String> {
    let style = text_style(TICK_FONT_SIZE);
    let mut widest_px = 0;
    for v in [lo, hi, (lo + hi) / 2.0, lo + (hi - lo) * 0.9] {
        widest_px = widest_px.max(text_width_px(area, &ticks.format(v), &style)?);
    }
    Ok(widest_px + 14 + AXIS_LABEL_FONT_SIZE * 3 / 2)
}

fn draw_no_data<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    (x_lo, x_hi): (f64, f64),
    (y_lo, y_hi): (f64, f64),
) -> Result<(), String> {
    let style = text_style(AXIS_LABEL_FONT_SIZE)
        .color(&TEXT_MUTED)
        .pos(Pos::new(HPos::Center, VPos::Center));
    let centre = ((x_lo + x_hi) / 2.0, (y_lo + y_hi) / 2.0);
    chart
        .draw_series(std::iter::once(Text::new("no data", centre, style)))
        .map_err(draw_error)?;
    Ok(())
}

impl Chart for LinePlan {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = frame(root, &self.title)?;
        let (plot, legend) = split_legend(&body, &self.names)?;
        let x_ticks = TickFormat::new(self.x_range, TICKS_X_MAX);
        let y_ticks = TickFormat::new(self.y_range, TICKS_Y_MAX);
        let (plot_width_px, plot_height_px) = plot.dim_in_pixel();
        let x_label_area_px = TICK_FONT_SIZE + AXIS_LABEL_FONT_SIZE + 28;
        let axis_style = text_style(AXIS_LABEL_FONT_SIZE);
        let x_label = fit_text(&plot, &self.x_label, &axis_style, plot_width_px)?;
        let y_label_px_max = plot_height_px.saturating_sub(x_label_area_px + 2 * CHART_MARGIN_PX);
        let y_label = fit_text(&plot, &self.y_label, &axis_style, y_label_px_max)?;
        let mut chart = ChartBuilder::on(&plot)
            .margin(CHART_MARGIN_PX)
            .x_label_area_size(x_label_area_px)
            .y_label_area_size(y_label_area_px(&plot, &y_ticks, self.y_range)?)
            .build_cartesian_2d(
                self.x_range.0..self.x_range.1,
                self.y_range.0..self.y_range.1,
            )
            .map_err(draw_error)?;
        let x_format = |v: &f64| x_ticks.format(*v);
        let y_format = |v: &f64| y_ticks.format(*v);
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_labels(TICKS_X_MAX)
            .y_labels(TICKS_Y_MAX)
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style(text_style(TICK_FONT_SIZE))
            .axis_desc_style(axis_style)
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .max_light_lines(LIGHT_LINES_MAX)
            .draw()
            .map_err(draw_error)?;
        for (index, line) in self.lines.iter().enumerate() {
            let colour = series_colour(index);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    line.clone(),
                    colour.stroke_width(2),
                )))
                .map_err(draw_error)?;
            if line.len() <= MARKER_POINTS_MAX {
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(draw_error)?;
            }
        }
        if self.lines.iter().all(Vec::is_empty) {
            draw_no_data(&mut chart, self.x_range, self.y_range)?;
        }
        legend.draw(Swatch::Line)?;
        Ok(())
    }
}

impl Chart for BarPlan {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = frame(root, &self.title)?;
        let (plot, legend) = split_legend(&body, &self.series)?;
        let y_ticks = TickFormat::new(self.y_range, TICKS_Y_MAX);
        let x_label_area_px = TICK_FONT_SIZE + 20;
        let axis_style = text_style(AXIS_LABEL_FONT_SIZE);
        let y_label_px_max = plot
            .dim_in_pixel()
            .1
            .saturating_sub(x_label_area_px + 2 * CHART_MARGIN_PX);
        let y_label = fit_text(&plot, &self.y_label, &axis_style, y_label_px_max)?;
        let group_count = self.groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&plot)
            .margin(CHART_MARGIN_PX)
            .x_label_area_size(x_label_area_px)
            .y_label_area_size(y_label_area_px(&plot, &y_ticks, self.y_range)?)
            .build_cartesian_2d(0.0..group_count, self.y_range.0..self.y_range.1)
            .map_err(draw_error)?;
        let y_format = |v: &f64| y_ticks.format(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_label)
            .y_labels(TICKS_Y_MAX)
            .y_label_formatter(&y_format)
            .label_style(text_style(TICK_FONT_SIZE))
            .axis_desc_style(axis_style)
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .max_light_lines(LIGHT_LINES_MAX)
            .draw()
            .map_err(draw_error)?;

        // Each group has a slot one unit wide; its bars share the middle of it.
        let series_count = self.series.len().max(1) as f64;
        let bar_slot = BAR_GROUP_FILL / series_count;
        let bar_x = |group: usize, series: usize| {
            let left = group as f64 + (1.0 - BAR_GROUP_FILL) / 2.0 + series as f64 * bar_slot;
            let inset = bar_slot * (1.0 - BAR_FILL) / 2.0;
            (left + inset, left + bar_slot - inset)
        };
        let bars = || {
            self.values.iter().enumerate().flat_map(|(group, row)| {
                row.iter()
                    .enumerate()
                    .filter_map(move |(series, value)| value.map(|v| (group, series, v)))
            })
        };
        chart
            .draw_series(bars().map(|(group, series, v)| {
                let (x0, x1) = bar_x(group, series);
                Rectangle::new([(x0, 0.0), (x1, v)], series_colour(series).filled())
            }))
            .map_err(draw_error)?;

        // Where things land, in pixels, taken before drawing borrows the chart.
        let pixel_x = |x: f64| chart.backend_coord(&(x, 0.0)).0;
        let bar_width_px = {
            let (x0, x1) = bar_x(0, 0);
            pixel_x(x1) - pixel_x(x0)
        };
        let slot_width_px = pixel_x(1.0) - pixel_x(0.0);
        let group_centres_px: Vec<i32> = (0..self.groups.len())
            .map(|group| pixel_x(group as f64 + 0.5))
            .collect();
        let axis_y_px = chart.backend_coord(&(0.0, self.y_range.0)).1;

        // Values are written on the bars only if every one fits its bar's width.
        let value_style = text_style(BAR_VALUE_FONT_SIZE).color(&TEXT_MUTED);
        let mut labels_fit = true;
        for (_, _, v) in bars() {
            let width_px = text_width_px(&plot, &format_value(v), &value_style)?;
            labels_fit &= i64::from(width_px) <= i64::from(bar_width_px) + 4;
        }
        if labels_fit {
            let above = value_style.pos(Pos::new(HPos::Center, VPos::Bottom));
            let below = value_style.pos(Pos::new(HPos::Center, VPos::Top));
            chart
                .draw_series(bars().map(|(group, series, v)| {
                    let (x0, x1) = bar_x(group, series);
                    let (offset_px, style) = if v >= 0.0 {
                        (-3, above.clone())
                    } else {
                        (3, below.clone())
                    };
                    EmptyElement::at(((x0 + x1) / 2.0, v))
                        + Text::new(format_value(v), (0, offset_px), style)
                }))
                .map_err(draw_error)?;
        }

        // Group names go under the axis, centred on their slots and cut to fit.
        let group_style = text_style(TICK_FONT_SIZE).pos(Pos::new(HPos::Center, VPos::Top));
        let name_width_px_max = u32::try_from(slot_width_px - 6).unwrap_or(0);
        for (name, &centre_px) in self.groups.iter().zip(&group_centres_px) {
            let name = fit_text(root, name, &group_style, name_width_px_max)?;
            root.draw_text(&name, &group_style, (centre_px, axis_y_px + 8))
                .map_err(draw_error)?;
        }

        if bars().next().is_none() {
            draw_no_data(&mut chart, (0.0, group_count), self.y_range)?;
        }
        legend.draw(Swatch::Block)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
}
