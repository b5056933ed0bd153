"""Checks that a report prints with every table column on the page.

usage: check_print.py mark REPORT.html MARKED.html PAGE
       check_print.py check MARKED.html PRINTED.pdf PNG_DIR

`mark` writes a copy of the report whose every table header cell starts with a marker naming
its table and column (`zq<table>c<column>qz`, kept on one line) and whose printed page is PAGE
(a CSS @page size such as "A4 portrait"). `check` reads the PDF Chromium printed from that copy
and fails unless every marker is found, each time inside the page box, and the page's right
margin is blank on every page rendered (the pages are rendered to PNG_DIR).
"""

import os
import re
import sys

import pypdfium2 as pdfium

MARKER = re.compile(r"zq(\d+)c(\d+)qz")
# The right margin, in points, that must hold no ink (the report's @page margin is 12 mm, 34 pt).
BLANK_RIGHT_PT = 20


def fail(message):
    sys.exit(f"check_print.py: error: {message}")


def mark(report, marked, page):
    html = open(report, encoding="utf-8").read()
    tables = html.split("<table>")
    out = [tables[0]]
    for t, table in enumerate(tables[1:]):
        head, sep, rest = table.partition("</thead>")
        cells = head.split("<th>")
        head = cells[0] + "".join(
            f'<th><span class="mk">zq{t}c{k}qz</span> ' + c for k, c in enumerate(cells[1:]))
        out.append(head + sep + rest)
    html = "<table>".join(out)
    style = (f"<style>@page{{size:{page}}}"
             ".mk{white-space:nowrap;overflow-wrap:normal;font-size:5pt;color:#999}</style>")
    html = html.replace("</head>", style + "</head>", 1)
    open(marked, "w", encoding="utf-8").write(html)


def check(marked, pdf_path, png_dir):
    html = open(marked, encoding="utf-8").read()
    expected = set(MARKER.findall(html))
    if not expected:
        fail(f"{marked}: no table")
    pdf = pdfium.PdfDocument(pdf_path)
    found = set()
    name = os.path.splitext(os.path.basename(pdf_path))[0]
    for n in range(len(pdf)):
        page = pdf[n]
        width, height = page.get_size()
        text = page.get_textpage()
        for key in set(MARKER.findall(text.get_text_range())):
            searcher = text.search(f"zq{key[0]}c{key[1]}qz", match_case=True)
            while (hit := searcher.get_next()) is not None:
                start, count = hit
                for i in range(start, start + count):
                    left, bottom, right, top = text.get_charbox(i)
                    if left < 0 or right > width or bottom < 0 or top > height:
                        fail(f"{pdf_path}: page {n + 1}: column {key[1]} of table {key[0]} "
                             f"lies outside the page ({left:.0f}-{right:.0f} of {width:.0f} pt)")
                found.add(key)
        image = page.render(scale=1).to_pil().convert("L")
        strip = image.crop((image.width - BLANK_RIGHT_PT, 0, image.width, image.height))
        if strip.getextrema()[0] < 250:
            image.save(os.path.join(png_dir, f"{name}-{n + 1}.png"))
            fail(f"{pdf_path}: page {n + 1}: ink in the right margin (content cut off)")
        if n == 0:
            image.save(os.path.join(png_dir, f"{name}-1.png"))
    missing = sorted(expected - found, key=lambda k: (int(k[0]), int(k[1])))
    if missing:
        fail(f"{pdf_path}: {len(missing)} of {len(expected)} table columns not on any page, "
             f"first: column {missing[0][1]} of table {missing[0][0]}")
    print(f"ok: {pdf_path}: {len(pdf)} pages, all {len(expected)} table columns inside the page")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "mark":
        mark(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(__doc__)
