"""Checks that a report's tables fit the browser window, without a horizontal scroll.

usage: check_screen.py mark REPORT.html MEASURED.html
       check_screen.py check MEASURED.dom WIDTH

`mark` writes a copy of the report that measures itself once laid out: the page's own Content
Security Policy (no scripts) is dropped from the copy, and a script at the end of the body
writes every table's width and the width of the body's content box (inside its padding) into a
`<pre id="widths">`. `check` reads the DOM
Chromium dumped from that copy in a window WIDTH px wide and fails unless every table is at
most as wide as the body's content.
"""

import re
import sys


def fail(message):
    sys.exit(f"check_screen.py: error: {message}")


SCRIPT = (
    "<script>const w=[...document.querySelectorAll('table')].map(t=>t.scrollWidth);"
    "const b=document.body,s=getComputedStyle(b);"
    "const inner=Math.floor(b.clientWidth-parseFloat(s.paddingLeft)-parseFloat(s.paddingRight));"
    "const p=document.createElement('pre');p.id='widths';"
    "p.textContent='widths '+inner+' '+w.join(' ');"
    "document.body.appendChild(p)</script>"
)


def mark(report, measured):
    html = open(report, encoding="utf-8").read()
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    if "</body>" not in html:
        fail(f"{report} has no </body>")
    open(measured, "w", encoding="utf-8").write(html.replace("</body>", SCRIPT + "</body>"))


def check(dom, width):
    found = re.search(r"widths (\d+)((?: \d+)*)</pre>", open(dom, encoding="utf-8").read())
    if not found:
        fail(f"{dom}: the page did not measure itself")
    body = int(found.group(1))
    tables = [int(w) for w in found.group(2).split()]
    if not tables:
        fail(f"{dom}: no table")
    wide = [(i, w) for i, w in enumerate(tables) if w > body]
    if wide:
        detail = ", ".join(f"table {i} is {w} px" for i, w in wide)
        fail(f"{dom}: in a {width} px window the page is {body} px wide and {detail}")
    print(f"ok: {len(tables)} tables fit a {width} px window (page {body} px, widest {max(tables)} px)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "mark":
        mark(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        fail(__doc__.split("\n\n")[1])
