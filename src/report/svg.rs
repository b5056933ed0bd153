//! Scatter-and-frontier charts as self-contained SVG: no script, no external font or file, so
//! that a report opens anywhere, offline, and prints. Axes carry their unit; a wide positive
//! range is drawn on a log scale; every frontier point has a tooltip naming its configuration.

use std::fmt::Write as _;

/// Twelve colours readable on white and told apart with common colour-vision deficiencies:
/// Okabe & Ito's palette ("Color Universal Design", 2008) without its yellow and black, then
/// the darker six of Paul Tol's "muted" scheme ("Colour schemes", SRON/EPS/TN/09-002, 2021).
pub const PALETTE: [&str; 12] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#332288", "#882255",
    "#117733", "#999933", "#44AA99", "#AA4499",
];

/// Marker shapes: what a point is beyond its series (owned or cloud).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
}

impl Shape {
    pub const ALL: [Shape; 4] = [
        Shape::Circle,
        Shape::Triangle,
        Shape::Square,
        Shape::Diamond,
    ];
}

/// How a series (one hardware) is drawn: its colour, and a dashed line once the colours repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: &'static str,
    pub dashed: bool,
}

impl Style {
    /// The style of the `i`-th GPU of the catalog: the same GPU has the same colour in every
    /// report, whatever else the run holds.
    pub fn nth(i: usize) -> Style {
        Style {
            color: PALETTE[i % PALETTE.len()],
            dashed: (i / PALETTE.len()) % 2 == 1,
        }
    }
}

/// Which axis a [`Limit`] bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Along {
    X,
    Y,
}

/// A requirement drawn as a line across the plot at `value` of one axis (an SLO).
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub along: Along,
    pub value: f64,
    pub label: String,
}

/// Colour of requirement lines.
const LIMIT: &str = "#B00020";

/// A marker of `shape` centred on (x, y), `r` its circle radius (other shapes have about the
/// same area); `paint` is its fill/stroke attributes and `tip` its tooltip (empty for none).
fn marker(s: &mut String, shape: Shape, x: f64, y: f64, r: f64, paint: &str, tip: &str) {
    let title = if tip.is_empty() {
        String::new()
    } else {
        format!("<title>{}</title>", escape(tip))
    };
    let close = if title.is_empty() {
        "/>".to_string()
    } else {
        format!(
            ">{title}</{}>",
            if shape == Shape::Circle {
                "circle"
            } else {
                "path"
            }
        )
    };
    match shape {
        Shape::Circle => {
            let _ = write!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" {paint}{close}"#
            );
        }
        Shape::Square => {
            let h = r * 0.89;
            let _ = write!(
                s,
                r#"<path d="M{:.1} {:.1}h{:.1}v{:.1}h{:.1}z" {paint}{close}"#,
                x - h,
                y - h,
                2.0 * h,
                2.0 * h,
                -2.0 * h
            );
        }
        Shape::Triangle => {
            let h = r * 1.35;
            let _ = write!(
                s,
                r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}z" {paint}{close}"#,
                y - h,
                x + 0.87 * h,
                y + 0.5 * h,
                x - 0.87 * h,
                y + 0.5 * h
            );
        }
        Shape::Diamond => {
            let h = r * 1.25;
            let _ = write!(
                s,
                r#"<path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}z" {paint}{close}"#,
                y - h,
                x + h,
                y + h,
                x - h
            );
        }
    }
}

/// Colour of the frontier of all series together.
const GLOBAL: &str = "#000000";

/// A drawn point; `tip` is its tooltip (empty for none), `shape` its marker.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub tip: String,
    pub shape: Shape,
}

/// One hardware: its frontier (drawn as a line with markers) and its sampled points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub style: Style,
    pub frontier: Vec<Point>,
    pub cloud: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// The frontier of all series together, drawn under them as a wide band.
    pub global: Vec<Point>,
    /// What each marker shape the points use means ("owned", "cloud"), for the legend.
    pub shapes: Vec<(Shape, String)>,
    /// Requirements drawn across the plot; the axes reach them.
    pub limits: Vec<Limit>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    /// log10
    Log,
}

