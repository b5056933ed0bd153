"""Checks a report rendered by headless Chromium: the DOM it built and the screenshot it took.

usage: check_render.py DOM.html SCREENSHOT.png CHARTS

The DOM must hold CHARTS inline charts, each with a legend, and the report's sections. The
screenshot must be a real render: mostly light page, and for every series colour a chart's
legend names, enough pixels of exactly that colour (markers and lines) to see the series.
"""

import re
import sys

from PIL import Image

# Pixels of a series colour that make it visible: a legend mark alone is about 40.
MIN_SERIES_PIXELS = 150


def fail(message):
    sys.exit(f"check_render.py: error: {message}")


def main(dom_path, png_path, charts):
    dom = open(dom_path, encoding="utf-8").read()
    found = dom.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"')
    if found != charts:
        fail(f"{dom_path}: {found} charts in the DOM, expected {charts}")
    for section in ("Summary", "Cheapest per hardware and ownership", "Pareto frontier",
                    "Configurations turned away", "Sweep definition"):
        if f">{section}</h2>" not in dom:
            fail(f"{dom_path}: no section {section!r}")
    if "<table>" not in dom:
        fail(f"{dom_path}: no table")
    colours = sorted(set(re.findall(r'<g class="series" data-name="[^"]*"><polyline points="[^"]*" fill="none" stroke="(#[0-9A-Fa-f]{6})"', dom)))
    if not colours:
        fail(f"{dom_path}: no series")

    image = Image.open(png_path).convert("RGB")
    width, height = image.size
    if width < 1000 or height < 1000:
        fail(f"{png_path}: {width}x{height} is not a page")
    counts = {rgb: n for n, rgb in image.getcolors(maxcolors=width * height)}
    light = sum(n for (r, g, b), n in counts.items() if r > 200 and g > 200 and b > 200)
    if light < 0.5 * width * height or light == width * height:
        fail(f"{png_path}: {light} of {width * height} pixels light: not a rendered page")
    for colour in colours:
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        n = counts.get(rgb, 0)
        if n < MIN_SERIES_PIXELS:
            fail(f"{png_path}: series colour {colour} has {n} pixels; the chart is not drawn")
    print(f"ok: {png_path}: {charts} charts, series {', '.join(colours)} drawn")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