/// Ranges wider than this ratio (all values positive) are drawn on a log scale.
const LOG_RATIO: f64 = 30.0;

/// Ticks an axis draws at most (a nice linear step gives 5 to 11).
const MAX_TICKS: usize = 20;

/// An axis: its scale, its drawn domain and its ticks.
#[derive(Debug, Clone, PartialEq)]
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Axis {
    /// The axis of the finite `values`: any finite range, from subnormal to 1.8e308, equal
    /// ends included, gives a finite domain with at most [`MAX_TICKS`] ticks.
    fn fit(values: impl Iterator<Item = f64>) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if lo > 0.0 && hi / lo >= LOG_RATIO {
            return Axis::log(lo, hi);
        }
        // Linear axes of positive quantities start at zero unless the data sit far from it.
        if lo > 0.0 && lo < 0.5 * hi {
            lo = 0.0;
        }
        // Halves, so that neither the span nor the padding overflows near f64::MAX.
        let half_span = hi / 2.0 - lo / 2.0;
        let magnitude = hi.abs().max(lo.abs());
        if half_span <= f64::EPSILON * magnitude.max(f64::MIN_POSITIVE) {
            // One value (or all within rounding): a tenth of it either side, or 1 around 0.
            let pad = if magnitude == 0.0 {
                1.0
            } else {
                magnitude * 0.1
            };
            (lo, hi) = (lo - pad, hi + pad);
            if !(lo.is_finite() && hi.is_finite()) {
                (lo, hi) = (lo.max(-f64::MAX), hi.min(f64::MAX));
            }
        }
        let step = nice_step(hi / 5.0 - lo / 5.0);
        let (nice_lo, nice_hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
        let n = (nice_hi / step - nice_lo / step).round();
        if !(step > 0.0 && nice_lo.is_finite() && nice_hi.is_finite() && n.is_finite())
            || n > MAX_TICKS as f64
        {
            // No whole steps fit the range in f64: the ends alone.
            return Axis {
                scale: Scale::Linear,
                lo,
                hi,
                ticks: vec![lo, hi],
            };
        }
        Axis {
            scale: Scale::Linear,
            lo: nice_lo,
            hi: nice_hi,
            ticks: (0..=n as i64).map(|i| nice_lo + i as f64 * step).collect(),
        }
    }

    /// Whole decades around the data; 2 and 5 between them when the range spans fewer than
    /// three decades, every k-th decade when it spans more than [`MAX_TICKS`].
    fn log(lo: f64, hi: f64) -> Axis {
        // Decades whose powers of ten are normal, finite numbers.
        let d0 = (lo.log10().floor() as i32).clamp(f64::MIN_10_EXP, f64::MAX_10_EXP - 1);
        // At least one decade, also when both ends sit below the first normal one.
        let d1 = (hi.log10().ceil() as i32).clamp(d0 + 1, f64::MAX_10_EXP);
        let every = ((d1 - d0) / MAX_TICKS as i32 + 1).max(1);
        let mut ticks = Vec::new();
        for d in (d0..=d1).step_by(every as usize) {
            let base = decade(d);
            ticks.push(base);
            if d1 - d0 < 3 && d < d1 {
                ticks.extend([2.0 * base, 5.0 * base]);
            }
        }
        Axis {
            scale: Scale::Log,
            lo: decade(d0),
            hi: decade(d1),
            ticks,
        }
    }

    /// Where `v` falls along the axis, 0 at `lo` and 1 at `hi`.
    fn fraction(&self, v: f64) -> f64 {
        match self.scale {
            // In halves, so that a span of the whole f64 range stays finite.
            Scale::Linear => (v / 2.0 - self.lo / 2.0) / (self.hi / 2.0 - self.lo / 2.0),
            Scale::Log => (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
        }
    }
}

/// 10^d, exactly as the decimal literal reads (`powi` drifts in the last digits far from 1).
fn decade(d: i32) -> f64 {
    format!("1e{d}").parse().unwrap_or(f64::NAN)
}

/// The step of about `raw` among 1, 2, 2.5 and 5 times a power of ten (Heckbert, "Nice numbers
/// for graph labels", Graphics Gems, 1990).
fn nice_step(raw: f64) -> f64 {
    // Powers of ten below 1e-307 are subnormal or zero; no step is that small.
    let magnitude = 10f64.powf(raw.log10().floor().max(f64::from(f64::MIN_10_EXP)));
    let f = raw / magnitude;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick label: k and M for thousands and millions, at most three significant digits.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    // Beyond billions and below thousandths: 1.5e12, 2.5e-5.
    if a >= 1e9 || (a > 0.0 && a < 1e-3) {
        let s = format!("{v:.2e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exponent}");
    }
    let (scaled, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let mut s = format!("{scaled:.3}");
    while s.contains('.') && (s.ends_with('0') || s.ends_with('.')) {
        s.pop();
    }
    if s == "-0" {
        s = "0".into();
    }
    format!("{s}{suffix}")
}

/// Text for XML and HTML: the five predefined entities escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

// Layout, in SVG user units.
const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 210.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 58.0;

impl Chart {
    pub fn render(&self) -> String {
        // The axes fit the frontiers, which are what the chart is about; sampled points
        // beyond them are clipped to the plot (they only give context). Without frontiers the
        // axes fit the sample.
        let frontiers = || {
            self.series
                .iter()
                .flat_map(|s| s.frontier.iter().map(|p| (p.x, p.y)))
                .chain(self.global.iter().map(|p| (p.x, p.y)))
        };
        let cloud = || self.series.iter().flat_map(|s| s.cloud.iter().copied());
        let has_frontier = frontiers().next().is_some();
        let limits = |along: Along| {
            self.limits
                .iter()
                .filter(move |l| l.along == along)
                .map(|l| l.value)
        };
        let fit = |axis: fn((f64, f64)) -> f64, along: Along| {
            if has_frontier {
                Axis::fit(frontiers().map(axis).chain(limits(along)))
            } else {
                Axis::fit(cloud().map(axis).chain(limits(along)))
            }
        };
        let xa = fit(|p| p.0, Along::X);
        let ya = fit(|p| p.1, Along::Y);
        let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let px = |x: f64| LEFT + xa.fraction(x) * pw;
        let py = |y: f64| TOP + (1.0 - ya.fraction(y)) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"##
        );
        let _ = write!(s, "<title>{}</title>", escape(&self.title));
        let _ = write!(
            s,
            r##"<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/><text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"##,
            escape(&self.title)
        );
        // Grid and tick labels.
        for &t in &xa.ticks {
            let x = px(t);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}</text>"##,
                TOP + ph,
                TOP + ph + 16.0,
                tick_label(t)
            );
        }
        for &t in &ya.ticks {
            let y = py(t);
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
                LEFT + pw,
                LEFT - 6.0,
                y + 4.0,
                tick_label(t)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        let log_note = |a: &Axis| {
            if a.scale == Scale::Log {
                " (log scale)"
            } else {
                ""
            }
        };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13">{}{}</text>"##,
            LEFT + pw / 2.0,
            HEIGHT - 14.0,
            escape(&self.x_label),
            log_note(&xa)
        );
        let _ = write!(
            s,
            r##"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle" font-size="13">{}{}</text>"##,
            TOP + ph / 2.0,
            escape(&self.y_label),
            log_note(&ya)
        );
        // Sampled points, faint, then the global frontier as a band, then each frontier.
        let clip = format!("plot-{:016x}", fingerprint(&self.title));
        let _ = write!(
            s,
            r#"<clipPath id="{clip}"><rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/></clipPath><g class="cloud" fill-opacity="0.22" clip-path="url(#{clip})">"#
        );
        for series in &self.series {
            for &(x, y) in &series.cloud {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="1.8" fill="{}"/>"#,
                    px(x),
                    py(y),
                    series.style.color
                );
            }
        }
        s.push_str("</g>");
        if !self.global.is_empty() {
            let _ = write!(
                s,
                r#"<polyline class="global" points="{}" fill="none" stroke="{GLOBAL}" stroke-opacity="0.18" stroke-width="9" stroke-linejoin="round" stroke-linecap="round"/>"#,
                polyline(&self.global, &px, &py)
            );
        }
        // Requirements: a dashed line across the plot, labelled at its end.
        for l in &self.limits {
            let (x1, y1, x2, y2, tx, ty, anchor) = match l.along {
                // Labelled on the side with room: inside the plot.
                Along::X => {
                    let x = px(l.value);
                    if x < LEFT + pw / 2.0 {
                        (x, TOP, x, TOP + ph, x + 4.0, TOP + 12.0, "start")
                    } else {
                        (x, TOP, x, TOP + ph, x - 4.0, TOP + 12.0, "end")
                    }
                }
                Along::Y => {
                    let y = py(l.value);
                    (LEFT, y, LEFT + pw, y, LEFT + pw - 4.0, y - 4.0, "end")
                }
            };
            let _ = write!(
                s,
                r#"<g class="limit"><line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{LIMIT}" stroke-width="1.5" stroke-dasharray="5 4"/><text x="{tx:.1}" y="{ty:.1}" text-anchor="{anchor}" fill="{LIMIT}" font-size="11">{}</text></g>"#,
                escape(&l.label)
            );
        }
        for series in &self.series {
            let st = series.style;
            let _ = write!(
                s,
                r#"<g class="series" data-name="{}"><polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"#,
                escape(&series.name),
                polyline(&series.frontier, &px, &py),
                st.color,
                dash(st)
            );
            let paint = format!(r#"fill="{}""#, st.color);
            for p in &series.frontier {
                marker(&mut s, p.shape, px(p.x), py(p.y), 3.5, &paint, &p.tip);
            }
            s.push_str("</g>");
        }
        let ring = format!(r#"fill="none" stroke="{GLOBAL}" stroke-width="1.5""#);
        for p in &self.global {
            marker(&mut s, Shape::Circle, px(p.x), py(p.y), 5.5, &ring, &p.tip);
        }
        // Legend.
        let lx = LEFT + pw + 18.0;
        let mut ly = TOP + 8.0;
        for series in &self.series {
            let st = series.style;
            let _ = write!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{}" stroke-width="2"{}/>"#,
                lx + 24.0,
                st.color,
                dash(st)
            );
            marker(
                &mut s,
                Shape::Circle,
                lx + 12.0,
                ly,
                3.5,
                &format!(r#"fill="{}""#, st.color),
                "",
            );
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 32.0,
                ly + 4.0,
                escape(&series.name)
            );
            ly += 20.0;
        }
        if !self.global.is_empty() {
            let _ = write!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{GLOBAL}" stroke-opacity="0.18" stroke-width="9" stroke-linecap="round"/><circle cx="{:.1}" cy="{ly}" r="5.5" fill="none" stroke="{GLOBAL}" stroke-width="1.5"/><text x="{:.1}" y="{:.1}">all hardware</text>"#,
                lx + 24.0,
                lx + 12.0,
                lx + 32.0,
                ly + 4.0
            );
            ly += 22.0;
        }
        if !self.shapes.is_empty() {
            for (shape, meaning) in &self.shapes {
                marker(&mut s, *shape, lx + 12.0, ly, 3.5, r##"fill="#555""##, "");
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                    lx + 32.0,
                    ly + 4.0,
                    escape(meaning)
                );
                ly += 20.0;
            }
        }
        if self.series.iter().any(|s| !s.cloud.is_empty()) {
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{ly}" r="2.5" fill="#777" fill-opacity="0.4"/><text x="{:.1}" y="{:.1}">sampled configurations</text>"##,
                lx + 12.0,
                lx + 32.0,
                ly + 4.0
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// A stable id for a chart (FNV-1a of its title), so several charts on one page keep their
/// clip paths apart.
fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn dash(style: Style) -> &'static str {
    if style.dashed {
        r#" stroke-dasharray="6 3""#
    } else {
        ""
    }
}

fn polyline(points: &[Point], px: &impl Fn(f64) -> f64, py: &impl Fn(f64) -> f64) -> String {
    let mut s = String::new();
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{:.1},{:.1}", px(p.x), py(p.y));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axes_take_nice_steps_from_zero() {
        let a = Axis::fit([12.0, 97.0].into_iter());
        assert_eq!(a.scale, Scale::Linear);
        assert_eq!((a.lo, a.hi), (0.0, 100.0));
        assert_eq!(a.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        // Far from zero the axis keeps to the data.
        let a = Axis::fit([812.0, 1187.0].into_iter());
        assert_eq!((a.lo, a.hi), (800.0, 1200.0));
        assert_eq!(a.ticks, vec![800.0, 900.0, 1000.0, 1100.0, 1200.0]);
        // One value gets a range around it.
        let a = Axis::fit([5.0].into_iter());
        assert!(a.lo < 5.0 && a.hi > 5.0);
    }

    #[test]
    fn wide_positive_ranges_are_logarithmic() {
        let a = Axis::fit([3.0, 4500.0].into_iter());
        assert_eq!(a.scale, Scale::Log);
        assert_eq!((a.lo, a.hi), (1.0, 10_000.0));
        assert_eq!(a.ticks, vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]);
        let a = Axis::fit([2.0, 90.0].into_iter());
        assert_eq!(a.ticks, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert!((a.fraction(10.0) - 0.5).abs() < 1e-12);
    }

    /// Whatever finite values a run holds, the axis is finite, holds them, and has a few
    /// ticks, without allocating for more.
    fn assert_sane(values: &[f64]) {
        let a = Axis::fit(values.iter().copied());
        assert!(a.lo.is_finite() && a.hi.is_finite(), "{values:?}: {a:?}");
        assert!(a.lo < a.hi, "{values:?}: {a:?}");
        assert!(
            (2..=MAX_TICKS + 1).contains(&a.ticks.len()),
            "{values:?}: {a:?}"
        );
        assert!(a.ticks.iter().all(|t| t.is_finite()), "{values:?}: {a:?}");
        for &v in values {
            let f = a.fraction(v);
            assert!(f.is_finite(), "{values:?}: {v} at {f}");
            // Inside the drawn domain, but for what a log axis cannot reach: above 1e308,
            // subnormals below 1e-307.
            let unreachable = v > 1e308 || (v > 0.0 && v < 1e-307);
            assert!(
                (-1e-9..=1.0 + 1e-9).contains(&f) || unreachable,
                "{values:?}: {v} at {f}"
            );
        }
    }

    #[test]
    fn any_finite_range_fits_without_panicking() {
        let huge = f64::MAX;
        for values in [
            vec![1.797e308],
            vec![1.797e308, 1.796e308],
            vec![-huge, huge],
            vec![0.0, huge],
            vec![1.0, huge],
            vec![-huge],
            vec![0.0],
            vec![5e-324],
            vec![5e-324, 1e-323],
            vec![1e-300, 2e-300],
            vec![1.0, 1.0 + f64::EPSILON],
            vec![1e15, 1e15 + 1.0],
            vec![-3.0, -3.0],
            vec![-1e-320, 1e-320],
            vec![1e-308, 1e308],
            vec![1.915283174077408e-308, 3.40193389579453e-310],
        ] {
            assert_sane(&values);
        }
        // Equal ends: a tenth either side.
        let a = Axis::fit([40.0, 40.0].into_iter());
        assert_eq!((a.lo, a.hi), (36.0, 44.0));
        // 1e-308 to 1e308: the decades from 1e-307 (the first whose power of ten is normal)
        // to 1e308, 615 of them, every 31st ticked.
        let a = Axis::fit([1e-308, 1e308].into_iter());
        assert_eq!(a.scale, Scale::Log);
        assert_eq!((a.lo, a.hi), (1e-307, 1e308));
        assert_eq!(a.ticks.len(), 20);
        assert_eq!(a.ticks[..2], [1e-307, 1e-276]);
    }

    proptest::proptest! {
        #[test]
        fn every_finite_pair_fits(a in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
                                  b in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
            assert_sane(&[a, b]);
        }
    }

    #[test]
    fn steps_and_labels_read_well() {
        assert_eq!(nice_step(17.0), 20.0);
        assert_eq!(nice_step(0.23), 0.25);
        assert_eq!(nice_step(4100.0), 5000.0);
        assert_eq!(tick_label(2500.0), "2.5k");
        assert_eq!(tick_label(1_000_000.0), "1M");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(40.0), "40");
        assert_eq!(tick_label(1e308), "1e308");
        assert_eq!(tick_label(2.5e-5), "2.5e-5");
        assert_eq!(tick_label(-1.234e10), "-1.23e10");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(escape(r#"a<b & "c""#), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn a_chart_has_its_series_tooltips_and_legend() {
        let chart = Chart {
            title: "t < u".into(),
            x_label: "x (ms)".into(),
            y_label: "y (tokens/s)".into(),
            series: vec![Series {
                name: "h100-sxm".into(),
                style: Style::nth(0),
                frontier: vec![
                    Point {
                        x: 1.0,
                        y: 9.0,
                        tip: "a & b".into(),
                        shape: Shape::Circle,
                    },
                    Point {
                        x: 2.0,
                        y: 4.0,
                        tip: "c".into(),
                        shape: Shape::Triangle,
                    },
                ],
                cloud: vec![(1.5, 3.0)],
            }],
            global: vec![Point {
                x: 1.0,
                y: 9.0,
                tip: "a & b".into(),
                shape: Shape::Circle,
            }],
            shapes: vec![
                (Shape::Circle, "owned".into()),
                (Shape::Triangle, "cloud".into()),
            ],
            limits: Vec::new(),
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("<title>t &lt; u</title>"));
        assert!(svg.contains("<title>a &amp; b</title>"));
        assert!(svg.contains(">h100-sxm</text>"));
        assert!(svg.contains(">all hardware</text>"));
        assert!(svg.contains("x (ms)") && svg.contains("y (tokens/s)"));
        // Frontier markers: a circle (owned) and a triangle (cloud); one global marker, one
        // sampled point, four legend marks (series, all hardware, owned, sampled) and the
        // legend's triangle.
        assert_eq!(svg.matches("<circle").count(), 1 + 1 + 1 + 4);
        assert!(svg.contains(">owned</text>") && svg.contains(">cloud</text>"));
        assert!(svg.contains(r#"<g class="series" data-name="h100-sxm">"#));
        // A requirement beyond the data stretches its axis and is drawn with its label.
        let mut slo = chart.clone();
        slo.limits.push(Limit {
            along: Along::Y,
            value: 20.0,
            label: "SLO <= 20".into(),
        });
        let svg = slo.render();
        assert!(svg.contains(">20</text>") && svg.contains(">SLO &lt;= 20</text>"));
        // The axes fit the frontiers: a far sampled point is clipped, not given the scale.
        let mut far = chart.clone();
        far.series[0].cloud.push((1.5, 1000.0));
        let svg = far.render();
        assert!(svg.contains(">10</text>") && !svg.contains(">1k</text>"));
        assert!(svg.contains(r#"<g class="cloud" fill-opacity="0.22" clip-path="url(#plot-"#));
    }

    #[test]
    fn every_gpu_of_the_catalog_has_its_own_colour() {
        let n = crate::catalog::Catalog::builtin().unwrap().gpus.len();
        assert!(n <= PALETTE.len(), "{n} GPUs, {} colours", PALETTE.len());
        let colours: std::collections::HashSet<_> = (0..n).map(|i| Style::nth(i).color).collect();
        assert_eq!(colours.len(), n);
        assert!(!Style::nth(11).dashed && Style::nth(12).dashed);
        let mut s = String::new();
        marker(
            &mut s,
            Shape::Square,
            10.0,
            10.0,
            3.5,
            r#"fill="red""#,
            "a<b",
        );
        assert_eq!(
            s,
            r#"<path d="M6.9 6.9h6.2v6.2h-6.2z" fill="red"><title>a&lt;b</title></path>"#
        );
    }
}
